"""RequestService over a real SQLite file: every refusal leaves the stored request untouched."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from baton.errors import (
    AnswerConflict,
    InvalidAnswer,
    NotPermitted,
    RequestClaimed,
    RequestClosed,
    RequestNotFound,
)
from human.kinds import KINDS
from human.records import HumanRequest, NewEvent, RequestStatus, Run, User
from human.requests import deciders
from human.service import RequestService
from human.store import open_store
from human.store.base import Progress, Store

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
REFUND_ARGUMENTS = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string"},
        "amount": {"type": "number", "exclusiveMinimum": 0},
    },
    "required": ["order_id", "amount"],
    "additionalProperties": False,
}


@dataclass
class Desk:
    store: Store
    service: RequestService
    run: Run
    people: dict[str, User]

    async def pending(
        self, *, approvals: int = 1, status: RequestStatus = "pending"
    ) -> HumanRequest:
        """A hand-made approval for support-leads, committed as the run's pause."""
        request = HumanRequest(
            id=f"req_{secrets.token_hex(8)}",
            run_id=self.run.id,
            maf_request_id=f"call-{secrets.token_hex(4)}.1",
            kind="approval",
            title="Refund 120.00 on order A-1",
            reason="Refunds of this size need approval by support-leads.",
            proposed_action={
                "tool": "issue_refund",
                "arguments": {"order_id": "A-1", "amount": 120.0},
                "arguments_schema": REFUND_ARGUMENTS,
            },
            allowed_decisions=list(KINDS["approval"].decisions),
            response_schema=KINDS["approval"].response_schema({"arguments": REFUND_ARGUMENTS}),
            team="support-leads",
            status=status,
            created_at=T0,
            approvals_required=approvals,
        )
        current = await self.store.get_run(self.run.id)
        assert current is not None
        committed = await self.store.record_progress(
            Progress(
                run_id=self.run.id,
                expected_checkpoint_id=current.checkpoint_id,
                job_id=None,
                status="waiting",
                new_requests=[request],
                events=[
                    NewEvent(type="request.created", run_id=self.run.id, request_id=request.id)
                ],
            )
        )
        assert committed
        return request

    async def snapshot(self, request_id: str) -> tuple[Any, ...]:
        """The request (with its answers) and every audit event of its run."""
        return (
            await self.store.get_request(request_id),
            await self.store.list_events(run_id=self.run.id),
        )

    async def respond(self, request_id: str, body: Any, who: str) -> Any:
        return await self.service.respond(request_id, body, responder=self.people[who])


@pytest.fixture
async def desk(tmp_path: Path) -> AsyncIterator[Desk]:
    store = await open_store(f"sqlite:///{tmp_path / 'x.db'}")
    try:
        people = {
            "lee": await store.add_user("lee", role="responder", teams=["support-leads"]),
            "ada": await store.add_user("ada", role="responder", teams=["support-leads"]),
            "fin": await store.add_user("fin", role="responder", teams=["finance"]),
            "val": await store.add_user("val", role="viewer", teams=["support-leads"]),
            "root": await store.add_user("root", role="admin", teams=[]),
            "sam": await store.add_user("sam", role="responder", teams=["support-agents"]),
        }
        run = await started_run(store, {"order_id": "A-1", "amount": 120.0, "reason": "broken"})
        yield Desk(store=store, service=RequestService(store), run=run, people=people)
    finally:
        await store.close()


async def started_run(store: Store, given: dict[str, Any]) -> Run:
    """A refund run sam started, its start job done: waiting for its first pause."""
    run = Run(
        id=f"run_{secrets.token_hex(6)}",
        workflow="refund",
        input=given,
        status="running",
        created_by="sam",
        created_at=T0,
        updated_at=T0,
    )
    await store.create_run(run, [NewEvent(type="run.started", run_id=run.id, actor="sam")])
    [start] = await store.lease_jobs("test", limit=1, lease_s=60)
    await store.finish_job(start.id, "test")
    return run


async def no_resume_queued(desk: Desk) -> None:
    assert await desk.store.lease_jobs("check", limit=10, lease_s=60) == []


# answers that land --------------------------------------------------------------------------


