# Copyright (c) Microsoft. All rights reserved.

"""MAF's `handoff_with_tool_approval_checkpoint_resume.py`, as MAF wrote it.

MAF's `03-workflows/orchestrations/handoff_with_tool_approval_checkpoint_resume.py` at
agent-framework 5eb3eb745, less its `main()`, its two request-printing helpers, its Foundry
client (`create_workflow` takes the client instead of making one: `# Baton:`) and its
`load_dotenv()`; its `CHECKPOINT_DIR`, which `main()` alone reads, is under the temp dir rather
than beside the sample (Baton does not use a builder's checkpoint storage: it keeps the
checkpoint a pause needs in its own store). A handoff (triage, refund and order agents, all of
them on one client) that ends after the customer's fifth message, its refund agent's
`submit_refund` needing approval. The workflow is built as `main()` builds it,
`create_workflow(checkpoint_storage=storage)`, on the model Baton is configured with; the
customer's replies are `main()`'s. On the scripted model the refund agent says what became of
the refund, so a person's rejection changes what the customer is told.
"""

import json
import tempfile
from pathlib import Path
from typing import Any

from agent_framework import (
    Agent,
    Content,
    FileCheckpointStorage,
    Workflow,
    tool,
)
from agent_framework.orchestrations import HandoffBuilder

"""
Sample: Handoff Workflow with Tool Approvals + Checkpoint Resume

Demonstrates resuming a handoff workflow from a checkpoint while handling both
HandoffAgentUserRequest prompts and function approval request Content for tool calls
(e.g., submit_refund).

Scenario:
1. User starts a conversation with the workflow.
2. Agents may emit user input requests or tool approval requests.
3. Workflow writes a checkpoint capturing pending requests and pauses.
4. Process can exit/restart.
5. On resume: Restore checkpoint, inspect pending requests, then provide responses.
6. Workflow continues from the saved state.

Pattern:
- workflow.run(checkpoint_id=..., stream=True) to restore checkpoint and discover pending requests.
- workflow.run(stream=True, responses=responses) to supply human replies and approvals.
  (Two steps are needed here because the sample must inspect request types before building responses.
  When response payloads are already known, use the single-call form:
  workflow.run(stream=True, checkpoint_id=..., responses=responses).)

Prerequisites:
- FOUNDRY_PROJECT_ENDPOINT must be your Microsoft Foundry Agent Service (V2) project endpoint.
- FOUNDRY_MODEL must be set to your Azure OpenAI model deployment name.
- Azure CLI authentication (az login).
"""  # noqa: E501

CHECKPOINT_DIR = Path(tempfile.gettempdir()) / "handoff_checkpoints"  # Baton: the temp dir
CHECKPOINT_DIR.mkdir(parents=True, exist_ok=True)


@tool(approval_mode="always_require")
def submit_refund(refund_description: str, amount: str, order_id: str) -> str:
    """Capture a refund request for manual review before processing."""
    return f"refund recorded for order {order_id} (amount: {amount}) with details: {refund_description}"  # noqa: E501


def create_agents(client: Any) -> tuple[Agent, Agent, Agent]:  # Baton: `client` of any model
    """Create a simple handoff scenario: triage, refund, and order specialists."""

    triage = Agent(
        client=client,
        name="triage_agent",
        instructions=(
            "You are a customer service triage agent. Listen to customer issues and determine "
            "if they need refund help or order tracking. Use handoff_to_refund_agent or "
            "handoff_to_order_agent to transfer them."
        ),
        require_per_service_call_history_persistence=True,
    )

    refund = Agent(
        client=client,
        name="refund_agent",
        instructions=(
            "You are a refund specialist. Help customers with refund requests. "
            "Be empathetic and ask for order numbers if not provided. "
            "When the user confirms they want a refund and supplies order details, call submit_refund "  # noqa: E501
            "to record the request before continuing."
        ),
        tools=[submit_refund],
        require_per_service_call_history_persistence=True,
    )

    order = Agent(
        client=client,
        name="order_agent",
        instructions=(
            "You are an order tracking specialist. Help customers track their orders. "
            "Ask for order numbers and provide shipping updates."
        ),
        require_per_service_call_history_persistence=True,
    )

    return triage, refund, order


# Baton: `client` passed in
def create_workflow(checkpoint_storage: FileCheckpointStorage, client: Any) -> Workflow:
    """Build the handoff workflow with checkpointing enabled."""

    triage, refund, order = create_agents(client)

    # checkpoint_storage: Enable checkpointing for resume
    # termination_condition: Terminate after 5 user messages for this demo
    return (
        HandoffBuilder(
            name="checkpoint_handoff_demo",
            participants=[triage, refund, order],
            checkpoint_storage=checkpoint_storage,
            termination_condition=lambda conv: sum(1 for msg in conv if msg.role == "user") >= 5,
        )
        .with_start_agent(triage)
        .build()
    )


# --- Baton: the registration (the sample's `main()` and its printing are left out, with its ------
# --- Foundry client: the workflow is built as `main()` builds it, on Baton's model) --------------

import re  # noqa: E402
from collections.abc import Sequence  # noqa: E402

from agent_framework import Message  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from baton.api import RunServices, register, scripted_plays  # noqa: E402

PERSONA = "handoff-approval-resume"


class Request(BaseModel):
    message: str


@register("handoff_approval_resume", input_model=Request, start_message=lambda r: r.message)
def build_workflow(services: RunServices) -> Workflow:
    """`main()`'s `create_workflow(checkpoint_storage=storage)`, its storage under the temp dir."""
    storage = FileCheckpointStorage(storage_path=CHECKPOINT_DIR)
    return create_workflow(
        checkpoint_storage=storage, client=services.chat_clients.for_persona(PERSONA)
    )


def _play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """The scripted model's turns for the three agents (told apart by their instructions).

    Triage hands the customer to refunds; the refund agent asks what was paid, submits the
    refund, says what became of it and, once the customer agrees, hands them to the order agent
    for the replacement, which says it ships and then signs off.
    """
    who = str(options.get("instructions", ""))
    said = [m.text for m in messages if m.role == "user" and m.text]
    results = [str(c.result) for m in messages for c in m.contents if c.type == "function_result"]
    if "triage agent" in who:
        return [
            Content.from_function_call("call-triage", "handoff_to_refund_agent", arguments="{}")
        ]
    if "order tracking" in who:
        if said and said[-1].startswith("Yes"):
            return [Content.from_text("A replacement for order 12345 ships to your address.")]
        return [Content.from_text("You're welcome: the order team has it from here.")]
    amount = next((m.group(0) for s in said for m in [re.search(r"\$\d+\.\d\d", s)] if m), None)
    if amount is None:
        return [
            Content.from_text(
                "I'm sorry order 12345 arrived damaged. What did you pay for it, "
                "and should we replace it as well?"
            )
        ]
    if not results:
        arguments = {
            "refund_description": "headphones arrived cracked",
            "amount": amount,
            "order_id": "12345",
        }
        call = Content.from_function_call(
            "call-refund", "submit_refund", arguments=json.dumps(arguments)
        )
        return [call]
    if said[-1].startswith("Yes"):
        return [Content.from_function_call("call-order", "handoff_to_order_agent", arguments="{}")]
    return [Content.from_text(f"Refund: {results[-1].rstrip('.')}. Does that cover it?")]


scripted_plays({PERSONA: _play})
