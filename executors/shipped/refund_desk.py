"""The refund agent: looks the order up, proposes `issue_refund`, reports the outcome."""

from __future__ import annotations

import json
from typing import Any, Never

from agent_framework import Agent, WorkflowContext, handler
from pydantic import BaseModel, Field

from baton.api import Decision, RunServices, ToolGateAgent
from executors.shipped import plays  # noqa: F401  (the scripted model's plays for these agents)
from executors.shipped.tools import issue_refund_tool, lookup_order_tool, office

INSTRUCTIONS = (
    "You handle refund requests. Look the order up with lookup_order, then call issue_refund "
    "with the order id and the amount asked for, unless the order does not exist or the amount "
    "exceeds its total. Finally tell what was refunded, or why nothing was."
)


class RefundInput(BaseModel):
    """Input of the `refund` workflow."""

    order_id: str = Field(min_length=1, description="Order to refund, e.g. A-1005")
    amount: float = Field(
        gt=0, description="Amount to refund", json_schema_extra={"format": "money"}
    )
    reason: str = Field(
        min_length=1,
        description="Why the customer wants a refund",
        json_schema_extra={"format": "textarea"},
    )


class RefundDesk(ToolGateAgent):
    """The refund agent under the refund policy."""

    def __init__(self, services: RunServices, *, id: str = "refund_agent") -> None:
        agent = Agent(
            services.chat_clients.for_persona("refund"),
            INSTRUCTIONS,
            name="refund",
            tools=[lookup_order_tool(services), issue_refund_tool(services).declaration()],
            middleware=services.transcript.middleware("refund"),
        )
        super().__init__(id=id, agent=agent, tools=[issue_refund_tool(services)], services=services)

    @handler
    async def on_refund_input(
        self, message: RefundInput, ctx: WorkflowContext[Never, dict[str, Any]]
    ) -> None:
        """Start on a refund request."""
        context = {"order_id": message.order_id, "amount": message.amount, "reason": message.reason}
        order = await (await office(self._services)).get_order(message.order_id)
        if order is not None:
            context["customer"] = order["customer"]
            context["order"] = order
        await self.begin(f"Refund request: {json.dumps(message.model_dump())}", context, ctx)

    def describe(self, tool: str, arguments: dict[str, Any], decision: Decision) -> tuple[str, str]:
        """Word the approval for a refund."""
        amount = float(arguments.get("amount", 0))
        who = (
            f"{decision.approvals_required} approvers from "
            if decision.approvals_required > 1
            else ""
        )
        return (
            f"Refund {amount:.2f} on order {arguments.get('order_id')}",
            f"Refunds of this size need approval by {who}{decision.team} "
            f"(policy rule {decision.rule_id}). Customer's reason: {self._context.get('reason')}",
        )
