"""Refusals of the JSON API: who may not call a route is told 403, whatever they sent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.harness import REFUND_120, baton_server


def _error_body(reply: httpx.Response) -> dict[str, Any]:
    """The body of a refusal, checked to be Baton's error shape, never FastAPI's `{"detail"}`."""
    assert reply.headers["content-type"].startswith("application/json"), reply.text
    body: dict[str, Any] = reply.json()
    assert isinstance(body.get("error"), str), body
    assert isinstance(body.get("detail"), str), body
    return body


async def test_who_may_not_call_a_route_is_told_403_before_what_is_wrong_with_the_body(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    bad_team = {"name": "", "colour": "red"}
    bad_user = {"role": "king"}
    bad_run = {"workflow": "", "extra": 1}
    approve_and_more = {"decision": "approve", "bogus": True}
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_120, user="lee")  # lee of support-leads starts it
        pending = await server.wait_for_request(run["id"])
        respond = f"/api/requests/{pending['id']}/respond"
        before = await server.snapshot(pending["id"])
        async with server.client("lee") as lee, server.client("val") as val:
            refused = {
                "lee adds a team": await lee.post("/api/teams", json=bad_team),
                "lee adds a user": await lee.post("/api/users", json={"bogus": 1}),
                "lee changes a user": await lee.patch("/api/users/sam", json=bad_user),
                "val starts a run": await val.post("/api/runs", json=bad_run),
                "lee approves his own run's request": await lee.post(
                    respond, json=approve_and_more
                ),
            }
            refused["val (a viewer) answers"] = await val.post(
                respond, json={"decision": "nonsense"}
            )
        async with server.client("fay") as fay:  # finance: may not even see the run
            unseen = await fay.post(respond, json={"decision": "nonsense"})
        async with server.client("ada") as ada:  # allowed: the same bodies are invalid (422)
            invalid = {
                "ada adds a team": await ada.post("/api/teams", json=bad_team),
                "ada changes a user": await ada.patch("/api/users/sam", json=bad_user),
                "ada starts a run": await ada.post("/api/runs", json=bad_run),
                "ada approves with more": await ada.post(respond, json=approve_and_more),
            }
        after = await server.snapshot(pending["id"])

    assert {k: r.status_code for k, r in refused.items()} == dict.fromkeys(refused, 403)
    assert {_error_body(r)["error"] for r in refused.values()} == {"not_permitted"}
    assert "four-eyes: lee started run" in refused["lee approves his own run's request"].text
    assert "is a viewer" in refused["val (a viewer) answers"].text
    assert (unseen.status_code, _error_body(unseen)["error"]) == (404, "request_not_found")
    assert {k: r.status_code for k, r in invalid.items()} == dict.fromkeys(invalid, 422)
    assert {_error_body(r)["error"] for r in invalid.values()} <= {"invalid", "invalid_answer"}
    assert before == after
