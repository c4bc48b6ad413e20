"""The `Store` contract (human/store/base.py), written once and run on every backend.

Every test talks to the store through the Protocol only; the one raw read is the migration
record, through the backend's `fetch`. Leases use `lease_s=0` for a lease that is over by the
time anyone looks again, and `lease_s=60` for one that outlives the test.
"""

from __future__ import annotations

import asyncio
import base64
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from baton.errors import Invalid, RunEnded, StoreError
from baton.telemetry import correlation_id
from human.attachments import THE_REQUEST, Kept, decoded
from human.effects import EffectLedger, ToolFailed, uncertain
from human.kinds import KINDS
from human.records import AnswerRecord, HumanRequest, Job, NewEvent, RequestStatus, Run
from human.routing import notifications_for
from human.store import open_store
from human.store.base import (
    FAILED,
    EffectLookup,
    KeyTaken,
    Lease,
    NewCheckpoint,
    NewEffect,
    NewNotification,
    Progress,
    RequestFilter,
    RunKey,
    Store,
    utcnow,
)
from human.store.schema import migrations
from tests.contract.conftest import Backend, in_play, statements_read

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
LIVE = 60.0  # a lease that outlives the test
OVER = 0.0  # a lease that is over when the next caller looks


# building blocks ----------------------------------------------------------------------------


def a_run(*, workflow: str = "refund", by: str = "sam") -> Run:
    return Run(
        id=f"run_{secrets.token_hex(6)}",
        workflow=workflow,
        input={"order_id": "A-1", "amount": 120.0},
        status="running",
        created_by=by,
        created_at=T0,
        updated_at=T0,
    )


def a_request(
    run_id: str,
    *,
    kind: str = "approval",
    team: str = "support-leads",
    approvals: int = 1,
    status: RequestStatus = "pending",
    at: datetime = T0,
) -> HumanRequest:
    spec = KINDS[kind]
    maf_id = f"maf-{secrets.token_hex(4)}"
    return HumanRequest(
        id=f"req_{secrets.token_hex(8)}",
        run_id=run_id,
        maf_request_id=maf_id,
        kind=kind,
        title=f"{kind} for {team}",
        reason="the policy says so",
        context={"order_id": "A-1"},
        proposed_action=(
            {"tool": "issue_refund", "arguments": {"amount": 120.0}, "arguments_schema": {}}
            if kind == "approval"
            else None
        ),
        allowed_decisions=list(spec.decisions),
        response_schema=spec.response_schema(),
        team=team,
        status=status,
        created_at=at,
        approvals_required=approvals,
        policy_rule="refund.medium",
    )


def an_answer(
    request_id: str, actor: str, decision: str = "approve", *, at: datetime = T0, **body: Any
) -> AnswerRecord:
    return AnswerRecord(request_id=request_id, actor=actor, decision=decision, body=body, at=at)


def final_of(answer: AnswerRecord) -> dict[str, Any]:
    return {"decision": answer.decision, **answer.body}


def checkpoint(name: str) -> NewCheckpoint:
    return NewCheckpoint(id=name, body=f"body of {name}".encode())


async def started(store: Store, *, workflow: str = "refund", by: str = "sam") -> Run:
    run = a_run(workflow=workflow, by=by)
    events = [NewEvent(type="run.started", run_id=run.id, actor=run.created_by or "system")]
    await store.create_run(run, events)
    return run


async def paused(
    store: Store,
    run_id: str,
    requests: list[HumanRequest],
    *,
    at: str = "cp-1",
    expected: str | None = None,
    job_id: int | None = None,
    notifications: Sequence[NewNotification] = (),
    effects: Sequence[NewEffect] = (),
    attachments: Sequence[Kept] = (),
) -> None:
    committed = await store.record_progress(
        Progress(
            run_id=run_id,
            expected_checkpoint_id=expected,
            job_id=job_id,
            status="waiting",
            checkpoint=checkpoint(at),
            new_requests=requests,
            notifications=notifications,
            effects=list(effects),
            attachments=list(attachments),
            events=[
                NewEvent(type="request.created", run_id=run_id, request_id=r.id) for r in requests
            ],
        )
    )
    assert committed


async def everything_about(store: Store, run_id: str) -> dict[str, Any]:
    """What a reader can see of a run: to prove a refused write changed nothing."""
    run = await store.get_run(run_id)
    assert run is not None
    return {
        "run": run,
        "requests": (await store.list_requests(RequestFilter(run_id=run_id, limit=500))).items,
        "events": await store.list_events(run_id=run_id),
        "checkpoint": await store.load_checkpoint(run.checkpoint_id) if run.checkpoint_id else None,
    }


def drive_jobs(jobs: list[Job]) -> list[tuple[str, str | None]]:
    return [(j.kind, j.run_id) for j in jobs]


# migrations ---------------------------------------------------------------------------------


async def test_setup_twice_applies_each_migration_once_and_keeps_data(
    store: Store, backend: Backend
) -> None:
    run = await started(store)

    await store.setup()
    await store.setup()

    versions = backend.fetch("SELECT version, name FROM schema_version ORDER BY version")
    assert versions == [(v, name) for v, name, _ in migrations(backend.dialect)]
    assert len(versions) >= 2
    assert await store.get_run(run.id) == run


@pytest.mark.fresh_database
async def test_two_processes_migrating_one_fresh_database_at_once_both_succeed(
    backend: Backend,
) -> None:
    first, second = await asyncio.gather(open_store(backend.url), open_store(backend.url))
    try:
        run = await started(first)
        assert await second.get_run(run.id) == run
    finally:
        await first.close()
        await second.close()
    versions = backend.fetch("SELECT version FROM schema_version ORDER BY version")
    assert versions == [(v,) for v, _, _ in migrations(backend.dialect)]


# runs ---------------------------------------------------------------------------------------


async def test_create_run_stores_the_run_its_events_and_one_start_job(store: Store) -> None:
    run = a_run()
    started_event = NewEvent(
        type="run.started", run_id=run.id, actor="sam", data={"input": run.input}
    )

    await store.create_run(run, [started_event])

    assert await store.get_run(run.id) == run
    assert await store.get_run("run_nobody") is None
    [event] = await store.list_events(run_id=run.id)
    assert (event.type, event.actor, event.data) == ("run.started", "sam", {"input": run.input})
    jobs = await store.lease_jobs("w1", limit=10, lease_s=LIVE)
    assert drive_jobs(jobs) == [("start", run.id)]
    assert jobs[0].attempts == 1


async def test_an_idempotency_key_stores_one_run_per_person_and_a_second_use_stores_nothing(
    store: Store,
) -> None:
    first, second, theirs = a_run(), a_run(), a_run(by="sue")
    key = RunKey(key="retry-1", digest="d1")

    await store.create_run(first, [], key=key)
    with pytest.raises(KeyTaken):
        await store.create_run(second, [], key=RunKey(key="retry-1", digest="d2"))
    await store.create_run(theirs, [], key=key)  # keys are each person's own

    assert await store.run_of_key("sam", "retry-1") == RunKey(key=first.id, digest="d1")
    assert await store.run_of_key("sue", "retry-1") == RunKey(key=theirs.id, digest="d1")
    assert await store.run_of_key("sam", "other") is None
    assert await store.get_run(second.id) is None
    jobs = await store.lease_jobs("w1", limit=10, lease_s=LIVE)
    assert sorted(run_id for _, run_id in drive_jobs(jobs)) == sorted([first.id, theirs.id])


async def test_a_run_that_continues_another_names_it_and_is_found_from_it(store: Store) -> None:
    first = a_run()
    await store.create_run(first, [])
    later, latest = (
        first.model_copy(update={"id": f"run_{n}", "continues": first.id}) for n in (2, 3)
    )
    for run in (later, latest):
        await store.create_run(run, [])

    assert (await store.get_run(later.id)) == later
    assert (await store.get_run(first.id)) == first  # continues nothing
    assert await store.runs_continuing(first.id) == [later.id, latest.id]  # oldest first
    assert await store.runs_continuing(later.id) == []


