"""Crash injection: the process dies at each named failpoint; the next one finishes the run once.

Each failpoint exits the process with 137 as kill -9 would (`BATON_FAILPOINTS=<name>=exit`). A new
process without the failpoint, on the same file, must finish the run with exactly one refund, one
`effect.executed` and no duplicate approval request, whatever moment the first one died at.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from baton.failpoints import KNOWN
from tests.e2e import test_plain_tool_crash
from tests.harness import (
    REFUND_120,
    baton_server,
    eventually,
    fired_failpoints,
    refunds,
    sql,
    stored_run,
    types_of,
)

PAUSE_POINTS = ("start.after_commit", "pause.after_checkpoint", "pause.after_commit")
# the process dies after lee's answer, somewhere between it and the run's end
ANSWER_POINTS = (
    "answer.after_commit",
    "resume.after_restore",
    "effect.before_commit",
    "effect.after_commit",
    "resume.after_commit",
)

# The process is the subject: `baton serve` runs in child processes, on both backends.
pytestmark = pytest.mark.process


def _what_the_crash_left(failpoint: str, stored: dict[str, Any], refunded: int) -> None:
    """Where each failpoint sits, told by what the dead process committed before it died."""
    statuses = [r["status"] for r in stored["requests"]]
    events = types_of(stored["events"])
    if failpoint in ("start.after_commit", "pause.after_checkpoint"):  # no pause: nothing visible
        assert (stored["status"], statuses, stored["checkpoint_id"]) == ("running", [], None)
    elif failpoint == "pause.after_commit":
        assert (stored["status"], statuses) == ("waiting", ["pending"])
    elif failpoint in ("answer.after_commit", "resume.after_restore"):
        assert (stored["status"], statuses, refunded) == ("waiting", ["answered"], 0)
    elif failpoint == "effect.before_commit":  # refunded; the drive (and its record) uncommitted
        assert (stored["status"], statuses, refunded) == ("waiting", ["answered"], 1)
        assert "effect.executed" not in events
    elif failpoint == "effect.after_commit":  # the effect rode the completion's commit
        assert (stored["status"], statuses, refunded) == ("completed", ["resumed"], 1)
        assert events.count("effect.executed") == 1
    else:
        assert failpoint == "resume.after_commit"
        assert (stored["status"], statuses, refunded) == ("completed", ["resumed"], 1)


def test_every_known_failpoint_is_exercised() -> None:
    assert set(KNOWN) == {*PAUSE_POINTS, *ANSWER_POINTS, *test_plain_tool_crash.POINTS}


@pytest.mark.parametrize("failpoint", [*PAUSE_POINTS, *ANSWER_POINTS])
async def test_crash_at_failpoint_then_restart_refunds_exactly_once(
    failpoint: str, db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    armed = {"BATON_FAILPOINTS": f"{failpoint}=exit"}
    async with baton_server(db_url, tokens, server_log, armed) as server:
        if failpoint == "start.after_commit":  # dies before it can reply: the run is stored
            with pytest.raises(httpx.TransportError):
                await server.start_run(REFUND_120)
            [run] = sql(db_url, "SELECT id FROM runs")
        else:
            run = await server.start_run(REFUND_120)
        if failpoint not in PAUSE_POINTS:
            pending = await server.wait_for_request(run["id"])
            if failpoint == "answer.after_commit":  # dies before it can reply
                with pytest.raises(httpx.TransportError):
                    await server.respond(pending["id"], {"decision": "approve"}, user="lee")
            else:
                reply = await server.respond(pending["id"], {"decision": "approve"}, user="lee")
                assert reply.status_code == 200, reply.text
        assert await server.wait_exit() == 137, server.log_tail()

    assert fired_failpoints(server_log) == [failpoint]
    _what_the_crash_left(failpoint, await stored_run(db_url, run["id"]), len(await refunds(db_url)))

    async with baton_server(db_url, tokens, server_log) as server:  # same file, no failpoint
        if failpoint in PAUSE_POINTS:
            waiting = await server.wait_for_run(run["id"], status="waiting")
            [pending] = waiting["requests"]
            assert (pending["status"], pending["team"]) == ("pending", "support-leads")
            reply = await server.respond(pending["id"], {"decision": "approve"}, user="lee")
            assert reply.status_code == 200, reply.text
        done = await server.wait_for_run(run["id"], status="completed")
        events = await server.audit(run["id"])

    assert fired_failpoints(server_log) == [failpoint]
    assert "Refunded 120.00" in done["output"]["text"]
    [request] = done["requests"]  # no duplicate request was created
    assert (request["status"], request["answered_by"]) == ("resumed", "lee")
    assert types_of(events).count("request.created") == 1
    assert types_of(events).count("request.answered") == 1
    assert types_of(events).count("run.resumed") == 1
    assert types_of(events).count("run.completed") == 1
    assert types_of(events).count("effect.executed") == 1
    [refund] = await refunds(db_url)
    assert refund["amount"] == 120.0
    [effect] = [e for e in events if e["type"] == "effect.executed"]
    assert effect["data"]["idempotency_key"] == refund["idempotency_key"]


@pytest.mark.parametrize("failpoint", ["pause.after_checkpoint", "pause.after_commit"])
async def test_crash_while_an_edit_pauses_on_a_new_request_asks_finance_once(
    failpoint: str, db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_120)
        first = await server.wait_for_request(run["id"])

    # armed only now: the resume of lee's edit dies as it pauses on the finance approval
    armed = {"BATON_FAILPOINTS": f"{failpoint}=exit"}
    async with baton_server(db_url, tokens, server_log, armed) as server:
        edit = {"decision": "edit", "arguments": {"order_id": "A-1002", "amount": 1500}}
        reply = await server.respond(first["id"], edit, user="lee")
        assert reply.status_code == 200, reply.text
        assert await server.wait_exit() == 137, server.log_tail()

    assert fired_failpoints(server_log) == [failpoint]
    stored = await stored_run(db_url, run["id"])
    statuses = sorted(r["status"] for r in stored["requests"])
    if failpoint == "pause.after_checkpoint":
        assert statuses == ["answered"]
    else:
        assert statuses == ["pending", "resumed"]

    async with baton_server(db_url, tokens, server_log) as server:

        async def asked_finance() -> dict[str, Any] | None:
            run_now = await server.run(run["id"])
            found = [r for r in run_now["requests"] if r["team"] == "finance"]
            return found[0] if found and run_now["status"] == "waiting" else None

        second = await eventually(asked_finance, what="the finance approval")
        assert (second["status"], second["approvals_required"]) == ("pending", 2)
        for user in ("fay", "fin"):
            reply = await server.respond(second["id"], {"decision": "approve"}, user=user)
            assert reply.status_code == 200, reply.text
        done = await server.wait_for_run(run["id"], status="completed")
        events = await server.audit(run["id"])

    assert sorted(r["status"] for r in done["requests"]) == ["resumed", "resumed"]
    assert types_of(events).count("request.created") == 2
    assert types_of(events).count("effect.executed") == 1
    assert [r["amount"] for r in await refunds(db_url)] == [1500.0]
