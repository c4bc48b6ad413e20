"""Every write is all or nothing: a failure after any statement of it leaves no row changed.

For each write path (a run's start, with and without an idempotency key; a pause; a resume with
its effect; an answer that closes a request and one that counts an approval; a claim, a release,
a reassignment; a cancellation; a timer firing; a delivery attempt), the test first counts the
statements the write executes (through `SqlStore.wrap_writes`, `tests.faults`), and
proves it is one transaction. Then, on a fresh copy of the same situation, it fails the write
right after statement 1, 2, … up to the last (after which only COMMIT is left) and checks that
every row of every table is as it was before; and finally the same call, without the fault,
succeeds and executes the same statements.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest

from human.records import HumanRequest, Job, NewEvent
from human.routing import notifications_for, timers_for
from human.store.base import Lease, NewEffect, Progress, RunKey
from human.store.transactions import SqlStore
from tests.contract.test_store import (
    LIVE,
    a_request,
    a_run,
    an_answer,
    checkpoint,
    final_of,
    started,
)
from tests.contract.test_store_routing import Clocked, deadline_request
from tests.faults import InjectedFault, Statements
from tests.harness import digest

Write = Callable[[], Awaitable[Any]]


async def paused(s: Clocked, *, approvals: int = 1, channels: tuple[str, ...] = ()) -> HumanRequest:
    """A waiting run's one request, due in 2 h, of `approvals` approvers; told to `channels`."""
    request = deadline_request(s.clock).model_copy(update={"approvals_required": approvals})
    [request] = await s.paused([request], channels=channels)
    return request


async def leased(s: Clocked, kind: str, *, run_id: str) -> Job:
    """The run's due job of that kind, leased to `w1`."""
    [job] = [j for j in await s.due(kind) if j.run_id == run_id]
    return job


# the writes, each set up afresh: a function that sets the scene and returns the write ----------


async def start_a_run(s: Clocked) -> Write:
    run = a_run()
    events = [NewEvent(type="run.started", run_id=run.id, actor="sam", data={"input": run.input})]
    return lambda: s.store.create_run(run, events)


async def start_a_run_once_leased_to_its_worker(s: Clocked) -> Write:
    run = a_run()
    events = [NewEvent(type="run.started", run_id=run.id, actor="sam")]
    key = RunKey(key=f"key-{run.id}", digest="d1")
    return lambda: s.store.create_run(run, events, lease=Lease(owner="w1", seconds=LIVE), key=key)


async def pause_on_two_requests_with_timers_and_notifications(s: Clocked) -> Write:
    run = await started(s.store)
    start = (await leased(s, "start", run_id=run.id)).id
    requests = [
        a_request(run.id, at=s.clock.now).model_copy(
            update={"expires_at": s.clock.now + timedelta(hours=2)}
        ),
        a_request(run.id, kind="question", team="finance", at=s.clock.now),
    ]
    progress = Progress(
        run_id=run.id,
        expected_checkpoint_id=None,
        job_id=start,
        status="waiting",
        checkpoint=checkpoint(f"cp-{run.id}"),
        new_requests=requests,
        events=[NewEvent(type="request.created", run_id=run.id, request_id=r.id) for r in requests],
        timers=[t for r in requests for t in timers_for(r)],
        notifications=[n for r in requests for n in notifications_for(r, ["webhook"], "created")],
        transcript=[{"type": "message", "text": "asking"}],
    )
    return lambda: _committed(s.store.record_progress(progress))


async def resume_with_an_answer_to_the_end(s: Clocked) -> Write:
    request = await paused(s)
    answer = an_answer(request.id, "lee", at=s.clock.now)
    await s.store.record_answer(answer, final=final_of(answer))
    resume = (await leased(s, "resume", run_id=request.run_id)).id
    progress = Progress(
        run_id=request.run_id,
        expected_checkpoint_id=f"cp-{request.run_id}",
        job_id=resume,
        status="completed",
        output={"refunded": 120},
        delivered_request_ids=[request.id],
        events=[
            NewEvent(type="run.resumed", run_id=request.run_id, request_id=request.id),
            NewEvent(type="run.completed", run_id=request.run_id),
        ],
        transcript=[{"type": "message", "text": "done"}, {"type": "message", "text": "bye"}],
        effects=[
            NewEffect(
                key=f"{request.run_id}:call-1",
                run_id=request.run_id,
                tool="issue_refund",
                arguments={"amount": 120},
                result={"refund_id": "R-1"},
            )
        ],
    )
    return lambda: _committed(s.store.record_progress(progress))