async def test_an_answer_closes_the_request_and_queues_its_resume(desk: Desk) -> None:
    request = await desk.pending()

    result = await desk.respond(request.id, {"decision": "approve"}, "lee")

    assert (result.outcome, result.changed) == ("closed", True)
    assert result.request.status == "answered"
    assert result.request.answer == {"decision": "approve"}
    assert result.request.answered_by == "lee"
    [job] = await desk.store.lease_jobs("check", limit=10, lease_s=60)
    assert (job.kind, job.run_id) == ("resume", desk.run.id)


async def test_an_admin_answers_any_teams_request(desk: Desk) -> None:
    request = await desk.pending()

    result = await desk.respond(request.id, {"decision": "reject", "reason": "fraud"}, "root")

    assert result.request.answer == {"decision": "reject", "reason": "fraud"}


async def test_the_same_answer_again_is_repeated_and_changes_nothing(desk: Desk) -> None:
    request = await desk.pending()
    edit = {"decision": "edit", "arguments": {"order_id": "A-1", "amount": 80.0}}
    first = await desk.respond(request.id, edit, "lee")
    before = await desk.snapshot(request.id)

    again = await desk.respond(request.id, edit, "lee")
    from_a_colleague = await desk.respond(request.id, edit, "ada")

    for result in (again, from_a_colleague):
        assert (result.outcome, result.changed) == ("repeated", False)
        assert result.request == first.request
    assert await desk.snapshot(request.id) == before


async def test_the_same_approver_twice_counts_once(desk: Desk) -> None:
    request = await desk.pending(approvals=2)
    first = await desk.respond(request.id, {"decision": "approve"}, "lee")
    before = await desk.snapshot(request.id)

    again = await desk.respond(request.id, {"decision": "approve"}, "lee")

    assert (first.outcome, first.changed) == ("partial", True)
    assert (again.outcome, again.changed) == ("repeated", False)
    assert again.request.status == "pending"
    assert await desk.snapshot(request.id) == before
    await no_resume_queued(desk)
    second = await desk.respond(request.id, {"decision": "approve"}, "ada")
    assert (second.outcome, second.request.status) == ("closed", "answered")
    assert deciders(second.request) == ["lee", "ada"]  # who the workflow is told approved


# refusals -----------------------------------------------------------------------------------


async def test_an_unknown_request_is_not_found(desk: Desk) -> None:
    request = await desk.pending()
    before = await desk.snapshot(request.id)

    with pytest.raises(RequestNotFound):
        await desk.respond("req_nobody", {"decision": "approve"}, "lee")

    assert await desk.snapshot(request.id) == before
    await no_resume_queued(desk)


@pytest.mark.parametrize("status", ["expired", "cancelled"])
async def test_a_closed_request_takes_no_answer(desk: Desk, status: RequestStatus) -> None:
    request = await desk.pending(status=status)
    before = await desk.snapshot(request.id)

    with pytest.raises(RequestClosed, match=status):
        await desk.respond(request.id, {"decision": "approve"}, "lee")

    assert await desk.snapshot(request.id) == before
    await no_resume_queued(desk)


async def test_a_request_of_a_cancelled_run_takes_no_answer(desk: Desk) -> None:
    request = await desk.pending()
    assert await desk.store.cancel_run(desk.run.id, "ada") is not None
    before = await desk.snapshot(request.id)

    with pytest.raises(RequestClosed):
        await desk.respond(request.id, {"decision": "approve"}, "lee")

    assert await desk.snapshot(request.id) == before
    await no_resume_queued(desk)