async def test_a_queued_job_carries_the_correlation_id_of_the_call_that_queued_it(
    store: Store,
) -> None:
    token = correlation_id.set("corr-42")
    try:
        await started(store)
    finally:
        correlation_id.reset(token)

    [job] = await store.lease_jobs("w1", limit=1, lease_s=LIVE)
    assert job.payload["correlation_id"] == "corr-42"


async def test_list_runs_pages_newest_first_without_duplicates_or_gaps(store: Store) -> None:
    created = [(await started(store)).id for _ in range(7)]

    pages: list[list[str]] = []
    cursor: str | None = None
    while True:
        page = await store.list_runs(status=None, workflow=None, cursor=cursor, limit=3)
        pages.append([r.id for r in page.items])
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
        assert len(pages) < 10, "pagination does not end"

    assert [len(p) for p in pages] == [3, 3, 1]
    assert [rid for p in pages for rid in p] == created[::-1]


async def test_list_runs_full_last_page_has_no_cursor(store: Store) -> None:
    for _ in range(4):
        await started(store)

    first = await store.list_runs(status=None, workflow=None, cursor=None, limit=2)
    assert first.next_cursor is not None
    second = await store.list_runs(status=None, workflow=None, cursor=first.next_cursor, limit=2)
    assert len(second.items) == 2
    assert second.next_cursor is None


async def test_list_runs_filters_by_status_and_workflow(store: Store) -> None:
    refund_a = await started(store)
    refund_b = await started(store)
    twin = await started(store, workflow="twin")
    done = await store.record_progress(
        Progress(
            run_id=refund_a.id,
            expected_checkpoint_id=None,
            job_id=None,
            status="completed",
            output={"text": "refunded"},
        )
    )
    assert done

    def ids(page: Any) -> list[str]:
        return [r.id for r in page.items]

    by_workflow = await store.list_runs(status=None, workflow="refund", cursor=None, limit=50)
    assert ids(by_workflow) == [refund_b.id, refund_a.id]
    completed = await store.list_runs(status="completed", workflow=None, cursor=None, limit=50)
    assert ids(completed) == [refund_a.id]
    assert completed.items[0].output == {"text": "refunded"}
    running = await store.list_runs(status="running", workflow=None, cursor=None, limit=50)
    assert ids(running) == [twin.id, refund_b.id]
    both = await store.list_runs(status="running", workflow="twin", cursor=None, limit=50)
    assert ids(both) == [twin.id]
    assert (
        await store.list_runs(status="failed", workflow=None, cursor=None, limit=50)
    ).items == []


@pytest.mark.parametrize("cursor", ["garbage", "s", "sx12", "12;DROP"])
async def test_a_cursor_the_store_never_issued_is_invalid(store: Store, cursor: str) -> None:
    with pytest.raises(Invalid) as runs_error:
        await store.list_runs(status=None, workflow=None, cursor=cursor, limit=10)
    with pytest.raises(Invalid) as requests_error:
        await store.list_requests(RequestFilter(cursor=cursor))

    for error in (runs_error.value, requests_error.value):
        assert error.errors[0]["loc"] == ["cursor"]


# progress: pause, fencing, completion -------------------------------------------------------


async def test_a_pause_commits_checkpoint_requests_events_and_job_together(store: Store) -> None:
    run = await started(store)
    [start_job] = await store.lease_jobs("w1", limit=1, lease_s=OVER)
    requests = [a_request(run.id, team="support-leads"), a_request(run.id, team="finance")]

    await paused(store, run.id, requests, at="cp-1", job_id=start_job.id)

    now = await store.get_run(run.id)
    assert now is not None
    assert (now.status, now.checkpoint_id) == ("waiting", "cp-1")
    assert await store.load_checkpoint("cp-1") == b"body of cp-1"
    for request in requests:
        stored = await store.get_request(request.id)
        assert stored == request
    assert [r.id for r in (await in_play(store, run.id)).open] == [r.id for r in requests]
    created = [e for e in await store.list_events(run_id=run.id) if e.type == "request.created"]
    assert [e.request_id for e in created] == [r.id for r in requests]
    # the start job's lease is over: had the pause not deleted it, it would be leased again
    assert await store.lease_jobs("w2", limit=10, lease_s=LIVE) == []


async def test_an_arguments_schema_is_stored_once_and_every_request_reads_back_whole(
    store: Store, backend: Backend
) -> None:
    schema = {"type": "object", "properties": {"amount": {"type": "number", "title": "Amount"}}}
    action = {"tool": "issue_refund", "arguments": {"amount": 120.0}, "arguments_schema": schema}
    runs = [await started(store) for _ in range(3)]
    requests = [a_request(run.id).model_copy(update={"proposed_action": action}) for run in runs]
    [schemas_before] = backend.fetch("SELECT COUNT(*) FROM schemas")

    for n, (run, request) in enumerate(zip(runs, requests, strict=True)):
        await paused(store, run.id, [request], at=f"cp-{n}")

    for request in requests:
        assert await store.get_request(request.id) == request
    listed = await store.list_requests(RequestFilter(status="pending", limit=10))
    assert {r.id: r.proposed_action for r in listed.items} == {r.id: action for r in requests}
    # two rows for three requests: the answer's schema and the arguments' schema, once each
    assert backend.fetch("SELECT COUNT(*) FROM schemas") == [(schemas_before[0] + 2,)]
    stored = backend.fetch("SELECT proposed_action FROM human_requests WHERE kind = 'approval'")
    assert all("arguments_schema" not in str(row[0]) for row in stored)


async def test_each_pause_replaces_the_runs_checkpoint(store: Store) -> None:
    run = await started(store)
    await paused(store, run.id, [a_request(run.id)], at="cp-1")

    await paused(store, run.id, [a_request(run.id)], at="cp-2", expected="cp-1")

    assert await store.load_checkpoint("cp-1") is None
    assert await store.load_checkpoint("cp-2") == b"body of cp-2"


async def test_progress_from_a_stale_checkpoint_is_fenced_off_and_changes_nothing(
    store: Store,
) -> None:
    run = await started(store)
    await paused(store, run.id, [a_request(run.id)], at="cp-1")
    before = await everything_about(store, run.id)

    stale = Progress(
        run_id=run.id,
        expected_checkpoint_id="cp-0",
        job_id=None,
        status="completed",
        output={"text": "a worker that lost its lease"},
        checkpoint=checkpoint("cp-stale"),
        new_requests=[a_request(run.id)],
        delivered_request_ids=[r.id for r in before["requests"]],
        events=[NewEvent(type="run.completed", run_id=run.id)],
    )

    assert await store.record_progress(stale) is False
    assert await everything_about(store, run.id) == before
    assert await store.load_checkpoint("cp-stale") is None


async def test_progress_of_an_ended_run_is_refused(store: Store) -> None:
    run = await started(store)
    finish = Progress(run_id=run.id, expected_checkpoint_id=None, job_id=None, status="failed")
    assert await store.record_progress(finish)
    before = await everything_about(store, run.id)

    again = Progress(
        run_id=run.id,
        expected_checkpoint_id=None,
        job_id=None,
        status="waiting",
        checkpoint=checkpoint("cp-late"),
        new_requests=[a_request(run.id)],
    )

    assert await store.record_progress(again) is False
    assert await everything_about(store, run.id) == before


