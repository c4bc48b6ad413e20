"""A handoff with user input: triage hands the customer to a specialist, who asks them a question.

MAF's `HandoffBuilder` waits for the user with its own `HandoffAgentUserRequest`; on Baton that
is a question to the team that speaks for the user, whose reply reaches the agent as the user's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_framework import Agent, Content, Message
from agent_framework_orchestrations import HandoffBuilder
from pydantic import BaseModel

from baton.api import RunServices, register, scripted_plays


def thanked(conversation: list[Message]) -> bool:
    """The conversation ends when the user says thanks."""
    return any(m.role == "user" and "thanks" in m.text.lower() for m in conversation)


# --- Baton --------------------------------------------------------------------------------------


class TicketInput(BaseModel):
    message: str


@register("handoff_input", input_model=TicketInput, start_message=lambda i: i.message)
def build_workflow(services: RunServices) -> Any:
    def agent(name: str, instructions: str) -> Agent:
        return Agent(
            client=services.chat_clients.for_persona(f"handoff-{name}"),
            name=name,
            instructions=instructions,
            require_per_service_call_history_persistence=True,
        )

    triage = agent("triage", "Route the customer to the orders agent.")
    orders = agent("orders", "Help with orders: ask for the order number, then give its status.")
    return (
        HandoffBuilder(
            name="handoff_input", participants=[triage, orders], termination_condition=thanked
        )
        .with_start_agent(triage)
        .add_handoff(triage, [orders])
        .build()
    )


def triage_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    return [Content.from_function_call("call-handoff", "handoff_to_orders", arguments="{}")]


def orders_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    said = [m.text for m in messages if m.role == "user" and m.text]
    number = next((w for w in said[-1].split() if w.startswith("A-")), None) if said else None
    if number is None:
        return [Content.from_text("Which order is it about? Please give its number (A-...).")]
    return [Content.from_text(f"Order {number.rstrip('.')} left our warehouse today.")]


scripted_plays({"handoff-triage": triage_play, "handoff-orders": orders_play})
