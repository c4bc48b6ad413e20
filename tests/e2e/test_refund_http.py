"""The refund workflow over real HTTP: auto, one and two approvals, edit, reject, every refusal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.harness import (
    REFUND_20,
    REFUND_120,
    REFUND_1500,
    Server,
    baton_server,
    eventually,
    refunds,
    types_of,
)


async def _wait_for_requests(server: Server, run_id: str, count: int) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        run = await server.run(run_id)
        return run if len(run["requests"]) >= count else None

    return await eventually(probe, what=f"{count} requests of run {run_id}")


def _effect_keys(events: list[dict[str, Any]]) -> list[str]:
    return [e["data"]["idempotency_key"] for e in events if e["type"] == "effect.executed"]


# the happy paths ----------------------------------------------------------------------------


async def test_refund_20_is_auto_decided_by_rule(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_20)
        done = await server.wait_for_run(run["id"], status="completed")
        events = await server.audit(run["id"])

    assert done["requests"] == []
    [auto] = [e for e in events if e["type"] == "request.auto_decided"]
    assert auto["data"]["rule"] == "refund.small"
    assert auto["data"]["decision"] == "approve"
    assert auto["data"]["arguments"] == {"order_id": "A-1001", "amount": 20.0}
    assert "request.created" not in types_of(events)
    assert types_of(events).count("effect.executed") == 1
    [refund] = await refunds(db_url)
    assert (refund["order_id"], refund["amount"]) == ("A-1001", 20.0)
    assert _effect_keys(events) == [refund["idempotency_key"]]


async def test_refund_120_waits_for_support_leads_then_refunds_once(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_120)
        waiting = await server.wait_for_run(run["id"], status="waiting")
        [pending] = waiting["requests"]
        assert pending["status"] == "pending"
        assert pending["kind"] == "approval"
        assert pending["team"] == "support-leads"
        assert pending["approvals_required"] == 1
        assert pending["policy_rule"] == "refund.medium"
        assert pending["proposed_action"]["tool"] == "issue_refund"
        assert pending["proposed_action"]["arguments"] == {"order_id": "A-1002", "amount": 120.0}
        assert await refunds(db_url) == []

        reply = await server.respond(pending["id"], {"decision": "approve"}, user="lee")
        assert reply.status_code == 200, reply.text
        assert reply.json()["outcome"] == "closed"
        done = await server.wait_for_run(run["id"], status="completed")
        events = await server.audit(run["id"])

    assert "Refunded 120.00" in done["output"]["text"]
    [closed] = done["requests"]
    assert (closed["status"], closed["answered_by"]) == ("resumed", "lee")
    assert types_of(events).count("effect.executed") == 1
    assert types_of(events).count("run.resumed") == 1
    [refund] = await refunds(db_url)
    assert refund["amount"] == 120.0
    assert _effect_keys(events) == [refund["idempotency_key"]]


async def test_edit_to_30_is_rechecked_as_auto_and_refunds_30(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_120)
        pending = await server.wait_for_request(run["id"])
        edit = {"decision": "edit", "arguments": {"order_id": "A-1002", "amount": 30}}
        reply = await server.respond(pending["id"], edit, user="lee")
        assert reply.status_code == 200, reply.text
        done = await server.wait_for_run(run["id"], status="completed")
        events = await server.audit(run["id"])

    assert "Refunded 30.00" in done["output"]["text"]
    [only] = done["requests"]  # 30 is auto under the policy: nobody is asked again
    assert only["status"] == "resumed"
    [answered] = [e for e in events if e["type"] == "request.answered"]
    assert answered["actor"] == "lee"
    assert answered["data"]["decision"] == "edit"
    assert answered["data"]["arguments"] == {"order_id": "A-1002", "amount": 30}
    [effect] = [e for e in events if e["type"] == "effect.executed"]
    assert effect["data"]["arguments"] == {"order_id": "A-1002", "amount": 30.0}
    [refund] = await refunds(db_url)
    assert refund["amount"] == 30.0


async def test_edit_within_the_approved_rule_runs_without_asking_again(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_120)
        pending = await server.wait_for_request(run["id"])
        edit = {"decision": "edit", "arguments": {"order_id": "A-1002", "amount": 80}}
        reply = await server.respond(pending["id"], edit, user="lee")
        assert reply.status_code == 200, reply.text
        done = await server.wait_for_run(run["id"], status="completed")

    # 80 needs what 120 needed (one of support-leads), and lee gave it with the edit
    assert [r["id"] for r in done["requests"]] == [pending["id"]]
    assert [r["amount"] for r in await refunds(db_url)] == [80.0]


async def test_edit_120_to_1500_asks_finance_for_two_approvals(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_120)
        first = await server.wait_for_request(run["id"])
        edit = {"decision": "edit", "arguments": {"order_id": "A-1002", "amount": 1500}}
        reply = await server.respond(first["id"], edit, user="lee")
        assert reply.status_code == 200, reply.text

        waiting = await _wait_for_requests(server, run["id"], 2)
        assert waiting["status"] == "waiting"
        by_id = {r["id"]: r for r in waiting["requests"]}
        assert by_id.pop(first["id"])["status"] == "resumed"  # the first one is closed
        [second] = by_id.values()
        assert second["status"] == "pending"
        assert second["team"] == "finance"
        assert second["approvals_required"] == 2
        assert second["policy_rule"] == "refund.large"
        assert second["proposed_action"]["arguments"] == {"order_id": "A-1002", "amount": 1500.0}
        assert await refunds(db_url) == []

        # lee is not in finance: an edit cannot approve its own escalation
        refused = await server.respond(second["id"], {"decision": "approve"}, user="lee")
        assert refused.status_code == 403, refused.text

        reply = await server.respond(second["id"], {"decision": "approve"}, user="fay")
        assert (reply.status_code, reply.json()["outcome"]) == (200, "partial")
        reply = await server.respond(second["id"], {"decision": "approve"}, user="fin")
        assert (reply.status_code, reply.json()["outcome"]) == (200, "closed")
        done = await server.wait_for_run(run["id"], status="completed")
        events = await server.audit(run["id"])

    assert "Refunded 1500.00" in done["output"]["text"]
    assert sorted(r["status"] for r in done["requests"]) == ["resumed", "resumed"]
    assert types_of(events).count("request.created") == 2
    assert types_of(events).count("run.resumed") == 2
    assert types_of(events).count("effect.executed") == 1
    [refund] = await refunds(db_url)
    assert refund["amount"] == 1500.0


async def test_reject_with_reason_refunds_nothing_and_tells_the_agent(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    reason = "customer already got a replacement parcel"
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_120)
        pending = await server.wait_for_request(run["id"])
        reply = await server.respond(
            pending["id"], {"decision": "reject", "reason": reason}, user="lee"
        )
        assert reply.status_code == 200, reply.text
        done = await server.wait_for_run(run["id"], status="completed")
        events = await server.audit(run["id"])

    assert reason in done["output"]["text"]
    assert "No refund was issued" in done["output"]["text"]
    [answered] = [e for e in events if e["type"] == "request.answered"]
    assert answered["data"] == {"decision": "reject", "reason": reason}
    assert "effect.executed" not in types_of(events)
    assert await refunds(db_url) == []


async def test_refund_1500_needs_two_different_finance_approvers(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_1500)
        pending = await server.wait_for_request(run["id"])
        assert (pending["team"], pending["approvals_required"]) == ("finance", 2)
        approve = {"decision": "approve"}

        reply = await server.respond(pending["id"], approve, user="fay")
        assert reply.status_code == 200, reply.text
        assert reply.json()["outcome"] == "partial"
        after_fay = await server.request(pending["id"])
        assert after_fay["status"] == "pending"
        assert [(a["actor"], a["decision"]) for a in after_fay["answers"]] == [("fay", "approve")]
        assert (await server.run(run["id"]))["status"] == "waiting"

        before = await server.snapshot(pending["id"])
        again = await server.respond(pending["id"], approve, user="fay")
        assert again.status_code == 200, again.text
        assert again.json()["outcome"] == "repeated"
        assert await server.snapshot(pending["id"]) == before  # one person counts once

        reply = await server.respond(pending["id"], approve, user="fin")
        assert reply.status_code == 200, reply.text
        assert reply.json()["outcome"] == "closed"
        done = await server.wait_for_run(run["id"], status="completed")
        events = await server.audit(run["id"])

    [closed] = done["requests"]
    assert closed["status"] == "resumed"
    assert [a["actor"] for a in closed["answers"]] == ["fay", "fin"]
    assert [e["actor"] for e in events if e["type"] == "request.answered"] == ["fay", "fin"]
    assert types_of(events).count("run.resumed") == 1
    assert types_of(events).count("effect.executed") == 1
    [refund] = await refunds(db_url)
    assert (refund["order_id"], refund["amount"]) == ("A-1003", 1500.0)


# refusals: each answers with its code and changes nothing stored ----------------------------


async def test_answer_to_unknown_request_is_404_and_changes_nothing(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_120)
        pending = await server.wait_for_request(run["id"])
        before = await server.snapshot(pending["id"])

        reply = await server.respond("req_doesNotExist0000000", {"decision": "approve"}, user="lee")

        assert reply.status_code == 404, reply.text
        assert reply.json()["error"] == "request_not_found"
        assert await server.snapshot(pending["id"]) == before
        assert (await server.run(run["id"]))["status"] == "waiting"
    assert await refunds(db_url) == []


async def test_different_answer_after_the_first_is_409_and_changes_nothing(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_120)
        pending = await server.wait_for_request(run["id"])
        first = await server.respond(pending["id"], {"decision": "approve"}, user="lee")
        assert first.status_code == 200, first.text
        await server.wait_for_run(run["id"], status="completed")
        before = await server.snapshot(pending["id"])

        for user, body in [
            ("lee", {"decision": "reject", "reason": "changed my mind"}),
            ("ada", {"decision": "edit", "arguments": {"order_id": "A-1002", "amount": 60}}),
        ]:
            reply = await server.respond(pending["id"], body, user=user)
            assert reply.status_code == 409, reply.text
            assert reply.json()["error"] == "answer_conflict"
            assert reply.json()["answered_by"] == "lee"
            assert await server.snapshot(pending["id"]) == before

        same = await server.respond(pending["id"], {"decision": "approve"}, user="lee")
        assert same.status_code == 200, same.text
        assert same.json()["outcome"] == "repeated"
        assert same.json()["request"] == before[0]
        assert await server.snapshot(pending["id"]) == before
    assert [r["amount"] for r in await refunds(db_url)] == [120.0]


async def test_answer_to_a_cancelled_run_is_410_and_changes_nothing(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_120)
        pending = await server.wait_for_request(run["id"])
        async with server.client("ada") as ada:
            cancelled = await ada.post(f"/api/runs/{run['id']}/cancel")
        assert cancelled.status_code == 200, cancelled.text
        assert cancelled.json()["status"] == "cancelled"
        before = await server.snapshot(pending["id"])
        assert before[0]["status"] == "cancelled"
        assert types_of(before[1])[-2:] == ["request.cancelled", "run.cancelled"]

        reply = await server.respond(pending["id"], {"decision": "approve"}, user="lee")

        assert reply.status_code == 410, reply.text
        assert reply.json()["error"] == "request_closed"
        assert await server.snapshot(pending["id"]) == before
        assert (await server.run(run["id"]))["status"] == "cancelled"
    assert await refunds(db_url) == []


REFUSALS = [
    pytest.param(
        "lee", {"decision": "reject"}, 422, ["body", "reason"], id="reject-without-reason"
    ),
    pytest.param(
        "lee",
        {"decision": "reject", "reason": "   "},
        422,
        ["body", "reason"],
        id="reject-with-blank-reason",
    ),
    pytest.param(
        "lee",
        {"decision": "edit", "arguments": {"order_id": "A-1002", "amount": "x"}},
        422,
        ["body", "arguments", "amount"],
        id="edit-amount-not-a-number",
    ),
    pytest.param(
        "lee",
        {"decision": "edit", "arguments": {"order_id": "A-1002", "amount": -5}},
        422,
        ["body", "arguments", "amount"],
        id="edit-amount-negative",
    ),
    pytest.param("lee", {"decision": "edit"}, 422, ["body", "arguments"], id="edit-no-arguments"),
    pytest.param("lee", {"decision": "maybe"}, 422, ["body", "decision"], id="unknown-decision"),
    pytest.param("lee", ["approve"], 422, ["body"], id="body-not-an-object"),
    pytest.param("sam", {"decision": "approve"}, 403, None, id="responder-of-another-team"),
    pytest.param("val", {"decision": "approve"}, 403, None, id="viewer"),
    pytest.param(None, {"decision": "approve"}, 401, None, id="no-token"),
]


@pytest.mark.parametrize(("user", "body", "status", "loc"), REFUSALS)
async def test_refused_answer_changes_nothing(
    db_url: str,
    tokens: dict[str, str],
    server_log: Path,
    user: str | None,
    body: Any,
    status: int,
    loc: list[str] | None,
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_120)
        pending = await server.wait_for_request(run["id"])
        before = await server.snapshot(pending["id"])

        url = f"/api/requests/{pending['id']}/respond"
        if user is None:
            reply = await server.anonymous().post(url, json=body)
        else:
            reply = await server.respond(pending["id"], body, user=user)

        assert reply.status_code == status, reply.text
        if loc is not None:
            assert loc in [e["loc"] for e in reply.json()["errors"]], reply.text
        if status == 401:
            assert reply.headers["www-authenticate"] == "Bearer"
        assert await server.snapshot(pending["id"]) == before
        assert (await server.run(run["id"]))["status"] == "waiting"

        # the request still takes its rightful answer
        ok = await server.respond(pending["id"], {"decision": "approve"}, user="lee")
        assert (ok.status_code, ok.json()["outcome"]) == (200, "closed")
        await server.wait_for_run(run["id"], status="completed")
    assert [r["amount"] for r in await refunds(db_url)] == [120.0]


# starting runs ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "status", "loc"),
    [
        pytest.param(
            {"workflow": "refund", "input": {"order_id": "A-1002", "reason": "broken"}},
            422,
            ["body", "input", "amount"],
            id="missing-amount",
        ),
        pytest.param(
            {"workflow": "refund", "input": {"order_id": "A-1002", "amount": 0, "reason": "x"}},
            422,
            ["body", "input", "amount"],
            id="amount-zero",
        ),
        pytest.param(
            {"workflow": "refund", "input": {"order_id": "A-1002", "amount": "x", "reason": "x"}},
            422,
            ["body", "input", "amount"],
            id="amount-not-a-number",
        ),
        pytest.param({"input": {}}, 422, ["body", "workflow"], id="missing-workflow"),
        pytest.param({"workflow": "refund", "input": [1]}, 422, ["body", "input"], id="input-list"),
        pytest.param({"workflow": "no-such-flow", "input": {}}, 404, None, id="unknown-workflow"),
    ],
)
async def test_refused_run_creates_nothing(
    db_url: str,
    tokens: dict[str, str],
    server_log: Path,
    body: dict[str, Any],
    status: int,
    loc: list[str] | None,
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        existing = await server.start_run(REFUND_20)
        await server.wait_for_run(existing["id"], status="completed")
        count = await server.run_count()

        async with server.client("sam") as sam:
            reply = await sam.post("/api/runs", json=body)

        assert reply.status_code == status, reply.text
        if loc is None:
            assert reply.json()["error"] == "workflow_not_found"
        else:
            assert loc in [e["loc"] for e in reply.json()["errors"]], reply.text
        assert await server.run_count() == count
    assert len(await refunds(db_url)) == 1


async def test_start_run_without_token_is_401_and_creates_nothing(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        reply = await server.anonymous().post("/api/runs", json=REFUND_20)
        assert reply.status_code == 401, reply.text
        assert await server.run_count() == 0


# the HTTP edge ------------------------------------------------------------------------------


async def test_x_request_id_is_echoed_or_generated(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server, server.client("sam") as sam:
        given = await sam.get("/api/workflows", headers={"X-Request-ID": "client-id-42"})
        refused = await sam.post("/api/runs", json={}, headers={"X-Request-ID": "bad-run-1"})
        first = await sam.get("/api/workflows")
        second = await sam.get("/healthz")

    assert given.headers["x-request-id"] == "client-id-42"
    assert refused.status_code == 422
    assert refused.headers["x-request-id"] == "bad-run-1"
    generated = [first.headers.get("x-request-id"), second.headers.get("x-request-id")]
    assert all(generated), generated
    assert generated[0] != generated[1]


# Paths of SPEC §5 the server has today; claim, release, reassign and /api/stream are not built.
SPEC_PATHS = {
    "/healthz": {"get"},
    "/api/workflows": {"get"},
    "/api/runs": {"get", "post"},
    "/api/runs/{run_id}": {"get"},
    "/api/runs/{run_id}/cancel": {"post"},
    "/api/runs/{run_id}/events": {"get"},
    "/api/requests": {"get"},
    "/api/requests/{request_id}": {"get"},
    "/api/requests/{request_id}/respond": {"post"},
    "/api/requests/{request_id}/events": {"get"},
}


async def test_openapi_lists_the_spec_paths(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        reply = await server.anonymous().get("/openapi.json")

    assert reply.status_code == 200, reply.text
    paths = reply.json()["paths"]
    for path, methods in SPEC_PATHS.items():
        assert path in paths, f"{path} missing from /openapi.json"
        assert methods <= set(paths[path]), (path, sorted(paths[path]))


async def test_workflows_lists_refund_with_its_input_schema(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server, server.client("val") as val:
        reply = await val.get("/api/workflows")

    assert reply.status_code == 200, reply.text
    [refund] = [w for w in reply.json() if w["name"] == "refund"]
    assert refund["description"]
    schema = refund["input_schema"]
    assert schema["type"] == "object"
    assert set(schema["required"]) == {"order_id", "amount", "reason"}
    assert schema["properties"]["amount"]["type"] == "number"
    assert schema["properties"]["order_id"]["type"] == "string"
