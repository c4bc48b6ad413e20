"""Support runs live in the database: kill -9 while each kind is pending, answer, and it finishes.

Each pause is the handoff orchestration's own checkpoint (MAF's `HandoffAgentUserRequest` waits on
a `list[Message]`, allow-listed as `types:GenericAlias`), committed with its request; a new process
restores it and delivers the answer through the same adapter.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.harness import baton_server, fired_failpoints, jobs, stored_run, types_of
from tests.supportkit import (
    DELETE_ACCOUNT,
    REFUND_120,
    SYNC_BROKEN,
    UNCLEAR,
    UPLOAD_CRASH,
    back_office,
    pending_request,
)

# The process is the subject: `baton serve` runs in child processes, on both backends.
pytestmark = pytest.mark.process

CASES: dict[str, tuple[dict[str, Any], str, str, dict[str, Any], str]] = {
    # name: (ticket, kind, who answers, answer, how the resolution starts)
    "approval": (REFUND_120, "approval", "lee", {"decision": "approve"}, "Refunded 120.00"),
    "maf_approval": (DELETE_ACCOUNT, "approval", "lee", {"decision": "approve"}, "Deleted"),
    "question": (
        UNCLEAR,
        "question",
        "sam",
        {"decision": "answer", "answer": "a refund of 20 on order A-1002 please"},
        "Refunded 20.00",
    ),
    "review": (UPLOAD_CRASH, "review", "sam", {"decision": "approve"}, "Known photo upload"),
    "takeover": (
        SYNC_BROKEN,
        "takeover",
        "sam",
        {"decision": "resolve", "resolution": "Fixed the sync by hand."},
        "Fixed the sync",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_pending_request_survives_kill_9_then_the_answer_finishes_the_run(
    case: str, db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    body, kind, person, answer, resolution = CASES[case]
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(body, user="sue")
        pending = await pending_request(server, run["id"], kind=kind)
        server.kill()

    assert server.proc is not None
    assert server.proc.returncode == -9
    assert (await stored_run(db_url, run["id"]))["status"] == "waiting"

    async with baton_server(db_url, tokens, server_log) as server:  # a new process, same database
        assert (await server.request(pending["id"]))["status"] == "pending"
        reply = await server.respond(pending["id"], answer, user=person)
        assert reply.status_code == 200, reply.text
        done = await server.wait_for_run(run["id"], status="completed")
        events = await server.audit(run["id"])

    assert done["output"]["resolution"].startswith(resolution)
    assert types_of(events).count("request.created") == 1
    assert jobs(db_url) == []
    office = await back_office(db_url)
    effects = len(office["refunds"]) + len(office["closures"]) + len(office["messages"])
    assert types_of(events).count("effect.executed") == effects <= 1


@pytest.mark.parametrize("failpoint", ["effect.before_commit", "effect.after_commit"])
async def test_a_crash_around_an_approved_support_refund_refunds_once(
    failpoint: str, db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    armed = {"BATON_FAILPOINTS": f"{failpoint}=exit"}
    # the server that pauses the run dies: its drive to the approval passes no effect point
    async with baton_server(db_url, tokens, server_log, armed) as server:
        run = await server.start_run(REFUND_120, user="sue")
        pending = await pending_request(server, run["id"], kind="approval")
        reply = await server.respond(pending["id"], {"decision": "approve"}, user="lee")
        assert reply.status_code == 200, reply.text
        assert await server.wait_exit() == 137

    assert fired_failpoints(server_log) == [failpoint]
    assert len((await back_office(db_url))["refunds"]) == 1  # the back office acted, then death

    async with baton_server(db_url, tokens, server_log) as server:
        done = await server.wait_for_run(run["id"], status="completed")
        events = await server.audit(run["id"])

    assert done["output"]["resolution"].startswith("Refunded 120.00")
    assert [r["amount"] for r in (await back_office(db_url))["refunds"]] == [120.0]
    assert types_of(events).count("effect.executed") == 1
    transcript_results = [
        e
        for e in done["conversation"]
        if e["type"] == "tool_result" and e["tool"] == "issue_refund"
    ]
    assert len(transcript_results) == 1  # the dead drive's conversation was never committed
