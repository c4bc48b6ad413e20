"""`/api/stream` over real HTTP: live audit events, from this process and from others."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness import REFUND_120, REFUND_1500, baton_server


def is_type(kind: str, run_id: str | None = None):  # type: ignore[no-untyped-def]
    return lambda m: m.get("event") == kind and (run_id is None or m["data"]["run_id"] == run_id)


async def test_a_new_request_and_its_answer_arrive_live(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server, server.stream("lee") as live:
        run = await server.start_run(REFUND_120)
        created = (await live.until(is_type("request.created", run["id"])))[-1]
        assert created["data"]["actor"] == "system"
        request_id = created["data"]["request_id"]
        assert int(created["id"]) == created["data"]["id"]

        reply = await server.respond(request_id, {"decision": "approve"}, user="lee")
        assert reply.status_code == 200, reply.text
        answered = (await live.until(is_type("request.answered", run["id"])))[-1]
        assert answered["data"]["actor"] == "lee"
        assert answered["data"]["request_id"] == request_id
        seen = await live.until(is_type("run.completed", run["id"]))
        assert "effect.executed" in [m["event"] for m in seen]


@pytest.mark.process  # the answer comes from the CLI, to a `baton serve` process
async def test_an_answer_given_by_another_process_reaches_the_stream(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_120)
        request = await server.wait_for_request(run["id"])
        async with server.stream("lee", params={"run_id": run["id"]}) as live:
            done = await asyncio.to_thread(
                subprocess.run,
                [
                    sys.executable,
                    "-m",
                    "baton",
                    "requests",
                    "answer",
                    request["id"],
                    "--decision",
                    "approve",
                    "--as",
                    "lee",
                ],
                env={"BATON_DATABASE_URL": db_url, "PATH": "/usr/bin:/bin"},
                capture_output=True,
                text=True,
            )
            assert done.returncode == 0, done.stderr
            answered = await live.next()
            assert (answered["event"], answered["data"]["actor"]) == ("request.answered", "lee")
            assert answered["data"]["run_id"] == run["id"]


async def test_reconnecting_with_last_event_id_replays_what_was_missed_then_follows(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_120)
        await server.wait_for_request(run["id"])
        events = await server.audit(run["id"])
        first = events[0]
        async with server.stream(
            "val", params={"run_id": run["id"]}, last_event_id=first["id"]
        ) as live:
            replayed = [await live.next() for _ in events[1:]]
            assert [m["event"] for m in replayed] == [e["type"] for e in events[1:]]
            await server.respond(
                replayed[-1]["data"]["request_id"], {"decision": "approve"}, user="lee"
            )
            assert (await live.next())["event"] == "request.answered"


async def test_types_filter_keeps_only_the_named_types(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with (
        baton_server(db_url, tokens, server_log) as server,
        server.stream("lee", params={"types": "run.completed, request.created"}) as live,
    ):
        run = await server.start_run(REFUND_120)
        created = await live.next()
        assert created["event"] == "request.created"
        await server.respond(created["data"]["request_id"], {"decision": "approve"}, user="lee")
        assert (await live.next())["event"] == "run.completed"
        assert created["data"]["run_id"] == run["id"]


async def test_the_stream_refuses_anonymous_callers_and_bad_event_ids(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        anonymous = await server.anonymous().get("/api/stream")
        assert anonymous.status_code == 401, anonymous.text
        async with server.client("lee") as c:
            for bad in ("x", "-3"):
                reply = await c.get("/api/stream", headers={"Last-Event-ID": bad})
                assert reply.status_code == 422, reply.text
                assert reply.json()["errors"][0]["loc"] == ["header", "last-event-id"]


async def test_a_stream_carries_only_the_runs_its_caller_may_see(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with (
        baton_server(db_url, tokens, server_log) as server,
        server.stream("fay") as finance,
        server.stream("lee") as leads,
    ):
        small = await server.start_run(REFUND_120)  # support-leads: none of finance's business
        await server.wait_for_request(small["id"])
        large = await server.start_run(REFUND_1500)  # finance's, once its request exists

        seen = await finance.until(is_type("request.created", large["id"]))
        assert {m["data"]["run_id"] for m in seen} == {large["id"]}

        theirs = await leads.until(is_type("request.created", small["id"]))
        assert {m["data"]["run_id"] for m in theirs} == {small["id"]}


async def test_revoking_the_token_ends_its_open_stream(
    db_url: str, tokens: dict[str, str], server_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import httpx

    from tests.harness import EventStream
    from web.routes import stream

    monkeypatch.setattr(stream, "RECHECK_S", 0.2)  # the server runs in this process
    async with baton_server(db_url, tokens, server_log) as server:
        async with server.client("lee") as lee:
            made = (await lee.post("/api/tokens", json={"label": "watcher"})).json()
        headers = {"Authorization": f"Bearer {made['token']}"}
        async with (
            httpx.AsyncClient(base_url=server.base_url, headers=headers, timeout=30) as watcher,
            watcher.stream("GET", "/api/stream") as reply,
        ):
            events = EventStream(reply.aiter_lines())
            assert (await events.next())["event"] == "ready"
            run = await server.start_run(REFUND_120)  # lee's team is asked: the stream hears it
            heard = await events.until(is_type("request.created", run["id"]))
            async with server.client("lee") as lee:
                revoked = await lee.delete(f"/api/tokens/{made['id']}")
            ended = await events.next(timeout=10)
            with pytest.raises(AssertionError, match="the stream ended"):
                await events.next(timeout=10)

    assert heard[-1]["event"] == "request.created"
    assert revoked.status_code == 200
    assert ended["event"] == "ended"
