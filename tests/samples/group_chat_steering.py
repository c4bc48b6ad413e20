"""MAF's `03-workflows/human-in-the-loop/group_chat_request_info.py`, as MAF wrote it.

At agent-framework 5eb3eb745, less its `main()`, its event-stream printing and its Foundry client:
a `GroupChatBuilder` whose orchestrator is an agent (it picks each speaker in structured output,
keeping the discussion in its own session), with `.with_request_info(agents=[pragmatist])`: each
reply of the pragmatist waits for a person, who lets it stand or steers it with feedback the
pragmatist then answers. Its agents are built as `main()` builds them, on the model Baton is
configured with. On the scripted model the orchestrator gives the floor to the optimist, the
pragmatist and the creative in turn, counting the turns its session holds, then ends the
discussion with the pragmatist's last plan: a session lost across a pause would start the round
again, and a person's feedback lost would leave the first plan.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agent_framework import Agent, Content, Message
from agent_framework.orchestrations import GroupChatBuilder
from pydantic import BaseModel

from baton.api import RunServices, register, scripted_plays


class Topic(BaseModel):
    topic: str


@register("group_chat_steering", input_model=Topic, start_message=lambda i: i.topic)
def build_workflow(services: RunServices) -> Any:
    # Create agents for a group discussion
    optimist = Agent(
        client=services.chat_clients.for_persona("optimist"),
        name="optimist",
        instructions=(
            "You are an optimistic team member. You see opportunities and potential "
            "in ideas. Engage constructively with the discussion, building on others' "
            "points while maintaining a positive outlook. Keep responses to 2-3 sentences."
        ),
    )

    pragmatist = Agent(
        client=services.chat_clients.for_persona("pragmatist"),
        name="pragmatist",
        instructions=(
            "You are a pragmatic team member. You focus on practical implementation "
            "and realistic timelines. Sometimes you disagree with overly optimistic views. "
            "Keep responses to 2-3 sentences."
        ),
    )

    creative = Agent(
        client=services.chat_clients.for_persona("creative"),
        name="creative",
        instructions=(
            "You are a creative team member. You propose innovative solutions and "
            "think outside the box. You may suggest alternatives to conventional approaches. "
            "Keep responses to 2-3 sentences."
        ),
    )

    # Orchestrator coordinates the discussion
    orchestrator = Agent(
        client=services.chat_clients.for_persona("orchestrator"),
        name="orchestrator",
        instructions=(
            "You are a discussion manager coordinating a team conversation between participants. "
            "Your job is to select who speaks next.\n\n"
            "RULES:\n"
            "1. Rotate through ALL participants - do not favor any single participant\n"
            "2. Each participant should speak at least once before any participant speaks twice\n"
            "3. Continue for at least 5 rounds before ending the discussion\n"
            "4. Do NOT select the same participant twice in a row"
        ),
    )

    # Build workflow with request info enabled
    # Using agents= filter to only pause before pragmatist speaks (not every turn)
    # max_rounds=6: Limit to 6 rounds
    return (
        GroupChatBuilder(
            participants=[optimist, pragmatist, creative],
            max_rounds=6,
            orchestrator_agent=orchestrator,
        )
        .with_request_info(agents=[pragmatist])  # Only pause before pragmatist speaks
        .build()
    )


SPEAKERS = ("optimist", "pragmatist", "creative")
ASKED = "Decide what to do next."
"""How MAF's agent orchestrator asks its agent for each decision (its session keeps them)."""


def orchestrator_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """The next of `SPEAKERS` by the decisions asked so far; then the end, naming who spoke."""
    asked = sum(1 for m in messages if m.role == "user" and m.text.startswith(ASKED))
    if asked <= len(SPEAKERS):
        decision = {
            "terminate": False,
            "reason": "rotating through the team",
            "next_speaker": SPEAKERS[asked - 1],
            "final_message": None,
        }
    else:
        spoke = [m for m in messages if m.role == "assistant" and m.author_name in SPEAKERS]
        plan = next(m.text for m in reversed(spoke) if m.author_name == "pragmatist")
        heard = ", ".join(dict.fromkeys(str(m.author_name) for m in spoke))
        decision = {
            "terminate": True,
            "reason": "everyone spoke",
            "next_speaker": None,
            "final_message": f"Heard: {heard}. The plan: {plan}",
        }
    return [Content.from_text(json.dumps(decision))]


def _said(messages: Sequence[Message]) -> list[str]:
    return [m.text for m in messages if m.role == "user" and m.text]


def optimist_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    return [Content.from_text("AI tools could free a day a week for every one of us.")]


def pragmatist_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """A plan; steered (a person's feedback, the last thing said to it), the plan it asks for."""
    said = _said(messages)
    last = said[-1] if said else ""
    if (
        messages
        and messages[-1].role == "user"
        and not last.startswith(ASKED)
        and "Discuss" not in last
    ):
        return [Content.from_text(f"Revised plan: {last}")]
    return [Content.from_text("Pilot one tool with one team for a quarter, then decide.")]


def creative_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    return [Content.from_text("Let each team invent its own AI ritual and share the best.")]


scripted_plays(
    {
        "orchestrator": orchestrator_play,
        "optimist": optimist_play,
        "pragmatist": pragmatist_play,
        "creative": creative_play,
    }
)
