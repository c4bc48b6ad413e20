"""Edges of the API beyond the refund paths: roles on runs, malformed bodies, the edit's diff."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.harness import REFUND_120, Server, baton_server, refunds
from workflows.platform import registry


async def test_a_viewer_can_neither_start_nor_cancel_runs(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        async with server.client("val") as val:
            started = await val.post("/api/runs", json=REFUND_120)
        run = await server.start_run(REFUND_120)
        await server.wait_for_request(run["id"])
        async with server.client("val") as val:
            cancelled = await val.post(f"/api/runs/{run['id']}/cancel")
        after = await server.run(run["id"])
        count = await server.run_count()

    assert started.status_code == 403, started.text
    assert cancelled.status_code == 403, cancelled.text
    assert "viewer" in cancelled.json()["detail"]
    assert after["status"] == "waiting"
    assert count == 1


async def test_a_malformed_json_body_is_a_422_on_the_body(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_120)
        pending = await server.wait_for_request(run["id"])
        before = await server.snapshot(pending["id"])
        async with server.client("lee") as lee:
            reply = await lee.post(
                f"/api/requests/{pending['id']}/respond",
                content=b'{"decision": "appr',
                headers={"content-type": "application/json"},
            )
        after = await server.snapshot(pending["id"])

    assert reply.status_code == 422
    assert reply.json()["errors"][0]["loc"] == ["body"]
    assert "not valid JSON" in reply.json()["errors"][0]["msg"]
    assert before == after


async def test_a_cursor_this_api_did_not_issue_is_a_422_on_the_query(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server, server.client("lee") as lee:
        requests = await lee.get("/api/requests", params={"cursor": "garbage"})
        runs = await lee.get("/api/runs", params={"cursor": "garbage"})

    for reply in (requests, runs):
        assert reply.status_code == 422, reply.text
        assert reply.json()["errors"] == [{"loc": ["query", "cursor"], "msg": "invalid cursor"}]


async def test_requests_are_searched_by_their_words_and_only_among_those_one_may_see(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_120)
        request = await server.wait_for_request(run["id"])
        async with server.client("lee") as lee, server.client("fay") as fay:
            by_order = (await lee.get("/api/requests", params={"q": "a-1002"})).json()
            by_run = (await lee.get("/api/requests", params={"q": run["id"]})).json()
            none = (await lee.get("/api/requests", params={"q": "A-9999"})).json()
            foreign = (await fay.get("/api/requests", params={"q": "A-1002"})).json()
            too_long = await lee.get("/api/requests", params={"q": "x" * 201})
            empty = await lee.get("/api/requests", params={"q": ""})

    assert [r["id"] for r in by_order["items"]] == [request["id"]]
    assert [r["id"] for r in by_run["items"]] == [request["id"]]
    assert none["items"] == []
    assert foreign["items"] == []  # fay's team owns nothing of that run: not hers to find
    for refused in (too_long, empty):
        assert refused.status_code == 422, refused.text
        assert refused.json()["errors"][0]["loc"] == ["query", "q"]


async def test_requests_are_listed_by_view_workflow_and_assignee_and_a_wrong_one_is_a_422(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    """The inbox's filters on the API: a view, a workflow, an assignee (`me`), each narrowing
    what one may see, and none where blank; a view, kind, status or flag the API does not know is
    a 422 naming it."""
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_120)
        request = await server.wait_for_request(run["id"])
        async with server.client("lee") as lee, server.client("ada") as ada:

            async def ids(client: httpx.AsyncClient, **params: str) -> list[str]:
                reply = await client.get("/api/requests", params=params)
                assert reply.status_code == 200, reply.text
                return [r["id"] for r in reply.json()["items"]]

            refund = await ids(lee, workflow="refund")
            blank = await ids(lee, view="", status="", kind="", workflow="", assignee="")
            purchase = await ids(lee, workflow="purchase")
            mine_before = await ids(lee, assignee="me")
            moved = await ada.post(
                f"/api/requests/{request['id']}/reassign", json={"assignee": "lee"}
            )
            assert moved.status_code == 200, moved.text
            lees = await ids(lee, assignee="me", view="mine")
            adas = await ids(ada, assignee="me")
            by_name = await ids(ada, assignee="lee", status="pending")
            overdue = await ids(lee, view="overdue")
            wrong = {
                name: await lee.get("/api/requests", params={name: value})
                for name, value in (
                    ("view", "inbox"),
                    ("kind", "approve"),
                    ("status", "open"),
                    ("overdue", "maybe"),
                )
            }

    assert refund == [request["id"]]
    assert blank == [request["id"]]  # a blank filter is none, as a form sends it
    assert purchase == []
    assert mine_before == []
    assert lees == [request["id"]]
    assert adas == []
    assert by_name == [request["id"]]
    assert overdue == []  # (its deadline is hours away)
    for name, reply in wrong.items():
        assert reply.status_code == 422, reply.text
        assert [e["loc"] for e in reply.json()["errors"]] == [["query", name]], reply.text


async def test_an_edit_is_audited_with_its_before_and_after(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    edit = {"decision": "edit", "arguments": {"order_id": "A-1002", "amount": 30}}
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_120)
        pending = await server.wait_for_request(run["id"])
        reply = await server.respond(pending["id"], edit, user="lee")
        assert reply.status_code == 200, reply.text
        await server.wait_for_run(run["id"], status="completed")
        events = await server.audit(run["id"])

    [answered] = [e for e in events if e["type"] == "request.answered"]
    assert answered["actor"] == "lee"
    assert answered["data"]["diff"] == {"arguments": {"amount": {"before": 120.0, "after": 30}}}


async def test_an_edit_beyond_the_order_total_is_refused_before_it_is_recorded(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    edit = {"decision": "edit", "arguments": {"order_id": "A-1002", "amount": 999}}
    too_much = {"workflow": "refund", "input": {"order_id": "A-1002", "amount": 900, "reason": "x"}}
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(too_much)
        pending = await server.wait_for_request(run["id"])
        # A-1002's total is 2150: 999 fits the schema and the band, so the request takes it ...
        assert (await server.respond(pending["id"], edit, user="lee")).status_code == 200
        done = await server.wait_for_run(run["id"], status="completed")
        over = {"workflow": "refund", "input": {"order_id": "A-1002", "amount": 100, "reason": "x"}}
        second = await server.start_run(over)
        waiting = await server.wait_for_request(second["id"])
        big = {"decision": "edit", "arguments": {"order_id": "A-1002", "amount": 5000}}
        # ... while 5000 is over the total: the policy's invariant refund.within_order (the
        # shipped workflow's check) refuses the edit itself, and nothing is recorded.
        before = await server.snapshot(waiting["id"])
        refused = await server.respond(waiting["id"], big, user="lee")
        assert await server.snapshot(waiting["id"]) == before
        assert (await server.run(second["id"]))["status"] == "waiting"

    assert "Refunded 999.00" in done["output"]["text"]
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"] == "edit_refused"
    assert refused.json()["errors"] == [
        {
            "loc": ["body", "arguments"],
            "msg": "the edit breaks refund.within_order: "
            "5000.00 is more than order A-1002's total of 2150.00",
        }
    ]
    assert [r["amount"] for r in await refunds(db_url)] == [999.0]


async def test_a_workflow_module_that_fails_to_import_is_listed_unavailable_and_the_rest_serve(
    db_url: str, tokens: dict[str, str], server_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(registry, "_UNAVAILABLE", {})  # this process's other tests never see it
    env = {"BATON_WORKFLOWS": "tests.fixtures.broken_workflow"}
    async with baton_server(db_url, tokens, server_log, env) as server:
        async with server.client("sam") as sam:
            listed = (await sam.get("/api/workflows")).json()
        run = await server.start_run(REFUND_120)
        pending = await server.wait_for_request(run["id"])

    assert {w["name"] for w in listed if w["available"]} >= {"refund", "support", "purchase"}
    assert [w for w in listed if not w["available"]] == [
        {
            "module": "tests.fixtures.broken_workflow",
            "available": False,
            "error": "RuntimeError: the broken workflow's own bug",
        }
    ]
    assert pending["kind"] == "approval"


CANCEL_REFUSALS = [
    pytest.param({"reason": 7}, ["body", "reason"], id="reason-not-text"),
    pytest.param({"reason": ""}, ["body", "reason"], id="reason-empty"),
    pytest.param({"reason": "   "}, ["body", "reason"], id="reason-blank"),
    pytest.param({"reason": "x" * 2001}, ["body", "reason"], id="reason-too-long"),
    pytest.param({"why": "no longer needed"}, ["body", "why"], id="unknown-field"),
    pytest.param(["no longer needed"], ["body"], id="not-an-object"),
]


async def test_a_cancel_keeps_its_reason_and_a_bad_one_is_a_422_that_cancels_nothing(
    page_server: Server,
) -> None:
    server = page_server
    pending = await server.wait_for_request((await server.start_run(REFUND_120))["id"])
    before = await server.snapshot(pending["id"])
    url = f"/api/runs/{pending['run_id']}/cancel"
    async with server.client("sam") as sam, server.client("val") as val:
        refused = {}
        for case in CANCEL_REFUSALS:
            [body, loc] = case.values
            refused[case.id] = (await sam.post(url, json=body), loc)
        # who may not cancel at all is told so before their body is looked at
        viewer = await val.post(url, json={"reason": 7})
        unchanged = await server.snapshot(pending["id"])
        cancelled = await sam.post(url, json={"reason": "  The customer withdrew it. "})
    events = await server.audit(pending["run_id"])

    for case, (reply, loc) in refused.items():
        assert reply.status_code == 422, (case, reply.text)
        assert [e["loc"] for e in reply.json()["errors"]] == [loc], case
    assert viewer.status_code == 403, viewer.text
    assert unchanged == before
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["status"] == "cancelled"
    said = {e["type"]: e for e in events if e["type"].endswith(".cancelled")}
    assert said["run.cancelled"]["actor"] == "sam"
    assert said["run.cancelled"]["data"] == {"reason": "The customer withdrew it."}
    assert said["request.cancelled"]["data"] == {"reason": "The customer withdrew it."}
