"""The store contract, continued: the live audit feed, job signals, and two processes leasing.

"Two processes" are two store instances on one database, each with its own connections, as two
`baton` processes have.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from human.records import AuditEvent, NewEvent
from human.store import open_store
from human.store.base import Lease, Progress, Store
from tests.contract.conftest import Backend
from tests.contract.test_store import (
    LIVE,
    a_request,
    an_answer,
    final_of,
    paused,
    started,
)


@contextlib.asynccontextmanager
async def other_process(backend: Backend) -> AsyncIterator[Store]:
    store = await open_store(backend.url)
    try:
        yield store
    finally:
        await store.close()


async def collect(feed: AsyncIterator[AuditEvent], count: int) -> list[AuditEvent]:
    found: list[AuditEvent] = []
    async with asyncio.timeout(10):
        async for event in feed:
            found.append(event)
            if len(found) == count:
                return found
    return found


async def test_watch_sees_events_another_process_commits_in_commit_order(
    store: Store, backend: Backend
) -> None:
    feed = store.watch()
    # The first event is read as the watcher starts: after it, only what commits from then on.
    listening = asyncio.ensure_future(collect(feed, 3))
    await asyncio.sleep(0.3)
    async with other_process(backend) as other:
        run = await started(other)
        request = a_request(run.id)
        await paused(other, run.id, [request])
        await other.record_answer(
            an_answer(request.id, "lee"), final=final_of(an_answer(request.id, "lee"))
        )
    events = await listening
    await feed.aclose()

    assert [e.type for e in events] == ["run.started", "request.created", "request.answered"]
    assert [e.id for e in events] == sorted(e.id for e in events)
    assert events[2].request_id == request.id
    assert events[2].actor == "lee"


async def test_watch_after_an_id_first_catches_up_then_follows(store: Store) -> None:
    run = await started(store)
    mark = await store.last_event_id()
    await store.record_progress(
        Progress(
            run_id=run.id,
            expected_checkpoint_id=None,
            job_id=None,
            status="running",
            events=[NewEvent(type="run.noted", run_id=run.id, data={"n": 1})],
        )
    )
    feed = store.watch(after_id=mark)
    caught_up = await collect(feed, 1)
    assert [(e.type, e.data) for e in caught_up] == [("run.noted", {"n": 1})]

    later = asyncio.ensure_future(collect(feed, 1))
    await asyncio.sleep(0.3)
    await store.cancel_run(run.id, "ada")
    assert [e.type for e in await later] == ["run.cancelled"]
    await feed.aclose()


async def test_last_event_id_grows_with_each_event(store: Store) -> None:
    before = await store.last_event_id()
    await started(store)
    assert await store.last_event_id() > before


async def test_wait_for_jobs_returns_by_its_timeout_when_nothing_is_queued(store: Store) -> None:
    async with asyncio.timeout(5):
        await store.wait_for_jobs(0.2)


async def test_wait_for_jobs_ends_early_when_another_process_queues_on_postgres(
    store: Store, backend: Backend
) -> None:
    if backend.dialect != "postgres":
        # SQLite has no cross-process signal; its wait is the poll interval (the test above).
        return
    await store.wait_for_jobs(0.01)  # subscribes
    loop = asyncio.get_running_loop()
    async with other_process(backend) as other:
        begun = loop.time()
        waiting = asyncio.ensure_future(store.wait_for_jobs(30))
        await asyncio.sleep(0.1)
        await started(other)
        async with asyncio.timeout(10):
            await waiting
    assert loop.time() - begun < 10


async def test_two_processes_racing_for_one_runs_drive_jobs_never_both_hold_one(
    store: Store, backend: Backend
) -> None:
    # One run with a start job queued; an answer then queues a resume behind it. Twenty rounds of
    # both processes leasing at once: a run's drive is held by one of them at a time.
    async with other_process(backend) as other:
        for _ in range(20):
            run = await started(store)
            request = a_request(run.id)
            await paused(store, run.id, [request], at=f"cp-{run.id}")
            leased = await store.lease_jobs("a", limit=4, lease_s=0.0)
            # (earlier rounds' leftovers may come too); the lease is over at once: a dead holder
            assert [j.kind for j in leased if j.run_id == run.id] == ["start"]
            await other.record_answer(
                an_answer(request.id, "lee"), final=final_of(an_answer(request.id, "lee"))
            )
            # One job each: so each can lock a different job of the same run.
            mine, theirs = await asyncio.gather(
                store.lease_jobs("a", limit=1, lease_s=LIVE),
                other.lease_jobs("b", limit=1, lease_s=LIVE),
            )
            drives = [j for j in [*mine, *theirs] if j.run_id == run.id]
            assert len(drives) == 1, drives
            for job in mine:
                await store.finish_job(job.id, "a")
            for job in theirs:
                await other.finish_job(job.id, "b")
            while rest := await store.lease_jobs("a", limit=50, lease_s=LIVE):
                for job in rest:
                    await store.finish_job(job.id, "a")


async def test_an_answer_leased_in_place_waits_for_another_processes_live_drive(
    store: Store, backend: Backend
) -> None:
    async with other_process(backend) as other:
        run = await started(store)
        request = a_request(run.id)
        await paused(store, run.id, [request])
        held = await other.lease_jobs("b", limit=4, lease_s=LIVE)
        assert [j.run_id for j in held] == [run.id]

        outcome = await store.record_answer(
            an_answer(request.id, "lee"),
            final=final_of(an_answer(request.id, "lee")),
            lease=Lease(owner="a", seconds=LIVE),
        )
        assert outcome.result == "closed"
        assert outcome.job is None  # queued behind the live drive of the other process


async def test_a_run_another_process_is_leasing_is_skipped_not_waited_for_on_postgres(
    store: Store, backend: Backend
) -> None:
    """Mid-lease, a process holds the job's and the run's row locks; others skip that run."""
    if backend.dialect != "postgres":
        return  # SQLite's leases are serialized by its single writer
    import asyncpg

    run = await started(store)
    request = a_request(run.id)
    await paused(store, run.id, [request])
    start = await store.lease_jobs("dead", limit=4, lease_s=0.0)  # a holder that died
    await store.record_answer(
        an_answer(request.id, "lee"), final=final_of(an_answer(request.id, "lee"))
    )
    leasing = await asyncpg.connect(backend.url)
    try:
        async with leasing.transaction():
            # Exactly what lease_jobs holds while it decides: the start job and the run, locked.
            await leasing.execute("SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE", start[0].id)
            await leasing.execute("SELECT 1 FROM runs WHERE id = $1 FOR UPDATE", run.id)
            async with asyncio.timeout(5):  # skipped, not waited for
                taken = await store.lease_jobs("b", limit=4, lease_s=LIVE)
            assert [j for j in taken if j.run_id == run.id] == []
    finally:
        await leasing.close()
    after = await store.lease_jobs("b", limit=4, lease_s=LIVE)
    assert [j.kind for j in after if j.run_id == run.id] == ["start"]
