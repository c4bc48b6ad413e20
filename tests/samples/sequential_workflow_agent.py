# Copyright (c) Microsoft. All rights reserved.

from agent_framework import Agent
from agent_framework.orchestrations import SequentialBuilder
from dotenv import load_dotenv

# Load environment variables from .env file
load_dotenv()

"""
Sample: Build a sequential workflow orchestration and wrap it as an agent.

The script assembles a sequential conversation flow with `SequentialBuilder`, then
invokes the entire orchestration through the `Agent(client=workflow,...)` interface so
other coordinators can reuse the chain as a single participant.
"""


# --- Baton: MAF's `03-workflows/agents/sequential_workflow_as_agent.py`, less its `main()` and ----
# --- Foundry client: its agents, workflow and `.as_agent()` built as `main()` builds them, the ----
# --- writer's reply held for a person (`with_request_info`); each turn a run continuing the last --

from collections.abc import Sequence  # noqa: E402
from typing import Any  # noqa: E402

from agent_framework import Content, Message, SupportsChatGetResponse  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from baton.api import RunServices, register, scripted_plays  # noqa: E402
from tests.samples.model_trace import traced  # noqa: E402


class Prompt(BaseModel):
    text: str


def build_agent(client: SupportsChatGetResponse, ask: bool = True) -> Any:
    """`main()`'s agents, workflow and agent, on `client` (a person asked where `ask`)."""
    writer = Agent(
        client=client,
        instructions=("You are a concise copywriter. Provide a single, punchy marketing sentence based on the prompt."),
        name="writer",
    )

    reviewer = Agent(
        client=client,
        instructions=("You are a thoughtful reviewer. Give brief feedback on the previous assistant message."),
        name="reviewer",
    )

    # 2) Build sequential workflow: writer -> reviewer (the writer's reply held for a person)
    builder = SequentialBuilder(participants=[writer, reviewer])
    workflow = (builder.with_request_info(agents=["writer"]) if ask else builder).build()

    # 3) Treat the workflow itself as an agent for follow-up invocations
    return workflow.as_agent()


@register("sequential_workflow_agent", input_model=Prompt)
def build(services: RunServices) -> Any:
    return build_agent(services.chat_clients.for_persona("sequential-workflow-agent"))


QUERIES = ["Write a tagline for a budget-friendly eBike.", "Now make it rhyme."]


def _play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """Each agent says what it was handed: how many messages, by whom."""
    who = "writer" if "copywriter" in str(options.get("instructions")) else "reviewer"
    handed = ",".join(f"{m.role}:{m.author_name or '-'}" for m in messages)
    said = [m.text for m in messages if m.role == "user"]
    return [Content.from_text(f"{who} on {said[-1]!r} handed [{handed}]")]


scripted_plays({"sequential-workflow-agent": traced(_play)})
