"""The backends the store contract runs on: one suite, one fixture, a param per backend.

A backend is its database URL (what `open_store` takes), its migration dialect, and a raw read
beside the store for the few facts the Protocol does not show (the `schema_version` rows). To add
PostgreSQL, add a `postgres_backend` fixture (a real server from `initdb` + `pg_ctl`) and
"postgres" to `BACKENDS`; no test changes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from human.store import open_store
from human.store.base import Store

BACKENDS = ["sqlite"]


@dataclass(frozen=True)
class Backend:
    """One real database the contract suite runs on."""

    name: str
    url: str
    dialect: str
    fetch: Callable[[str], list[tuple[Any, ...]]]


@pytest.fixture
def sqlite_backend(tmp_path: Path) -> Backend:
    path = tmp_path / "x.db"

    def fetch(sql: str) -> list[tuple[Any, ...]]:
        conn = sqlite3.connect(path)
        try:
            return [tuple(row) for row in conn.execute(sql)]
        finally:
            conn.close()

    return Backend(name="sqlite", url=f"sqlite:///{path}", dialect="sqlite", fetch=fetch)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Backend:
    found: Backend = request.getfixturevalue(f"{request.param}_backend")
    return found


@pytest.fixture
async def store(backend: Backend) -> AsyncIterator[Store]:
    opened = await open_store(backend.url)
    try:
        yield opened
    finally:
        await opened.close()
