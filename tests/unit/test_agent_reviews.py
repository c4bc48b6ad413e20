"""MAF holds on an agent's output (a reply, a Magentic plan) are reviews, answered in its types."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from agent_framework import Message, WorkflowEvent
from agent_framework_orchestrations import (
    MagenticPlanReviewRequest,
    MagenticPlanReviewResponse,
)

from executors.platform.adapters import Ask, Reply, Scene
from executors.platform.builtin_adapters import AgentReviews
from executors.platform.services import ChatClientFactory, RunServices
from human.effects import EffectLedger
from human.kinds import ReviewAnswer, ReviewRequest
from human.policy import Policy
from human.records import HumanRequest
from human.requests import new_request

NOW = datetime(2026, 12, 3, tzinfo=UTC)


def scene() -> Scene:
    services = RunServices(
        run_id="run_1",
        ledger=EffectLedger(store=None),  # type: ignore[arg-type]  (no effect runs here)
        policy=Policy([], default_team="planners"),
        chat_clients=ChatClientFactory("scripted"),
    )
    return Scene(services)


def plan_review() -> WorkflowEvent[Any]:
    plan = Message("assistant", ["1. Research the market. 2. Draft the launch note."])
    data = MagenticPlanReviewRequest(plan=plan, current_progress=None, is_stalled=False)
    return WorkflowEvent.request_info(
        "req-1", "magentic_orchestrator", data, MagenticPlanReviewResponse
    )


async def asked(adapter: AgentReviews, event: WorkflowEvent[Any], here: Scene) -> HumanRequest:
    outcome = await adapter.ask(event, here)
    assert isinstance(outcome, Ask)
    assert isinstance(outcome.request, ReviewRequest)
    origin = {"adapter": adapter.name, **outcome.origin, "maf_request_id": "req-1"}
    return new_request(outcome.request, run_id="run_1", label="req-1", now=NOW, origin=origin)


async def test_a_magentic_plan_is_reviewed_and_approved_as_magentics_own_answer() -> None:
    adapter, here = AgentReviews(scene().services, routes={}), scene()
    assert adapter.accepts(plan_review())

    request = await asked(adapter, plan_review(), here)
    approved = await adapter.deliver(
        request.model_copy(update={"answered_by": "pia"}), ReviewAnswer(decision="approve"), here
    )

    assert (request.kind, request.team) == ("review", "planners")
    assert request.title == "Review magentic orchestrator's plan"  # its executor, in words
    assert request.payload["draft"] == "1. Research the market. 2. Draft the launch note."
    assert isinstance(approved, Reply)
    assert approved.response == MagenticPlanReviewResponse.approve()


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        (ReviewAnswer(decision="reject", reason="add a pricing step"), "add a pricing step"),
        (
            ReviewAnswer(decision="edit", content="1. Price it. 2. Launch."),
            "1. Price it. 2. Launch.",
        ),
    ],
)
async def test_a_plan_sent_back_or_rewritten_revises_it_with_the_persons_words(
    answer: ReviewAnswer, words: str
) -> None:
    adapter, here = AgentReviews(scene().services, routes={}), scene()
    request = await asked(adapter, plan_review(), here)

    revised = await adapter.deliver(request.model_copy(update={"answered_by": "pia"}), answer, here)

    assert isinstance(revised, Reply)
    assert isinstance(revised.response, MagenticPlanReviewResponse)
    (message,) = revised.response.review
    assert message.text.startswith("pia ")
    assert words in message.text
    assert here.services.transcript.entries[-1]["text"] == words


async def test_an_expired_review_is_never_read_as_approval() -> None:
    adapter, here = AgentReviews(scene().services, routes={}), scene()
    request = await asked(adapter, plan_review(), here)

    with pytest.raises(RuntimeError, match="expired before anyone reviewed the plan"):
        await adapter.deliver(request, ReviewAnswer(decision="expired"), here)
