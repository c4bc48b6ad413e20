"""Cancelling a run stops the work its drive is doing, as MAF's own cancellation does.

Before, a cancelled run's progress was refused and its tools' effects too, but a step still
working (a model call, a long computation) went on to its end. The subject is `slow_steps`
(`tests.fixtures.slow_workflow`), whose one step notes each of its 200 steps.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

from baton.cli import _with_parts
from baton.settings import Settings
from baton.wiring import Parts
from tests.fixtures import slow_workflow
from tests.harness import REFUND_120, baton_server, eventually, sql

ENV = {"BATON_WORKFLOWS": "tests.fixtures.slow_workflow"}


def taken(label: str) -> int:
    return sum(1 for step in slow_workflow.STEPS if step.startswith(f"{label}:"))


async def test_a_cancelled_run_s_step_stops_where_it_works_and_its_job_is_gone(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    label = f"cancelled-{len(slow_workflow.STEPS)}"
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        run = await server.start_run({"workflow": "slow_steps", "input": {"label": label}})

        async def working() -> bool:
            return taken(label) >= 3

        await eventually(working, what="the step at work")
        async with server.client("ada") as ada:
            cancelled = await ada.post(f"/api/runs/{run['id']}/cancel")
        assert cancelled.status_code == 200, cancelled.text

        async def stopped() -> bool:
            before = taken(label)
            await asyncio.sleep(0.3)  # six of its steps' time
            return taken(label) == before

        await eventually(stopped, what="the step to stop")
        assert taken(label) < 200

        async def no_job() -> bool:
            return not sql(db_url, f"SELECT id FROM jobs WHERE run_id = '{run['id']}'")

        await eventually(no_job, what="the stopped drive's job to be gone")
        # the worker goes on: the next run is driven to its end
        after = await server.start_run(
            {"workflow": "slow_steps", "input": {"label": f"{label}-next", "steps": 3}}
        )
        done = await server.wait_for_run(after["id"], status=("completed", "failed"))
        ended = await server.run(run["id"])

    assert ended["status"] == "cancelled"
    assert done["status"] == "completed", done["error"]
    assert done["output"] == f"{label}-next: all 3 steps"


async def test_a_cli_drive_longer_than_its_lease_is_not_driven_again_by_a_worker_beside_it(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    """`baton run` renews its drive's lease while it works, as a worker does: the worker of the
    server beside it (this process, whose `STEPS` it would fill) never takes the job."""
    label = f"cli-{len(slow_workflow.STEPS)}"
    env = {
        **os.environ,
        **ENV,
        "BATON_DATABASE_URL": db_url,
        # renewed every second: two of slack for a renewal late on a busy machine (1.5 s, one
        # of slack, lost the lease once in a clean-clone run with two callgrind counts beside it)
        "BATON_JOB_LEASE_SECONDS": "3",
    }
    async with baton_server(db_url, tokens, server_log, ENV | {"BATON_WORKER_POLL_MS": "50"}):
        started = time.monotonic()
        cli = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "baton",
            "run",
            "slow_steps",
            "--input",
            json.dumps({"label": label, "steps": 140}),  # 7 s: over two leases
            "--json",
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(cli.communicate(), timeout=60)
        took = time.monotonic() - started

    assert cli.returncode == 0, err.decode()[-2000:]
    run = json.loads(out)
    assert (run["status"], run["output"]) == ("completed", f"{label}: all 140 steps")
    assert took > 7
    assert taken(label) == 0  # the server's worker never drove it


async def test_what_the_cli_starts_and_answers_is_leased_to_its_worker_as_it_is_queued(
    db_url: str, tokens: dict[str, str]
) -> None:
    """`baton run` and `baton requests answer` drive what they queue: no moment passes in which
    a worker beside them (a server's, polling) could lease the job first and leave the command
    to print a run still running (seen once in a loaded clean-clone run)."""

    async def work(parts: Parts) -> None:
        run = await parts.runtime.start(REFUND_120["workflow"], REFUND_120["input"], actor="sam")
        [job] = sql(db_url, f"SELECT lease_owner FROM jobs WHERE run_id = '{run.id}'")
        assert job["lease_owner"] == parts.worker.owner
        await parts.worker.run_until_idle()  # it waits for the drive it took at once
        [request] = await parts.requests.of_run(run.id)
        assert (await parts.runtime.get(run.id)).status == "waiting"
        lee = await parts.store.get_user("lee")
        assert lee is not None
        await parts.requests.respond(request.id, {"decision": "approve"}, responder=lee)
        [resume] = sql(db_url, f"SELECT lease_owner, kind FROM jobs WHERE run_id = '{run.id}'")
        assert (resume["kind"], resume["lease_owner"]) == ("resume", parts.worker.owner)
        await parts.worker.run_until_idle()
        assert (await parts.runtime.get(run.id)).status == "completed"

    await _with_parts(Settings(database_url=db_url), work)
