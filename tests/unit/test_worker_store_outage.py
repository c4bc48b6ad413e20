"""A job the store cannot serve is given back uncounted: an outage never abandons work.

The store refuses the drive's commit for real (SQLite's `query_only`, PostgreSQL's read-only
transaction, set on the store's own connection by `tests.faults.Prelude`) more times than a job
may fail; each time the start job is given back with its attempt returned, and once the store
takes writes the run pauses as if nothing had happened. When the give-back itself is refused,
the worker keeps the job and tries again until the store takes it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from human.policy import load_policy
from human.records import Run
from human.store import open_store
from human.store.transactions import SqlStore
from tests.faults import PG_READ_ONLY, SQLITE_READ_ONLY, SQLITE_RECOVERED, Prelude
from tests.harness import eventually, jobs, seed
from workflows.platform import registry
from workflows.platform.runtime import Runtime
from workflows.platform.worker import MAX_ATTEMPTS, Worker
from workflows.shipped import POLICIES

DRIVE_COMMIT = "UPDATE runs SET status"  # the first statement of `record_progress`


@dataclass
class Outage:
    store: SqlStore
    runtime: Runtime
    worker: Worker
    db_url: str

    @property
    def tries(self) -> int:
        """Transactions per write refused as read-only: PostgreSQL tries once more, anew."""
        return 1 if self.store.dialect.name == "sqlite" else 2

    def refuse(self, writes: int | None, *, when: str = "") -> Prelude:
        """Refuse the next `writes` writes (all, if None; those starting with `when`) as a
        read-only database would."""
        times = None if writes is None else writes * self.tries
        if self.store.dialect.name == "sqlite":
            prelude = Prelude(*SQLITE_READ_ONLY, times=times, then=SQLITE_RECOVERED, when=when)
        else:
            prelude = Prelude(*PG_READ_ONLY, times=times, when=when)
        self.store.wrap_writes = prelude
        return prelude

    def start_job(self) -> dict[str, Any]:
        [job] = [j for j in jobs(self.db_url) if j["kind"] == "start"]
        return job

    async def until_paused(self, run: Run) -> Run:
        async def paused() -> Run | None:
            await self.worker.run_until_idle()
            now = await self.runtime.get(run.id)
            return now if now.status == "waiting" else None

        return await eventually(paused, what="the run to pause")


@pytest.fixture
async def outage(db_url: str) -> AsyncIterator[Outage]:
    await seed(db_url)
    registry.load("tests.fixtures.twin_workflow")
    store = await open_store(db_url)
    assert isinstance(store, SqlStore)
    runtime = Runtime(store, policy=load_policy(POLICIES))
    try:
        yield Outage(store, runtime, Worker(store, runtime, poll_s=0.002), db_url)
    finally:
        store.wrap_writes = None
        await store.close()


async def test_a_drive_the_store_refuses_more_times_than_a_job_may_fail_is_not_abandoned(
    outage: Outage,
) -> None:
    run = await outage.runtime.start("twin", {"item": "laptop"}, actor="sam")
    refusals = outage.refuse(None, when=DRIVE_COMMIT)

    async def refused_often() -> bool:
        await outage.worker.run_until_idle()  # no job in flight when it returns
        return refusals.transactions >= (MAX_ATTEMPTS + 2) * outage.tries

    await eventually(refused_often, what="the store to refuse more drives than a job may fail")
    job = outage.start_job()
    assert job["attempts"] == 0  # each refused drive gave its attempt back
    assert "StoreUnavailable" in str(job["last_error"])
    assert (await outage.runtime.get(run.id)).status == "running"

    outage.store.wrap_writes = None
    paused = await outage.until_paused(run)
    assert paused.error is None
    assert [j for j in jobs(outage.db_url) if j["kind"] == "start"] == []


async def test_a_give_back_the_store_refuses_too_is_tried_again_until_it_is_taken(
    outage: Outage,
) -> None:
    outage.worker = Worker(outage.store, outage.runtime, poll_s=0.05)  # room to look between
    run = await outage.runtime.start("twin", {"item": "laptop"}, actor="sam")
    refusals = outage.refuse(3)  # the drive's commit, then the first two tries to give it back

    await outage.worker.run_until_idle()

    assert refusals.spent
    job = outage.start_job()
    assert job["attempts"] == 0
    assert "StoreUnavailable" in str(job["last_error"])
    assert (await outage.runtime.get(run.id)).status == "running"
    await outage.until_paused(run)
