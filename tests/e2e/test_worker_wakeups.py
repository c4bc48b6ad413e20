"""Three `baton worker` processes on PostgreSQL: each queued job wakes one of them, and a job sent
to a worker killed with SIGKILL is still driven, by another, once.

This process starts refund runs and answers them (as a web process without a worker does); a
connection beside it overhears the workers' wake-up channels. Every start and resume job is
notified to exactly one worker and nothing wakes them all; every run is driven to its pause once
and, after its answer, to completion once. Then one worker is killed; its `job_listeners` row
still says live (as it does for up to `LISTENER_LIVE_S` after a death), so the next runs' jobs are
sent its way in turn: the others' polls find them.
"""

from __future__ import annotations

import asyncio
import secrets
import signal
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from baton import devpg
from baton.settings import Settings
from baton.wiring import Parts, open_parts
from human.store.base import RequestFilter
from tests.contract.conftest import Backend
from tests.contract.test_store_wakeups import listening, overhearing
from tests.e2e.test_scale_out import WorkerProcess
from tests.harness import eventually, seed, sql, sql_each

WORKERS = 3
RUNS = 12
MORE_RUNS = 6
REFUND = {"order_id": "A-1002", "amount": 120, "reason": "broken"}

# The process is the subject: the workers run in child processes.
pytestmark = pytest.mark.process


@pytest.fixture
async def pg_url(postgres_server: str) -> AsyncIterator[str]:
    name = f"wake_{secrets.token_hex(6)}"
    yield await devpg.create_database(postgres_server, name)
    await devpg.drop_database(postgres_server, name)


async def start_and_answer(parts: Parts, count: int) -> list[str]:
    """Start `count` refund runs, answer each as lee once it pauses; their ids."""
    sam, lee = await parts.store.get_user("sam"), await parts.store.get_user("lee")
    assert sam is not None
    assert lee is not None
    runs = [await parts.runtime.start("refund", REFUND, actor=sam.name) for _ in range(count)]
    run_ids = {run.id for run in runs}

    async def all_paused() -> list[str] | None:
        found = [
            request.id
            for run_id in run_ids
            for request in (
                await parts.requests.list(RequestFilter(run_id=run_id, status="pending"))
            ).items
        ]
        return found if len(found) == count else None

    for request_id in await eventually(all_paused, timeout=120, what=f"{count} paused runs"):
        await parts.requests.respond(request_id, {"decision": "approve"}, responder=lee)

    async def all_completed() -> bool:
        return all([(await parts.runtime.get(i)).status == "completed" for i in run_ids])

    await eventually(all_completed, timeout=120, what=f"{count} completed runs")
    return sorted(run_ids)


QUEUED_LOG = (
    "CREATE TABLE queued_jobs (id BIGINT PRIMARY KEY, for_later BOOLEAN NOT NULL)",
    "CREATE FUNCTION log_queued() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "INSERT INTO queued_jobs VALUES (NEW.id, "
    "COALESCE(NEW.due_at > extract(epoch from clock_timestamp()), false));"
    " RETURN NULL; END $$",
    "CREATE TRIGGER log_queued AFTER INSERT ON jobs FOR EACH ROW EXECUTE FUNCTION log_queued()",
)
"""A log of every job queued (jobs themselves are deleted when done), and whether it was a timer
queued for later, which wakes no worker (migration 0012)."""


def queued_since(pg_url: str, after: int, *, for_later: bool = False) -> list[str]:
    """The ids of the jobs queued after job `after` (as NOTIFY payloads), due at once or later."""
    rows = sql(
        pg_url,
        f"SELECT id FROM queued_jobs WHERE id > {after} AND for_later = {for_later} ORDER BY id",
    )
    return [str(r["id"]) for r in rows]


def per_run(pg_url: str, event_type: str) -> Counter[str]:
    rows = sql(pg_url, f"SELECT run_id FROM audit_events WHERE type = '{event_type}'")
    return Counter(r["run_id"] for r in rows)


def driven_once(pg_url: str, run_ids: list[str]) -> None:
    """Each run was driven to its pause once and, after its answer, to completion once."""
    once = Counter(dict.fromkeys(run_ids, 1))
    for event_type in ("request.created", "run.resumed", "effect.executed", "run.completed"):
        assert per_run(pg_url, event_type) == once, event_type
    refunds = sql(pg_url, "SELECT idempotency_key FROM refunds")
    assert len({r["idempotency_key"] for r in refunds}) == len(refunds) == len(run_ids)
    assert sql(pg_url, "SELECT count(*) AS n FROM jobs")[0]["n"] == 0


async def test_each_job_wakes_one_worker_and_a_dead_ones_jobs_are_driven_by_another(
    pg_url: str, tmp_path: Path
) -> None:
    await seed(pg_url)
    sql_each(pg_url, QUEUED_LOG)
    backend = Backend(name="postgres", url=pg_url, dialect="postgres", fetch=lambda _s: [])
    workers = [
        WorkerProcess(pg_url, tmp_path / f"worker-{n}.log", {"BATON_LOG_LEVEL": "WARNING"})
        for n in range(WORKERS)
    ]
    settings = Settings(database_url=pg_url)
    try:
        channels = await listening(backend, WORKERS)
        async with (
            open_parts(settings, local_worker=False) as parts,
            overhearing(backend, channels) as ears,
        ):
            first = await start_and_answer(parts, RUNS)
            heard = await ears.settled()
            # Every job queued to run at once (start, resume, notification) was notified to one
            # worker, and none to all of them; no timer queued for later (a deadline) woke one.
            queued = queued_since(pg_url, 0)
            assert len(queued) >= 2 * RUNS
            assert sorted((payload for _, payload in heard), key=int) == queued
            assert queued_since(pg_url, 0, for_later=True)  # the requests' deadlines
            assert {channel for channel, _ in heard} == set(channels)
            driven_once(pg_url, first)

            doomed = workers[0]
            (dead,) = [c for c in channels if c.startswith(f"baton_wake_{doomed.proc.pid}_")]
            doomed.proc.send_signal(signal.SIGKILL)
            assert await asyncio.to_thread(doomed.proc.wait, 30) == -signal.SIGKILL
            # Its row outlives it; the next job goes to it first (woken longest ago).
            sql(
                pg_url,
                "UPDATE job_listeners SET woken_at = 0, "
                "live_until = extract(epoch from clock_timestamp()) + 600 "
                f"WHERE channel = '{dead}'",
            )
            more = await start_and_answer(parts, MORE_RUNS)
            heard = (await ears.settled())[len(queued) :]

        assert sorted((payload for _, payload in heard), key=int) == queued_since(
            pg_url, int(queued[-1])
        )
        assert {channel for channel, _ in heard} <= set(channels)
        assert Counter(channel for channel, _ in heard)[dead] >= 1
        driven_once(pg_url, first + more)
    finally:
        for worker in workers:
            worker.stop()