async def test_a_failing_progress_write_leaves_nothing_behind(store: Store) -> None:
    run = await started(store)
    [start_job] = await store.lease_jobs("w1", limit=1, lease_s=OVER)
    twice = a_request(run.id)
    before = await everything_about(store, run.id)

    broken = Progress(
        run_id=run.id,
        expected_checkpoint_id=None,
        job_id=start_job.id,
        status="waiting",
        checkpoint=checkpoint("cp-1"),
        new_requests=[twice, twice],  # the second insert violates the request's uniqueness
        events=[NewEvent(type="request.created", run_id=run.id, request_id=twice.id)],
    )

    with pytest.raises(StoreError):
        await store.record_progress(broken)
    assert await everything_about(store, run.id) == before
    assert await store.get_request(twice.id) is None
    assert await store.load_checkpoint("cp-1") is None
    # the job was not deleted either: its lease is over, so it is leased again
    assert drive_jobs(await store.lease_jobs("w2", limit=10, lease_s=LIVE)) == [("start", run.id)]


async def test_completion_deletes_the_checkpoint_and_closes_what_is_still_open(
    store: Store,
) -> None:
    run = await started(store)
    left_open = a_request(run.id)
    await paused(store, run.id, [left_open], at="cp-1")

    done = Progress(
        run_id=run.id,
        expected_checkpoint_id="cp-1",
        job_id=None,
        status="completed",
        output=["finance:approve"],
        events=[NewEvent(type="run.completed", run_id=run.id)],
    )

    assert await store.record_progress(done)
    now = await store.get_run(run.id)
    assert now is not None
    assert (now.status, now.output, now.checkpoint_id) == ("completed", ["finance:approve"], None)
    assert await store.load_checkpoint("cp-1") is None
    closed = await store.get_request(left_open.id)
    assert closed is not None
    assert closed.status == "cancelled"
    assert (await in_play(store, run.id)).open == []
    types = [e.type for e in await store.list_events(request_id=left_open.id)]
    assert types == ["request.created", "request.cancelled"]


async def test_a_request_is_read_with_its_run_in_one_go(store: Store) -> None:
    run = await started(store)
    request = a_request(run.id)
    await paused(store, run.id, [request])

    found = await store.request_with_run(request.id)

    assert found is not None
    assert found[0] == await store.get_request(request.id)
    assert found[1] == await store.get_run(run.id)
    assert await store.request_with_run("req_missing") is None


# answers ------------------------------------------------------------------------------------


async def test_requests_are_read_with_answers_and_outbox_rows_only_where_they_have_some(
    store: Store,
) -> None:
    run = await started(store)
    answered, told, bare = a_request(run.id, approvals=2), a_request(run.id), a_request(run.id)
    told_of = notifications_for(told, ("webhook", "email"), "created")
    await paused(store, run.id, [answered, told, bare], notifications=told_of)
    first = an_answer(answered.id, "lee")
    assert (await store.record_answer(first, final=final_of(first))).result == "partial"

    async with statements_read(store) as page_read:
        page = await store.list_requests(RequestFilter(run_id=run.id))
    async with statements_read(store) as bare_read:
        alone = await store.get_request(bare.id)

    by_id = {r.id: r for r in page.items}
    assert [a.actor for a in by_id[answered.id].answers] == ["lee"]
    assert by_id[answered.id].notifications == []
    assert sorted(n.channel for n in by_id[told.id].notifications) == ["email", "webhook"]
    assert by_id[told.id].answers == []
    assert (by_id[bare.id].answers, by_id[bare.id].notifications) == ([], [])
    assert alone == by_id[bare.id]
    # the page, then the answers of the one answered and the outbox rows of the one told
    assert len(page_read) == 3, page_read
    assert len(bare_read) == 1, bare_read  # a request with neither: one statement


async def test_the_first_answer_closes_the_request_and_queues_one_resume(store: Store) -> None:
    run = await started(store)
    [start_job] = await store.lease_jobs("w1", limit=1, lease_s=LIVE)
    request = a_request(run.id)
    await paused(store, run.id, [request], job_id=start_job.id)

    first = an_answer(request.id, "lee", "reject", reason="not eligible")
    outcome = await store.record_answer(first, final=final_of(first))

    assert outcome.result == "closed"
    assert outcome.request.status == "answered"
    assert outcome.request.answer == {"decision": "reject", "reason": "not eligible"}
    assert outcome.request.answered_by == "lee"
    assert [(a.actor, a.decision) for a in outcome.request.answers] == [("lee", "reject")]
    assert await store.get_request(request.id) == outcome.request
    answered = (await store.list_events(request_id=request.id))[-1]
    assert (answered.type, answered.actor, answered.data["decision"]) == (
        "request.answered",
        "lee",
        "reject",
    )
    [resume] = await store.lease_jobs("w1", limit=10, lease_s=LIVE)
    assert (resume.kind, resume.run_id) == ("resume", run.id)


async def test_a_second_answer_finds_the_request_closed_and_queues_nothing(store: Store) -> None:
    run = await started(store)
    [start_job] = await store.lease_jobs("w1", limit=1, lease_s=LIVE)
    request = a_request(run.id)
    await paused(store, run.id, [request], job_id=start_job.id)
    first = an_answer(request.id, "lee")
    await store.record_answer(first, final=final_of(first))
    [resume] = await store.lease_jobs("w1", limit=10, lease_s=LIVE)
    before = await everything_about(store, run.id)

    second = an_answer(request.id, "ada", "reject", reason="too late")
    outcome = await store.record_answer(second, final=final_of(second))

    assert outcome.result == "not_open"
    assert outcome.request.answer == {"decision": "approve"}
    assert await everything_about(store, run.id) == before
    await store.finish_job(resume.id, "w1")
    assert await store.lease_jobs("w2", limit=10, lease_s=LIVE) == []


async def test_two_approvals_need_two_different_people(store: Store) -> None:
    run = await started(store)
    [start_job] = await store.lease_jobs("w1", limit=1, lease_s=LIVE)
    request = a_request(run.id, team="finance", approvals=2)
    await paused(store, run.id, [request], job_id=start_job.id)

    ada = an_answer(request.id, "ada")
    first = await store.record_answer(ada, final=final_of(ada))
    assert first.result == "partial"
    assert first.request.status == "pending"
    assert await store.lease_jobs("w1", limit=10, lease_s=LIVE) == []

    again = await store.record_answer(an_answer(request.id, "ada"), final=final_of(ada))
    assert again.result == "repeated"
    assert [a.actor for a in again.request.answers] == ["ada"]
    assert again.request.status == "pending"

    bob = an_answer(request.id, "bob")
    second = await store.record_answer(bob, final=final_of(bob))
    assert second.result == "closed"
    assert second.request.status == "answered"
    assert [a.actor for a in second.request.answers] == ["ada", "bob"]
    answered = [e for e in await store.list_events(request_id=request.id) if e.actor != "system"]
    assert [(e.type, e.actor) for e in answered] == [
        ("request.answered", "ada"),
        ("request.answered", "bob"),
    ]
    assert answered[0].data["approvals"] == 1
    assert answered[0].data["approvals_required"] == 2
    assert drive_jobs(await store.lease_jobs("w1", limit=10, lease_s=LIVE)) == [("resume", run.id)]


async def test_one_rejection_closes_a_two_approval_request(store: Store) -> None:
    run = await started(store)
    request = a_request(run.id, team="finance", approvals=2)
    await paused(store, run.id, [request])
    ada = an_answer(request.id, "ada")
    await store.record_answer(ada, final=final_of(ada))

    bob = an_answer(request.id, "bob", "reject", reason="not ours to pay")
    outcome = await store.record_answer(bob, final=final_of(bob))

    assert outcome.result == "closed"
    assert outcome.request.answer == {"decision": "reject", "reason": "not ours to pay"}


