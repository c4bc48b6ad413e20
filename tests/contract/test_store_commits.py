"""Which write transactions wait for the disk on PostgreSQL, and what one that does not costs.

A run's start and its end commit without waiting for the WAL flush (`synchronous_commit` off for
their transaction alone: the next durable commit flushes them); a pause and an answer wait. The
setting each write transaction ran under is noted inside it, on the store's own connection (a
`tests.faults.Prelude` statement, taken back with a transaction rolled back), on a database whose
sessions wait for the disk by default (the test server waits for nothing: `devpg.THROWAWAY`).
"""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import pytest

from human.store.base import KeyTaken, Lease, Progress, RunKey, Store
from tests.contract.conftest import Backend, statements_read
from tests.contract.test_store import a_request, a_run, an_answer, final_of, paused, started
from tests.faults import Prelude
from tests.harness import sql

pytestmark = pytest.mark.backends("postgres")


@pytest.fixture
async def waiting(store: Store, backend: Backend) -> Store:
    """`store`, on a database whose sessions wait for the WAL flush at each commit by default."""
    name = backend.url.rsplit("/", 1)[1]
    sql(backend.url, f'ALTER DATABASE "{name}" SET synchronous_commit = on')
    sql(backend.url, "CREATE TABLE commit_settings (n SERIAL PRIMARY KEY, setting TEXT)")
    await store._pool.expire_connections()  # type: ignore[attr-defined]  # new sessions take it
    return store


NOTE_SETTING = (
    "INSERT INTO commit_settings (setting) VALUES (current_setting('synchronous_commit'))"
)


def settings_noted(backend: Backend) -> list[str]:
    """`synchronous_commit` as each committed write transaction had it, in commit order."""
    return [
        setting for (setting,) in backend.fetch("SELECT setting FROM commit_settings ORDER BY n")
    ]


async def test_a_start_and_an_end_do_not_wait_for_the_disk_and_a_pause_and_an_answer_do(
    waiting: Store, backend: Backend
) -> None:
    store = waiting
    store.wrap_writes = Prelude(NOTE_SETTING)  # type: ignore[attr-defined]
    run = await started(store)
    request = a_request(run.id)
    await paused(store, run.id, [request])
    answer = an_answer(request.id, "lee")
    await store.record_answer(answer, final=final_of(answer))
    ended = Progress(
        run_id=run.id,
        expected_checkpoint_id="cp-1",
        job_id=None,
        status="completed",
        delivered_request_ids=[request.id],
    )
    assert await store.record_progress(ended)

    assert settings_noted(backend) == ["off", "on", "on", "off"]


async def test_a_write_that_does_not_wait_is_begun_in_one_round_trip_and_rolled_back_if_it_fails(
    waiting: Store, backend: Backend
) -> None:
    store = waiting
    problems: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _, context: problems.append(context))
    key = RunKey(key="retry-1", digest="d1")
    await store.create_run(a_run(), [], key=key)

    async with statements_read(store) as sent:
        job = await store.create_run(a_run(), [], lease=Lease(owner="w1", seconds=60))
        with pytest.raises(KeyTaken):  # raised inside the transaction, after its first statement
            await store.create_run(a_run(), [], key=key)
    store.wrap_writes = Prelude(NOTE_SETTING)  # type: ignore[attr-defined]
    run = await started(store)
    await paused(store, run.id, [a_request(run.id)])

    assert job is not None  # leased at once
    assert [s for s in sent if s.lstrip().startswith("INSERT INTO runs")]  # the starts were heard
    assert not [s for s in sent if s.lstrip().upper().startswith("SET")]  # rode on the BEGIN
    assert not [s for s in sent if "FOR UPDATE" in s]  # a run this transaction made: no lock
    assert settings_noted(backend) == ["off", "on"]  # the failed one's connection is as new
    assert problems == []  # asyncpg found no transaction left open on a connection given back


async def test_a_write_cancelled_as_it_begins_leaves_its_connection_as_new(
    waiting: Store, backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = waiting
    problems: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _, context: problems.append(context))
    send = asyncpg.connection.Connection.execute
    armed = True

    async def execute(self: asyncpg.Connection, query: str, *args: Any, **kwargs: Any) -> str:
        nonlocal armed
        if armed and query.startswith("BEGIN; SET LOCAL"):
            armed = False
            asyncio.current_task().cancel()  # type: ignore[union-attr]  # as the BEGIN goes out
        return await send(self, query, *args, **kwargs)

    monkeypatch.setattr(asyncpg.connection.Connection, "execute", execute)
    starting = asyncio.ensure_future(store.create_run(a_run(), []))
    with pytest.raises(asyncio.CancelledError):
        await starting
    store.wrap_writes = Prelude(NOTE_SETTING)  # type: ignore[attr-defined]
    run = await started(store)
    await paused(store, run.id, [a_request(run.id)])

    assert not armed  # the BEGIN was cancelled
    assert settings_noted(backend) == ["off", "on"]
    assert problems == []  # asyncpg found no transaction left open on a connection given back
