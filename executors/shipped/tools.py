"""The shipped agents' tools: look-ups and gated side effects on the back office, with a key."""

from __future__ import annotations

import functools
from typing import Any

from agent_framework import FunctionTool
from pydantic import BaseModel, ConfigDict, Field

from baton.api import Decision, EditedCall, GatedTool, Resources, RunServices, invariant, schema_of
from executors.shipped.back_office import BackOffice


async def office(services: RunServices) -> BackOffice:
    """The back office, opened once per process on Baton's database."""
    return await services.resources.get(BackOffice.open)


class RefundArguments(BaseModel):
    """Arguments of `issue_refund`."""

    model_config = ConfigDict(extra="forbid")

    order_id: str = Field(description="The order to refund, e.g. A-1001.", min_length=1)
    amount: float = Field(
        description="Amount to refund, in the order's currency.",
        gt=0,
        # shown as money, in the currency of the order the request's context holds
        json_schema_extra={"format": "money", "x-currency": "{order.currency}"},
    )


async def refund_problem(back_office: BackOffice, order_id: str, amount: Any) -> str | None:
    """Why a refund of `amount` on `order_id` cannot be, or None: no such order, over its total."""
    order = await back_office.get_order(order_id)
    if order is None:
        return f"there is no order {order_id}"
    total = float(order["total"])
    if isinstance(amount, int | float) and amount > total:
        return f"{amount:.2f} is more than order {order_id}'s total of {total:.2f}"
    return None


@invariant("refund.within_order")
async def refund_within_order(call: EditedCall, resources: Resources) -> str | None:
    """An edited refund is of an order that exists, for no more than its total."""
    back_office = await resources.get(BackOffice.open)
    return await refund_problem(
        back_office, str(call.after.get("order_id")), call.after.get("amount")
    )


@invariant("refund.same_customer")
async def refund_same_customer(call: EditedCall, resources: Resources) -> str | None:
    """An edited refund goes to the case's customer: the order is one of theirs.

    The case's customer is the run's (`customer_id` of a support ticket, the `customer` the refund
    desk found), else the customer of the order the agent proposed.
    """
    back_office = await resources.get(BackOffice.open)
    order_id = str(call.after.get("order_id"))
    order = await back_office.get_order(order_id)
    if order is None:
        return f"there is no order {order_id}"
    customer = call.run_input.get("customer_id") or call.context.get("customer")
    if not customer:
        proposed = await back_office.get_order(str(call.before.get("order_id")))
        customer = proposed and proposed["customer"]
    if order["customer"] != customer:
        owner = order["customer"]
        return f"order {order_id} belongs to {owner}, not to this case's customer {customer}"
    return None


class LookupArguments(BaseModel):
    """Arguments of `lookup_order`."""

    order_id: str = Field(description="The order id, e.g. A-1001")


def lookup_order_tool(services: RunServices) -> FunctionTool:
    """`lookup_order`: the order's customer and total from the back office (one per process)."""
    return services.resources.shared(_lookup_order_tool)


def _lookup_order_tool(resources: Resources) -> FunctionTool:
    async def lookup_order(order_id: str) -> dict[str, Any]:
        order = await (await resources.get(BackOffice.open)).get_order(order_id)
        return order if order is not None else {"error": f"no order {order_id}"}

    return FunctionTool(
        name="lookup_order",
        description="Look up an order by id: customer, total, currency.",
        func=lookup_order,
        input_model=LookupArguments,
    )


def issue_refund_tool(services: RunServices) -> GatedTool:
    """`issue_refund`: money leaves; the back office dedupes on the idempotency key."""
    return services.resources.shared(issue_refund_of)


def issue_refund_of(resources: Resources) -> GatedTool:
    """`issue_refund` on a process's back office (`issue_refund_tool` shares one per process)."""

    async def perform(key: str, arguments: BaseModel) -> dict[str, Any]:
        args = RefundArguments.model_validate(arguments.model_dump())
        return await (await resources.get(BackOffice.open)).issue_refund(
            idempotency_key=key, order_id=args.order_id, amount=args.amount
        )

    async def refuse(arguments: BaseModel) -> str | None:
        args = RefundArguments.model_validate(arguments.model_dump())
        return await refund_problem(
            await resources.get(BackOffice.open), args.order_id, args.amount
        )

    return GatedTool(
        name="issue_refund",
        description="Refund part or all of an order to the customer.",
        arguments=RefundArguments,
        perform=perform,
        refuse=refuse,
    )


