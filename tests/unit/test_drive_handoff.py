"""A drive this process queues starts from what the transaction that queued it read.

A start and an answer in this process hand their drive the run as their own transaction left
it, so the drive reads nothing before it runs the workflow. A drive that has to wait for a slot
reads its run when its turn comes instead: a run cancelled meanwhile runs none of its tools.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from baton.demo import seed_demo
from baton.settings import Settings
from baton.wiring import open_parts
from human.records import Job, Run
from human.store.base import InPlay, RequestFilter, Store
from tests.harness import sql
from workflows.platform.runtime import Runtime
from workflows.platform.worker import Worker

REFUND = {"order_id": "A-1002", "amount": 120, "reason": "broken"}


async def test_a_run_started_and_answered_here_is_driven_without_reading_it_again(
    db_url: str,
) -> None:
    async with open_parts(Settings(database_url=db_url)) as parts:
        await seed_demo(parts.store, db_url)
        lee = await parts.store.get_user("lee")
        assert lee is not None
        reads: list[str] = []
        run_in_play = parts.store.run_in_play

        async def counted(run_id: str) -> InPlay | None:
            reads.append(run_id)
            return await run_in_play(run_id)

        parts.store.run_in_play = counted  # type: ignore[method-assign]

        run = await parts.runtime.start("refund", REFUND, actor="sam")
        await parts.worker.drain()
        [request] = (
            await parts.requests.list(RequestFilter(run_id=run.id, status="pending"))
        ).items
        await parts.requests.respond(request.id, {"decision": "approve"}, responder=lee)
        await parts.worker.drain()
        done = await parts.runtime.get(run.id)

    assert (done.status, str(done.output["text"]).split(" ")[0]) == ("completed", "Refunded")
    assert reads == []  # both drives started from their queuing transaction's read


async def test_a_drive_handed_its_run_before_a_cancel_calls_no_tool(
    db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # The answer's transaction reads the run in play; a cancel may commit right after it (in the
    # same SQLite batch, or as the next holder of the run's row lock) and before the drive runs.
    # The drive then starts from the run as it was, but its refund is refused at the ledger.
    async with open_parts(Settings(database_url=db_url)) as parts:
        await seed_demo(parts.store, db_url)
        lee, ada = await parts.store.get_user("lee"), await parts.store.get_user("ada")
        assert lee is not None
        assert ada is not None
        handed: list[tuple[Job, InPlay | None]] = []

        def hold(job: Job, in_play: InPlay | None = None) -> None:
            handed.append((job, in_play))  # driven by the test, when it chooses

        parts.worker.accept = hold  # type: ignore[method-assign]
        run = await parts.runtime.start("refund", REFUND, actor="sam")
        [(start_job, started)] = handed
        await parts.runtime.drive(run.id, start_job.id, started)
        [request] = (
            await parts.requests.list(RequestFilter(run_id=run.id, status="pending"))
        ).items
        await parts.requests.respond(request.id, {"decision": "approve"}, responder=lee)
        [_, (resume_job, answered)] = handed
        assert answered is not None
        assert answered.run.status == "waiting"
        await parts.runtime.cancel(run.id, by=ada)

        with caplog.at_level(logging.INFO, logger="workflows.platform.runtime"):
            consumed = await parts.runtime.drive(run.id, resume_job.id, answered)  # as handed
        done = await parts.runtime.get(run.id)
        events = await parts.store.list_events(run_id=run.id)

    assert consumed is False  # nothing of it committed: the run had ended (the worker ends it)
    said = [(r.levelname, r.getMessage()) for r in caplog.records if r.name.startswith("workflows")]
    assert said == [("INFO", "drive dropped: the run ended under it")]  # not "run failed"
    assert done.status == "cancelled"
    assert sql(db_url, "SELECT * FROM refunds") == []  # the back office was never called
    assert [e for e in events if e.type == "effect.executed"] == []


async def test_a_start_hands_its_drive_the_run_as_a_read_would_find_it(db_url: str) -> None:
    async with open_parts(Settings(database_url=db_url)) as parts:
        handed: list[InPlay | None] = []

        def hold(job: Job, in_play: InPlay | None = None) -> None:
            handed.append(in_play)

        parts.worker.accept = hold  # type: ignore[method-assign]
        run = await parts.runtime.start("refund", REFUND, actor="sam")
        read = await parts.store.run_in_play(run.id)

    assert handed == [read]  # every field of the run, no request, no checkpoint


class Drives:
    """A runtime's `drive` that records what each drive was handed and waits to be let go."""

    def __init__(self) -> None:
        self.handed: list[tuple[int | None, InPlay | None]] = []
        self.go = asyncio.Event()

    async def drive(self, run_id: str, job_id: int | None, in_play: InPlay | None = None) -> bool:
        self.handed.append((job_id, in_play))
        await self.go.wait()
        return True  # the job is consumed: the worker asks the store nothing


