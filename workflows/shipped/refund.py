"""`refund`: a refund agent proposes `issue_refund`; policy decides auto, one or two approvals."""

from __future__ import annotations

from agent_framework import Workflow, WorkflowBuilder

from baton.api import RunServices, register
from executors.shipped.refund_desk import RefundDesk, RefundInput

NAME = "refund"


@register(NAME, input_model=RefundInput, reuse=True)
def build_workflow(services: RunServices) -> Workflow:
    """Refund part of an order: auto under 50, support-leads from 50, two of finance from 1000."""
    return WorkflowBuilder(name=NAME, start_executor=RefundDesk(services)).build()
