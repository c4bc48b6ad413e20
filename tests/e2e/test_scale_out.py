"""Scale-out on PostgreSQL: two web processes without workers, two worker processes, one database.

200 refund runs pause for approval; people answer them through both web processes (some twice at
once through both); one worker is killed mid-resume, just after its refund was issued and before
the run's progress committed, and a fresh worker takes its place. Every run completes, every
refund happens exactly once, no request is answered twice, and each web process's live stream
sees every run complete, whichever process did the work.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from baton import devpg
from tests.harness import EventStream, Server, eventually, seed, sql

RUNS = 200

# The process is the subject: `baton serve` and `baton worker` run in child processes.
pytestmark = pytest.mark.process


class WorkerProcess:
    """`baton worker` in a child process."""

    def __init__(self, db_url: str, log: Path, env: dict[str, str] | None = None) -> None:
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "baton", "worker"],
                env={
                    **os.environ,
                    "BATON_DATABASE_URL": db_url,
                    "BATON_WORKER_POLL_MS": "200",
                    "BATON_JOB_LEASE_SECONDS": "2",
                    **(env or {}),
                },
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
async def pg_url(postgres_server: str) -> AsyncIterator[str]:
    name = f"scale_{secrets.token_hex(6)}"
    yield await devpg.create_database(postgres_server, name)
    await devpg.drop_database(postgres_server, name)


@contextlib.asynccontextmanager
async def completions(server: Server) -> AsyncIterator[tuple[EventStream, set[str]]]:
    """A web process's live stream of `run.completed`, gathered into a set of run ids."""
    done: set[str] = set()
    async with server.stream("lee", params={"types": "run.completed"}) as live:

        async def gather() -> None:
            while True:
                message = await live.next(timeout=600)
                done.add(message["data"]["run_id"])

        task = asyncio.create_task(gather())
        try:
            yield live, done
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def test_two_web_and_two_worker_processes_survive_a_worker_killed_mid_resume(
    pg_url: str, tmp_path: Path
) -> None:
    tokens = await seed(pg_url)
    webs = [Server(pg_url, tokens, tmp_path / f"web{i}.log", {}, ["--no-worker"]) for i in (1, 2)]
    for web in webs:
        await web.start()
    doomed = WorkerProcess(
        pg_url, tmp_path / "worker-a.log", {"BATON_FAILPOINTS": "effect.after_commit=exit"}
    )
    steady = WorkerProcess(pg_url, tmp_path / "worker-b.log")
    workers = [doomed, steady]
    try:
        async with completions(webs[0]) as (_, seen_1), completions(webs[1]) as (_, seen_2):
            runs = await asyncio.gather(
                *(
                    webs[i % 2].start_run(
                        {
                            "workflow": "refund",
                            "input": {
                                "order_id": f"A-{1001 + i % 20}",
                                "amount": 120,
                                "reason": f"case {i}",
                            },
                        }
                    )
                    for i in range(RUNS)
                )
            )
            run_ids = [r["id"] for r in runs]

            async def all_paused() -> list[dict[str, Any]] | None:
                pending = sql(
                    pg_url,
                    "SELECT id, run_id FROM human_requests WHERE status = 'pending' ORDER BY seq",
                )
                return pending if len(pending) == RUNS else None

            pending = await eventually(all_paused, timeout=180, what=f"{RUNS} paused runs")

            async def answer(i: int, request_id: str) -> list[int]:
                web = webs[i % 2]
                replies = [web.respond(request_id, {"decision": "approve"}, user="lee")]
                if i % 10 == 0:  # the same approval through the other web process, at once
                    replies.append(
                        webs[(i + 1) % 2].respond(request_id, {"decision": "approve"}, user="lee")
                    )
                return [r.status_code for r in await asyncio.gather(*replies)]

            statuses = await asyncio.gather(
                *(answer(i, row["id"]) for i, row in enumerate(pending))
            )
            assert all(code == 200 for codes in statuses for code in codes), statuses

            # The doomed worker dies at its first effect; a fresh one replaces it.
            assert await asyncio.to_thread(doomed.proc.wait, 120) == 137
            workers.append(WorkerProcess(pg_url, tmp_path / "worker-c.log"))

            async def all_completed() -> bool:
                done = sql(pg_url, "SELECT count(*) AS n FROM runs WHERE status = 'completed'")
                return done[0]["n"] == RUNS

            await eventually(all_completed, timeout=300, what=f"{RUNS} completed runs")
            await eventually(
                lambda: _true(set(run_ids) <= seen_1 and set(run_ids) <= seen_2),
                timeout=30,
                what="both web processes to stream every completion",
            )

        refunds = sql(pg_url, "SELECT idempotency_key, order_id FROM refunds")
        assert len(refunds) == RUNS
        assert len({r["idempotency_key"] for r in refunds}) == RUNS
        effects = Counter(r["run_id"] for r in sql(pg_url, "SELECT run_id FROM effects"))
        assert effects == Counter({run_id: 1 for run_id in run_ids})
        executed = Counter(
            r["run_id"]
            for r in sql(pg_url, "SELECT run_id FROM audit_events WHERE type = 'effect.executed'")
        )
        assert executed == effects
        answered = Counter(
            r["request_id"]
            for r in sql(
                pg_url, "SELECT request_id FROM audit_events WHERE type = 'request.answered'"
            )
        )
        assert sorted(answered.values()) == [1] * RUNS
        assert sql(pg_url, "SELECT count(*) AS n FROM answers")[0]["n"] == RUNS
        assert sql(pg_url, "SELECT count(*) AS n FROM jobs")[0]["n"] == 0
        fired = (tmp_path / "worker-a.log").read_text()
        assert "failpoint fired" in fired
    finally:
        for worker in workers:
            worker.stop()
        for web in webs:
            await web.stop()


async def _true(value: bool) -> bool:
    return value