def _in_play(run_id: str) -> InPlay:
    now = datetime.now(UTC)
    run = Run(
        id=run_id, workflow="refund", input={}, status="running", created_at=now, updated_at=now
    )
    return InPlay(run=run, open=[], answered=[])


async def test_a_drive_that_waits_for_a_slot_reads_its_run_when_its_turn_comes() -> None:
    drives = Drives()
    worker = Worker(cast(Store, object()), cast(Runtime, drives), concurrency=1)
    first, second = _in_play("run_1"), _in_play("run_2")

    worker.accept(_job(1, "run_1"), first)
    await _until(lambda: len(drives.handed) == 1)
    worker.accept(_job(2, "run_2"), second)  # the one slot is taken: this one waits
    drives.go.set()
    await worker.drain()

    assert drives.handed == [(1, first), (2, None)]


def _job(job_id: int, run_id: str) -> Job:
    return Job(id=job_id, kind="start", run_id=run_id, payload={}, attempts=1)


async def _until(condition: Any) -> None:
    for _ in range(100):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the worker did not start the first drive")


async def test_draining_one_run_waits_for_its_drives_only(db_url: str) -> None:
    # The benchmarks' cycles with runs in flight each wait for their own run: one run's drive
    # held back must not hold up the wait for another's, and the wait for it must see it out.
    async with open_parts(Settings(database_url=db_url)) as parts:
        await seed_demo(parts.store, db_url)
        held, drive = asyncio.Event(), parts.runtime.drive
        slow: list[str] = []

        async def held_back(run_id: str, job_id: int | None, in_play: InPlay | None = None) -> bool:
            if run_id in slow:
                await held.wait()
            return await drive(run_id, job_id, in_play)

        parts.runtime.drive = held_back  # type: ignore[method-assign]
        quick = await parts.runtime.start("refund", REFUND, actor="sam")
        slow.append((await parts.runtime.start("refund", REFUND, actor="sam")).id)

        await asyncio.wait_for(parts.worker.drain(quick.id), timeout=10)
        statuses = [(await parts.runtime.get(run_id)).status for run_id in (quick.id, slow[0])]
        assert statuses == ["waiting", "running"]
        assert parts.worker.holding() == 1  # the held run's drive, still under way

        draining = asyncio.create_task(parts.worker.drain(slow[0]))
        await asyncio.sleep(0.05)
        assert not draining.done()
        held.set()
        await asyncio.wait_for(draining, timeout=10)
        assert (await parts.runtime.get(slow[0])).status == "waiting"
        assert parts.worker.holding() == 0


class HeldDrives:
    """A runtime's `drive` that holds each job until the test lets that one go."""

    def __init__(self) -> None:
        self.go: dict[int, asyncio.Event] = {}
        self.started: list[int | None] = []
        self.ended: list[int | None] = []

    async def drive(self, run_id: str, job_id: int | None, in_play: InPlay | None = None) -> bool:
        self.started.append(job_id)
        await self.go.setdefault(cast(int, job_id), asyncio.Event()).wait()
        self.ended.append(job_id)
        return True  # the job is consumed: the worker asks the store nothing


async def test_draining_a_run_waits_for_its_job_accepted_meanwhile_and_stops_none() -> None:
    drives = HeldDrives()
    worker = Worker(cast(Store, object()), cast(Runtime, drives), concurrency=4)
    worker.accept(_job(1, "run_1"))
    worker.accept(_job(3, "run_2"))
    draining = asyncio.create_task(worker.drain("run_1"))
    await _until(lambda: drives.started == [1, 3])

    worker.accept(_job(2, "run_1"))  # run_1's next job, accepted while the wait is under way
    drives.go[1].set()
    await _until(lambda: drives.ended == [1])
    await asyncio.sleep(0.01)
    assert not draining.done()  # job 2 is run_1's too
    drives.go.setdefault(2, asyncio.Event()).set()
    await asyncio.wait_for(draining, timeout=5)  # run_2's job 3 is still held: not waited for
    assert drives.ended == [1, 2]

    cancelled = asyncio.create_task(worker.drain("run_2"))
    await asyncio.sleep(0.01)
    cancelled.cancel()
    await asyncio.gather(cancelled, return_exceptions=True)
    assert worker.holding() == 1  # the wait is gone, job 3 is not
    drives.go[3].set()
    await asyncio.wait_for(worker.drain(), timeout=5)
    assert drives.ended == [1, 2, 3]
