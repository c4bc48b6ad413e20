"""Deadlines and escalation over real servers, on a clock the test moves (never a sleep).

The purchase workflow's approvals carry a deadline that escalates to managers at half of it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.harness import MovableClock, Server, baton_server, eventually, stored_run, types_of
from tests.receivers import http_receiver

PURCHASE = {
    "workflow": "purchase",
    "input": {
        "item": "laptop",
        "amount": 2400,
        "vendor": "Contoso",
        "requester": "sam",
        "approve_within_hours": 4,
    },
}


async def _requests(server: Server, run_id: str, count: int, status: str) -> dict[str, Any]:
    """The run's requests by team (approvals) or kind, once `count` have `status`."""

    async def probe() -> dict[str, Any] | None:
        found = [r for r in (await server.run(run_id))["requests"] if r["status"] == status]
        if len(found) < count:
            return None
        return (
            {r["policy_rule"]: r for r in found}
            if count == 1
            else {r["context"]["desk"]: r for r in found}
        )

    return await eventually(probe, what=f"{count} {status} requests of run {run_id}")


@pytest.mark.process  # every process down, then a restart
async def test_an_escalation_that_came_due_while_everything_was_down_fires_once_on_restart(
    db_url: str, tokens: dict[str, str], server_log: Path, tmp_path: Path
) -> None:
    clock = MovableClock(tmp_path / "clock")
    with http_receiver() as hooks:
        env = clock.env | {"BATON_WEBHOOK_URL": f"{hooks.url}/hook", "BATON_WEBHOOK_SECRET": "s"}
        async with baton_server(db_url, tokens, server_log, env) as server:
            run = await server.start_run(PURCHASE)
            pending = await _requests(server, run["id"], 2, "pending")
            assert {d: r["team"] for d, r in pending.items()} == {
                "legal": "legal",
                "finance": "finance",
            }
            server.kill()

        clock.jump(hours=2, minutes=1)  # past the escalation (2 h), before the deadline (4 h)
        async with baton_server(db_url, tokens, server_log, env) as server:
            escalated = await _requests(server, run["id"], 2, "escalated")
            for desk in ("legal", "finance"):
                request = escalated[desk]
                assert (request["team"], request["priority"]) == ("managers", "high")
                assert request["escalation_level"] == 1
            lex = await server.respond(
                escalated["legal"]["id"], {"decision": "approve"}, user="lex"
            )
            assert lex.status_code == 404, lex.text  # legal owns nothing of the run any more
            for desk in ("legal", "finance"):
                reply = await server.respond(
                    escalated[desk]["id"], {"decision": "approve"}, user="max"
                )
                assert reply.status_code == 200, reply.text
            review = (await _requests(server, run["id"], 1, "pending"))["purchase.review"]
            reply = await server.respond(review["id"], {"decision": "approve"}, user="fin")
            assert reply.status_code == 200, reply.text
            done = await server.wait_for_run(run["id"], status="completed")

            async def escalation_hooks() -> list[Any] | None:
                found = [
                    r.json() for r in hooks.at("/hook") if r.json()["event"] == "request.escalated"
                ]
                return found if len(found) == 2 else None

            escalation_notices = await eventually(escalation_hooks, what="escalation webhooks")

        clock.jump(hours=3)  # past the old deadline too: nothing is left to fire
        async with baton_server(db_url, tokens, server_log, env):
            pass
        stored = await stored_run(db_url, run["id"])

    assert done["output"]["status"] == "ordered"
    assert {n["request"]["team"] for n in escalation_notices} == {"managers"}
    events = stored["events"]
    assert types_of(events).count("request.escalated") == 2
    assert types_of(events).count("request.expired") == 0
    for event in (e for e in events if e["type"] == "request.escalated"):
        assert (event["actor"], event["data"]["from_team"], event["data"]["to_team"]) == (
            "system",
            event["data"]["from_team"],
            "managers",
        )
        assert event["data"]["from_team"] in ("legal", "finance")
    answered = [e["actor"] for e in events if e["type"] == "request.answered"]
    assert answered == ["max", "max", "fin"]


async def test_an_expired_approval_reaches_the_workflow_and_a_late_answer_is_gone(
    db_url: str, tokens: dict[str, str], server_log: Path, tmp_path: Path
) -> None:
    clock = MovableClock(tmp_path / "clock")
    async with baton_server(db_url, tokens, server_log, clock.env) as server:
        run = await server.start_run(PURCHASE)
        pending = await _requests(server, run["id"], 2, "pending")
        ok = await server.respond(pending["legal"]["id"], {"decision": "approve"}, user="lex")
        assert ok.status_code == 200, ok.text

        clock.jump(hours=2, minutes=1)
        await _requests(server, run["id"], 1, "escalated")
        clock.jump(hours=2)
        done = await server.wait_for_run(run["id"], status="completed")
        late = await server.respond(pending["finance"]["id"], {"decision": "approve"}, user="max")
        expired = await server.request(pending["finance"]["id"])
        events = await server.audit(run["id"])

    assert done["output"]["status"] == "expired"
    assert done["output"]["text"] == "Purchase not placed: finance did not approve it in time."
    assert (late.status_code, late.json()["error"]) == (410, "request_closed")
    assert (expired["status"], expired["answer"], expired["answered_by"]) == (
        "expired",
        {"decision": "expired"},
        "system",
    )
    [expiry] = [e for e in events if e["type"] == "request.expired"]
    assert expiry["request_id"] == pending["finance"]["id"]
    resumed = [e["data"]["decision"] for e in events if e["type"] == "run.resumed"]
    assert resumed == ["approve", "expired"]
    # It escalated at 2 h, then expired at the deadline (4 h), each once.
    assert types_of(events).count("request.escalated") == 1
    assert expired["team"] == "managers"


async def test_purchases_answered_in_both_orders_and_one_rejected(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        runs = [await server.start_run(PURCHASE) for _ in range(3)]
        pending = [await _requests(server, r["id"], 2, "pending") for r in runs]
        orders = [("legal", "finance"), ("finance", "legal")]
        who = {"legal": "lex", "finance": "fin"}
        for requests, order in zip(pending, orders, strict=False):
            for desk in order:
                reply = await server.respond(
                    requests[desk]["id"], {"decision": "approve"}, user=who[desk]
                )
                assert reply.status_code == 200, reply.text
        no = {"decision": "reject", "reason": "we have enough laptops"}
        assert (await server.respond(pending[2]["legal"]["id"], no, user="lex")).status_code == 200

        for run in runs[:2]:
            review = (await _requests(server, run["id"], 1, "pending"))["purchase.review"]
            assert "Approved by: fin (finance); lex (legal)" in review["payload"]["draft"]
            reply = await server.respond(review["id"], {"decision": "approve"}, user="fay")
            assert reply.status_code == 200, reply.text
        done = [await server.wait_for_run(r["id"], status="completed") for r in runs]
        cancelled = await server.request(pending[2]["finance"]["id"])

    assert [d["output"]["status"] for d in done] == ["ordered", "ordered", "rejected"]
    assert done[2]["output"]["reason"] == "legal rejected it: we have enough laptops"
    assert cancelled["status"] == "cancelled"
