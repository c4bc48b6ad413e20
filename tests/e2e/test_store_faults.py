"""The database cannot take writes: the API answers 503 with Retry-After, pages say try again.

The faults are SQLite's own, on the served store's connection (`tests.faults`): no page left
to grow into (a full disk) and writes refused (a read-only database). Each write the API or a
page is sent meanwhile is refused with Baton's error body (`store_unavailable`) and a
`Retry-After`, every row of every table stays as it was, and once the database takes writes
again the next call succeeds, in the same process. Each of those writes is one transaction of
the store (counted through the same seam, on a server without a worker of its own), which is
what makes a refused one leave nothing behind. A `baton serve` on PostgreSQL whose database an
operator makes read-only does the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.faults import (
    SQLITE_FULL,
    SQLITE_READ_ONLY,
    Prelude,
    Statements,
    pg_read_only,
    recovered,
)
from tests.harness import (
    REFUND_120,
    InProcessServer,
    Server,
    baton_server,
    digest,
    eventually,
    types_of,
)
from tests.pages import PAGE_ENV, signed_in
from tests.supportkit import DELETE_ACCOUNT, back_office, pending_request

# The demo back office keeps its own pool on the database: a rejected refund never calls it.
REJECT = {"decision": "reject", "reason": "not while the database is read-only"}
BIG_REFUND = {
    "workflow": "refund",
    "input": {"order_id": "A-1002", "amount": 120, "reason": "broken " * 4000},
}


@pytest.fixture
async def paused(page_server: Server) -> tuple[InProcessServer, dict[str, Any]]:
    assert isinstance(page_server, InProcessServer)
    run = await page_server.start_run(REFUND_120)
    pending = await page_server.wait_for_request(run["id"])
    await page_server.wait_for_run(run["id"], status="waiting")
    return page_server, pending


def assert_unavailable(reply: httpx.Response) -> None:
    assert reply.status_code == 503, reply.text
    body = reply.json()
    assert body["error"] == "store_unavailable"
    assert body["detail"]
    assert 1 <= int(reply.headers["Retry-After"]) <= 30


async def test_a_full_disk_refuses_a_start_with_503_and_the_next_start_after_it_succeeds(
    paused: tuple[InProcessServer, dict[str, Any]], db_url: str
) -> None:
    server, _ = paused
    before = digest(db_url)

    server.store.wrap_writes = Prelude(*SQLITE_FULL)
    async with server.client("sam") as sam:
        refused = await sam.post("/api/runs", json=BIG_REFUND)
        assert digest(db_url) == before
        server.store.wrap_writes = recovered(server.store.dialect)
        started = await sam.post("/api/runs", json=BIG_REFUND)

    assert_unavailable(refused)
    assert "full" in refused.json()["detail"]
    assert started.status_code == 201, started.text
    await server.wait_for_request(started.json()["id"])


@pytest.mark.parametrize("write", ["respond", "claim", "reassign", "start"])
async def test_a_read_only_database_refuses_each_api_write_with_503_and_changes_no_row(
    paused: tuple[InProcessServer, dict[str, Any]], db_url: str, write: str
) -> None:
    server, pending = paused
    user, path, body = {
        "respond": ("lee", f"/api/requests/{pending['id']}/respond", {"decision": "approve"}),
        "claim": ("lee", f"/api/requests/{pending['id']}/claim", None),
        "reassign": ("ada", f"/api/requests/{pending['id']}/reassign", {"team": "finance"}),
        "start": ("sam", "/api/runs", REFUND_120),
    }[write]
    before = digest(db_url)

    server.store.wrap_writes = Prelude(*SQLITE_READ_ONLY)
    async with server.client(user) as client:
        refused = [await client.post(path, json=body) for _ in range(2)]
        seen = await client.get(f"/api/requests/{pending['id']}")  # reads still work
        assert digest(db_url) == before
        server.store.wrap_writes = recovered(server.store.dialect)
        done = await client.post(path, json=body)

    for reply in refused:
        assert_unavailable(reply)
    assert seen.status_code == 200
    assert seen.json()["status"] == "pending"
    assert done.status_code in (200, 201), done.text


async def test_a_page_write_the_database_refuses_shows_a_503_page_saying_try_again_shortly(
    paused: tuple[InProcessServer, dict[str, Any]], db_url: str, passwords: dict[str, str]
) -> None:
    server, pending = paused
    async with signed_in(server, "lee", passwords["lee"]) as lee:
        await lee.refresh_token(f"/requests/{pending['id']}")
        before = digest(db_url)
        server.store.wrap_writes = Prelude(*SQLITE_READ_ONLY)
        refused = await lee.post(f"/requests/{pending['id']}/claim", {})
        assert digest(db_url) == before
        server.store.wrap_writes = recovered(server.store.dialect)
        claimed = await lee.post(f"/requests/{pending['id']}/claim", {})

    assert refused.status_code == 503
    assert refused.headers["content-type"].startswith("text/html")
    assert "try again shortly" in refused.text.lower()
    assert int(refused.headers["Retry-After"]) >= 1
    assert claimed.status_code == 303, claimed.text


async def test_each_api_write_is_one_transaction_of_the_store(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log, PAGE_ENV) as server:
        run = await server.start_run(REFUND_120)
        pending = await server.wait_for_request(run["id"])
        await server.wait_for_run(run["id"], status="waiting")
    request = f"/api/requests/{pending['id']}"
    writes = [
        ("sam", "/api/runs", REFUND_120),
        ("lee", f"{request}/claim", None),
        ("lee", f"{request}/release", None),
        ("ada", f"{request}/reassign", {"team": "finance", "assignee": "fay"}),
        ("fay", f"{request}/respond", {"decision": "approve"}),
    ]

    # No worker here: what a call writes is its own.
    async with baton_server(db_url, tokens, server_log, PAGE_ENV, args=["--no-worker"]) as server:
        assert isinstance(server, InProcessServer)
        for user, path, body in writes:
            server.store.wrap_writes = counted = Statements()
            async with server.client(user) as client:
                reply = await client.post(path, json=body)
            assert reply.status_code in (200, 201), (path, reply.text)
            assert counted.transactions == 1, (path, counted.transactions)
            server.store.wrap_writes = None


@pytest.mark.process
@pytest.mark.backends("postgres")
async def test_baton_serve_answers_503_while_an_operator_keeps_its_database_read_only(
    db_url: str, tokens: dict[str, str], server_log: Path, postgres_server: str
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_120)
        pending = await server.wait_for_request(run["id"])
        await server.wait_for_run(run["id"], status="waiting")
        respond = f"/api/requests/{pending['id']}/respond"
        before = digest(db_url)

        pg_read_only(db_url, postgres_server, on=True)
        try:
            async with server.client("lee") as lee:
                refused = [await lee.post(respond, json=REJECT) for _ in range(3)]
            assert digest(db_url) == before
        finally:
            pg_read_only(db_url, postgres_server, on=False)

        async with server.client("lee") as lee:
            answered = await lee.post(respond, json=REJECT)
        await server.wait_for_run(run["id"], status="completed")

    for reply in refused:
        assert_unavailable(reply)
    assert "read-only" in refused[-1].json()["detail"]
    assert answered.status_code == 200, answered.text


async def test_an_effect_whose_drive_the_store_cannot_commit_is_performed_once_when_it_can(
    page_server: Server, db_url: str
) -> None:
    # An approved call's effect is recorded with its drive's progress: a store that refuses that
    # commit voids the drive (the run stays waiting, nothing tells the model). The drive is tried
    # again once the store takes writes, calls with the same key, and the account closes once.
    assert isinstance(page_server, InProcessServer)
    server = page_server
    run = await server.start_run(DELETE_ACCOUNT, user="sue")
    approval = await pending_request(server, run["id"], kind="approval")
    refusing = Prelude(*SQLITE_READ_ONLY, when="UPDATE runs SET status")
    server.store.wrap_writes = refusing

    reply = await server.respond(approval["id"], {"decision": "approve"}, user="lee")
    await eventually(lambda: _true(refusing.transactions >= 2), what="two refused drives")
    meanwhile = await server.run(run["id"])
    server.store.wrap_writes = recovered(server.store.dialect)
    done = await server.wait_for_run(run["id"], status=("completed", "failed"))
    events = types_of(await server.audit(run["id"]))

    assert reply.status_code == 200, reply.text
    assert meanwhile["status"] == "waiting"
    assert done["status"] == "completed", done["error"]
    assert done["output"]["resolution"].startswith("Deleted the account of customer-02")
    assert len((await back_office(db_url))["closures"]) == 1  # the key dedupes the replay
    assert events.count("effect.executed") == 1
    assert "run.failed" not in events


async def _true(value: bool) -> bool:
    return value