# the support demo's tools ---------------------------------------------------------------------


class CustomerArguments(BaseModel):
    """Arguments of `lookup_customer`."""

    customer_id: str = Field(description="The customer's id, e.g. customer-02.")


class DeleteAccountArguments(BaseModel):
    """Arguments of `delete_account`."""

    model_config = ConfigDict(extra="forbid")

    customer_id: str = Field(description="The customer whose account to delete.", min_length=1)
    reason: str = Field("", description="Why the account is deleted.")


class EmailArguments(BaseModel):
    """Arguments of `email_customer`."""

    model_config = ConfigDict(extra="forbid")

    customer_id: str = Field(description="The customer to write to.", min_length=1)
    subject: str = Field(description="Subject line.", min_length=1)
    body: str = Field(
        description="The message, as the customer will read it.",
        min_length=1,
        json_schema_extra={"format": "textarea"},
    )


class ServiceArguments(BaseModel):
    """Arguments of `check_service_status`."""

    service: str = Field(description="The service: photos, sync, login or billing.")


class ConfidenceArguments(BaseModel):
    """Arguments of `report_confidence`."""

    confidence: float = Field(ge=0, le=1, description="0 (no idea) to 1 (certain).")
    reason: str = Field("", description="Why, in a few words.")


class AskArguments(BaseModel):
    """Arguments of `ask_human`."""

    question: str = Field(description="The question for a person on the support team.")
    options: list[str] = Field(default_factory=list, description="Answers to choose from, if any.")


class CloseArguments(BaseModel):
    """Arguments of `close_case`."""

    resolution: str = Field(description="What was done for the customer, in one or two sentences.")


SERVICE_STATUS: dict[str, dict[str, Any]] = {
    "photos": {
        "status": "degraded",
        "known_issue": "Photo uploads over 20 MB make the app close; a fix ships this week.",
        "workaround": "Upload photos under 20 MB, or use the web app.",
    },
    "sync": {"status": "down", "known_issue": "The sync service fails to restart."},
    "login": {"status": "ok"},
    "billing": {"status": "ok"},
}


def lookup_customer_tool(services: RunServices) -> FunctionTool:
    """`lookup_customer`: the customer's name, email, status and orders (one per process)."""
    return services.resources.shared(_lookup_customer_tool)


def _lookup_customer_tool(resources: Resources) -> FunctionTool:
    async def lookup_customer(customer_id: str) -> dict[str, Any]:
        customer = await (await resources.get(BackOffice.open)).get_customer(customer_id)
        return customer if customer is not None else {"error": f"no customer {customer_id}"}

    return FunctionTool(
        name="lookup_customer",
        description="Look up a customer by id: name, email, account status, order ids.",
        func=lookup_customer,
        input_model=CustomerArguments,
    )


@functools.cache  # one per process, like a module-level `@tool`
def check_service_status_tool() -> FunctionTool:
    """`check_service_status`: known issues of a service (demo data)."""

    async def check_service_status(service: str) -> dict[str, Any]:
        return {"service": service, **SERVICE_STATUS.get(service, {"status": "unknown"})}

    return FunctionTool(
        name="check_service_status",
        description="Known issues and workarounds of one of our services.",
        func=check_service_status,
        input_model=ServiceArguments,
    )


@functools.cache  # one per process, like a module-level `@tool`
def restart_sync_tool() -> FunctionTool:
    """`restart_sync`: tries to restart a customer's sync; in the demo the sync service is down."""

    async def restart_sync(customer_id: str) -> dict[str, Any]:
        return {
            "ok": False,
            "customer_id": customer_id,
            "error": "the sync service did not restart",
        }

    return FunctionTool(
        name="restart_sync",
        description="Restart the file sync of a customer. Says whether it worked.",
        func=restart_sync,
        input_model=CustomerArguments,
    )


