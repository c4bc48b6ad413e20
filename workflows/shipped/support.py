"""`support`: a triage agent hands the ticket to billing, technical or accounts (MAF handoffs).

The conversation is MAF's `HandoffBuilder` orchestration; Baton adds the people. When an agent
replies to the customer and waits, the customer's team gets a `question` (or a `takeover`, when
the policy's takeover rules hold); a refund goes through the refund policy; a written reply is a
`review`; deleting an account is an `approval_mode="always_require"` tool. A run ends when an
agent calls `close_case` or a person resolves a takeover: its output is the resolution.

Each run is its own workflow instance named `support-<run id>`, the same on every rebuild in any
process. The handoff's user-input request answers with `list[Message]` (a `types.GenericAlias`);
registration finds that, and allow-lists `types:GenericAlias` for its checkpoints.
"""

from __future__ import annotations

from agent_framework import Workflow
from agent_framework_orchestrations import HandoffBuilder

from baton.api import RunServices, register
from executors.shipped.support_desk import (
    SPECIALISTS,
    CaseOutcome,
    SupportInput,
    customer_card,
    opening,
    support_adapters,
    support_agents,
)

NAME = "support"


@register(
    NAME,
    input_model=SupportInput,
    adapters=support_adapters,
    start_message=opening,
    case_context=customer_card,
    party="customer",
    outcome=CaseOutcome,
    reuse=True,
)
def build_workflow(services: RunServices) -> Workflow:
    """Customer support: triage hands the ticket to billing, technical or accounts specialists."""
    agents = support_agents(services)
    triage = agents["triage"]
    specialists = [agents[name] for name in SPECIALISTS]
    builder = HandoffBuilder(
        name=NAME,
        participants=list(agents.values()),
        description="Customer support on handoffs",
    ).with_start_agent(triage)
    builder.add_handoff(triage, specialists)
    for specialist in specialists:
        builder.add_handoff(specialist, [triage])
    return builder.build()
