# Copyright (c) Microsoft. All rights reserved.

"""AG-UI handoff workflow demo backend.

This demo exposes a dynamic HandoffBuilder workflow through AG-UI.
It intentionally includes two interrupt styles:

1. Tool approval (`function_approval_request`) for `submit_refund` and `submit_replacement`
2. Follow-up human input (`HandoffAgentUserRequest`) when an agent needs user details

Run this server and pair it with the frontend in `../frontend`.
"""

from __future__ import annotations

import random
from typing import Any

from agent_framework import (
    Agent,
    Message,
    Workflow,
    tool,
)
from agent_framework.orchestrations import HandoffBuilder

@tool(approval_mode="always_require")
def submit_refund(refund_description: str, amount: str, order_id: str) -> str:
    """Capture a refund request for manual review before processing."""
    return f"refund recorded for order {order_id} (amount: {amount}) with details: {refund_description}"


@tool(approval_mode="always_require")
def submit_replacement(order_id: str, shipping_preference: str, replacement_note: str) -> str:
    """Capture a replacement request for manual review before processing."""
    return (
        f"replacement recorded for order {order_id} (shipping: {shipping_preference}) with details: {replacement_note}"
    )


@tool(approval_mode="never_require")
def lookup_order_details(order_id: str) -> dict[str, str]:
    """Return synthetic order details for a given order ID."""
    normalized_order_id = "".join(ch for ch in order_id if ch.isdigit()) or order_id
    rng = random.Random(normalized_order_id)
    catalog = [
        "Wireless Headphones",
        "Mechanical Keyboard",
        "Gaming Mouse",
        "27-inch Monitor",
        "USB-C Dock",
        "Bluetooth Speaker",
        "Laptop Stand",
    ]
    item_name = catalog[rng.randrange(len(catalog))]
    amount = f"${rng.randint(39, 349)}.{rng.randint(0, 99):02d}"
    purchase_date = f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    return {
        "order_id": normalized_order_id,
        "item_name": item_name,
        "amount": amount,
        "currency": "USD",
        "purchase_date": purchase_date,
        "status": "delivered",
    }


def create_agents(client: Any) -> tuple[Agent, Agent, Agent]:  # Baton: `client` passed in
    """Create triage, refund, and order agents for the handoff workflow."""

    triage = Agent(
        id="triage_agent",
        name="triage_agent",
        instructions=(
            "You are the customer support triage agent.\n"
            "Routing policy:\n"
            "1. Route refund-related requests to refund_agent.\n"
            "2. Route replacement/shipping requests to order_agent.\n"
            "3. Do not force replacement if the user asked for refund only.\n"
            "4. If the issue is fully resolved, send a concise wrap-up that ends with exactly: Case complete."
        ),
        client=client,
        require_per_service_call_history_persistence=True,
    )

    refund = Agent(
        id="refund_agent",
        name="refund_agent",
        instructions=(
            "You are the refund specialist.\n"
            "Workflow policy:\n"
            "1. If order_id is missing, ask only for order_id.\n"
            "2. Once order_id is available, call lookup_order_details(order_id) to retrieve item and amount.\n"
            "3. Do not ask the customer how much they paid unless lookup_order_details fails.\n"
            "4. If user intent is ambiguous, ask one clear choice question and wait for the answer:\n"
            "   refund only, replacement only, or both.\n"
            "   Do not call submit_refund until this choice is known.\n"
            "5. Gather a short refund reason from user context if needed.\n"
            "6. If the user wants a refund (refund-only or both),\n"
            "   call submit_refund with order_id, amount (from lookup), and refund_description.\n"
            "7. After approval and successful refund submission:\n"
            "   - If the user explicitly requested replacement/exchange, handoff to order_agent.\n"
            "   - If the user asked for refund only, do not hand off for replacement.\n"
            "     Finalize in this agent and end with exactly: Case complete.\n"
            "8. If the user wants replacement only and no refund, handoff to order_agent directly."
        ),
        client=client,
        tools=[lookup_order_details, submit_refund],
        require_per_service_call_history_persistence=True,
    )

    order = Agent(
        id="order_agent",
        name="order_agent",
        instructions=(
            "You are the order specialist.\n"
            "Only handle replacement/exchange/shipping tasks.\n"
            "1. If replacement intent is confirmed but shipping preference is missing,\n"
            "   ask for shipping preference (standard or expedited).\n"
            "2. If order_id is missing, ask for order_id.\n"
            "3. Once order_id and shipping preference are known,\n"
            "   call submit_replacement(order_id, shipping_preference, replacement_note).\n"
            "4. While the replacement tool call is pending approval, do not claim completion.\n"
            "5. If you receive a submit_replacement function result,\n"
            "   approval has already occurred and submission succeeded.\n"
            "6. Immediately send a final customer-facing confirmation and end with exactly: Case complete.\n"
            "If the user wants refund only and no replacement, do not ask shipping questions.\n"
            "Acknowledge and hand off back to triage_agent for final closure.\n"
            "Do not fabricate tool outputs."
        ),
        client=client,
        tools=[lookup_order_details, submit_replacement],
        require_per_service_call_history_persistence=True,
    )

    return triage, refund, order


