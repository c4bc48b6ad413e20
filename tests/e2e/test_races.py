"""Races: many answers to one request at once; the first wins, once, and nothing else runs."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx

from tests.harness import REFUND_120, Server, baton_server, refunds, types_of


async def _answer_all(
    server: Server, request_id: str, answers: list[tuple[str, dict[str, Any]]]
) -> list[httpx.Response]:
    """Send every answer at once, each on its own connection."""
    limits = httpx.Limits(max_connections=len(answers))
    clients = {
        user: httpx.AsyncClient(
            base_url=server.base_url,
            headers={"Authorization": f"Bearer {server.tokens[user]}"},
            timeout=30.0,
            limits=limits,
        )
        for user in {user for user, _ in answers}
    }
    url = f"/api/requests/{request_id}/respond"
    try:
        return list(
            await asyncio.gather(*(clients[user].post(url, json=body) for user, body in answers))
        )
    finally:
        for client in clients.values():
            await client.aclose()


def _without_status(body: dict[str, Any]) -> dict[str, Any]:
    # a repeat may land after the resume moved the request on from `answered` to `resumed`
    request = {k: v for k, v in body["request"].items() if k != "status"}
    return {"outcome": body["outcome"], "request": request}


async def test_twenty_different_answers_at_once_one_wins(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    answers: list[tuple[str, dict[str, Any]]] = [
        ("lee", {"decision": "approve"}),
        ("ada", {"decision": "approve"}),
    ]
    for n in range(9):
        who = ("lee", "ada")[n % 2]
        answers.append((who, {"decision": "reject", "reason": f"reason number {n}"}))
        edit = {"order_id": "A-1002", "amount": 60 + 10 * n}
        answers.append((who, {"decision": "edit", "arguments": edit}))
    assert len(answers) == 20

    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_120)
        pending = await server.wait_for_request(run["id"])
        replies = await _answer_all(server, pending["id"], answers)

        assert all(r.status_code in (200, 409) for r in replies), [r.text for r in replies]
        winners = [
            i
            for i, r in enumerate(replies)
            if r.status_code == 200 and r.json()["outcome"] == "closed"
        ]
        assert len(winners) == 1, [r.text for r in replies]
        [won] = winners
        winner_body = answers[won][1]
        winner = replies[won].json()
        assert winner["request"]["answer"] == winner_body
        assert winner["request"]["answered_by"] == answers[won][0]
        for i, (reply, (_, body)) in enumerate(zip(replies, answers, strict=True)):
            if i == won:
                continue
            if body == winner_body:  # the same answer again is a no-op with the same result
                assert reply.status_code == 200, reply.text
                assert reply.json()["outcome"] == "repeated"
                assert _without_status(reply.json()) == {
                    **_without_status(winner),
                    "outcome": "repeated",
                }
            else:
                assert reply.status_code == 409, reply.text
                assert reply.json()["error"] == "answer_conflict"

        done = await server.wait_for_run(run["id"], status="completed")
        events = await server.audit(run["id"])
        stored = await server.request(pending["id"])

    assert stored["status"] == "resumed"
    assert stored["answer"] == winner_body
    assert [a["actor"] for a in stored["answers"]] == [answers[won][0]]
    assert types_of(events).count("request.answered") == 1
    assert types_of(events).count("run.resumed") == 1
    rows = await refunds(db_url)
    assert len(rows) <= 1
    decision = winner_body["decision"]
    if decision == "approve":
        assert [r["amount"] for r in rows] == [120.0]
    elif decision == "edit":
        assert [r["amount"] for r in rows] == [float(winner_body["arguments"]["amount"])]
    else:
        assert rows == []
        assert winner_body["reason"] in done["output"]["text"]
    assert types_of(events).count("effect.executed") == len(rows)


async def test_ten_identical_approvals_at_once_close_once(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    answers = [(("lee", "ada")[n % 2], {"decision": "approve"}) for n in range(10)]

    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_120)
        pending = await server.wait_for_request(run["id"])
        replies = await _answer_all(server, pending["id"], answers)

        assert [r.status_code for r in replies] == [200] * 10, [r.text for r in replies]
        outcomes = sorted(r.json()["outcome"] for r in replies)
        assert outcomes == ["closed"] + ["repeated"] * 9
        [winner] = [r.json() for r in replies if r.json()["outcome"] == "closed"]
        for reply in replies:
            assert _without_status(reply.json()) == {
                **_without_status(winner),
                "outcome": reply.json()["outcome"],
            }
        await server.wait_for_run(run["id"], status="completed")
        events = await server.audit(run["id"])

    assert types_of(events).count("request.answered") == 1
    assert types_of(events).count("run.resumed") == 1
    assert types_of(events).count("effect.executed") == 1
    assert [r["amount"] for r in await refunds(db_url)] == [120.0]
