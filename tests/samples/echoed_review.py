"""An answer that repeats its request's id: MAF's `workflow_as_agent_human_in_the_loop.py` shape.

The worker sends its draft for review as a `ReviewRequest` with a fresh `request_id` and keeps
it pending by that id; the reviewer asks a person with a `HumanReviewRequest` holding the
`ReviewRequest`, for a `ReviewResponse` that must repeat the `request_id` (the worker refuses a
review of an id it does not know). The person gives only the verdict: Baton fills the id in from
the request (`human.answer_schema.echoed`). The worker keeps its pending reviews in a plain
attribute, as MAF's sample does (Baton carries it across the restore).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Never
from uuid import uuid4

from agent_framework import Executor, WorkflowBuilder, WorkflowContext, handler, response_handler
from pydantic import BaseModel

from baton.api import RunServices, register


@dataclass
class ReviewRequest:
    request_id: str
    draft: str


@dataclass
class ReviewResponse:
    request_id: str
    feedback: str
    approved: bool


@dataclass
class HumanReviewRequest:
    """A review the reviewer is not sure of: a person decides."""

    agent_request: ReviewRequest | None = None


class Worker(Executor):
    def __init__(self, id: str) -> None:
        super().__init__(id=id)
        self._pending_requests: dict[str, ReviewRequest] = {}

    @handler
    async def write(self, task: str, ctx: WorkflowContext[ReviewRequest]) -> None:
        request = ReviewRequest(request_id=str(uuid4()), draft=f"Draft: {task}")
        self._pending_requests[request.request_id] = request
        await ctx.send_message(request)

    @handler
    async def reviewed(self, review: ReviewResponse, ctx: WorkflowContext[Never, str]) -> None:
        if review.request_id not in self._pending_requests:
            raise ValueError(f"Unknown request ID in review: {review.request_id}")
        request = self._pending_requests.pop(review.request_id)
        verdict = "approved" if review.approved else "sent back"
        await ctx.yield_output(f"{request.draft} {verdict}: {review.feedback}")


class Reviewer(Executor):
    def __init__(self, worker_id: str) -> None:
        super().__init__(id="reviewer")
        self._worker_id = worker_id

    @handler
    async def review(self, request: ReviewRequest, ctx: WorkflowContext) -> None:
        await ctx.request_info(
            request_data=HumanReviewRequest(agent_request=request), response_type=ReviewResponse
        )

    @response_handler
    async def accept_human_review(
        self,
        original_request: HumanReviewRequest,
        response: ReviewResponse,
        ctx: WorkflowContext[ReviewResponse],
    ) -> None:
        await ctx.send_message(response, target_id=self._worker_id)


class Task(BaseModel):
    task: str = "parallel file reading"


@register("echoed_review", input_model=Task, start_message=lambda given: given.task)
def build_workflow(services: RunServices) -> object:
    worker = Worker(id="worker")
    reviewer = Reviewer(worker_id="worker")
    return (
        WorkflowBuilder(start_executor=worker)
        .add_edge(worker, reviewer)
        .add_edge(reviewer, worker)
        .build()
    )