async def test_twenty_concurrent_answers_close_the_request_exactly_once(store: Store) -> None:
    run = await started(store)
    [start_job] = await store.lease_jobs("w1", limit=1, lease_s=LIVE)
    request = a_request(run.id)
    await paused(store, run.id, [request], job_id=start_job.id)
    answers = [an_answer(request.id, f"person-{n}") for n in range(20)]

    outcomes = await asyncio.gather(*(store.record_answer(a, final=final_of(a)) for a in answers))

    results = [o.result for o in outcomes]
    assert results.count("closed") == 1
    assert results.count("not_open") == 19
    winner = answers[results.index("closed")].actor
    stored = await store.get_request(request.id)
    assert stored is not None
    assert stored.answered_by == winner
    assert [a.actor for a in stored.answers] == [winner]
    events = await store.list_events(request_id=request.id)
    assert [e.actor for e in events if e.type == "request.answered"] == [winner]
    assert drive_jobs(await store.lease_jobs("w1", limit=10, lease_s=LIVE)) == [("resume", run.id)]


async def test_twenty_concurrent_approvals_of_a_two_person_rule_count_two(store: Store) -> None:
    run = await started(store)
    request = a_request(run.id, team="finance", approvals=2)
    await paused(store, run.id, [request])
    answers = [an_answer(request.id, f"person-{n}") for n in range(20)]

    outcomes = await asyncio.gather(*(store.record_answer(a, final=final_of(a)) for a in answers))

    results = [o.result for o in outcomes]
    assert sorted(results) == sorted(["closed", "partial", *["not_open"] * 18])
    stored = await store.get_request(request.id)
    assert stored is not None
    assert len({a.actor for a in stored.answers}) == len(stored.answers) == 2


# listing requests ---------------------------------------------------------------------------


async def test_list_requests_filters_by_status_team_kind_run_and_teams(store: Store) -> None:
    one = await started(store)
    two = await started(store)
    lead_approval = a_request(one.id, team="support-leads")
    finance_approval = a_request(one.id, team="finance", approvals=2)
    legal_question = a_request(two.id, kind="question", team="legal")
    lead_review = a_request(two.id, kind="review", team="support-leads")
    await paused(store, one.id, [lead_approval, finance_approval], at="cp-one")
    await paused(store, two.id, [legal_question, lead_review], at="cp-two")
    answer = an_answer(legal_question.id, "lin", "answer", answer="yes")
    await store.record_answer(answer, final=final_of(answer))

    async def ids(**filters: Any) -> set[str]:
        page = await store.list_requests(RequestFilter(**filters))
        return {r.id for r in page.items}

    everyone = {lead_approval.id, finance_approval.id, legal_question.id, lead_review.id}
    assert await ids() == everyone
    assert await ids(status="answered") == {legal_question.id}
    assert await ids(status="pending") == everyone - {legal_question.id}
    assert await ids(team="support-leads") == {lead_approval.id, lead_review.id}
    assert await ids(kind="approval") == {lead_approval.id, finance_approval.id}
    assert await ids(kind="review", team="finance") == set()
    assert await ids(run_id=two.id) == {legal_question.id, lead_review.id}
    assert await ids(teams=("finance", "legal")) == {finance_approval.id, legal_question.id}
    assert await ids(teams=()) == set()
    assert await ids(teams=("legal",), status="pending") == set()


async def test_list_requests_searches_titles_reasons_context_and_ids(store: Store) -> None:
    one = await started(store)
    two = await started(store)
    refund = a_request(one.id).model_copy(
        update={"title": "Refund 120.00 on order A-1005", "context": {"customer": "customer-05"}}
    )
    odd = a_request(two.id, team="finance").model_copy(
        update={"reason": "Discount of 50% for vip_customers", "context": {"order_id": "B-7"}}
    )
    plain = a_request(two.id, team="legal")
    await paused(store, one.id, [refund], at="cp-one")
    await paused(store, two.id, [odd, plain], at="cp-two")

    async def ids(search: str, **filters: Any) -> set[str]:
        page = await store.list_requests(RequestFilter(search=search, **filters))
        return {r.id for r in page.items}

    assert await ids("a-1005") == {refund.id}  # the title, any case
    assert await ids("CUSTOMER-05") == {refund.id}  # a context value
    assert await ids("50%") == {odd.id}  # the reason; `%` and `_` are taken literally
    assert await ids("vip_c") == {odd.id}
    assert await ids("5_%") == set()
    assert await ids("%") == {odd.id}
    assert await ids(refund.id) == {refund.id}  # its own id, or its run's
    assert await ids(two.id) == {odd.id, plain.id}
    assert await ids("B-7", team="legal") == set()  # with the other filters
    assert await ids("nothing like it") == set()


async def test_list_requests_pages_newest_first_without_duplicates_or_gaps(store: Store) -> None:
    run = await started(store)
    requests = [a_request(run.id, team="finance") for _ in range(5)]
    others = [a_request(run.id, team="legal") for _ in range(3)]
    await paused(store, run.id, [*requests[:2], *others, *requests[2:]])

    seen: list[str] = []
    sizes: list[int] = []
    cursor: str | None = None
    while True:
        page = await store.list_requests(RequestFilter(team="finance", limit=2, cursor=cursor))
        seen += [r.id for r in page.items]
        sizes.append(len(page.items))
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
        assert len(sizes) < 10, "pagination does not end"

    assert sizes == [2, 2, 1]
    assert seen == [r.id for r in requests][::-1]


async def test_answered_requests_come_in_answer_order_and_leave_once_delivered(
    store: Store,
) -> None:
    run = await started(store)
    first, second, third, untouched = (a_request(run.id) for _ in range(4))
    await paused(store, run.id, [first, second, third, untouched], at="cp-1")
    for n, request in enumerate((second, third, first)):
        answer = an_answer(request.id, "lee", at=T0 + timedelta(minutes=n + 1))
        await store.record_answer(answer, final=final_of(answer))

    order = [r.id for r in (await in_play(store, run.id)).answered]
    assert order == [second.id, third.id, first.id]
    assert [r.id for r in (await in_play(store, run.id)).open] == [untouched.id]

    delivered = await store.record_progress(
        Progress(
            run_id=run.id,
            expected_checkpoint_id="cp-1",
            job_id=None,
            status="waiting",
            checkpoint=checkpoint("cp-2"),
            delivered_request_ids=[second.id],
            events=[NewEvent(type="run.resumed", run_id=run.id, request_id=second.id)],
        )
    )
    assert delivered
    assert [r.id for r in (await in_play(store, run.id)).answered] == [third.id, first.id]
    resumed = await store.get_request(second.id)
    assert resumed is not None
    assert resumed.status == "resumed"


# cancelling ---------------------------------------------------------------------------------


async def test_cancel_run_closes_open_requests_with_events_and_drops_queued_work(
    store: Store,
) -> None:
    run = await started(store)
    [start_job] = await store.lease_jobs("w1", limit=1, lease_s=LIVE)
    first, second = a_request(run.id), a_request(run.id, team="finance")
    await paused(store, run.id, [first, second], at="cp-1", job_id=start_job.id)

    cancelled = await store.cancel_run(run.id, "ada")

    assert cancelled is not None
    assert (cancelled.id, cancelled.status) == (run.id, "cancelled")
    assert await store.get_run(run.id) == cancelled
    for request in (first, second):
        stored = await store.get_request(request.id)
        assert stored is not None
        assert stored.status == "cancelled"
        last = (await store.list_events(request_id=request.id))[-1]
        assert (last.type, last.actor) == ("request.cancelled", "ada")
    events = await store.list_events(run_id=run.id)
    assert (events[-1].type, events[-1].actor) == ("run.cancelled", "ada")
    assert [e.type for e in events].count("request.cancelled") == 2
    assert await store.load_checkpoint("cp-1") is None
    # an answer to a cancelled request is refused and queues nothing
    late = an_answer(first.id, "lee")
    assert (await store.record_answer(late, final=final_of(late))).result == "not_open"
    assert await store.lease_jobs("w2", limit=10, lease_s=LIVE) == []


