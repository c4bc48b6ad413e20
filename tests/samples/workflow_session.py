# Copyright (c) Microsoft. All rights reserved.

from agent_framework import Agent
from agent_framework.orchestrations import SequentialBuilder
from dotenv import load_dotenv

# Load environment variables from .env file
load_dotenv()

"""
Sample: Workflow as Agent with Session Conversation History and Checkpointing

This sample demonstrates how to use AgentSession with a workflow wrapped as an agent
to maintain conversation history across multiple invocations. When using as_agent(),
the session's history is included in each workflow run, enabling
the workflow participants to reference prior conversation context.

It also demonstrates how to enable checkpointing for workflow execution state
persistence, allowing workflows to be paused and resumed.

Key concepts:
- Workflows can be wrapped as agents using Agent(client=workflow,)
- AgentSession preserves conversation history
- Each call to agent.run() includes session history + new message
- Participants in the workflow see the full conversation context
- checkpoint_storage parameter enables workflow state persistence

Use cases:
- Multi-turn conversations with workflow-based orchestrations
- Stateful workflows that need context from previous interactions
- Building conversational agents that leverage workflow patterns
- Long-running workflows that need pause/resume capability

Prerequisites:
- FOUNDRY_PROJECT_ENDPOINT must be your Microsoft Foundry Agent Service (V2) project endpoint.
- FOUNDRY_MODEL must be set to your Azure OpenAI model deployment name.
"""


# --- Baton: the registration (the sample's `main()` and `demonstrate_session_serialization()` are --
# --- left out, with their Foundry client: its agents and workflow are built as `main()` builds ----
# --- them, on the model Baton is configured with). Each turn of `main()`'s session is a run that --
# --- continues the run before (`Run.continues`), as `agent.run(query, session=session)` does. ---

import re  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from typing import Any  # noqa: E402

from agent_framework import Content, Message, SupportsChatGetResponse  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from baton.api import RunServices, register, scripted_plays  # noqa: E402


class Query(BaseModel):
    query: str


def build_agent(client: SupportsChatGetResponse) -> Any:
    """`main()`'s agents, workflow and agent, on `client`."""
    assistant = Agent(
        client=client,
        name="assistant",
        instructions=(
            "You are a helpful assistant. Answer questions based on the conversation "
            "history. If the user asks about something mentioned earlier, reference it."
        ),
    )

    summarizer = Agent(
        client=client,
        name="summarizer",
        instructions=(
            "You are a summarizer. After the assistant responds, provide a brief "
            "one-sentence summary of the key point from the conversation so far."
        ),
    )

    # Build a sequential workflow: assistant -> summarizer
    workflow = SequentialBuilder(participants=[assistant, summarizer]).build()

    # Wrap the workflow as an agent
    return workflow.as_agent()


@register("workflow_session", input_model=Query)  # no start_message: MAF's own shape
def build(services: RunServices) -> Any:
    """The agent `main()` talks to, turn after turn."""
    return build_agent(services.chat_clients.for_persona("workflow-session"))


QUERIES = (
    "My name is Alex and I'm learning about machine learning.",
    "What was my name again, and what am I learning about?",
    "Can you suggest a good first project for me to try?",
)
"""`main()`'s three turns."""


def _play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """The assistant answers from the whole conversation; the summarizer counts and sums it up."""
    said = [m.text for m in messages if m.role == "user"]
    everything = " ".join(said)
    name = re.search(r"My name is (\w+)", everything)
    topic = re.search(r"learning about ([^.?]+)", everything)
    who = name.group(1) if name else "friend"
    what = topic.group(1) if topic else "something new"
    if "summarizer" in str(options.get("instructions")):
        replies = [
            m.text for m in messages if m.role == "assistant" and m.author_name == "assistant"
        ]
        return [Content.from_text(f"After {len(said)} questions: {replies[-1] if replies else ''}")]
    if "name again" in said[-1]:
        return [Content.from_text(f"Your name is {who} and you are learning about {what}.")]
    if "project" in said[-1]:
        return [
            Content.from_text(f"{who}, try a small {what} project: classify handwritten digits.")
        ]
    return [Content.from_text(f"Nice to meet you, {who}! {what.capitalize()} is a great field.")]


scripted_plays({"workflow-session": _play})