def is_case_complete_text(text: str) -> bool:
    """Return True when a message ends with the explicit demo completion marker."""

    return text.strip().lower().endswith("case complete.")


def _termination_condition(conversation: list[Message]) -> bool:
    """Stop when any assistant emits an explicit completion marker."""

    for message in reversed(conversation):
        if message.role != "assistant":
            continue
        if is_case_complete_text(message.text or ""):
            return True
    return False


def create_handoff_workflow(client: Any) -> Workflow:  # Baton: `client` passed in
    """Build the demo HandoffBuilder workflow."""

    triage, refund, order = create_agents(client)
    builder = HandoffBuilder(
        name="ag_ui_handoff_workflow_demo",
        participants=[triage, refund, order],
        termination_condition=_termination_condition,
    )

    # Explicit handoff topology (instead of default mesh) so routing is enforced in orchestration,
    # not only implied by prompt instructions.
    (
        builder
        .add_handoff(
            triage,
            [refund],
            description="Route when the user requests refunds, damaged-item claims, or refund status updates.",
        )
        .add_handoff(
            triage,
            [order],
            description="Route when the user requests replacement, exchange, shipping preference, or shipment changes.",
        )
        .add_handoff(
            refund,
            [order],
            description="Route after refund work only if replacement/exchange logistics are explicitly needed.",
        )
        .add_handoff(
            refund,
            [triage],
            description="Route back for final case closure when refund-only work is complete.",
        )
        .add_handoff(
            order,
            [triage],
            description="Route back after replacement/shipping tasks are complete for final closure.",
        )
        .add_handoff(
            order,
            [refund],
            description="Route to refund specialist if the user pivots from replacement to refund processing.",
        )
    )

    return builder.with_start_agent(triage).build()


# --- Baton: the registration (the sample's AG-UI server, its closed-case notice workflow and its ---
# --- `main()` are left out, with its Foundry client: Baton's `/agui/{workflow}` serves it) -------

import json  # noqa: E402
import re  # noqa: E402
from collections.abc import Sequence  # noqa: E402

from agent_framework import Content  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from agent_framework.orchestrations import HandoffAgentUserRequest  # noqa: E402

from baton.api import Route, RunServices, register, scripted_plays  # noqa: E402


class CaseInput(BaseModel):
    message: str


@register(
    "agui_handoff",
    input_model=CaseInput,
    start_message=lambda case: case.message,
    # the customer's chat is kept by the support agents: they relay the customer's replies
    routes={HandoffAgentUserRequest: Route(team="support-agents")},
)
def build_workflow(services: RunServices) -> Workflow:
    """The sample's `create_handoff_workflow()`, on the model Baton is configured with."""
    return create_handoff_workflow(services.chat_clients.for_persona("agui-handoff"))


def _play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """The scripted model's turns for the three agents (told apart by their instructions)."""
    who = str(options.get("instructions", ""))
    said = " ".join(m.text for m in messages if m.role == "user" and m.text)
    results = {
        str(c.call_id): str(c.result)
        for m in messages
        for c in m.contents
        if c.type == "function_result"
    }
    if "triage agent" in who:
        return [Content.from_function_call("call-triage", "handoff_to_refund_agent", arguments="{}")]
    order_id = "".join(ch for ch in said if ch.isdigit())
    if not order_id:
        return [Content.from_text("Sorry about that. Which order is it? Please give its number.")]
    if "call-lookup" not in results:
        arguments = json.dumps({"order_id": order_id})
        return [Content.from_function_call("call-lookup", "lookup_order_details", arguments=arguments)]
    if "call-refund" not in results:
        amount = re.search(r"\$\d+\.\d\d", results["call-lookup"])
        arguments = json.dumps(
            {
                "refund_description": "arrived damaged",
                "amount": amount.group(0) if amount else "unknown",
                "order_id": order_id,
            }
        )
        return [Content.from_function_call("call-refund", "submit_refund", arguments=arguments)]
    return [Content.from_text(f"{results['call-refund']}. Case complete.")]


scripted_plays({"agui-handoff": _play})