async def test_cancel_run_keeps_its_reason_in_its_events(store: Store) -> None:
    run = await started(store)
    await paused(store, run.id, [a_request(run.id)])
    quiet = await started(store)

    assert await store.cancel_run(run.id, "sam", reason="The customer withdrew it") is not None
    assert await store.cancel_run(quiet.id, "sam") is not None

    said = {e.type: e.data for e in await store.list_events(run_id=run.id)}
    assert (
        said["run.cancelled"] == said["request.cancelled"] == {"reason": "The customer withdrew it"}
    )
    [without] = [e for e in await store.list_events(run_id=quiet.id) if e.type == "run.cancelled"]
    assert without.data == {}


async def test_cancel_run_drops_a_queued_resume(store: Store) -> None:
    run = await started(store)
    [start_job] = await store.lease_jobs("w1", limit=1, lease_s=LIVE)
    request = a_request(run.id)
    await paused(store, run.id, [request, a_request(run.id)], job_id=start_job.id)
    answer = an_answer(request.id, "lee")
    await store.record_answer(answer, final=final_of(answer))

    assert await store.cancel_run(run.id, "ada") is not None

    assert await store.lease_jobs("w2", limit=10, lease_s=LIVE) == []


async def test_cancel_run_of_an_ended_or_unknown_run_returns_none(store: Store) -> None:
    run = await started(store)
    done = Progress(run_id=run.id, expected_checkpoint_id=None, job_id=None, status="completed")
    assert await store.record_progress(done)
    before = await everything_about(store, run.id)

    assert await store.cancel_run(run.id, "ada") is None
    assert await store.cancel_run("run_nobody", "ada") is None
    assert await everything_about(store, run.id) == before

    other = await started(store)
    assert await store.cancel_run(other.id, "ada") is not None
    events_once = await store.list_events(run_id=other.id)
    assert await store.cancel_run(other.id, "ada") is None
    assert await store.list_events(run_id=other.id) == events_once


# jobs ---------------------------------------------------------------------------------------


async def test_lease_never_hands_out_two_drive_jobs_of_one_run(store: Store) -> None:
    run = await started(store)
    [start_job] = await store.lease_jobs("w1", limit=10, lease_s=LIVE)
    request = a_request(run.id)
    await paused(store, run.id, [request])  # no job_id: the start job is still held by w1
    answer = an_answer(request.id, "lee")
    await store.record_answer(answer, final=final_of(answer))  # queues a resume of the same run
    other = await started(store)

    leased = await store.lease_jobs("w2", limit=10, lease_s=LIVE)
    assert drive_jobs(leased) == [("start", other.id)]

    await store.finish_job(start_job.id, "w1")
    assert drive_jobs(await store.lease_jobs("w2", limit=10, lease_s=LIVE)) == [("resume", run.id)]


async def test_two_due_drive_jobs_of_one_run_are_leased_one_at_a_time(store: Store) -> None:
    run = await started(store)
    await store.lease_jobs("w1", limit=10, lease_s=OVER)  # w1 died holding the start job
    request = a_request(run.id)
    await paused(store, run.id, [request])
    answer = an_answer(request.id, "lee")
    await store.record_answer(answer, final=final_of(answer))

    leased = await store.lease_jobs("w2", limit=10, lease_s=LIVE)

    assert len(leased) == 1
    assert leased[0].run_id == run.id
    assert await store.lease_jobs("w3", limit=10, lease_s=LIVE) == []


async def test_drive_jobs_of_different_runs_are_leased_together(store: Store) -> None:
    runs = {(await started(store)).id for _ in range(3)}

    leased = await store.lease_jobs("w1", limit=10, lease_s=LIVE)

    assert {j.run_id for j in leased} == runs
    assert len(await store.lease_jobs("w1", limit=2, lease_s=LIVE)) == 0


async def test_lease_jobs_respects_the_limit(store: Store) -> None:
    for _ in range(3):
        await started(store)

    assert len(await store.lease_jobs("w1", limit=2, lease_s=LIVE)) == 2
    assert len(await store.lease_jobs("w2", limit=2, lease_s=LIVE)) == 1


async def test_lease_jobs_by_lane_keeps_older_notifications_from_taking_a_drives_place(
    store: Store,
) -> None:
    for _ in range(3):  # three paused runs, each with a notification to deliver
        run = await started(store)
        [start_job] = await store.lease_jobs("setup", limit=1, lease_s=LIVE, lane="work")
        await paused_with_a_notification(store, run, start_job)
    newest = await started(store)  # its start job is younger than every notification

    work = await store.lease_jobs("w1", limit=1, lease_s=LIVE, lane="work")
    deliveries = await store.lease_jobs("w1", limit=2, lease_s=LIVE, lane="delivery")
    rest = await store.lease_jobs("w1", limit=10, lease_s=LIVE)

    assert drive_jobs(work) == [("start", newest.id)]
    assert [j.kind for j in deliveries] == ["notify", "notify"]
    assert [j.lane for j in deliveries + rest] == ["delivery"] * 3
    assert await store.lease_jobs("w2", limit=10, lease_s=LIVE, lane="work") == []


async def test_a_job_whose_lease_ran_out_is_leased_again(store: Store) -> None:
    run = await started(store)
    [first] = await store.lease_jobs("w1", limit=1, lease_s=OVER)

    [again] = await store.lease_jobs("w2", limit=1, lease_s=LIVE)

    assert (again.id, again.run_id, again.attempts) == (first.id, run.id, 2)
    assert await store.lease_jobs("w3", limit=1, lease_s=LIVE) == []


async def test_renewing_keeps_a_lease_only_for_its_owner(store: Store) -> None:
    await started(store)
    [kept] = await store.lease_jobs("w1", limit=1, lease_s=OVER)
    await store.renew_leases("w1", [kept.id], lease_s=LIVE)
    assert await store.lease_jobs("w2", limit=1, lease_s=LIVE) == []

    await started(store)
    [lost] = await store.lease_jobs("w3", limit=1, lease_s=OVER)
    await store.renew_leases("w4", [lost.id], lease_s=LIVE)  # not w4's to renew
    assert [j.id for j in await store.lease_jobs("w5", limit=1, lease_s=LIVE)] == [lost.id]


async def test_renewing_names_the_held_jobs_whose_run_was_cancelled_meanwhile(
    store: Store,
) -> None:
    """A cancel in another process reaches the worker driving the run at its next renewal."""
    cancelled, live = await started(store), await started(store)
    held = {j.run_id: j.id for j in await store.lease_jobs("w1", limit=2, lease_s=OVER)}
    assert await store.renew_leases("w1", list(held.values()), lease_s=LIVE) == []

    assert await store.cancel_run(cancelled.id, "ada") is not None

    assert await store.renew_leases("w1", list(held.values()), lease_s=LIVE) == [held[cancelled.id]]
    assert await store.renew_leases("w2", list(held.values()), lease_s=LIVE) == []  # not w2's
    assert held[live.id] not in await store.renew_leases("w1", [held[live.id]], lease_s=LIVE)


async def test_renewing_names_no_notice_of_a_cancelled_run_only_its_drive(store: Store) -> None:
    """A notice of a cancelled run still goes out (its request's channels are told it closed)."""
    run = await started(store)
    [start_job] = await store.lease_jobs("setup", limit=1, lease_s=LIVE, lane="work")
    await paused_with_a_notification(store, run, start_job)
    [notice] = await store.lease_jobs("w1", limit=1, lease_s=OVER, lane="delivery")
    assert await store.cancel_run(run.id, "ada") is not None

    assert notice.kind == "notify"
    assert await store.renew_leases("w1", [notice.id], lease_s=LIVE) == []


async def test_finish_job_deletes_only_a_job_its_owner_holds(store: Store) -> None:
    await started(store)
    [job] = await store.lease_jobs("w1", limit=1, lease_s=OVER)
    await store.finish_job(job.id, "w2")  # not w2's job
    [again] = await store.lease_jobs("w3", limit=1, lease_s=OVER)
    assert again.id == job.id

    await store.finish_job(job.id, "w3")

    assert await store.lease_jobs("w4", limit=1, lease_s=LIVE) == []


