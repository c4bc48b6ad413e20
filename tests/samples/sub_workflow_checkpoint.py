# mypy: disable-error-code="unused-ignore"
# ruff: noqa: T201, DTZ005
"""MAF's `03-workflows/checkpoint/sub_workflow_checkpoint.py`, as MAF wrote it.

At agent-framework 5eb3eb745, less its `main()` (its three stages, its printing, and the imports
only it uses: `asyncio`, `json`, `WorkflowEvent`, `WorkflowRunState`): a parent workflow whose
coordinator hands a topic to a sub-workflow (`WorkflowExecutor`) that drafts a launch plan and
asks a person to review it; the coordinator intercepts the sub-workflow's request, keeps it in its
own state (`_pending_requests`, saved by `on_checkpoint_save`: a lost one fails the run with
"No matching pending request found"), asks it again itself and routes the answer back. Anything
but "approve" sends the draft round again, one iteration up. Its builder calls
`build_parent_workflow` as `main()` does, with a `FileCheckpointStorage` under the temp dir
(`STORAGE_DIR`), which Baton leaves unused (it keeps the checkpoint of each pause in its own
store). Its output, a `FinalDraft`, holds the time of the approval (`approved_at`).

On MAF alone its storage, given no `allowed_checkpoint_types`, saves only the checkpoint taken
before the first superstep (the sample's `DraftTask`, `ReviewRequest` and `FinalDraft` are not
allow-listed: MAF logs "Failed to create checkpoint"), so `main()`'s stage 2 restores that one and
runs the workflow again from the topic; restored at each pause with those types allowed (as Baton
allows every type its executors take, send, ask and are answered), it ends as on Baton.
"""

import contextlib
import sys
import tempfile
import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from agent_framework import (
    Executor,
    FileCheckpointStorage,
    SubWorkflowRequestMessage,
    SubWorkflowResponseMessage,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowExecutor,
    handler,
    response_handler,
)
from pydantic import BaseModel

from baton.api import RunServices, register

if sys.version_info >= (3, 12):
    from typing import override  # type: ignore # pragma: no cover
else:
    from typing_extensions import override  # type: ignore[import] # pragma: no cover

CHECKPOINT_DIR = Path(__file__).with_suffix("").parent / "tmp" / "sub_workflow_checkpoints"

"""
Sample: Checkpointing for workflows that embed sub-workflows.

This sample shows how a parent workflow that wraps a sub-workflow can:
- run until the sub-workflow emits a human approval request
- persist a checkpoint that captures the pending request (including complex payloads)
- resume later, supplying the human decision directly at restore time

It is intentionally similar in spirit to the orchestration checkpoint sample but
uses ``WorkflowExecutor`` so we exercise the full parent/sub-workflow round-trip.
"""


def _utc_now() -> datetime:
    return datetime.now()


# ---------------------------------------------------------------------------
# Messages exchanged inside the sub-workflow
# ---------------------------------------------------------------------------


@dataclass
class DraftTask:
    """Task handed from the parent to the sub-workflow writer."""

    topic: str
    due: datetime
    iteration: int = 1


@dataclass
class DraftPackage:
    """Intermediate draft produced by the sub-workflow writer."""

    topic: str
    content: str
    iteration: int
    created_at: datetime = field(default_factory=_utc_now)


@dataclass
class FinalDraft:
    """Final deliverable returned to the parent workflow."""

    topic: str
    content: str
    iterations: int
    approved_at: datetime


@dataclass
class ReviewRequest:
    """Human approval request surfaced via `request_info`."""

    id: str = str(uuid.uuid4())
    topic: str = ""
    iteration: int = 1
    draft_excerpt: str = ""
    due_iso: str = ""
    reviewer_guidance: list[str] = field(default_factory=list)  # type: ignore


@dataclass
class ReviewDecision:
    """The review decision to be sent to downstream executors along with the original request."""

    decision: str
    original_request: ReviewRequest


# ---------------------------------------------------------------------------
# Sub-workflow executors
# ---------------------------------------------------------------------------


class DraftWriter(Executor):
    """Produces an initial draft for the supplied topic."""

    def __init__(self) -> None:
        super().__init__(id="draft_writer")

    @handler
    async def create_draft(self, task: DraftTask, ctx: WorkflowContext[DraftPackage]) -> None:
        draft = DraftPackage(
            topic=task.topic,
            content=(
                f"Launch plan for {task.topic}.\n\n"
                "- Outline the customer message.\n"
                "- Highlight three differentiators.\n"
                "- Close with a next-step CTA.\n"
                f"(iteration {task.iteration})"
            ),
            iteration=task.iteration,
        )
        await ctx.send_message(draft, target_id="draft_review")


class DraftReviewRouter(Executor):
    """Turns draft packages into human approval requests."""

    def __init__(self) -> None:
        super().__init__(id="draft_review")

    @handler
    async def request_review(self, draft: DraftPackage, ctx: WorkflowContext) -> None:
        """Request a review upon receiving a draft."""
        excerpt = draft.content.splitlines()[0]
        request = ReviewRequest(
            topic=draft.topic,
            iteration=draft.iteration,
            draft_excerpt=excerpt,
            due_iso=draft.created_at.isoformat(),
            reviewer_guidance=[
                "Ensure tone matches launch messaging",
                "Confirm CTA is action-oriented",
            ],
        )
        await ctx.request_info(request_data=request, response_type=str)

    @response_handler
    async def forward_decision(
        self,
        original_request: ReviewRequest,
        decision: str,
        ctx: WorkflowContext[ReviewDecision],
    ) -> None:
        """Route the decision to the next executor."""
        await ctx.send_message(ReviewDecision(decision=decision, original_request=original_request))


