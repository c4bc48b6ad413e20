"""A typed dataclass answer: a person reviews a draft and answers with a nested dataclass.

The request data nests a dataclass; the answer has an enum, a number with bounds, a list and a
nested dataclass with a default. The workflow gets the answer as `ReviewDecision`, not as JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Annotated, Any, Never

from agent_framework import Executor, WorkflowBuilder, WorkflowContext, handler, response_handler
from pydantic import BaseModel, Field

from baton.api import RunServices, register


@dataclass
class Author:
    name: str
    team: str


@dataclass
class DraftReviewRequest:
    """A draft for a person to grade."""

    title: str
    body: str
    author: Author
    words: int


class Verdict(Enum):
    PUBLISH = "publish"
    REVISE = "revise"
    DROP = "drop"


@dataclass
class Followup:
    owner: str
    due_in_days: Annotated[int, Field(ge=1, le=30)] = 7


@dataclass
class ReviewDecision:
    """The reviewer's decision."""

    verdict: Verdict
    score: Annotated[int, Field(ge=1, le=5)]
    tags: list[str] = field(default_factory=list)
    followup: Followup | None = None
    note: str = ""


class Reviewer(Executor):
    @handler
    async def on_draft(self, draft: DraftReviewRequest, ctx: WorkflowContext) -> None:
        await ctx.request_info(request_data=draft, response_type=ReviewDecision)

    @response_handler
    async def on_decision(
        self,
        original_request: DraftReviewRequest,
        decision: ReviewDecision,
        ctx: WorkflowContext[Never, dict[str, Any]],
    ) -> None:
        assert isinstance(decision, ReviewDecision)  # the type asked for, not JSON
        assert isinstance(decision.verdict, Verdict)
        await ctx.yield_output(
            {
                "title": original_request.title,
                "verdict": decision.verdict.value,
                "score": decision.score,
                "tags": decision.tags,
                "followup": decision.followup.owner if decision.followup else None,
                "due_in_days": decision.followup.due_in_days if decision.followup else None,
            }
        )


# --- Baton --------------------------------------------------------------------------------------


class DraftInput(BaseModel):
    title: str
    body: str = "Text of the draft."
    author: str = "kim"


@register(
    "typed_review",
    input_model=DraftInput,
    start_message=lambda i: DraftReviewRequest(
        title=i.title, body=i.body, author=Author(name=i.author, team="writers"), words=4
    ),
)
def build_workflow(services: RunServices) -> Any:
    return WorkflowBuilder(name="typed_review", start_executor=Reviewer(id="reviewer")).build()