async def test_retry_job_gives_the_job_back_after_its_delay(store: Store) -> None:
    await started(store)
    await started(store)
    soon, later = await store.lease_jobs("w1", limit=2, lease_s=LIVE)

    await store.retry_job(soon.id, "w1", delay_s=0, error="RuntimeError: boom")
    await store.retry_job(later.id, "w1", delay_s=3600, error="RuntimeError: boom")

    [retried] = await store.lease_jobs("w2", limit=10, lease_s=LIVE)
    assert (retried.id, retried.attempts) == (soon.id, 2)


async def test_a_drive_given_back_with_its_error_is_its_run_s_retrying(store: Store) -> None:
    failing, fine, quiet = await started(store), await started(store), await started(store)
    jobs = await store.lease_jobs("w1", limit=3, lease_s=LIVE)
    by_run = {j.run_id: j for j in jobs}
    before = utcnow()
    await store.retry_job(by_run[failing.id].id, "w1", delay_s=60, error="RunHeld: other code")
    await store.finish_job(by_run[fine.id].id, "w1")

    found = await store.runs_retrying([failing.id, fine.id, quiet.id, "run_none"])

    assert list(found) == [failing.id]  # not a run whose drive is done, nor one never failed
    retrying = found[failing.id]
    assert (retrying.kind, retrying.attempts, retrying.error) == ("start", 1, "RunHeld: other code")
    assert 59 <= (retrying.next_attempt_at - before).total_seconds() <= 61
    assert await store.run_retrying(failing.id) == retrying
    assert await store.run_retrying(quiet.id) is None
    assert await store.runs_retrying([]) == {}


async def test_retry_job_by_another_owner_changes_nothing(store: Store) -> None:
    await started(store)
    [job] = await store.lease_jobs("w1", limit=1, lease_s=LIVE)

    await store.retry_job(job.id, "w2", delay_s=0, error="not mine")

    assert await store.lease_jobs("w3", limit=1, lease_s=LIVE) == []


async def test_create_run_with_a_lease_hands_the_start_job_to_that_worker(store: Store) -> None:
    run = a_run()

    job = await store.create_run(run, [], lease=Lease(owner="here", seconds=LIVE))

    assert job is not None
    assert (job.kind, job.run_id, job.attempts) == ("start", run.id, 1)
    assert await store.lease_jobs("elsewhere", limit=10, lease_s=LIVE) == []
    await store.finish_job(job.id, "here")
    assert await store.get_run(run.id) == run


async def test_create_run_without_a_lease_only_queues(store: Store) -> None:
    run = a_run()

    assert await store.create_run(run, []) is None

    assert drive_jobs(await store.lease_jobs("w1", limit=10, lease_s=LIVE)) == [("start", run.id)]


async def test_a_leased_in_place_job_whose_holder_died_is_leased_again(store: Store) -> None:
    job = await store.create_run(a_run(), [], lease=Lease(owner="dead", seconds=OVER))
    assert job is not None

    [again] = await store.lease_jobs("w2", limit=10, lease_s=LIVE)

    assert (again.id, again.attempts) == (job.id, 2)


async def test_an_answer_with_a_lease_hands_its_resume_to_that_worker(store: Store) -> None:
    run = await started(store)
    [start_job] = await store.lease_jobs("w1", limit=1, lease_s=LIVE)
    request, other = a_request(run.id), a_request(run.id)
    await paused(store, run.id, [request, other], job_id=start_job.id)
    answer = an_answer(request.id, "lee")

    outcome = await store.record_answer(
        answer, final=final_of(answer), lease=Lease(owner="here", seconds=LIVE)
    )

    assert outcome.result == "closed"
    assert outcome.job is not None
    assert (outcome.job.kind, outcome.job.run_id) == ("resume", run.id)
    # what its drive starts from, read by the answer's transaction: as a read after it finds it
    assert outcome.in_play == await in_play(store, run.id)
    assert outcome.in_play is not None
    assert [r.id for r in outcome.in_play.answered] == [request.id]
    assert [r.id for r in outcome.in_play.open] == [other.id]
    assert outcome.in_play.checkpoint == checkpoint("cp-1").body
    assert outcome.request == await store.get_request(request.id)
    assert await store.lease_jobs("elsewhere", limit=10, lease_s=LIVE) == []
    await store.finish_job(outcome.job.id, "here")
    assert await store.lease_jobs("elsewhere", limit=10, lease_s=LIVE) == []


async def test_an_answer_with_a_lease_queues_behind_a_drive_that_holds_the_run(
    store: Store,
) -> None:
    run = await started(store)
    [start_job] = await store.lease_jobs("w1", limit=1, lease_s=LIVE)
    request = a_request(run.id)
    await paused(store, run.id, [request])  # w1 still holds the start job
    answer = an_answer(request.id, "lee")

    outcome = await store.record_answer(
        answer, final=final_of(answer), lease=Lease(owner="here", seconds=LIVE)
    )

    assert outcome.result == "closed"
    assert (outcome.job, outcome.in_play) == (None, None)  # the drive holding the run reads anew
    assert outcome.request == await store.get_request(request.id)
    assert await store.lease_jobs("w2", limit=10, lease_s=LIVE) == []
    await store.finish_job(start_job.id, "w1")
    assert drive_jobs(await store.lease_jobs("w2", limit=10, lease_s=LIVE)) == [("resume", run.id)]


async def test_answers_that_close_nothing_lease_nothing(store: Store) -> None:
    run = await started(store)
    [start_job] = await store.lease_jobs("w1", limit=1, lease_s=LIVE)
    request = a_request(run.id, team="finance", approvals=2)
    await paused(store, run.id, [request], job_id=start_job.id)
    here = Lease(owner="here", seconds=LIVE)
    ada = an_answer(request.id, "ada")

    partial = await store.record_answer(ada, final=final_of(ada), lease=here)
    repeated = await store.record_answer(ada, final=final_of(ada), lease=here)

    assert (partial.result, partial.job, partial.in_play) == ("partial", None, None)
    assert (repeated.result, repeated.job, repeated.in_play) == ("repeated", None, None)
    assert await store.lease_jobs("w2", limit=10, lease_s=LIVE) == []


# effects and the back office ----------------------------------------------------------------


async def test_a_drives_effects_are_recorded_with_its_progress_once_each(store: Store) -> None:
    run = await started(store)
    arguments = {"order_id": "A-1", "amount": 120.0}

    def effect(key: str, result: str) -> NewEffect:
        return NewEffect(
            key=key, run_id=run.id, tool="issue_refund", arguments=arguments, result={"id": result}
        )

    def drive(expected: str | None, at: str, *effects: NewEffect) -> Progress:
        return Progress(
            run_id=run.id,
            expected_checkpoint_id=expected,
            job_id=None,
            status="waiting",
            checkpoint=checkpoint(at),
            effects=effects,
        )

    first = await store.record_progress(drive(None, "cp-1", effect("bk_1", "R-1")))
    fenced = await store.record_progress(drive("cp-0", "cp-x", effect("bk_fenced", "R-9")))
    # a later drive that performed bk_1 again (its record lost) records only what is new
    again = await store.record_progress(
        drive("cp-1", "cp-2", effect("bk_1", "R-2"), effect("bk_2", "R-3"))
    )

    assert (first, fenced, again) == (True, False, True)
    assert (await store.get_effect("bk_1") or {})["result"] == {"id": "R-1"}
    assert (await store.get_effect("bk_2") or {})["result"] == {"id": "R-3"}
    assert await store.get_effect("bk_fenced") is None  # lost with its drive's progress
    assert await store.get_effect("bk_other") is None
    executed = [e for e in await store.list_events(run_id=run.id) if e.type == "effect.executed"]
    assert [e.data["idempotency_key"] for e in executed] == ["bk_1", "bk_2"]
    assert executed[0].data["tool"] == "issue_refund"
    assert executed[0].data["result"] == {"id": "R-1"}


