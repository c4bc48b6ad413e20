"""A database that cannot serve is `StoreUnavailable`, stores nothing, and is used again once well.

The faults are the databases' own, set on the store's own connection (`tests.faults.Prelude`):
SQLite with no page left to grow into (SQLITE_FULL, as a full disk), refusing writes
(SQLITE_READONLY), or locked by another writer past the busy timeout (SQLITE_BUSY); PostgreSQL in
a read-only transaction (25006), waiting for a row lock past `lock_timeout` (55P03), or its
database switched to read-only by an operator (`ALTER DATABASE … SET
default_transaction_read_only`, with the pool's sessions ended), or its server stopped. Each
time the call raises
`StoreUnavailable`, every row stays as it was, and the same store (SQLite's writer thread and
connection, PostgreSQL's pool) takes the same write once the fault is gone. An error that is the
call's own (a duplicate key) stays a plain `StoreError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator

import asyncpg
import pytest

from baton import devpg
from baton.errors import StoreError, StoreUnavailable
from human.records import HumanRequest, NewEvent
from human.store import open_store
from human.store.base import NewCheckpoint, Progress, Store
from human.store.transactions import SqlStore
from tests.contract.conftest import Backend
from tests.contract.test_store import a_request, a_run, an_answer, final_of, paused, started
from tests.faults import (
    PG_LOCK_SOON,
    PG_READ_ONLY,
    SQLITE_BUSY_SOON,
    SQLITE_FULL,
    SQLITE_READ_ONLY,
    Prelude,
    pg_read_only,
    recovered,
)
from tests.harness import digest


def sql_store(store: Store) -> SqlStore:
    assert isinstance(store, SqlStore)
    return store


@pytest.mark.backends("sqlite")  # PostgreSQL's disk is its server's, not the test's to fill
async def test_a_full_sqlite_database_refuses_a_pause_and_takes_it_once_there_is_room(
    store: Store, backend: Backend
) -> None:
    run = await started(store)
    request = a_request(run.id)
    pause = Progress(
        run_id=run.id,
        expected_checkpoint_id=None,
        job_id=None,
        status="waiting",
        checkpoint=NewCheckpoint(id="cp-big", body=bytes(range(256)) * 800),  # 200 kB: new pages
        new_requests=[request],
        events=[NewEvent(type="request.created", run_id=run.id, request_id=request.id)],
    )
    before = digest(backend.url)

    sql_store(store).wrap_writes = Prelude(*SQLITE_FULL)
    with pytest.raises(StoreUnavailable, match="database or disk is full") as refused:
        await store.record_progress(pause)
    assert digest(backend.url) == before
    assert refused.value.code == "store_unavailable"
    assert refused.value.retry_after_s > 0

    sql_store(store).wrap_writes = recovered(sql_store(store).dialect)
    assert await store.record_progress(pause)
    assert (await store.get_run(run.id)).status == "waiting"  # type: ignore[union-attr]


@pytest.mark.parametrize("write", ["answer", "start"])
async def test_a_read_only_database_refuses_writes_and_takes_them_once_writable(
    store: Store, backend: Backend, write: str
) -> None:
    request = await paused_request(store)
    answer = an_answer(request.id, "lee")
    run = a_run()
    before = digest(backend.url)

    async def do() -> object:
        if write == "answer":
            return await store.record_answer(answer, final=final_of(answer))
        return await store.create_run(run, [])

    fault = SQLITE_READ_ONLY if backend.name == "sqlite" else PG_READ_ONLY
    sql_store(store).wrap_writes = Prelude(*fault)
    for _ in range(2):  # again: the connection is not left in a transaction
        with pytest.raises(StoreUnavailable, match="read"):
            await do()
    assert digest(backend.url) == before

    sql_store(store).wrap_writes = recovered(sql_store(store).dialect)
    await do()
    assert digest(backend.url) != before


async def test_a_write_locked_out_past_the_timeout_is_unavailable_and_goes_through_after(
    store: Store, backend: Backend
) -> None:
    request = await paused_request(store)
    answer = an_answer(request.id, "lee")
    if backend.name == "sqlite":  # the busy timeout is the connection's: shorten it first
        sql_store(store).wrap_writes = Prelude(*SQLITE_BUSY_SOON, times=1)
        await store.add_team("timed")
    else:
        sql_store(store).wrap_writes = Prelude(*PG_LOCK_SOON)
    before = digest(backend.url)

    async with locked(backend, request.id):
        with pytest.raises(StoreUnavailable, match="lock"):
            await store.record_answer(answer, final=final_of(answer))
        assert digest(backend.url) == before

    sql_store(store).wrap_writes = recovered(sql_store(store).dialect)
    outcome = await store.record_answer(answer, final=final_of(answer))
    assert outcome.result == "closed"


async def test_an_error_of_the_call_itself_stays_a_store_error(store: Store) -> None:
    run = await started(store)

    with pytest.raises(StoreError) as refused:
        await store.create_run(run, [])  # the same id again

    assert not isinstance(refused.value, StoreUnavailable)
    assert refused.value.code == "store_error"


@pytest.mark.backends("sqlite")
async def test_a_commit_sqlite_refuses_is_rolled_back_and_the_writer_goes_on(
    store: Store, backend: Backend
) -> None:
    run = a_run()
    before = digest(backend.url)
    # A foreign key checked only at COMMIT: the COMMIT itself fails, with the transaction open.
    sql_store(store).wrap_writes = Prelude(
        "PRAGMA defer_foreign_keys = ON",
        "INSERT INTO memberships (user_id, team) VALUES ('nobody', 'no-team')",
        times=1,
    )

    with pytest.raises(StoreError, match="FOREIGN KEY") as refused:
        await store.create_run(run, [])

    assert not isinstance(refused.value, StoreUnavailable)
    assert digest(backend.url) == before
    await store.create_run(run, [])  # the writer's connection is not left in a transaction
    assert await store.get_run(run.id) == run


@pytest.mark.backends("postgres")
async def test_a_database_an_operator_made_read_only_is_unavailable_until_made_writable(
    store: Store, backend: Backend, postgres_server: str
) -> None:
    run = a_run()
    await store.get_run(run.id)  # the pool has a session, begun while writable
    before = digest(backend.url)

    pg_read_only(backend.url, postgres_server, on=True)
    refusals = []
    try:
        for _ in range(3):  # the ended session, then new ones: read-only
            with pytest.raises(StoreUnavailable) as refused:
                await store.create_run(run, [])
            refusals.append(str(refused.value))
        assert digest(backend.url) == before
    finally:
        pg_read_only(backend.url, postgres_server, on=False)

    await store.create_run(run, [])  # the same pool: the read-only session was not kept
    assert await store.get_run(run.id) == run
    assert "read-only transaction" in refusals[-1]


# helpers --------------------------------------------------------------------------------------


async def paused_request(store: Store) -> HumanRequest:
    run = await started(store)
    request = a_request(run.id)
    await paused(store, run.id, [request])
    return request


@contextlib.asynccontextmanager
async def locked(backend: Backend, request_id: str) -> AsyncIterator[None]:
    """Another connection holds the write lock (SQLite) or the request's row lock (PostgreSQL)."""
    if backend.name == "sqlite":
        other = sqlite3.connect(backend.url.removeprefix("sqlite:///"), isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
            yield
            other.execute("ROLLBACK")
        finally:
            other.close()
        return
    conn = await asyncpg.connect(backend.url)
    try:
        async with conn.transaction():
            await conn.execute("SELECT 1 FROM human_requests WHERE id = $1 FOR UPDATE", request_id)
            yield
    finally:
        await conn.close()


@pytest.mark.backends("postgres")
async def test_a_database_server_that_is_down_is_unavailable_and_used_again_once_back(
    backend: Backend,
) -> None:
    assert backend.name == "postgres"  # run where PostgreSQL is, on a server of its own
    with devpg.running(durable=False) as server:  # to stop and start
        url = await devpg.create_database(server.url(), "baton")
        store = await open_store(url)
        try:
            run = await started(store)
            server.stop()
            for _ in range(2):  # the pool's session is gone, and no new one can start
                with pytest.raises(StoreUnavailable, match="connect"):
                    await store.create_run(a_run(), [])
            with pytest.raises(StoreUnavailable):
                await store.get_run(run.id)

            server.start()
            assert await store.get_run(run.id) == run  # the same pool, new sessions
            again = a_run()
            await store.create_run(again, [])
            assert await store.get_run(again.id) == again
        finally:
            await store.close()


@pytest.mark.backends("postgres")
async def test_a_watcher_hears_events_again_after_the_server_restarts_and_misses_none(
    backend: Backend,
) -> None:
    """The listening connection dies with the server; it is opened again and what committed
    while it was gone is read, so an open stream neither hangs nor skips an event."""
    assert backend.name == "postgres"
    with devpg.running(durable=False) as server:
        url = await devpg.create_database(server.url(), "baton")
        store = await open_store(url)
        other = None
        try:
            watcher = store.watch()
            first = asyncio.ensure_future(anext(watcher))
            await asyncio.sleep(0.2)  # subscribed
            before = await started(store)
            assert (await asyncio.wait_for(first, 10)).run_id == before.id

            server.stop()
            server.start()
            other = await open_store(url)  # another process writes while this one reconnects
            during = await started(other)
            after = await started(store)
            heard = [(await asyncio.wait_for(anext(watcher), 10)).run_id for _ in range(2)]
            assert heard == [during.id, after.id]
            await watcher.aclose()
        finally:
            if other is not None:
                await other.close()
            await store.close()
