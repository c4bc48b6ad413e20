"""The demo's tools: order lookup (read-only) and refunds (a gated side effect with a key)."""

from __future__ import annotations

from typing import Any

from agent_framework import FunctionTool
from pydantic import BaseModel, ConfigDict, Field

from executors.services import RunServices
from executors.tool_gate import GatedTool


class RefundArguments(BaseModel):
    """Arguments of `issue_refund`."""

    model_config = ConfigDict(extra="forbid")

    order_id: str = Field(description="The order to refund, e.g. A-1001.", min_length=1)
    amount: float = Field(description="Amount to refund, in the order's currency.", gt=0)


class LookupArguments(BaseModel):
    """Arguments of `lookup_order`."""

    order_id: str = Field(description="The order id, e.g. A-1001")


def lookup_order_tool(services: RunServices) -> FunctionTool:
    """`lookup_order`: the order's customer and total from the back office.

    Built on every drive, so its argument model is declared once here rather than inferred from
    a signature each time.
    """

    async def lookup_order(order_id: str) -> dict[str, Any]:
        order = await services.back_office.get_order(order_id)
        return order if order is not None else {"error": f"no order {order_id}"}

    return FunctionTool(
        name="lookup_order",
        description="Look up an order by id: customer, total, currency.",
        func=lookup_order,
        input_model=LookupArguments,
    )


def issue_refund_tool(services: RunServices) -> GatedTool:
    """`issue_refund`: money leaves; the back office dedupes on the idempotency key."""

    async def perform(key: str, arguments: BaseModel) -> dict[str, Any]:
        args = RefundArguments.model_validate(arguments.model_dump())
        return await services.back_office.issue_refund(
            idempotency_key=key, order_id=args.order_id, amount=args.amount
        )

    async def refuse(arguments: BaseModel) -> str | None:
        args = RefundArguments.model_validate(arguments.model_dump())
        order = await services.back_office.get_order(args.order_id)
        if order is None:
            return f"there is no order {args.order_id}"
        if args.amount > float(order["total"]):
            total = float(order["total"])
            return f"{args.amount:.2f} is more than order {args.order_id}'s total of {total:.2f}"
        return None

    return GatedTool(
        name="issue_refund",
        description="Refund part or all of an order to the customer.",
        arguments=RefundArguments,
        perform=perform,
        refuse=refuse,
    )
