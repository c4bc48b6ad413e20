"""A concurrent orchestration: one agent's reply held for review, another's tool call approved.

`ConcurrentBuilder(...).with_request_info(agents=["analyst"])` holds the analyst's reply for a
person (MAF's `AgentRequestInfoResponse`); the planner's `book_budget` is a plain
`@tool(approval_mode="always_require")`. Both are pending in the same run at once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any

from agent_framework import Agent, Content, Message, tool
from agent_framework_orchestrations import ConcurrentBuilder
from pydantic import BaseModel

from baton.api import RunServices, register, scripted_plays

BOOKED: list[float] = []


@tool(approval_mode="always_require")
def book_budget(amount: Annotated[float, "EUR to book for the launch"]) -> str:
    """Book launch budget. Requires approval."""
    BOOKED.append(amount)
    return f"booked {amount:.2f} EUR"


# --- Baton --------------------------------------------------------------------------------------


class LaunchInput(BaseModel):
    product: str


@register("concurrent_review", input_model=LaunchInput, start_message=lambda i: i.product)
def build_workflow(services: RunServices) -> Any:
    analyst = Agent(
        client=services.chat_clients.for_persona("launch-analyst"),
        name="analyst",
        instructions="Write a one-line market note on the product.",
    )
    planner = Agent(
        client=services.chat_clients.for_persona("launch-planner"),
        name="planner",
        instructions="Book the launch budget.",
        tools=[book_budget],
    )
    return (
        ConcurrentBuilder(name="concurrent_review", participants=[analyst, planner])
        .with_request_info(agents=["analyst"])
        .build()
    )


def analyst_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    guidance = [m.text for m in messages if m.role == "user"][1:]
    if guidance:
        return [Content.from_text(f"Market note, revised: {guidance[-1]}")]
    return [Content.from_text("Market note: strong demand expected.")]


def planner_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    results = [c for m in messages for c in m.contents if c.type == "function_result"]
    if results:
        return [Content.from_text(f"Budget: {results[-1].result}")]
    arguments = json.dumps({"amount": 1200.0})
    return [Content.from_function_call("call-book", "book_budget", arguments=arguments)]


scripted_plays({"launch-analyst": analyst_play, "launch-planner": planner_play})
