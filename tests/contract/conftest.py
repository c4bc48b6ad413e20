"""The backends the store contract runs on: one suite, the shared `db_url` fixture per backend.

A backend is its database URL (what `open_store` takes), its migration dialect, and a raw read
beside the store for the few facts the Protocol does not show (the `schema_version` rows).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sqlite3
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from human.store import open_store
from human.store.base import InPlay, Store
from tests.harness import sql

if TYPE_CHECKING:
    from tests.contract.test_store_routing import Clocked


async def in_play(store: Store, run_id: str) -> InPlay:
    """What a drive of the run reads (`Store.run_in_play`); the run must exist."""
    found = await store.run_in_play(run_id)
    assert found is not None, f"no run {run_id}"
    return found


_TRANSACTION_CONTROL = re.compile(r"\s*(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)\b", re.I)


@contextlib.asynccontextmanager
async def statements_read(store: Store) -> AsyncIterator[list[str]]:
    """The statements sent while the block runs on the connections the store reads on.

    Transaction control is left out. SQLite reads on the event loop's connection (traced): its
    reads alone. PostgreSQL reads on its pool's connections (each logged): what any task sends
    on them counts, a pool's reset of a connection it takes back too, so the block should run
    nothing else.
    """
    sent: list[str] = []
    listening = True

    def note(statement: str) -> None:
        if listening and not _TRANSACTION_CONTROL.match(statement):
            sent.append(statement)

    pool = getattr(store, "_pool", None)
    if pool is None:
        await store.get_run("run_none")  # opens the reading connection
        reader: sqlite3.Connection = store._reader  # type: ignore[attr-defined]
        reader.set_trace_callback(note)
        try:
            yield sent
        finally:
            reader.set_trace_callback(None)
        return
    async with contextlib.AsyncExitStack() as held:  # every connection the pool may hand out
        for _ in range(pool.get_max_size()):
            conn = await held.enter_async_context(pool.acquire())
            conn.add_query_logger(lambda logged: note(logged.query))
    try:
        yield sent
        await asyncio.sleep(0)  # query loggers are called soon after, not at once
    finally:
        listening = False  # the loggers stay on the pool's connections: they note nothing more


@dataclass(frozen=True)
class Backend:
    """One real database the contract suite runs on."""

    name: str
    url: str
    dialect: str
    fetch: Callable[[str], list[tuple[Any, ...]]]


@pytest.fixture
def backend(db_url: str) -> Backend:
    dialect = "sqlite" if db_url.startswith("sqlite:") else "postgres"

    def fetch(statement: str) -> list[tuple[Any, ...]]:
        return [tuple(row.values()) for row in sql(db_url, statement)]

    return Backend(name=dialect, url=db_url, dialect=dialect, fetch=fetch)


@pytest.fixture
async def clocked(backend: Backend) -> AsyncIterator[Clocked]:
    """A store on a clock the test moves (`tests.contract.test_store_routing.Clocked`)."""
    from tests.contract.test_store_routing import Clocked, ManualClock

    clock = ManualClock()
    opened = await open_store(backend.url, clock=clock)
    try:
        yield Clocked(opened, clock, backend)
    finally:
        await opened.close()


@pytest.fixture
async def store(backend: Backend) -> AsyncIterator[Store]:
    opened = await open_store(backend.url)
    try:
        yield opened
    finally:
        await opened.close()
