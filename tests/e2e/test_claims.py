"""Claim, release and reassign over real HTTP: exclusive for a while, races, lapses, moves."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx

from tests.harness import (
    REFUND_120,
    REFUND_1500,
    MovableClock,
    Server,
    baton_server,
    eventually,
    types_of,
)


async def _post(server: Server, user: str, path: str, body: Any = None) -> httpx.Response:
    async with server.client(user) as c:
        return await c.post(path, json=body)


async def _claim(server: Server, request_id: str, user: str) -> httpx.Response:
    return await _post(server, user, f"/api/requests/{request_id}/claim")


async def _release(server: Server, request_id: str, user: str) -> httpx.Response:
    return await _post(server, user, f"/api/requests/{request_id}/release")


async def _reassign(
    server: Server, request_id: str, user: str, body: dict[str, Any]
) -> httpx.Response:
    return await _post(server, user, f"/api/requests/{request_id}/reassign", body)


async def test_a_claim_makes_the_request_the_holders_until_released(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_120)
        pending = await server.wait_for_request(run["id"])
        rid = pending["id"]

        claimed = await _claim(server, rid, "lee")
        assert claimed.status_code == 200, claimed.text
        assert (claimed.json()["status"], claimed.json()["claimed_by"]) == ("claimed", "lee")
        until = claimed.json()["claimed_until"]
        before = await server.snapshot(rid)

        answer = await server.respond(rid, {"decision": "approve"}, user="ada")
        assert answer.status_code == 409, answer.text
        assert answer.json()["error"] == "request_claimed"
        assert (answer.json()["claimed_by"], answer.json()["claimed_until"]) == ("lee", until)
        assert "claimed by lee until" in answer.json()["detail"]
        taken = await _claim(server, rid, "ada")
        assert (taken.status_code, taken.json()["claimed_by"]) == (409, "lee")
        assert (await _claim(server, rid, "val")).status_code == 403  # a viewer
        assert (await _claim(server, rid, "sam")).status_code == 403  # another team
        assert (await _release(server, rid, "sam")).status_code == 403
        assert await server.snapshot(rid) == before

        renewed = await _claim(server, rid, "lee")
        assert renewed.status_code == 200, renewed.text
        assert renewed.json()["claimed_until"] >= until
        freed = await _release(server, rid, "ada")  # an admin may end anyone's claim
        assert freed.status_code == 200, freed.text
        assert (freed.json()["status"], freed.json()["claimed_by"]) == ("pending", None)
        again = await _release(server, rid, "lee")
        assert (again.status_code, again.json()["error"]) == (409, "not_claimed")

        assert (await _claim(server, rid, "lee")).status_code == 200
        approved = await server.respond(rid, {"decision": "approve"}, user="lee")
        assert approved.status_code == 200, approved.text
        late = await _claim(server, rid, "ada")
        assert (late.status_code, late.json()["error"]) == (409, "request_answered")
        await server.wait_for_run(run["id"], status="completed")
        events = await server.audit(run["id"])

    claims = [(e["type"], e["actor"]) for e in events if e["type"].startswith("request.")]
    assert claims == [
        ("request.created", "system"),
        ("request.claimed", "lee"),
        ("request.claimed", "lee"),
        ("request.released", "ada"),
        ("request.claimed", "lee"),
        ("request.answered", "lee"),
    ]


async def test_a_claim_lapses_by_itself_when_its_time_is_up(
    db_url: str, tokens: dict[str, str], server_log: Path, tmp_path: Path
) -> None:
    clock = MovableClock(tmp_path / "clock")
    async with baton_server(db_url, tokens, server_log, clock.env) as server:
        run = await server.start_run(REFUND_120)
        rid = (await server.wait_for_request(run["id"]))["id"]
        assert (await _claim(server, rid, "lee")).status_code == 200
        assert (await _claim(server, rid, "ada")).status_code == 409

        clock.jump(minutes=16)  # the claim time is 15 minutes

        async def released() -> dict[str, Any] | None:
            request = await server.request(rid)
            return request if request["status"] == "pending" else None

        lapsed = await eventually(released, what="the claim to lapse")
        assert lapsed["claimed_by"] is None
        taken = await _claim(server, rid, "ada")
        assert (taken.status_code, taken.json()["claimed_by"]) == (200, "ada")
        events = await server.audit(run["id"])

    [lapse] = [e for e in events if e["type"] == "request.released"]
    assert (lapse["actor"], lapse["data"]) == ("system", {"claimed_by": "lee", "reason": "lapsed"})


async def test_concurrent_claims_by_eight_people_one_wins(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        people = [f"fi{n}" for n in range(8)]
        for name in people:
            made = await _post(server, "ada", "/api/users", {"name": name, "teams": ["finance"]})
            assert made.status_code == 201, made.text
            token = await _post(server, "ada", "/api/tokens", {"user": name, "label": "race"})
            server.tokens[name] = token.json()["token"]
        run = await server.start_run(REFUND_1500)
        rid = (await server.wait_for_request(run["id"]))["id"]

        clients = [
            httpx.AsyncClient(
                base_url=server.base_url,
                headers={"Authorization": f"Bearer {server.tokens[name]}"},
                timeout=30.0,
            )
            for name in people
        ]
        try:
            replies = await asyncio.gather(*(c.post(f"/api/requests/{rid}/claim") for c in clients))
        finally:
            for c in clients:
                await c.aclose()
        events = await server.audit(run["id"])

    assert sorted(r.status_code for r in replies) == [200] + [409] * 7, [r.text for r in replies]
    [winner] = [people[i] for i, r in enumerate(replies) if r.status_code == 200]
    assert all(r.json()["claimed_by"] == winner for r in replies)
    claimed = [e for e in events if e["type"] == "request.claimed"]
    assert [e["actor"] for e in claimed] == [winner]


async def test_the_holders_approval_of_a_two_approver_request_lets_the_second_approve(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_1500)
        rid = (await server.wait_for_request(run["id"]))["id"]
        assert (await _claim(server, rid, "fay")).status_code == 200
        assert (await server.respond(rid, {"decision": "approve"}, user="fin")).status_code == 409

        first = await server.respond(rid, {"decision": "approve"}, user="fay")
        assert (first.status_code, first.json()["outcome"]) == (200, "partial")
        assert first.json()["request"]["claimed_by"] is None
        second = await server.respond(rid, {"decision": "approve"}, user="fin")
        assert (second.status_code, second.json()["outcome"]) == (200, "closed")
        await server.wait_for_run(run["id"], status="completed")


async def test_reassign_moves_the_request_to_a_team_or_a_person_and_refuses_bad_moves(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_120)
        rid = (await server.wait_for_request(run["id"]))["id"]
        assert (await _claim(server, rid, "lee")).status_code == 200
        before = await server.snapshot(rid)

        refusals = {
            "no team": await _reassign(server, rid, "lee", {"team": "nope"}),
            "no body": await _reassign(server, rid, "lee", {}),
            "not in team": await _reassign(server, rid, "lee", {"assignee": "sam"}),
            "a viewer": await _reassign(server, rid, "lee", {"assignee": "val"}),
            "unknown field": await _reassign(server, rid, "lee", {"group": "finance"}),
            "foreign team": await _reassign(server, rid, "sam", {"team": "finance"}),
            "viewer moves": await _reassign(server, rid, "val", {"team": "finance"}),
        }
        codes = {why: r.status_code for why, r in refusals.items()}
        assert codes == {
            "no team": 422,
            "no body": 422,
            "not in team": 422,
            "a viewer": 422,
            "unknown field": 422,
            "foreign team": 403,
            "viewer moves": 403,
        }
        assert refusals["no team"].json()["errors"][0]["loc"] == ["body", "team"]
        assert refusals["not in team"].json()["errors"][0]["loc"] == ["body", "assignee"]
        assert await server.snapshot(rid) == before

        moved = await _reassign(server, rid, "lee", {"team": "finance", "assignee": "fin"})
        assert moved.status_code == 200, moved.text
        body = moved.json()
        assert (body["team"], body["assignee"], body["status"], body["claimed_by"]) == (
            "finance",
            "fin",
            "pending",
            None,
        )
        # support-leads owns nothing of the run any more: for lee it is not there (404)
        assert (await server.respond(rid, {"decision": "approve"}, user="lee")).status_code == 404
        done = await server.respond(rid, {"decision": "approve"}, user="fin")
        assert done.status_code == 200, done.text
        await server.wait_for_run(run["id"], status="completed")
        events = await server.audit(run["id"])

    [move] = [e for e in events if e["type"] == "request.reassigned"]
    assert move["actor"] == "lee"
    assert move["data"] == {
        "from_team": "support-leads",
        "to_team": "finance",
        "from_assignee": None,
        "to_assignee": "fin",
        "claim_ended": "lee",
    }
    assert types_of(events).count("request.answered") == 1
