"""A worker's lease round runs when work may be due (what was queued, what a job's end freed),
reads every lane in one statement, and leaves no lane's job waiting for a poll."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from human.policy import load_policy
from human.records import Job
from human.store import open_store
from human.store.base import Store
from tests.contract.test_store import paused_with_a_notification, started
from tests.harness import eventually, seed
from workflows.platform import registry
from workflows.platform.runtime import Runtime
from workflows.platform.worker import Worker
from workflows.shipped import POLICIES

PURCHASE = {"item": "laptop", "amount": 2400.0, "vendor": "Contoso", "requester": "sam"}
QUIET_POLL_S = 60.0  # no poll comes within a test: what is found is found by a wake
FLOOD = 20


@dataclass
class Seen:
    """What the worker asked the store: each `lanes_due` answer, each job it leased."""

    due: list[frozenset[str]] = field(default_factory=list)
    leased: list[Job] = field(default_factory=list)
    polls: int = 0


@asynccontextmanager
async def watched(
    db_url: str,
    channels: Sequence[str],
    *,
    before: Callable[[Store], Awaitable[None]] | None = None,
    **worker: Any,
) -> AsyncIterator[tuple[Runtime, Seen]]:
    """A runtime and its worker running in this process, the worker's reads recorded.

    `before(store)` runs before the worker starts; `worker` are more of `Worker`'s arguments.
    """
    registry.load("workflows.shipped")
    await seed(db_url)
    store = await open_store(db_url)
    if before is not None:
        await before(store)
    seen = Seen()
    _record(store, seen)
    runtime = Runtime(store, policy=load_policy(POLICIES), notify_channels=channels)
    worker = Worker(store, runtime, poll_s=QUIET_POLL_S, **worker)
    runtime.attach_worker(worker)
    loop = asyncio.create_task(worker.run_forever())
    try:
        await eventually(lambda: _now(seen.due), what="the worker's first round")
        yield runtime, seen
    finally:
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
        await store.close()


def _record(store: Store, seen: Seen) -> None:
    lanes_due, lease_jobs, jobs_due = store.lanes_due, store.lease_jobs, store.jobs_due

    async def due() -> frozenset[str]:
        found = await lanes_due()
        seen.due.append(frozenset(found))
        return found

    async def lease(*args: Any, **kwargs: Any) -> list[Job]:
        jobs = await lease_jobs(*args, **kwargs)
        seen.leased += jobs
        return jobs

    async def poll(*args: Any, **kwargs: Any) -> bool:
        seen.polls += 1
        return await jobs_due(*args, **kwargs)

    store.lanes_due = due  # type: ignore[method-assign]
    store.lease_jobs = lease  # type: ignore[method-assign]
    store.jobs_due = poll  # type: ignore[method-assign]


async def test_a_notification_a_drive_queues_is_leased_at_once_not_at_the_next_poll(
    db_url: str,
) -> None:
    async with watched(db_url, ["webhook"]) as (runtime, seen):
        run = await runtime.start("purchase", PURCHASE, actor="sam")
        notified = await eventually(
            lambda: _now([j for j in seen.leased if j.kind == "notify" and j.run_id == run.id]),
            what="the pause's notification to be leased",
            timeout=10.0,
        )

    assert {j.lane for j in notified} == {"delivery"}
    assert seen.polls == 0  # found by the drive's wake of the delivery lane, not by a poll


async def test_after_a_drive_that_queued_nothing_a_round_costs_one_read_of_its_own_lane(
    db_url: str,
) -> None:
    async with watched(db_url, []) as (runtime, seen):
        first = len(seen.due)
        run = await runtime.start("purchase", PURCHASE, actor="sam")
        await eventually(
            lambda: _status(runtime, run.id, "waiting"), what="the run to pause", timeout=10.0
        )
        await asyncio.sleep(0.3)  # what the drive's end set off has settled
        after = seen.due[first:]

    # The start job was handed to the worker as it was queued; its end looked in the work lane
    # once (its run's next drive could have been waiting), and nothing looked in the idle
    # delivery lane: no read for it, no poll.
    assert after == [frozenset()]
    assert seen.polls == 0
    assert [j.kind for j in seen.leased] == []


async def test_a_lane_kept_busy_does_not_keep_a_job_of_the_other_lane_waiting(db_url: str) -> None:
    # A flood of notifications, one delivered at a time: each delivery's end wakes its own lane
    # only, and no poll comes. A drive queued meanwhile by another process (no wake here) is
    # leased by the next round all the same, long before the flood is through.
    async def flood(store: Store) -> None:
        for _ in range(FLOOD):
            run = await started(store)
            [start_job] = await store.lease_jobs("elsewhere", limit=1, lease_s=60, lane="work")
            await paused_with_a_notification(store, run, start_job)

    async def deliver(job: Job, owner: str) -> bool:
        await asyncio.sleep(0.05)
        return False  # delivered: the worker finishes the job

    async with watched(
        db_url, [], before=flood, delivery_concurrency=1, handlers={"notify": deliver}
    ) as (runtime, seen):
        await eventually(
            lambda: _now(any(j.kind == "notify" for j in seen.leased)), what="the flood to begin"
        )
        queued = await started(runtime.store)  # as another process would queue it
        await eventually(
            lambda: _now(any(j.run_id == queued.id for j in seen.leased)),
            what="the queued drive to be leased",
            timeout=10.0,
        )
        delivering = [j for j in seen.leased if j.kind == "notify"]

    assert len(delivering) < FLOOD  # leased while the flood went on
    assert seen.polls == 0


async def _now(value: Any) -> Any:
    return value


async def _status(runtime: Runtime, run_id: str, status: str) -> bool | None:
    return True if (await runtime.get(run_id)).status == status else None
