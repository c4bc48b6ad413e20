"""MAF's `03-workflows/human-in-the-loop/concurrent_request_info.py`, as MAF wrote it.

At agent-framework 5eb3eb745, less its module docstring (this one in its place), its `main()`,
its event-stream printing and input loop (`process_event_stream`), its Foundry client (with its
`asyncio`, `os`, `azure.identity` and `dotenv` imports and `load_dotenv()` call, and the imports
only those two functions use: `AsyncIterable`, `WorkflowEvent`, `AgentRequestInfoResponse`), with
`_chat_client` typed as the `BaseChatClient` Baton gives in place of `FoundryChatClient`, and laid
out by `ruff format` (one of its string literals split in two, its text unchanged): three analysts
in a `ConcurrentBuilder` with `.with_request_info(agents=["technical_analyst"])`, so the technical
analyst's reply waits for a person, who lets it stand or sends it back with guidance the analyst
then answers, and MAF's own aggregator (`aggregate_with_synthesis`) asks the chat client the
module holds for a synthesis of the three replies. The agents and that client are built as
`main()` builds them (one client, which `main()` keeps in the module's `_chat_client`), on the
model Baton is configured with. On the scripted model each analyst answers by its instructions
and the synthesis repeats what the aggregator gave it: a person's words lost on the way would
leave the technical analyst's first reply in it. (The aggregator's "Human guidance" is the last
analyst's prompt, not the person's words: it keeps the last user message of each reply in turn,
the UX analyst's last; so on MAF alone too.)
"""

# Copyright (c) Microsoft. All rights reserved.

from typing import Any

from agent_framework import (
    Agent,
    AgentExecutorResponse,
    BaseChatClient,
    Message,
)
from agent_framework.orchestrations import ConcurrentBuilder

# Store chat client at module level for aggregator access
_chat_client: BaseChatClient | None = None


async def aggregate_with_synthesis(results: list[AgentExecutorResponse]) -> Any:
    """Custom aggregator that synthesizes concurrent agent outputs using an LLM.

    This aggregator extracts the outputs from each parallel agent and uses the
    chat client to create a unified summary, incorporating any human feedback
    that was injected into the conversation.

    Args:
        results: List of responses from all concurrent agents

    Returns:
        The synthesized summary text
    """
    if not _chat_client:
        return "Error: Chat client not initialized"

    # Extract each agent's final output
    expert_sections: list[str] = []
    human_guidance = ""

    for r in results:
        try:
            messages = getattr(r.agent_response, "messages", [])
            final_text = (
                messages[-1].text if messages and hasattr(messages[-1], "text") else "(no content)"
            )
            expert_sections.append(f"{getattr(r, 'executor_id', 'analyst')}:\n{final_text}")

            # Check for human feedback in the conversation (will be last user message if present)
            if r.full_conversation:
                for msg in reversed(r.full_conversation):
                    if msg.role == "user" and msg.text and "perspectives" not in msg.text.lower():
                        human_guidance = msg.text
                        break
        except Exception:
            expert_sections.append(
                f"{getattr(r, 'executor_id', 'analyst')}: (error extracting output)"
            )

    # Build prompt with human guidance if provided
    guidance_text = f"\n\nHuman guidance: {human_guidance}" if human_guidance else ""

    system_msg = Message(
        "system",
        contents=[
            (
                "You are a synthesis expert. Consolidate the following analyst perspectives "
                "into one cohesive, balanced summary (3-4 sentences). "
                "If human guidance is provided, "
                "prioritize aspects as directed."
            )
        ],
    )
    user_msg = Message("user", contents=["\n\n".join(expert_sections) + guidance_text])

    response = await _chat_client.get_response([system_msg, user_msg])
    return response.messages[-1].text if response.messages else ""


# --- Baton: the registration (the sample's `main()` is left out, with its Foundry client: its ----
# --- agents and its aggregator's client are built as `main()` builds them, on the model Baton ----
# --- is configured with) -------------------------------------------------------------------------

from collections.abc import Sequence  # noqa: E402

from agent_framework import Content  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from baton.api import RunServices, register, scripted_plays  # noqa: E402


class Topic(BaseModel):
    topic: str


@register("concurrent_steering", input_model=Topic, start_message=lambda i: i.topic)
def build_workflow(services: RunServices) -> Any:
    """`main()`'s client, agents and workflow."""
    global _chat_client
    _chat_client = services.chat_clients.for_persona("concurrent-steering")

    # Create agents that analyze from different perspectives
    technical_analyst = Agent(
        client=_chat_client,
        name="technical_analyst",
        instructions=(
            "You are a technical analyst. When given a topic, provide a technical "
            "perspective focusing on implementation details, performance, and architecture. "
            "Keep your analysis to 2-3 sentences."
        ),
    )

    business_analyst = Agent(
        client=_chat_client,
        name="business_analyst",
        instructions=(
            "You are a business analyst. When given a topic, provide a business "
            "perspective focusing on ROI, market impact, and strategic value. "
            "Keep your analysis to 2-3 sentences."
        ),
    )

    user_experience_analyst = Agent(
        client=_chat_client,
        name="ux_analyst",
        instructions=(
            "You are a UX analyst. When given a topic, provide a user experience "
            "perspective focusing on usability, accessibility, and user satisfaction. "
            "Keep your analysis to 2-3 sentences."
        ),
    )

    # Build workflow with request info enabled and custom aggregator
    workflow = (
        ConcurrentBuilder(
            participants=[technical_analyst, business_analyst, user_experience_analyst]
        )
        .with_aggregator(aggregate_with_synthesis)
        # Only enable request info for the technical analyst agent
        .with_request_info(agents=["technical_analyst"])
        .build()
    )
    return workflow


VIEWS = {
    "technical analyst": "Technical: LLMs draft boilerplate fast; generated code needs tests.",
    "business analyst": "Business: faster delivery lowers cost; the return depends on adoption.",
    "UX analyst": "UX: answers arrive in the editor, but AI tools vary in accessibility.",
}


def _play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """One client, as `main()` has it: each analyst's view by its instructions, then the synthesis.

    An analyst steered (a person's guidance, the last thing said to it) answers it; the
    synthesis repeats what MAF's aggregator gave it, on one line.
    """
    if messages and "synthesis expert" in messages[0].text:
        sections = messages[-1].text.split("\n\n")
        return [
            Content.from_text("Synthesis: " + " | ".join(s.replace("\n", " ") for s in sections))
        ]
    said = [m.text for m in messages if m.role == "user"]
    if len(said) > 1 and messages[-1].role == "user":
        return [Content.from_text(f"Technical, revised: {said[-1]}")]
    instructions = str(options.get("instructions"))
    return [Content.from_text(next(v for k, v in VIEWS.items() if f"a {k}" in instructions))]


scripted_plays({"concurrent-steering": _play})
