"""`purchase`: legal and finance approve at once (deadlines escalate to managers), then a review."""

from __future__ import annotations

from agent_framework import Workflow, WorkflowBuilder

from baton.api import RunServices, register
from executors.shipped.purchase_desk import (
    APPROVERS,
    ApprovalDesk,
    OrderDesk,
    PurchaseInput,
    PurchaseIntake,
    PurchaseTerms,
)

NAME = "purchase"


@register(NAME, input_model=PurchaseInput, checkpoint_types=(PurchaseTerms,), reuse=True)
def build_workflow(services: RunServices) -> Workflow:
    """Buy something: legal and finance approve in parallel, then finance reviews the order."""
    intake = PurchaseIntake(id="intake")
    desks = [ApprovalDesk(team) for team in APPROVERS]
    orders = OrderDesk()
    return (
        WorkflowBuilder(name=NAME, start_executor=intake)
        .add_fan_out_edges(intake, desks)
        .add_fan_in_edges(desks, orders)
        .build()
    )