def first_pause(run_id: str, effects: Sequence[NewEffect]) -> Progress:
    """A drive's progress to its first pause, with the effects it performed."""
    return Progress(
        run_id=run_id,
        expected_checkpoint_id=None,
        job_id=None,
        status="waiting",
        checkpoint=checkpoint("cp-1"),
        effects=effects,
    )


async def test_the_ledger_calls_a_key_once_per_drive_and_its_record_rides_the_drive(
    store: Store,
) -> None:
    run = await started(store)
    ledger = EffectLedger(store)
    calls: list[str] = []

    async def refund(key: str) -> dict[str, str]:
        calls.append(key)
        return {"id": f"R-{len(calls)}"}

    def perform(performed: list[NewEffect]) -> Any:
        return ledger.perform(
            key="bk_1",
            run_id=run.id,
            tool="issue_refund",
            arguments={"amount": 120},
            call=refund,
            performed=performed,
        )

    drive: list[NewEffect] = []
    first, again = await perform(drive), await perform(drive)
    unrecorded = await store.get_effect("bk_1")  # nothing is written until the drive commits
    committed = await store.record_progress(first_pause(run.id, drive))
    later: list[NewEffect] = []
    replayed = await perform(later)

    assert (first, again, replayed) == ({"id": "R-1"},) * 3
    assert calls == ["bk_1"]
    assert [e.key for e in drive] == ["bk_1"]
    assert (unrecorded, committed, later) == (None, True, [])


def sending(
    ledger: EffectLedger, run_id: str, key: str, call: Any, performed: list[NewEffect] | None = None
) -> Any:
    """`ledger.perform` of a plain tool's call (`record_now`), `send_note(text="hi")`."""
    return ledger.perform(
        key=key,
        run_id=run_id,
        tool="send_note",
        arguments={"text": "hi"},
        call=call,
        performed=[] if performed is None else performed,
        record_now=True,
    )


async def test_the_ledger_records_a_keyless_call_at_once_and_the_drive_adds_no_second_record(
    store: Store,
) -> None:
    run = await started(store)
    ledger = EffectLedger(store)
    calls: list[str] = []

    async def send(key: str) -> str:
        calls.append(key)
        return f"sent #{len(calls)}"

    def perform(run_id: str, key: str, performed: list[NewEffect]) -> Any:
        return sending(ledger, run_id, key, send, performed)

    drive: list[NewEffect] = []
    first = await perform(run.id, "bk_1", drive)
    recorded = await store.get_effect("bk_1")  # before the drive commits
    lost_drive = await perform(run.id, "bk_1", [])  # a drive after this one's crash
    committed = await store.record_progress(first_pause(run.id, drive))
    checked = await perform("check_unstored", "bk_check", [])  # `baton check`'s: not stored

    assert (first, lost_drive, checked) == ("sent #1", "sent #1", "sent #2")
    assert calls == ["bk_1", "bk_check"]
    assert (recorded or {})["result"] == "sent #1"
    assert committed is True
    assert await store.get_effect("bk_check") is None
    executed = [e for e in await store.list_events(run_id=run.id) if e.type == "effect.executed"]
    assert [e.data["idempotency_key"] for e in executed] == ["bk_1"]


async def test_a_keyless_call_started_and_never_recorded_is_not_called_again(
    store: Store,
) -> None:
    run = await started(store)
    ledger = EffectLedger(store)
    calls: list[str] = []

    async def send(key: str) -> str:
        calls.append(key)
        if calls.count("bk_fails") == 1 and key == "bk_fails":  # (its first call only)
            raise TimeoutError("the mail server did not answer")
        return "sent"

    def perform(key: str, performed: list[NewEffect]) -> Any:
        return sending(ledger, run.id, key, send, performed)

    # a drive that died while its call ran left the call's start, and no record
    cut_off = NewEffect(key="bk_cut", run_id=run.id, tool="send_note", arguments={"text": "hi"})
    await store.start_effect(cut_off)
    looked = await store.effect_in_run("bk_cut", run.id)
    told = await perform("bk_cut", [])
    told_again = await perform("bk_cut", [])  # a later drive: the record, as the first got it
    with pytest.raises(TimeoutError):
        await perform("bk_fails", [])
    failed = await store.effect_in_run("bk_fails", run.id)
    # it may have acted before it raised: a replay is told its error again, and calls nothing
    with pytest.raises(ToolFailed, match=r"^the mail server did not answer$") as replayed:
        await perform("bk_fails", [])  # (what it raised, as the first call said it)
    assert replayed.value.recorded == "TimeoutError: the mail server did not answer"

    assert (looked.started, looked.recorded) == (True, None)
    assert told == told_again == uncertain("send_note")
    assert told.startswith("Error: send_note may or may not have acted: it was cut off")
    assert calls == ["bk_fails"]  # never bk_cut, and bk_fails once
    error = {FAILED: "TimeoutError: the mail server did not answer"}
    assert (failed.started, (failed.recorded or {}).get("result")) == (False, error)
    assert (await store.effect_in_run("bk_cut", run.id)).started is False  # ended by its record
    events = [e for e in await store.list_events(run_id=run.id) if e.type.startswith("effect.")]
    assert [(e.type, e.data["idempotency_key"]) for e in events] == [
        ("effect.uncertain", "bk_cut"),
        ("effect.failed", "bk_fails"),
    ]
    assert events[0].data["result"] == uncertain("send_note")
    assert events[1].data["result"] == error


async def _effect_events(store: Store, run_id: str) -> list[tuple[str, Any]]:
    events = await store.list_events(run_id=run_id)
    return [(e.type, e.data["result"]) for e in events if e.type.startswith("effect.")]


async def test_of_two_drives_racing_to_a_keyless_call_one_calls(store: Store) -> None:
    """Two drives of one run (one whose lease ran out under it, and its successor) reach the same
    call at once: the start is the claim, so the other is told the call may have acted."""
    run = await started(store)
    ledger = EffectLedger(store)
    calls: list[str] = []

    async def send(key: str) -> str:
        calls.append(key)
        await asyncio.sleep(0.05)
        return "sent: hi"

    results = await asyncio.gather(*(sending(ledger, run.id, "bk_race", send) for _ in "ab"))

    assert calls == ["bk_race"]
    assert sorted(results) == sorted(["sent: hi", uncertain("send_note")])


async def test_a_call_that_ends_after_another_drive_said_it_uncertain_is_recorded_as_it_ran(
    store: Store,
) -> None:
    run = await started(store)
    ledger = EffectLedger(store)
    inside, release = asyncio.Event(), asyncio.Event()

    async def slow_send(key: str) -> str:
        inside.set()
        await release.wait()
        return "sent: hi"

    async def never(key: str) -> str:
        raise AssertionError("a call another drive runs is not called again")

    first = asyncio.ensure_future(sending(ledger, run.id, "bk_flight", slow_send))
    await inside.wait()
    told = await sending(ledger, run.id, "bk_flight", never)
    release.set()

    assert (told, await first) == (uncertain("send_note"), "sent: hi")
    assert (await store.get_effect("bk_flight") or {})["result"] == "sent: hi"
    assert await _effect_events(store, run.id) == [
        ("effect.uncertain", uncertain("send_note")),
        ("effect.executed", "sent: hi"),
    ]


class _RecordFailsOnce:
    """A store whose first write of a call's record fails (a locked file, a dropped connection)."""

    def __init__(self, store: Store) -> None:
        self._store, self.failed = store, False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def record_effect(self, effect: NewEffect, **how: Any) -> None:
        if not self.failed:
            self.failed = True
            raise StoreError("database is locked")
        await self._store.record_effect(effect, **how)