@functools.cache  # one per process, like a module-level `@tool`
def report_confidence_tool() -> FunctionTool:
    """`report_confidence`: the agent says how sure it is; the policy reads it as run state."""

    async def report_confidence(confidence: float, reason: str = "") -> str:
        return "noted"

    return FunctionTool(
        name="report_confidence",
        description=(
            "Report how confident you are (0 to 1) that you can solve the customer's problem. "
            "Call it whenever you are unsure; a low confidence brings in a person."
        ),
        func=report_confidence,
        input_model=ConfidenceArguments,
    )


def declared(name: str, description: str, arguments: type[BaseModel]) -> FunctionTool:
    """A tool the model may call that Baton, not MAF, carries out (declaration only)."""
    return FunctionTool(
        name=name, description=description, func=None, input_model=schema_of(arguments)
    )


@functools.cache  # one per process, like a module-level `@tool`
def ask_human_tool() -> FunctionTool:
    """`ask_human`: a question to a person on the team; their answer is the tool's result."""
    return declared(
        "ask_human",
        "Ask a person on the support team a question (with options to choose from, if any). "
        "Their answer comes back as this tool's result.",
        AskArguments,
    )


@functools.cache  # one per process, like a module-level `@tool`
def close_case_tool() -> FunctionTool:
    """`close_case`: the agent resolved the case; the run ends with the resolution."""
    return declared(
        "close_case",
        "Close the case once the customer's problem is solved (or cannot be), with the resolution.",
        CloseArguments,
    )


def delete_account_tool(services: RunServices) -> GatedTool:
    """`delete_account`: the account is closed; the back office dedupes on the idempotency key."""
    return services.resources.shared(_delete_account_tool)


def _delete_account_tool(resources: Resources) -> GatedTool:
    async def perform(key: str, arguments: BaseModel) -> dict[str, Any]:
        args = DeleteAccountArguments.model_validate(arguments.model_dump())
        return await (await resources.get(BackOffice.open)).close_account(
            idempotency_key=key, customer_id=args.customer_id
        )

    async def refuse(arguments: BaseModel) -> str | None:
        args = DeleteAccountArguments.model_validate(arguments.model_dump())
        customer = await (await resources.get(BackOffice.open)).get_customer(args.customer_id)
        if customer is None:
            return f"there is no customer {args.customer_id}"
        return None

    def describe(arguments: dict[str, Any], decision: Decision) -> tuple[str, str]:
        return (
            f"Delete the account of {arguments.get('customer_id')}",
            f"Deleting an account needs approval by {decision.team} (policy rule "
            f"{decision.rule_id}). Reason given: {arguments.get('reason') or 'none'}",
        )

    return GatedTool(
        name="delete_account",
        description="Delete (close) a customer's account. Cannot be undone.",
        arguments=DeleteAccountArguments,
        perform=perform,
        refuse=refuse,
        describe=describe,
    )


def send_email_tool(services: RunServices) -> GatedTool:
    """Sending an email to a customer: the mail system dedupes on the idempotency key."""
    return services.resources.shared(_send_email_tool)


def _send_email_tool(resources: Resources) -> GatedTool:
    async def perform(key: str, arguments: BaseModel) -> dict[str, Any]:
        args = EmailArguments.model_validate(arguments.model_dump())
        return await (await resources.get(BackOffice.open)).send_message(
            idempotency_key=key, customer_id=args.customer_id, subject=args.subject, body=args.body
        )

    return GatedTool(
        name="email_customer",
        description=(
            "Email the customer a written answer. A person reviews the draft before it is sent."
        ),
        arguments=EmailArguments,
        perform=perform,
    )


def describe_refund(arguments: dict[str, Any], decision: Decision) -> tuple[str, str]:
    """Title and reason of a refund approval."""
    amount = float(arguments.get("amount", 0))
    who = (
        f"{decision.approvals_required} approvers from " if decision.approvals_required > 1 else ""
    )
    return (
        f"Refund {amount:.2f} on order {arguments.get('order_id')}",
        f"Refunds of this size need approval by {who}{decision.team} "
        f"(policy rule {decision.rule_id}).",
    )
