"""Fixtures every suite shares: the database each test runs on, and where its servers run.

`db_url` is a fresh database per test. The unit tests, the store contract and the tests marked
`process` run on both backends: a new SQLite file, and a new PostgreSQL database cloned from a
template migrated once per session (dropped after the test). The other tests of `tests/e2e` and
`tests/browser` serve HTTP in this process (`tests.harness.InProcessServer`) and run on SQLite:
what they test is above the store, whose every behaviour the contract suite checks on both.

The PostgreSQL server is started once per session (per xdist worker) from Debian's `postgresql`
binaries (`baton.devpg`) on a temporary directory and a loopback port, without flushing to disk
(`durable=False`: no test is about PostgreSQL's own crash), unless `BATON_TEST_POSTGRES_URL`
names a server to use instead (its databases are created there, and dropped).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import secrets
from collections.abc import AsyncIterator, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from baton import devpg
from human.store import open_store
from tests.harness import SERVING, MovableClock, Server, baton_server, seed
from tests.pages import PAGE_ENV, demo_passwords
from tests.samples import MODULES as SAMPLES

T = TypeVar("T")

BACKENDS = ["sqlite", "postgres"]
# Suites whose servers run in this process, on SQLite (unless a test is marked `process`).
IN_PROCESS_SUITES = {"e2e", "browser"}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backend",
        action="append",
        choices=BACKENDS,
        help="run the tests that take a database on this backend only (`make test-fast`)",
    )


def backends_of(metafunc: pytest.Metafunc) -> list[str]:
    """SQLite and PostgreSQL, or SQLite alone for a test that serves HTTP in this process."""
    definition = metafunc.definition
    suite = Path(definition.path).relative_to(Path(__file__).parent).parts[0]
    if suite in IN_PROCESS_SUITES and definition.get_closest_marker("process") is None:
        wanted = ["sqlite"]
    else:
        wanted = BACKENDS
    only = definition.get_closest_marker("backends")
    if only is not None:
        wanted = [b for b in wanted if b in only.args]
    chosen = metafunc.config.getoption("backend") or BACKENDS
    return [backend for backend in wanted if backend in chosen]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "db_url" in metafunc.fixturenames:
        metafunc.parametrize("db_url", backends_of(metafunc), indirect=True)


LOG_TAIL_LINES = 80
"""How much of each log a failed test's report shows (its servers' logs keep the rest)."""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failed test's report ends with the last lines of every log in its `tmp_path`.

    Its servers log there (`server_log`, and the logs of the tests that start several): a dropped
    connection or a 500 is explained in the log of the process that made it, and the temporary
    folder is gone by the time a clean-clone run's failure is read.
    """
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    folder = getattr(item, "funcargs", {}).get("tmp_path")
    if not report.failed or not isinstance(folder, Path) or not folder.is_dir():
        return
    for log in sorted(folder.rglob("*.log")):
        lines = log.read_text(errors="replace").splitlines()
        shown = "\n".join(lines[-LOG_TAIL_LINES:])
        title = f"{log.relative_to(folder)}: its last {LOG_TAIL_LINES} lines"
        report.sections.append((title, shown))


@pytest.fixture(autouse=True)
def serving(request: pytest.FixtureRequest) -> None:
    """`baton_server` starts `baton serve` processes in tests marked `process`, else serves here."""
    SERVING.in_process = request.node.get_closest_marker("process") is None


def on_own_loop(work: Coroutine[Any, Any, T]) -> T:
    """Run `work` to its end on an event loop of its own (callers may be inside a running one)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, work).result()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URL of a database on a running PostgreSQL server (to create test databases from)."""
    given = os.environ.get("BATON_TEST_POSTGRES_URL")
    if given:
        yield given
        return
    with devpg.running(durable=False) as server:
        yield server.url()


@pytest.fixture(scope="session")
def postgres_template(postgres_server: str) -> Iterator[str]:
    """A database migrated once (by opening a store on it), for each test's database to copy."""
    name = f"template_{secrets.token_hex(6)}"

    async def migrated() -> None:
        store = await open_store(await devpg.create_database(postgres_server, name))
        await store.close()

    on_own_loop(migrated())
    yield name
    on_own_loop(devpg.drop_database(postgres_server, name))


@pytest.fixture
async def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A new database of one backend: a SQLite file not yet made, or a PostgreSQL database
    already migrated (a copy of the template; empty in a test marked `fresh_database`)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'baton.db'}"
        return
    server: str = request.getfixturevalue("postgres_server")
    fresh = request.node.get_closest_marker("fresh_database") is not None
    template = None if fresh else request.getfixturevalue("postgres_template")
    name = f"t_{secrets.token_hex(6)}"
    url = await devpg.create_database(server, name, template=template)
    try:
        yield url
    finally:
        await devpg.drop_database(server, name)


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
    """The app with a known BATON_SECRET_KEY (tests.pages) and the demo passwords set."""
    async with baton_server(db_url, tokens, server_log, PAGE_ENV) as running:
        yield running


@pytest.fixture
def clock(tmp_path: Path) -> MovableClock:
    """Baton's clock for this test's servers, moved by `clock.jump(...)`."""
    return MovableClock(tmp_path / "clock")


@pytest.fixture
async def clocked_server(
    db_url: str,
    tokens: dict[str, str],
    passwords: dict[str, str],
    server_log: Path,
    clock: MovableClock,
) -> AsyncIterator[Server]:
    """`samples_server` on the test's movable `clock`."""
    env = PAGE_ENV | clock.env | {"BATON_WORKFLOWS": SAMPLES}
    async with baton_server(db_url, tokens, server_log, env) as running:
        yield running


@pytest.fixture
async def samples_server(
    db_url: str, tokens: dict[str, str], passwords: dict[str, str], server_log: Path
) -> AsyncIterator[Server]:
    """`page_server` that also serves the plain-MAF sample workflows (`tests/samples/`)."""
    env = PAGE_ENV | {"BATON_WORKFLOWS": SAMPLES}
    async with baton_server(db_url, tokens, server_log, env) as running:
        yield running