async def test_a_keyless_call_whose_record_write_failed_rides_the_drive_s_commit(
    store: Store,
) -> None:
    run = await started(store)
    ledger = EffectLedger(_RecordFailsOnce(store))  # type: ignore[arg-type]
    calls: list[str] = []

    async def send(key: str) -> str:
        calls.append(key)
        return "sent: hi"

    drive: list[NewEffect] = []
    result = await sending(ledger, run.id, "bk_rec", send, drive)
    before = await store.effect_in_run("bk_rec", run.id)
    committed = await store.record_progress(first_pause(run.id, drive))
    after = await store.effect_in_run("bk_rec", run.id)
    replayed = await sending(ledger, run.id, "bk_rec", send)

    assert (result, replayed, calls) == ("sent: hi", "sent: hi", ["bk_rec"])
    assert (before.started, before.recorded) == (True, None)
    assert committed is True
    assert after.started is False
    assert await _effect_events(store, run.id) == [("effect.executed", "sent: hi")]


async def test_a_keyless_call_cancelled_as_it_runs_is_said_uncertain_at_once(store: Store) -> None:
    """Its run cancelled (or its drive stopped) while the tool awaited: no later drive of a
    cancelled run would find its start, so the ledger says it now."""
    run = await started(store)
    ledger = EffectLedger(store)
    inside = asyncio.Event()

    async def send(key: str) -> str:
        inside.set()
        await asyncio.sleep(30)
        return "sent: hi"

    task = asyncio.ensure_future(sending(ledger, run.id, "bk_cut", send))
    await inside.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    looked = await store.effect_in_run("bk_cut", run.id)
    assert (looked.started, (looked.recorded or {}).get("result")) == (
        False,
        uncertain("send_note"),
    )
    assert await _effect_events(store, run.id) == [("effect.uncertain", uncertain("send_note"))]


async def test_the_ledger_calls_nothing_for_a_run_that_has_ended(store: Store) -> None:
    live, ended = await started(store), await started(store)
    ledger = EffectLedger(store)
    calls: list[str] = []

    async def refund(key: str) -> dict[str, str]:
        calls.append(key)
        return {"id": key}

    def perform(run_id: str, key: str) -> Any:
        return ledger.perform(
            key=key, run_id=run_id, tool="issue_refund", arguments={}, call=refund, performed=[]
        )

    recorded = NewEffect(
        key="bk_done", run_id=ended.id, tool="issue_refund", arguments={}, result={"id": "R-1"}
    )
    await paused(store, ended.id, [], effects=[recorded])
    assert await store.cancel_run(ended.id, "ada") is not None

    assert await perform(live.id, "bk_live") == {"id": "bk_live"}
    assert await perform("check_unstored", "bk_check") == {"id": "bk_check"}  # `baton check`'s
    with pytest.raises(RunEnded, match="cancelled"):
        await perform(ended.id, "bk_late")
    assert await perform(ended.id, "bk_done") == {"id": "R-1"}  # recorded: replayed, not called
    assert calls == ["bk_live", "bk_check"]
    looked = await store.effect_in_run("bk_done", ended.id)
    assert (looked.recorded or {})["result"] == {"id": "R-1"}
    assert looked.run_status == "cancelled"
    assert await store.effect_in_run("bk_none", "run_none") == EffectLookup(None, None)


# people -------------------------------------------------------------------------------------


async def test_users_teams_and_tokens(store: Store) -> None:
    await store.add_team("finance", "Pays the big refunds")
    await store.add_team("finance")  # again: no error, no change

    ada = await store.add_user("ada", role="responder", teams=["finance", "support-leads"])
    assert (ada.name, ada.role, set(ada.teams)) == (
        "ada",
        "responder",
        {"finance", "support-leads"},
    )
    assert await store.get_user("ada") == ada
    assert await store.get_user("nobody") is None

    moved = await store.add_user("ada", role="admin", teams=["legal"])
    assert (moved.id, moved.role, moved.teams) == (ada.id, "admin", ("legal",))

    await store.add_token(ada.id, "hash-of-ada-token", "laptop")
    assert await store.user_for_token("hash-of-ada-token") == moved
    assert await store.user_for_token("hash-of-no-token") is None


async def test_eight_adds_of_one_new_user_at_once_make_one_user(store: Store) -> None:
    # as eight first sign-ins at once through EasyAuth (tests/e2e/test_easyauth.py) do
    added = await asyncio.gather(
        *(store.add_user("twin", role="responder", teams=["support-leads"]) for _ in range(8))
    )

    assert {user.id for user in added} == {added[0].id}
    twin = await store.get_user("twin")
    assert twin is not None
    assert (twin.id, twin.role, twin.teams) == (added[0].id, "responder", ("support-leads",))


async def test_a_token_hash_belongs_to_one_user(store: Store) -> None:
    ada = await store.add_user("ada", role="responder", teams=["finance"])
    bob = await store.add_user("bob", role="responder", teams=["finance"])
    await store.add_token(ada.id, "hash-1")

    with pytest.raises(StoreError):
        await store.add_token(bob.id, "hash-1")
    assert await store.user_for_token("hash-1") == ada


async def test_lanes_due_names_the_lanes_with_a_job_due_and_a_checked_lease_takes_them(
    store: Store,
) -> None:
    assert await store.lanes_due() == frozenset()
    run = await started(store)
    assert await store.lanes_due() == {"work"}

    [start_job] = await store.lease_jobs("w1", limit=1, lease_s=LIVE, lane="work", checked=True)
    assert await store.lanes_due() == frozenset()  # leased: due no more
    await paused_with_a_notification(store, run, start_job)
    await started(store)
    assert await store.lanes_due() == {"work", "delivery"}

    [notify] = await store.lease_jobs("w1", limit=4, lease_s=LIVE, lane="delivery", checked=True)
    assert notify.kind == "notify"
    assert await store.lanes_due() == {"work"}
    await store.retry_job(notify.id, "w1", delay_s=3600, error="later")
    assert await store.lanes_due() == {"work"}  # given back for later: not due yet


async def paused_with_a_notification(store: Store, run: Run, start_job: Job) -> None:
    """Commit `run`'s pause on one request, with a webhook notification of it to deliver."""
    request = a_request(run.id)
    told_of = notifications_for(request, ("webhook",), "created")
    await paused(
        store, run.id, [request], at=f"cp-{run.id}", job_id=start_job.id, notifications=told_of
    )


# files a request came with ------------------------------------------------------------------


async def test_a_pause_keeps_each_file_once_and_its_requests_list_theirs(store: Store) -> None:
    """The bytes ride on the pause's commit, once per file however many requests list it; each
    request reads back its own list; an id nothing kept reads as None."""
    image = base64.b64encode(b"\x89PNG" + bytes(300)).decode()
    photo = decoded(f"data:image/png;base64,{image}")
    notes = decoded("data:text/plain,call%20me")
    assert photo is not None
    assert notes is not None
    first, second = await started(store), await started(store)
    one = a_request(first.id).model_copy(
        update={"attachments": [photo.about(THE_REQUEST), notes.about("the user's message")]}
    )
    other = a_request(second.id).model_copy(update={"attachments": [photo.about(THE_REQUEST)]})
    await paused(store, first.id, [one], at=f"cp-{first.id}", attachments=[photo, notes])
    await paused(store, second.id, [other], at=f"cp-{second.id}", attachments=[photo])

    assert (await store.get_request(one.id)).attachments == one.attachments  # type: ignore[union-attr]
    assert (await store.get_request(other.id)).attachments == other.attachments  # type: ignore[union-attr]
    assert [a.name for a in one.attachments] == [
        "an image (PNG, 304 bytes)",
        "a text file (PLAIN, 7 bytes)",
    ]
    assert await store.load_attachment(photo.id) == photo
    assert await store.load_attachment(notes.id) == notes
    assert await store.load_attachment("0" * 64) is None
    # a request with none lists none
    plain = a_request(first.id)
    assert plain.attachments == []
