"""Refusals of the JSON API: who may not call a route is told 403, whatever they sent; a body that
does not parse, and a path or method the API does not have, answer in Baton's error body."""

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
    bad_move = {"team": "", "when": "now"}
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_120, user="lee")  # lee of support-leads starts it
        pending = await server.wait_for_request(run["id"])
        respond = f"/api/requests/{pending['id']}/respond"
        reassign = f"/api/requests/{pending['id']}/reassign"
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
            refused["val (a viewer) reassigns"] = await val.post(reassign, json=bad_move)
        async with server.client("fay") as fay:  # finance: may not even see the run
            unseen = await fay.post(respond, json={"decision": "nonsense"})
        async with server.client("ada") as ada:  # allowed: the same bodies are invalid (422)
            invalid = {
                "ada adds a team": await ada.post("/api/teams", json=bad_team),
                "ada changes a user": await ada.patch("/api/users/sam", json=bad_user),
                "ada starts a run": await ada.post("/api/runs", json=bad_run),
                "ada approves with more": await ada.post(respond, json=approve_and_more),
                "ada reassigns": await ada.post(reassign, json=bad_move),
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


async def test_a_body_that_does_not_parse_is_a_422_in_batons_error_body(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    sent = {
        "malformed JSON": ("application/json", b'{"workflow": "refu'),
        "JSON sent as text": ("text/plain", b'{"workflow": "refund"}'),
        "a form": ("application/x-www-form-urlencoded", b"workflow=refund"),
        "an array": ("application/json", b'["refund"]'),
        "no body": ("application/json", b""),
    }
    async with baton_server(db_url, tokens, server_log) as server, server.client("sam") as sam:
        replies = {
            what: await sam.post("/api/runs", content=body, headers={"content-type": media})
            for what, (media, body) in sent.items()
        }
        async with server.client("ada") as ada:  # past the edge's guard: FastAPI's own parsing
            team = await ada.post("/api/teams", content=b"{", headers={"content-type": "text/json"})

    for what, reply in {**replies, "text/json team": team}.items():
        assert reply.status_code == 422, (what, reply.text)
        body = _error_body(reply)
        assert body["error"] == "invalid", (what, body)
        assert body["errors"], (what, body)
        assert body["errors"][0]["loc"][0] == "body", (what, body)


async def test_a_path_or_method_the_api_does_not_have_answers_in_batons_error_body(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server, server.client("sam") as sam:
        no_path = await sam.get("/api/nothing-here")
        anonymous_no_path = await server.anonymous().get("/api/runs/abc/nothing")
        no_method = await sam.delete("/api/runs")
        health_post = await sam.post("/healthz")
        page = await server.anonymous().get("/no-such-page")

    assert (no_path.status_code, _error_body(no_path)["error"]) == (404, "not_found")
    assert (anonymous_no_path.status_code, _error_body(anonymous_no_path)["error"]) == (
        404,
        "not_found",
    )
    assert (no_method.status_code, _error_body(no_method)["error"]) == (405, "method_not_allowed")
    assert "allow" in no_method.headers
    assert (health_post.status_code, _error_body(health_post)["error"]) == (
        405,
        "method_not_allowed",
    )
    assert page.status_code == 404  # a page is still an error page
    assert page.headers["content-type"].startswith("text/html")