class DraftFinaliser(Executor):
    """Applies the human decision and emits the final draft."""

    def __init__(self) -> None:
        super().__init__(id="draft_finaliser")

    @handler
    async def on_review_decision(
        self,
        review_decision: ReviewDecision,
        ctx: WorkflowContext[DraftTask, FinalDraft],
    ) -> None:
        reply = review_decision.decision.strip().lower()
        original = review_decision.original_request
        topic = original.topic if original else "unknown topic"
        iteration = original.iteration if original else 1

        if reply != "approve":
            # Loop back with a follow-up task. In a real workflow you would
            # incorporate the human guidance; here we just increment the counter.
            next_task = DraftTask(
                topic=topic,
                due=_utc_now() + timedelta(hours=1),
                iteration=iteration + 1,
            )
            await ctx.send_message(next_task, target_id="draft_writer")
            return

        final = FinalDraft(
            topic=topic,
            content=f"Approved launch narrative for {topic} (iteration {iteration}).",
            iterations=iteration,
            approved_at=_utc_now(),
        )
        await ctx.yield_output(final)


# ---------------------------------------------------------------------------
# Parent workflow executors
# ---------------------------------------------------------------------------


class LaunchCoordinator(Executor):
    """Owns the top-level workflow and collects the final draft."""

    def __init__(self) -> None:
        super().__init__(id="launch_coordinator")
        # Track pending requests to match responses
        self._pending_requests: dict[str, SubWorkflowRequestMessage] = {}

    @handler
    async def kick_off(self, topic: str, ctx: WorkflowContext[DraftTask]) -> None:
        task = DraftTask(topic=topic, due=_utc_now() + timedelta(hours=2))
        await ctx.send_message(task)

    @handler
    async def collect_final(
        self, draft: FinalDraft, ctx: WorkflowContext[None, FinalDraft]
    ) -> None:
        approved_at = draft.approved_at
        normalised = draft
        if isinstance(approved_at, str):
            with contextlib.suppress(ValueError):
                parsed = datetime.fromisoformat(approved_at)
                normalised = replace(draft, approved_at=parsed)
                approved_at = parsed

        approved_display = (
            approved_at.isoformat() if hasattr(approved_at, "isoformat") else str(approved_at)
        )

        print("\n>>> Parent workflow received approved draft:")
        print(f"- Topic: {normalised.topic}")
        print(f"- Iterations: {normalised.iterations}")
        print(f"- Approved at: {approved_display}")
        print(f"- Content: {normalised.content}\n")

        await ctx.yield_output(normalised)

    @handler
    async def handler_sub_workflow_request(
        self,
        request: SubWorkflowRequestMessage,
        ctx: WorkflowContext,
    ) -> None:
        """Handle requests from the sub-workflow.

        Note that the message type must be SubWorkflowRequestMessage to intercept the request.
        """
        if not isinstance(request.source_event.data, ReviewRequest):
            raise TypeError(f"Expected 'ReviewRequest', got {type(request.source_event.data)}")

        # Record the request for response matching
        review_request = request.source_event.data
        self._pending_requests[review_request.id] = request

        # Send the request without modification
        await ctx.request_info(request_data=review_request, response_type=str)

    @response_handler
    async def handle_request_response(
        self,
        original_request: ReviewRequest,
        response: str,
        ctx: WorkflowContext[SubWorkflowResponseMessage],
    ) -> None:
        """Process the response and send it back to the sub-workflow.

        Note that the response must be sent back using SubWorkflowResponseMessage to route
        the response back to the sub-workflow.
        """
        request_message = self._pending_requests.pop(original_request.id, None)

        if request_message is None:
            raise ValueError("No matching pending request found for the resource response")

        await ctx.send_message(request_message.create_response(response))

    @override
    async def on_checkpoint_save(self) -> dict[str, Any]:
        """Capture any additional state needed for checkpointing."""
        return {
            "pending_requests": self._pending_requests,
        }

    @override
    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        """Restore any additional state needed from checkpointing."""
        self._pending_requests = state.get("pending_requests", {})


# ---------------------------------------------------------------------------
# Workflow construction helpers
# ---------------------------------------------------------------------------


def build_sub_workflow() -> WorkflowExecutor:
    """Assemble the sub-workflow used by the parent workflow executor."""
    writer = DraftWriter()
    router = DraftReviewRouter()
    finaliser = DraftFinaliser()
    sub_workflow = (
        WorkflowBuilder(start_executor=writer)
        .add_edge(writer, router)
        .add_edge(router, finaliser)
        .add_edge(finaliser, writer)  # permits revision loops
        .build()
    )

    return WorkflowExecutor(sub_workflow, id="launch_subworkflow")


def build_parent_workflow(storage: FileCheckpointStorage) -> Workflow:
    """Assemble the parent workflow that embeds the sub-workflow."""
    coordinator = LaunchCoordinator()
    sub_executor = build_sub_workflow()
    return (
        WorkflowBuilder(start_executor=coordinator, checkpoint_storage=storage)
        .add_edge(coordinator, sub_executor)
        .add_edge(sub_executor, coordinator)
        .build()
    )


# --- Baton --------------------------------------------------------------------------------------

STORAGE_DIR = Path(tempfile.gettempdir()) / "baton-samples" / "sub_workflow_checkpoints"
"""The sample's checkpoint storage, as `main()` makes one: Baton writes no file there."""


class Topic(BaseModel):
    topic: str = "Contoso Gadget Launch"
    """`main()`'s topic."""


@register("sub_workflow_checkpoint", input_model=Topic, start_message=lambda i: i.topic)
def build_workflow(services: RunServices) -> Workflow:
    """`main()`'s workflow, with its storage."""
    return build_parent_workflow(FileCheckpointStorage(STORAGE_DIR))
