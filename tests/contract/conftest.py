"""The backends the store contract runs on: one suite, the shared `db_url` fixture per backend.

A backend is its database URL (what `open_store` takes), its migration dialect, and a raw read
beside the store for the few facts the Protocol does not show (the `schema_version` rows).
"""

from __future__ import annotations

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
