"""Hostile bodies get a precise 4xx and change nothing stored; every later read still works.

A lone surrogate, a NUL, `Infinity`, a number beyond a double, nesting 900 deep, an unknown
field, a body past the size limit, a cursor beyond 64 bits: each refused before a route runs (or
by the route's own checks), with the database's every row the same before and after.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.harness import Server, baton_server, digest, sql

REFUND = {"order_id": "A-1005", "amount": 120, "reason": "arrived broken"}
JSON = {"content-type": "application/json"}


@pytest.fixture
async def paused(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> AsyncIterator[tuple[Server, dict[str, Any]]]:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run({"workflow": "refund", "input": REFUND})
        pending = await server.wait_for_request(run["id"])
        await server.wait_for_run(run["id"], status="waiting")
        yield server, pending


ANSWERS = {
    "lone surrogate": ('{"decision": "reject", "reason": "no \\ud800 way"}', ["body", "reason"]),
    "NUL": ('{"decision": "reject", "reason": "no\\u0000way"}', ["body", "reason"]),
    "Infinity": ('{"decision": "edit", "arguments": {"amount": Infinity}}', ["body"]),
    "1e400": (
        '{"decision": "edit", "arguments": {"order_id": "A-1005", "amount": 1e400}}',
        ["body"],
    ),
    "deep": (
        '{"decision": "reject", "reason": "x", "n": ' + "[" * 900 + "]" * 900 + "}",
        ["body", "n", *["0"] * 31],
    ),
    "unknown field": ('{"decision": "approve", "sneaky": 1}', ["body", "sneaky"]),
    "surrogate key": ('{"decision": "approve", "\\udfff": 1}', None),
}


@pytest.mark.parametrize("case", list(ANSWERS))
async def test_a_hostile_answer_is_refused_precisely_and_changes_no_row(
    case: str, paused: tuple[Server, dict[str, Any]], db_url: str
) -> None:
    server, pending = paused
    body, loc = ANSWERS[case]
    before = digest(db_url)
    async with server.client("lee") as c:
        reply = await c.post(f"/api/requests/{pending['id']}/respond", content=body, headers=JSON)
        read = await c.get(f"/api/requests/{pending['id']}")
        events = await c.get(f"/api/requests/{pending['id']}/events")
    after = digest(db_url)

    assert reply.status_code == 422, reply.text
    refusal = reply.json()
    assert refusal["error"].startswith("invalid")
    if loc is not None:
        assert refusal["errors"][0]["loc"] == loc
    assert len(reply.text) < 4000  # no echo of the whole body
    assert after == before
    assert (read.status_code, events.status_code) == (200, 200)
    assert read.json()["status"] == "pending"


RUNS = {
    "lone surrogate": (
        '{"workflow": "refund", "input": {"order_id": "A-\\ud800", "amount": 5, "reason": "x"}}',
        422,
    ),
    "NUL": (
        '{"workflow": "refund", "input": {"order_id": "A\\u0000", "amount": 5, "reason": "x"}}',
        422,
    ),
    "Infinity": (
        '{"workflow": "refund", "input": {"order_id": "A-1", "amount": Infinity, "reason": "x"}}',
        422,
    ),
    "1e400": (
        '{"workflow": "refund", "input": {"order_id": "A-1", "amount": 1e400, "reason": "x"}}',
        422,
    ),
    "huge integer": (
        '{"workflow": "refund", "input": {"order_id": "A-1", "amount": 1'
        + "0" * 30
        + ', "reason": "x"}}',
        422,
    ),
    "unknown field": (
        '{"workflow": "refund", "input": {"order_id": "A-1", "amount": 5, "reason": "x", "x": 1}}',
        422,
    ),
    "1 MB": (
        json.dumps({"workflow": "refund", "input": {**REFUND, "reason": "x" * 1_000_000}}),
        413,
    ),
}


@pytest.mark.parametrize("case", list(RUNS))
async def test_a_hostile_run_input_is_refused_and_starts_nothing(
    case: str, paused: tuple[Server, dict[str, Any]], db_url: str
) -> None:
    server, _ = paused
    body, status = RUNS[case]
    before = digest(db_url)
    async with server.client("sam") as c:
        reply = await c.post("/api/runs", content=body, headers=JSON)
        listed = await c.get("/api/runs")
    after = digest(db_url)

    assert reply.status_code == status, reply.text
    assert reply.json()["error"].startswith("too_large" if status == 413 else "invalid")
    assert after == before
    assert listed.status_code == 200


async def test_a_long_name_is_refused_without_being_echoed_back(
    paused: tuple[Server, dict[str, Any]],
) -> None:
    server, _ = paused
    async with server.client("sam") as c:
        long_name = await c.post("/api/runs", json={"workflow": "w" * 100_000, "input": {}})
        unknown = await c.post("/api/runs", json={"workflow": "x" * 150, "input": {}})

    assert long_name.status_code == 422
    assert len(long_name.text) < 2000
    assert unknown.status_code == 404
    detail = unknown.json()["detail"]
    assert "x" * 80 + "…" in detail
    assert "x" * 81 not in detail


async def test_a_streamed_body_past_the_limit_is_refused_as_it_grows(
    paused: tuple[Server, dict[str, Any]], db_url: str
) -> None:
    server, pending = paused
    before = digest(db_url)

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"decision": "reject", "reason": "'
        for _ in range(64):
            yield b"y" * 8192
        yield b'"}'

    async with server.client("lee") as c:
        reply = await c.post(
            f"/api/requests/{pending['id']}/respond", content=chunks(), headers=JSON
        )

    assert reply.status_code == 413, reply.text
    assert "BATON_MAX_BODY_BYTES" in reply.json()["detail"]
    assert digest(db_url) == before


async def test_a_cursor_beyond_64_bits_is_a_422_not_a_500(
    paused: tuple[Server, dict[str, Any]],
) -> None:
    server, _ = paused
    async with server.client("ada") as c:
        reply = await c.get("/api/requests", params={"cursor": "9" * 30})
        runs = await c.get("/api/runs", params={"cursor": "9" * 30})

    assert reply.status_code == 422, reply.text
    assert reply.json()["errors"][0]["loc"] == ["query", "cursor"]
    assert runs.status_code == 422, runs.text


# retries -------------------------------------------------------------------------------------


async def start_with_key(server: Server, key: str, body: dict[str, Any]) -> httpx.Response:
    async with server.client("sam") as c:
        return await c.post("/api/runs", json=body, headers={"Idempotency-Key": key})


async def test_a_retried_start_with_its_key_returns_the_first_run_and_starts_no_other(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    body = {"workflow": "refund", "input": REFUND}
    async with baton_server(db_url, tokens, server_log) as server:
        first = await start_with_key(server, "order-A-1005-try", body)
        again = await start_with_key(server, "order-A-1005-try", body)
        racing = await asyncio.gather(
            *(start_with_key(server, "order-A-1005-race", body) for _ in range(8))
        )
        other = await start_with_key(
            server, "order-A-1005-try", {"workflow": "refund", "input": {**REFUND, "amount": 12}}
        )
        bad_key = await start_with_key(server, "a key with spaces", body)
        count = await server.run_count()

    assert first.status_code == 201, first.text
    assert "idempotent-replayed" not in first.headers
    assert again.status_code == 201
    assert again.headers["idempotent-replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]
    assert {r.status_code for r in racing} == {201}
    assert len({r.json()["id"] for r in racing}) == 1
    assert other.status_code == 409
    assert other.json()["error"] == "idempotency_conflict"
    assert first.json()["id"] in other.json()["detail"]
    assert bad_key.status_code == 422
    assert count == 2


async def test_healthz_reports_the_worker_of_a_serving_process(
    paused: tuple[Server, dict[str, Any]],
) -> None:
    server, _ = paused
    async with server.anonymous() as c:
        reply = await c.get("/healthz")

    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["status"] == "ok"
    assert body["worker"]["running"] is True
    assert body["worker"]["ok"] is True
    assert body["worker"]["failing"] is None


async def test_a_damaged_record_is_shown_with_its_fault_named_and_cannot_be_answered(
    db_url: str, tokens: dict[str, str], passwords: dict[str, str], server_log: Path
) -> None:
    """What an older version, a hand edit or a bug left in a row never fails a page or the API.

    The request's context is not JSON and its decisions are the wrong shape, the run's input is
    not JSON: every read answers 200 naming each fault (audit events are append-only, so
    `tests/unit/test_rows.py` damages theirs), the
    request refuses answers (409 `record_damaged`, nothing stored), the other request is whole.
    """
    from tests.pages import PAGE_ENV, signed_in

    async with baton_server(db_url, tokens, server_log, PAGE_ENV) as server:
        damaged_run = await server.start_run({"workflow": "refund", "input": REFUND})
        damaged = await server.wait_for_request(damaged_run["id"])
        whole_run = await server.start_run({"workflow": "refund", "input": REFUND})
        whole = await server.wait_for_request(whole_run["id"])
        await server.wait_for_run(damaged_run["id"], status="waiting")
        sql(
            db_url,
            "UPDATE human_requests SET context = '{\"cut short', allowed_decisions = '\"approve\"'"
            f" WHERE id = '{damaged['id']}'",
        )
        sql(db_url, f"UPDATE runs SET input = 'not json' WHERE id = '{damaged_run['id']}'")
        before = digest(db_url)
        async with server.client("lee") as api:
            one = await api.get(f"/api/requests/{damaged['id']}")
            listed = await api.get("/api/requests", params={"run_id": damaged_run["id"]})
            events = await api.get(f"/api/requests/{damaged['id']}/events")
            run = await api.get(f"/api/runs/{damaged_run['id']}")
            answer = await api.post(
                f"/api/requests/{damaged['id']}/respond", json={"decision": "approve"}
            )
            other = await api.get(f"/api/requests/{whole['id']}")
        async with signed_in(server, "lee", passwords["lee"]) as lee:
            page = await lee.http.get(f"/requests/{damaged['id']}")
            run_page = await lee.http.get(f"/runs/{damaged_run['id']}")
            inbox = await lee.http.get("/")
            other_page = await lee.http.get(f"/requests/{whole['id']}")
        after = digest(db_url)

    assert [r.status_code for r in (one, listed, events, run, other)] == [200] * 5
    faults = one.json()["faults"]
    assert [f.split(":")[0] for f in faults] == ["context", "allowed_decisions"]
    assert one.json()["context"] == {}
    assert listed.json()["items"][0]["faults"] == faults
    assert events.json()
    assert run.json()["faults"][0].startswith("input: not valid JSON")
    assert other.json()["faults"] == []

    assert answer.status_code == 409, answer.text
    assert answer.json()["error"] == "record_damaged"
    assert "context: not valid JSON" in answer.json()["detail"]
    assert after == before

    assert [p.status_code for p in (page, run_page, inbox, other_page)] == [200] * 4
    assert "Part of this request could not be shown" in page.text
    assert "the request&#39;s context: not valid JSON" in page.text
    assert "cannot be answered until the record is whole" in page.text
    assert 'value="approve"' not in page.text
    assert "Part of this run could not be shown" in run_page.text
    assert "could not be shown" not in other_page.text
    assert 'value="approve"' in other_page.text