async def record_a_plain_tool_s_effect_at_once(s: Clocked) -> Write:
    request = await paused(s)
    effect = NewEffect(
        key=f"{request.run_id}:call-2",
        run_id=request.run_id,
        tool="send_note",
        arguments={"text": "hello"},
        result="sent: hello",
    )

    async def write() -> bool:
        await s.store.record_effect(effect)
        return True

    return write


async def answer_that_closes_a_request(s: Clocked) -> Write:
    request = await paused(s, channels=("webhook",))
    answer = an_answer(request.id, "lee", at=s.clock.now)
    lease = Lease(owner="w1", seconds=LIVE)
    return lambda: _outcome(s.store.record_answer(answer, final=final_of(answer), lease=lease))


async def first_of_two_approvals_by_the_claim_holder(s: Clocked) -> Write:
    request = await paused(s, approvals=2)
    await s.store.claim_request(request.id, "lee", until=s.clock.now + timedelta(minutes=10))
    answer = an_answer(request.id, "lee", at=s.clock.now)
    return lambda: _outcome(s.store.record_answer(answer, final=final_of(answer)))


async def claim(s: Clocked) -> Write:
    request = await paused(s)
    until = s.clock.now + timedelta(minutes=10)
    return lambda: _outcome(s.store.claim_request(request.id, "lee", until=until))


async def release(s: Clocked) -> Write:
    request = await paused(s)
    await s.store.claim_request(request.id, "lee", until=s.clock.now + timedelta(minutes=10))
    return lambda: _outcome(s.store.release_request(request.id, "lee", holder="lee"))


async def reassign_to_another_team_and_tell_it(s: Clocked) -> Write:
    request = await paused(s)
    await s.store.claim_request(request.id, "lee", until=s.clock.now + timedelta(minutes=10))
    return lambda: _outcome(
        s.store.reassign_request(
            request.id, "ada", team="finance", assignee=None, channels=("webhook", "email")
        )
    )


async def cancel_a_waiting_run(s: Clocked) -> Write:
    request = await paused(s, channels=("webhook",))
    return lambda: s.store.cancel_run(request.run_id, "ada")


async def fire_an_expiry(s: Clocked) -> Write:
    request = await paused(s)
    s.clock.advance(hours=3)
    timer = await leased(s, "timer", run_id=request.run_id)
    return lambda: s.store.fire_timer(timer, "w1", channels=("webhook",))


async def record_a_delivery_to_retry(s: Clocked) -> Write:
    request = await paused(s, channels=("webhook",))
    notify = await leased(s, "notify", run_id=request.run_id)
    note = notify.payload["notification_id"]
    return lambda: s.store.record_delivery(
        note, job_id=notify.id, owner="w1", outcome="retrying", error="HTTP 503", retry_in_s=5
    )


async def _committed(write: Awaitable[bool]) -> bool:
    assert await write, "the write was fenced off"
    return True


async def _outcome(write: Awaitable[Any]) -> Any:
    """The write's outcome, which must be one that changed something."""
    outcome = await write
    assert outcome.result in ("closed", "partial", "claimed", "released", "reassigned"), outcome
    return outcome


WRITES: dict[str, Callable[[Clocked], Awaitable[Write]]] = {
    f.__name__: f
    for f in (
        start_a_run,
        start_a_run_once_leased_to_its_worker,
        pause_on_two_requests_with_timers_and_notifications,
        resume_with_an_answer_to_the_end,
        record_a_plain_tool_s_effect_at_once,
        answer_that_closes_a_request,
        first_of_two_approvals_by_the_claim_holder,
        claim,
        release,
        reassign_to_another_team_and_tell_it,
        cancel_a_waiting_run,
        fire_an_expiry,
        record_a_delivery_to_retry,
    )
}


@pytest.mark.parametrize("name", list(WRITES))
async def test_a_failure_after_any_statement_of_a_write_leaves_every_row_as_it_was(
    name: str, clocked: Clocked
) -> None:
    set_up, store, url = WRITES[name], clocked.store, clocked.backend.url
    assert isinstance(store, SqlStore)

    first = await set_up(clocked)  # on a first copy of the situation: count
    store.wrap_writes = counted = Statements()
    await first()
    store.wrap_writes = None
    assert counted.transactions == 1, f"{name} writes in {counted.transactions} transactions"
    assert counted.count >= 2

    write = await set_up(clocked)  # a fresh copy, the same statements
    before = digest(url)
    for n in range(1, counted.count + 1):
        store.wrap_writes = fault = Statements(fail_after=n)
        with pytest.raises(InjectedFault):
            await write()
        assert fault.count == n
        assert digest(url) == before, f"{name}: statement {n} of {counted.count} stayed"

    store.wrap_writes = retried = Statements()
    await write()
    store.wrap_writes = None
    assert (retried.transactions, retried.count) == (1, counted.count)
    assert digest(url) != before
