# Copyright (c) Microsoft. All rights reserved.

from agent_framework import Agent
from agent_framework.orchestrations import ConcurrentBuilder
from dotenv import load_dotenv

# Load environment variables from .env file
load_dotenv()

"""
Sample: Build a concurrent workflow orchestration and wrap it as an agent.

This script wires up a fan-out/fan-in workflow using `ConcurrentBuilder`, and then
invokes the entire orchestration through the `Agent(client=workflow,...)` interface so
downstream coordinators can reuse the orchestration as a single agent.
"""


# --- Baton: MAF's `03-workflows/agents/concurrent_workflow_as_agent.py`, less its `main()` and ----
# --- Foundry client: its agents, workflow and `.as_agent()` built as `main()` builds them, the ----
# --- legal reviewer's reply held for a person (`with_request_info`) ------------------------------

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
    researcher = Agent(
        client=client,
        instructions=(
            "You're an expert market and product researcher. Given a prompt, provide concise, factual insights,"
            " opportunities, and risks."
        ),
        name="researcher",
    )

    marketer = Agent(
        client=client,
        instructions=(
            "You're a creative marketing strategist. Craft compelling value propositions and target messaging"
            " aligned to the prompt."
        ),
        name="marketer",
    )

    legal = Agent(
        client=client,
        instructions=(
            "You're a cautious legal/compliance reviewer. Highlight constraints, disclaimers, and policy concerns"
            " based on the prompt."
        ),
        name="legal",
    )

    # 2) Build a concurrent workflow (legal's reply held for a person)
    builder = ConcurrentBuilder(participants=[researcher, marketer, legal])
    workflow = (builder.with_request_info(agents=["legal"]) if ask else builder).build()

    # 3) Expose the concurrent workflow as an agent for easy reuse
    return workflow.as_agent()


@register("concurrent_workflow_agent", input_model=Prompt)
def build(services: RunServices) -> Any:
    return build_agent(services.chat_clients.for_persona("concurrent-workflow-agent"))


QUERIES = [
    "We are launching a new budget-friendly electric bike for urban commuters.",
    "And for students?",
]


def _play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """Each agent says what it was handed: how many messages, by whom."""
    instructions = str(options.get("instructions"))
    who = next(w for w in ("researcher", "marketing", "legal") if w in instructions)
    handed = ",".join(f"{m.role}:{m.author_name or '-'}" for m in messages)
    said = [m.text for m in messages if m.role == "user"]
    return [Content.from_text(f"{who} on {said[-1]!r} handed [{handed}]")]


scripted_plays({"concurrent-workflow-agent": traced(_play)})
