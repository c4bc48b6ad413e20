"""Restart: a run lives in the file, not in a process; kill -9 loses nothing and repeats nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import (
    REFUND_120,
    baton_server,
    fired_failpoints,
    jobs,
    refunds,
    stored_run,
    types_of,
)

# The process is the subject: `baton serve` runs in child processes, on both backends.
pytestmark = pytest.mark.process


async def test_pending_approval_survives_kill_9_and_refunds_once(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_120)
        pending = await server.wait_for_request(run["id"])
        server.kill()  # SIGKILL

    assert server.proc is not None
    assert server.proc.returncode == -9
    assert (await stored_run(db_url, run["id"]))["status"] == "waiting"

    async with baton_server(db_url, tokens, server_log) as server:  # new process, same file
        assert (await server.request(pending["id"]))["status"] == "pending"
        reply = await server.respond(pending["id"], {"decision": "approve"}, user="lee")
        assert reply.status_code == 200, reply.text
        assert reply.json()["outcome"] == "closed"
        done = await server.wait_for_run(run["id"], status="completed")
        events = await server.audit(run["id"])

    assert "Refunded 120.00" in done["output"]["text"]
    [request] = done["requests"]
    assert request["status"] == "resumed"
    assert types_of(events).count("request.created") == 1
    assert types_of(events).count("effect.executed") == 1
    assert [r["amount"] for r in await refunds(db_url)] == [120.0]
    assert jobs(db_url) == []


async def test_queued_start_job_of_a_killed_process_is_run_by_the_next(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log, args=["--no-worker"]) as server:
        run = await server.start_run(REFUND_120)
        assert (await server.run(run["id"]))["status"] == "running"
        server.kill()

    [job] = jobs(db_url)
    assert (job["kind"], job["run_id"], job["lease_owner"]) == ("start", run["id"], None)

    async with baton_server(db_url, tokens, server_log) as server:
        waiting = await server.wait_for_run(run["id"], status="waiting")
        [pending] = waiting["requests"]
        assert (pending["status"], pending["team"]) == ("pending", "support-leads")
        # what is left is the request's deadline and escalation (refund.medium), due hours ahead
        assert sorted(j["kind"] for j in jobs(db_url)) == ["timer", "timer"]


async def test_start_job_leased_by_a_process_that_died_before_pausing_is_leased_again(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    # the process leases the start job, drives the run to its pause and dies before committing it
    armed = {"BATON_FAILPOINTS": "pause.after_checkpoint=exit"}
    async with baton_server(db_url, tokens, server_log, armed) as server:
        run = await server.start_run(REFUND_120)
        assert await server.wait_exit() == 137

    assert fired_failpoints(server_log) == ["pause.after_checkpoint"]
    [job] = jobs(db_url)
    assert (job["kind"], job["run_id"], job["attempts"]) == ("start", run["id"], 1)
    assert job["lease_owner"] is not None  # still held by the dead process, until its lease ends
    stored = await stored_run(db_url, run["id"])
    assert (stored["status"], stored["requests"]) == ("running", [])

    async with baton_server(db_url, tokens, server_log) as server:
        waiting = await server.wait_for_run(run["id"], status="waiting")
        [pending] = waiting["requests"]
        assert sorted(j["kind"] for j in jobs(db_url)) == ["timer", "timer"]  # its deadlines
        reply = await server.respond(pending["id"], {"decision": "approve"}, user="lee")
        assert reply.status_code == 200, reply.text
        await server.wait_for_run(run["id"], status="completed")
        events = await server.audit(run["id"])

    assert types_of(events).count("request.created") == 1
    assert types_of(events).count("effect.executed") == 1
    assert [r["amount"] for r in await refunds(db_url)] == [120.0]
