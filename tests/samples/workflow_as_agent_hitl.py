# Copyright (c) Microsoft. All rights reserved.

import asyncio
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from azure.identity import AzureCliCredential
from dotenv import load_dotenv

from agent_framework import (  # noqa: E402
    Content,
    Executor,
    Message,
    WorkflowAgent,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)
from tests.samples.workflow_as_agent_reflection_pattern import (  # noqa: E402
    ReviewRequest,
    ReviewResponse,
    Worker,
)

"""
Sample: Workflow Agent with Human-in-the-Loop

Purpose:
This sample demonstrates how to build a workflow agent that escalates uncertain
decisions to a human manager. A Worker generates results, while a Reviewer
evaluates them. When the Reviewer is not confident, it escalates the decision
to a human, receives the human response, and then forwards that response back
to the Worker. The workflow completes when idle.

Prerequisites:
- FOUNDRY_PROJECT_ENDPOINT must be your Microsoft Foundry Agent Service (V2) project endpoint.
- FOUNDRY_MODEL must be set to your Azure OpenAI model deployment name.
- Familiarity with WorkflowBuilder, Executor, and WorkflowContext from agent_framework.
- Understanding of request-response message handling in executors.
- (Optional) Review of reflection and escalation patterns, such as those in
  workflow_as_agent_reflection.py.
"""

# Load environment variables from .env file
load_dotenv()


@dataclass
class HumanReviewRequest:
    """A request message type for escalation to a human reviewer."""

    agent_request: ReviewRequest | None = None


class ReviewerWithHumanInTheLoop(Executor):
    """Executor that always escalates reviews to a human manager."""

    def __init__(self, worker_id: str, reviewer_id: str | None = None) -> None:
        unique_id = reviewer_id or f"{worker_id}-reviewer"
        super().__init__(id=unique_id)
        self._worker_id = worker_id

    @handler
    async def review(self, request: ReviewRequest, ctx: WorkflowContext) -> None:
        # In this simplified example, we always escalate to a human manager.
        # See workflow_as_agent_reflection.py for an implementation
        # using an automated agent to make the review decision.
        print(f"Reviewer: Evaluating response for request {request.request_id[:8]}...")
        print("Reviewer: Escalating to human manager...")

        # Forward the request to a human manager by sending a HumanReviewRequest.
        await ctx.request_info(request_data=HumanReviewRequest(agent_request=request), response_type=ReviewResponse)

    @response_handler
    async def accept_human_review(
        self,
        original_request: HumanReviewRequest,
        response: ReviewResponse,
        ctx: WorkflowContext[ReviewResponse],
    ) -> None:
        # Accept the human review response and forward it back to the Worker.
        print(f"Reviewer: Accepting human review for request {response.request_id[:8]}...")
        print(f"Reviewer: Human feedback: {response.feedback}")
        print(f"Reviewer: Human approved: {response.approved}")
        print("Reviewer: Forwarding human review back to worker...")
        await ctx.send_message(response, target_id=self._worker_id)


# --- Baton: the registration (the sample's `main()` above it is left out, with its Foundry ------
# --- import: the worker is built as `main()` builds it, on the model Baton is configured with) ---

from agent_framework import WorkflowAgent  # noqa: E402
from baton.api import RunServices, register, scripted_plays  # noqa: E402
from pydantic import BaseModel  # noqa: E402


def _play(messages: list[Message], options: dict) -> list[Content]:
    """The scripted model's turn for the worker (BATON_MODEL=scripted): a draft, then one for each
    review sent back, with the feedback it was given (the system messages after the first)."""
    drafts = sum(1 for m in messages if m.role == "assistant")
    notes = [m.text for m in messages[1:] if m.role == "system" and not m.text.startswith("Please")]
    text = f"Draft {drafts + 1}: read the files in parallel, sort each chunk, merge into one file."
    return [Content.from_text(text + "".join(f" [{note}]" for note in notes))]


scripted_plays({"reflection-worker": _play})


class Query(BaseModel):
    """The run's input: what `main()` asks the workflow agent, unless another query is given."""

    text: str = "Write code for parallel reading 1 million Files on disk and write to a sorted output file."


@register(
    "workflow_as_agent_hitl",
    input_model=Query,
    start_message=lambda query: [Message("user", [query.text])],
)
def build_workflow(services: RunServices) -> WorkflowAgent:
    """The sample's `main()`, as far as it builds the agent (Baton drives the workflow it runs)."""
    worker = Worker(
        id="worker",
        client=services.chat_clients.for_persona("reflection-worker"),
    )
    reviewer = ReviewerWithHumanInTheLoop(worker_id="worker")

    return WorkflowBuilder(start_executor=worker).add_edge(worker, reviewer).add_edge(reviewer, worker).build().as_agent()