@pytest.mark.parametrize(
    ("who", "error", "says"),
    [
        ("val", NotPermitted, "val is a viewer"),
        ("sam", NotPermitted, "sam is not in team support-leads"),  # sees the run: started it
        ("fin", RequestNotFound, "no request"),  # sees nothing of the run: it does not exist
    ],
    ids=["viewer", "starter-of-another-team", "foreign-team"],
)
async def test_who_may_not_answer_is_refused(
    desk: Desk, who: str, error: type[Exception], says: str
) -> None:
    request = await desk.pending()
    before = await desk.snapshot(request.id)

    with pytest.raises(error, match=says):
        await desk.respond(request.id, {"decision": "approve"}, who)

    assert await desk.snapshot(request.id) == before
    await no_resume_queued(desk)


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ("approve", []),
        ({}, ["decision"]),
        ({"decision": "expired"}, ["decision"]),
        ({"decision": "answer", "answer": "yes"}, ["decision"]),
        ({"decision": "reject"}, ["reason"]),
        ({"decision": "reject", "reason": " "}, ["reason"]),
        ({"decision": "edit"}, ["arguments"]),
        ({"decision": "edit", "arguments": "120"}, ["arguments"]),
        ({"decision": "approve", "arguments": {"amount": 5}}, ["arguments"]),
        ({"decision": "approve", "approved": True}, ["approved"]),
        ({"decision": "approve", "answered_by": ["ada"]}, ["answered_by"]),  # Baton's to say
        ({"decision": "approve", "answered_by": []}, ["answered_by"]),
        (
            {"decision": "edit", "arguments": {"order_id": "A-1", "amount": -5}},
            ["arguments", "amount"],
        ),
        (
            {"decision": "edit", "arguments": {"order_id": "A-1", "amount": "lots"}},
            ["arguments", "amount"],
        ),
        ({"decision": "edit", "arguments": {"order_id": "A-1"}}, ["arguments"]),
    ],
)
async def test_an_invalid_answer_names_the_field_and_changes_nothing(
    desk: Desk, body: Any, loc: list[str]
) -> None:
    request = await desk.pending()
    before = await desk.snapshot(request.id)

    with pytest.raises(InvalidAnswer) as caught:
        await desk.respond(request.id, body, "lee")

    assert loc in [e["loc"] for e in caught.value.errors]
    assert all(e["msg"] for e in caught.value.errors)
    assert await desk.snapshot(request.id) == before
    await no_resume_queued(desk)


async def test_a_different_answer_to_an_answered_request_is_a_conflict(desk: Desk) -> None:
    request = await desk.pending()
    await desk.respond(request.id, {"decision": "approve"}, "lee")
    [resume] = await desk.store.lease_jobs("w1", limit=10, lease_s=60)
    before = await desk.snapshot(request.id)

    with pytest.raises(AnswerConflict, match="lee") as caught:
        await desk.respond(request.id, {"decision": "reject", "reason": "no"}, "ada")

    assert caught.value.facts["answered_by"] == "lee"
    assert await desk.snapshot(request.id) == before
    await desk.store.finish_job(resume.id, "w1")
    await no_resume_queued(desk)


@pytest.mark.parametrize(
    "body",
    [
        {"decision": "approve"},
        {"decision": "edit", "arguments": {"order_id": "A-1", "amount": 30.0}},
    ],
    ids=["approve", "edit"],
)
async def test_four_eyes_the_runs_starter_cannot_approve_even_as_admin(
    desk: Desk, body: dict[str, Any]
) -> None:
    request = await desk.pending()
    before = await desk.snapshot(request.id)
    starter = desk.people["root"].model_copy(update={"name": "sam"})  # sam, made an admin

    with pytest.raises(NotPermitted, match="four-eyes: sam started run"):
        await desk.service.respond(request.id, body, responder=starter)

    assert await desk.snapshot(request.id) == before
    await no_resume_queued(desk)


async def test_four_eyes_lets_the_starter_reject_and_another_person_approve(desk: Desk) -> None:
    first = await desk.pending()
    starter = desk.people["root"].model_copy(update={"name": "sam"})

    rejected = await desk.service.respond(
        first.id, {"decision": "reject", "reason": "I asked by mistake"}, responder=starter
    )
    assert (rejected.outcome, rejected.request.answered_by) == ("closed", "sam")

    second = await desk.pending()
    approved = await desk.respond(second.id, {"decision": "approve"}, "lee")
    assert (approved.outcome, approved.request.answered_by) == ("closed", "lee")


async def test_a_preview_refuses_as_the_answer_would_under_someone_elses_claim(
    desk: Desk,
) -> None:
    request = await desk.pending()
    await desk.service.claim(request.id, user=desk.people["lee"])
    body = {"decision": "approve"}

    with pytest.raises(RequestClaimed) as previewed:
        await desk.service.preview(request.id, body, responder=desk.people["ada"])
    with pytest.raises(RequestClaimed) as answered:
        await desk.respond(request.id, body, "ada")

    assert str(previewed.value) == str(answered.value)
    mine = await desk.service.preview(request.id, body, responder=desk.people["lee"])
    assert mine.answer == body
