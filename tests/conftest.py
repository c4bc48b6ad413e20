"""Fixtures every suite shares: the database each test runs on, once per backend.

`db_url` is parametrized over the backends, so each test that takes it runs on a fresh SQLite file
and on a fresh PostgreSQL database. The PostgreSQL server is started once per session from
Debian's `postgresql` binaries (`baton.devpg`) on a temporary directory and a loopback port,
unless `BATON_TEST_POSTGRES_URL` names a server to use instead (its databases are created there).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from baton import devpg
from tests.harness import Server, baton_server, seed
from tests.pages import PAGE_ENV, demo_passwords

BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URL of a database on a running PostgreSQL server (to create test databases from)."""
    given = os.environ.get("BATON_TEST_POSTGRES_URL")
    if given:
        yield given
        return
    with devpg.running() as server:
        yield server.url()


@pytest.fixture(params=BACKENDS)
async def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty database of one backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'baton.db'}"
    server: str = request.getfixturevalue("postgres_server")
    return await devpg.create_database(server, f"t_{secrets.token_hex(6)}")


@pytest.fixture
async def tokens(db_url: str) -> dict[str, str]:
    return await seed(db_url)


@pytest.fixture
def server_log(tmp_path: Path) -> Path:
    return tmp_path / "server.log"


@pytest.fixture
async def passwords(db_url: str, tokens: dict[str, str]) -> dict[str, str]:
    """A password for each demo person, to sign in to the pages with."""
    return await demo_passwords(db_url)


@pytest.fixture
async def page_server(
    db_url: str, tokens: dict[str, str], passwords: dict[str, str], server_log: Path
) -> AsyncIterator[Server]:
    """`baton serve` with a known BATON_SECRET_KEY (tests.pages) and the demo passwords set."""
    async with baton_server(db_url, tokens, server_log, PAGE_ENV) as running:
        yield running
