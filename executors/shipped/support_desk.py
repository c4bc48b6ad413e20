"""The support desk's agents and the human channels each one has.

`triage` reads the ticket and hands it to a specialist: `billing` (refunds, through the refund
policy), `technical` (known issues, restarts, a written reply a person reviews) or `accounts`
(account deletion, a tool MAF itself asks approval for). Every agent can ask the support team a
question (`ask_human`), say how confident it is (`report_confidence`, read by the takeover rules)
and close the case (`close_case`); replying to the customer waits for the customer's answer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Literal

from agent_framework import Agent, FunctionTool
from pydantic import BaseModel, Field

from baton.api import (
    AskHuman,
    CloseCase,
    Draft,
    GatedTool,
    HostCalls,
    PolicyGate,
    RequestAdapter,
    Resources,
    ReviewDraft,
    RunServices,
    ToolApprovals,
    UserTurns,
)
from executors.shipped import plays  # noqa: F401  (the scripted model's plays for these agents)
from executors.shipped.tools import (
    EmailArguments,
    ask_human_tool,
    check_service_status_tool,
    close_case_tool,
    delete_account_tool,
    describe_refund,
    issue_refund_of,
    lookup_customer_tool,
    lookup_order_tool,
    office,
    report_confidence_tool,
    restart_sync_tool,
    send_email_tool,
)

CUSTOMER_TEAM = "support-agents"
"""Relays the customer's replies, answers the agents' questions and reviews their drafts."""

SPECIALISTS = ("billing", "technical", "accounts")

_COMMON = (
    " If you need a fact only a person on the team knows, call ask_human. If you are unsure you "
    "can help, call report_confidence with a low confidence. When the customer's problem is "
    "solved, or cannot be solved by you, call close_case with the resolution. Reply to the "
    "customer in plain, short sentences."
)

INSTRUCTIONS = {
    "triage": (
        "You are the first line of customer support. Read the customer's message and hand the "
        "case to the right specialist: billing (payments, charges, refunds), technical (the app, "
        "errors, sync, uploads) or accounts (deleting an account, account data). If the message "
        "is unclear, ask the customer one short question. If the customer asks for a manager, "
        "tell them a person from the team will take over."
    ),
    "billing": (
        "You are the billing specialist. Look orders up with lookup_order and the customer with "
        "lookup_customer, and refund with issue_refund (order id and amount); policy decides "
        "whether a person must approve." + _COMMON
    ),
    "technical": (
        "You are the technical specialist. Check known issues with check_service_status, try "
        "restart_sync for sync problems, and send the customer a written answer with "
        "email_customer (a person reviews it before it goes out)." + _COMMON
    ),
    "accounts": (
        "You are the accounts specialist. Look the customer up with lookup_customer; delete an "
        "account with delete_account only when the customer asks for it (a person approves "
        "every deletion)." + _COMMON
    ),
}

DESCRIPTIONS = {
    "triage": "Reads new tickets and routes them to a specialist.",
    "billing": "Payments, charges and refunds.",
    "technical": "App problems, errors, sync and uploads.",
    "accounts": "Account data and account deletion.",
}


class SupportInput(BaseModel):
    """Input of the `support` workflow: one customer's message."""

    customer_id: str = Field(min_length=1, description="The customer, e.g. customer-02")
    message: str = Field(
        min_length=1,
        description="What the customer wrote",
        json_schema_extra={"format": "textarea"},
    )


class CaseOutcome(BaseModel):
    """What you did for the customer, for the record."""

    action: Literal["fixed", "refunded", "replaced", "explained", "closed account", "nothing"] = (
        Field(title="What you did")
    )
    amount: float | None = Field(
        None,
        ge=0,
        title="Amount refunded",
        description="If you refunded: how much.",
        json_schema_extra={"format": "money"},
    )
    follow_up: bool = Field(False, title="Follow-up needed")
    ticket: str | None = Field(
        None, title="Ticket", description="A ticket in another system, if you opened one."
    )


def opening(ticket: SupportInput) -> str:
    """The customer's ticket as the first message the triage agent reads."""
    return f"Customer {ticket.customer_id} writes:\n{ticket.message}"


async def customer_card(services: RunServices) -> dict[str, Any]:
    """What people see of the ticket's customer, from the back office (beside the conversation)."""
    customer_id = services.run_input.get("customer_id")
    if not customer_id:
        return {}
    customer = await (await office(services)).get_customer(str(customer_id))
    return {"customer": customer or {"id": customer_id, "known": False}}


def refund_gate(services: RunServices) -> GatedTool:
    """`issue_refund` with the support desk's wording (one per process)."""
    return services.resources.shared(_worded_refund)


def _worded_refund(resources: Resources) -> GatedTool:
    return dataclasses.replace(resources.shared(issue_refund_of), describe=describe_refund)


def support_agents(services: RunServices) -> dict[str, Agent]:
    """The four agents, each with its tools and the middleware that records the conversation."""
    refund = refund_gate(services)
    email = send_email_tool(services)
    common: list[FunctionTool] = [report_confidence_tool(), ask_human_tool(), close_case_tool()]
    tools: dict[str, Sequence[FunctionTool]] = {
        "triage": [report_confidence_tool()],
        "billing": [
            lookup_customer_tool(services),
            lookup_order_tool(services),
            refund.declaration(),
            *common,
        ],
        "technical": [
            lookup_customer_tool(services),
            check_service_status_tool(),
            restart_sync_tool(),
            email.declaration(),
            *common,
        ],
        "accounts": [
            lookup_customer_tool(services),
            delete_account_tool(services).always_require(services),
            *common,
        ],
    }
    return {
        name: Agent(
            services.chat_clients.for_persona(name),
            INSTRUCTIONS[name],
            name=name,
            description=DESCRIPTIONS[name],
            tools=list(tools[name]),
            middleware=services.transcript.middleware(name),
            require_per_service_call_history_persistence=True,
        )
        for name in ("triage", *SPECIALISTS)
    }


def support_adapters(services: RunServices) -> list[RequestAdapter]:
    """Every human channel the support agents have, as request adapters."""
    email = send_email_tool(services)
    draft = Draft(
        name=email.name,
        description=email.description,
        arguments=EmailArguments,
        content_field="body",
        send=email,
    )
    return [
        UserTurns(services, team=CUSTOMER_TEAM),
        HostCalls(
            [
                PolicyGate(services, refund_gate(services)),
                AskHuman(services, team=CUSTOMER_TEAM),
                ReviewDraft(services, draft, team=CUSTOMER_TEAM),
                CloseCase(),
            ]
        ),
        ToolApprovals(services, [delete_account_tool(services)]),
    ]
