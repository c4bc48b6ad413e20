"""Real parts for tests: a seeded database, `baton serve` (a child process or in this one), HTTP.

`baton_server` serves in this process (`InProcessServer`: the app of `baton serve` on uvicorn in the
test's event loop, real HTTP on a loopback port) unless the test is marked `process`: then it is
`baton serve` in a child process (`Server`), for the tests whose subject is the process (kill -9,
failpoints that exit, restart, several processes, model providers, the CLI beside a server).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import hashlib
import json
import logging
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import httpx
import psutil  # type: ignore[import-untyped]
import uvicorn

from baton import telemetry
from baton.demo import PEOPLE, seed_demo
from baton.settings import Settings
from executors.shipped.back_office import BackOffice
from human.channels.http import tls_context
from human.store import open_store
from human.store.base import RequestFilter
from human.store.transactions import SqlStore
from web.auth import new_token, token_hash

T = TypeVar("T")

REFUND_20 = {"workflow": "refund", "input": {"order_id": "A-1001", "amount": 20, "reason": "late"}}
REFUND_120 = {
    "workflow": "refund",
    "input": {"order_id": "A-1002", "amount": 120, "reason": "broken"},
}
LATE_PURCHASE = {
    "workflow": "purchase",
    "input": {
        "item": "laptop",
        "amount": 2400,
        "vendor": "Contoso",
        "requester": "sam",
        "approve_within_hours": 0.05,  # its approvals escalate to managers after 90 s
    },
}
REFUND_1500 = {
    "workflow": "refund",
    "input": {"order_id": "A-1003", "amount": 1500, "reason": "lost"},
}

MCP_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
"""MCP's first message, as a client without the SDK sends it to `/mcp`."""


async def seed(db_url: str) -> dict[str, str]:
    """Seed the demo into a database file; a token per demo person."""
    store = await open_store(db_url)
    try:
        await seed_demo(store, db_url)
        tokens = {}
        for name in PEOPLE:
            user = await store.get_user(name)
            assert user is not None
            token = new_token()
            await store.add_token(user.id, token_hash(token), "tests")
            tokens[name] = token
        return tokens
    finally:
        await store.close()


class PortTaken(Exception):
    """A server could not bind its port: another process had taken it."""


def listens(pid: int, port: int) -> bool:
    """Whether process `pid` listens on TCP `port`."""
    try:
        sockets = psutil.Process(pid).net_connections(kind="tcp")
    except psutil.Error:
        return False
    return any(s.status == psutil.CONN_LISTEN and s.laddr.port == port for s in sockets)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def eventually(
    probe: Callable[[], Awaitable[T | None]], *, timeout: float = 20.0, what: str = "condition"
) -> T:
    """Poll `probe` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = await probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


class Server:
    """`baton serve` as a child process on a loopback port."""

    def __init__(
        self,
        db_url: str,
        tokens: dict[str, str],
        log: Path,
        env: dict[str, str],
        args: Sequence[str] = (),
    ) -> None:
        self.port = free_port()
        self._args = tuple(args)
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.tokens = tokens
        self._log = log
        self._env = {
            **os.environ,
            "BATON_DATABASE_URL": db_url,
            "BATON_WORKER_POLL_MS": "50",
            "BATON_JOB_LEASE_SECONDS": "2",
            # a test that ends with a drive under way does not wait the default 20 s for it
            "BATON_SHUTDOWN_GRACE_SECONDS": "2",
            "BATON_LOG_LEVEL": "INFO",
            **env,
        }
        self.proc: subprocess.Popen[bytes] | None = None
        self._clients: list[httpx.AsyncClient] = []

    async def start(self) -> None:
        # A free port can be taken by another test's server before this one binds it (each
        # picks one, then starts a process that takes seconds to bind): then it starts again on
        # another port.
        for attempt in range(3):
            try:
                return await self._start_once()
            except PortTaken:
                if attempt == 2:
                    raise
                self.port = free_port()
                self.base_url = f"http://127.0.0.1:{self.port}"

    async def _start_once(self) -> None:
        logged = self._log.stat().st_size if self._log.exists() else 0
        with self._log.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "baton", "serve", "--port", str(self.port), *self._args],
                env=self._env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

        # One client for the polling: each new one builds an SSL context (tens of ms of CPU that
        # the starting server would wait for on a 2-core machine).
        async with httpx.AsyncClient(base_url=self.base_url, verify=tls_context()) as probe:

            async def ready() -> bool:
                if self.proc is not None and self.proc.poll() is not None:
                    with self._log.open("rb") as log:
                        log.seek(logged)
                        said = log.read().decode(errors="replace")
                    if "address already in use" in said.lower():
                        raise PortTaken(self.port)
                    raise AssertionError(f"server exited {self.proc.returncode}: {self.log_tail()}")
                # The answer must come from this server: another test's, started on the same
                # free port a moment earlier, would answer while this one still imports.
                if self.proc is None or not listens(self.proc.pid, self.port):
                    return False
                try:
                    return (await probe.get("/healthz")).status_code == 200
                except httpx.TransportError:
                    return False

            await eventually(ready, what="server to start")

    def anonymous(self) -> httpx.AsyncClient:
        """A client that sends no credentials."""
        client = httpx.AsyncClient(base_url=self.base_url, timeout=30.0, verify=tls_context())
        self._clients.append(client)
        return client

    def kill(self) -> None:
        """SIGKILL: nothing is flushed, nothing is cleaned up."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    async def wait_exit(self, timeout: float = 20.0) -> int:
        """Wait for the process to end by itself (a failpoint); its exit code."""

        async def ended() -> bool:
            return self.proc is not None and self.proc.poll() is not None

        await eventually(ended, timeout=timeout, what="server to exit")
        assert self.proc is not None
        return int(self.proc.returncode)

    async def stop(self) -> None:
        for client in self._clients:
            await client.aclose()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self._log.read_text(errors="replace").splitlines()[-lines:])

    # conveniences over the API -------------------------------------------------------------

    async def start_run(self, body: dict[str, Any], *, user: str = "sam") -> dict[str, Any]:
        async with self.client(user) as c:
            reply = await c.post("/api/runs", json=body)
        assert reply.status_code == 201, reply.text
        return dict(reply.json())

    async def run(self, run_id: str, *, user: str = "ada") -> dict[str, Any]:
        async with self.client(user) as c:
            reply = await c.get(f"/api/runs/{run_id}")
        assert reply.status_code == 200, reply.text
        return dict(reply.json())

    async def wait_for_run(self, run_id: str, *, status: str | tuple[str, ...]) -> dict[str, Any]:
        wanted = (status,) if isinstance(status, str) else status

        async def probe() -> dict[str, Any] | None:
            run = await self.run(run_id)
            return run if run["status"] in wanted else None

        return await eventually(probe, what=f"run {run_id} to be {wanted}")

    async def wait_for_request(self, run_id: str, *, status: str = "pending") -> dict[str, Any]:
        async def probe() -> dict[str, Any] | None:
            run = await self.run(run_id)
            found = [r for r in run["requests"] if r["status"] == status]
            return found[0] if found else None

        return await eventually(probe, what=f"a {status} request of run {run_id}")

    async def request(self, request_id: str, *, user: str = "ada") -> dict[str, Any]:
        async with self.client(user) as c:
            reply = await c.get(f"/api/requests/{request_id}")
        assert reply.status_code == 200, reply.text
        return dict(reply.json())

    async def run_count(self) -> int:
        async with self.client("ada") as c:
            reply = await c.get("/api/runs", params={"limit": 500})
        assert reply.status_code == 200, reply.text
        page = reply.json()
        assert page["next_cursor"] is None, "more runs than one page holds"
        return len(page["items"])

    async def snapshot(self, request_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """What a refused call must leave as it was: the request and its run's audit trail."""
        request = await self.request(request_id)
        return request, await self.audit(request["run_id"])

    async def audit(self, run_id: str) -> list[dict[str, Any]]:
        async with self.client("ada") as c:
            reply = await c.get(f"/api/runs/{run_id}/events")
        assert reply.status_code == 200, reply.text
        return list(reply.json())

    async def respond(self, request_id: str, body: dict[str, Any], *, user: str) -> httpx.Response:
        async with self.client(user) as c:
            return await c.post(f"/api/requests/{request_id}/respond", json=body)

    @contextlib.asynccontextmanager
    async def stream(
        self, user: str, *, params: dict[str, str] | None = None, last_event_id: int | None = None
    ) -> AsyncIterator[EventStream]:
        """`/api/stream` as `user`, open until the block ends; its `ready` message already read."""
        headers = {} if last_event_id is None else {"Last-Event-ID": str(last_event_id)}
        async with (
            self.client(user) as c,
            c.stream("GET", "/api/stream", params=params, headers=headers) as reply,
        ):
            assert reply.status_code == 200, await reply.aread()
            assert reply.headers["content-type"].startswith("text/event-stream")
            events = EventStream(reply.aiter_lines())
            ready = await events.next()
            assert ready["event"] == "ready", ready
            yield events

    @contextlib.asynccontextmanager
    async def client(self, user: str) -> AsyncIterator[httpx.AsyncClient]:
        async with httpx.AsyncClient(
            verify=tls_context(),
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {self.tokens[user]}"},
            timeout=30.0,
        ) as client:
            yield client


class EventStream:
    """Server-Sent Events read off an HTTP response, one message at a time."""

    def __init__(self, lines: AsyncIterator[str]) -> None:
        self._lines = lines

    async def next(self, timeout: float = 20.0) -> dict[str, Any]:
        """The next message: `event`, `id` and `data` (parsed JSON); comments (pings) skipped."""
        message: dict[str, Any] = {}
        async with asyncio.timeout(timeout):
            async for line in self._lines:
                if not line:
                    if message:
                        return message
                    continue
                field, _, value = line.partition(":")
                value = value.removeprefix(" ")
                if field == "data":
                    message["data"] = json.loads(value)
                elif field in ("event", "id"):
                    message[field] = value
        raise AssertionError("the stream ended")

    async def until(
        self, wanted: Callable[[dict[str, Any]], bool], timeout: float = 20.0
    ) -> list[dict[str, Any]]:
        """Messages up to and including the first `wanted` one."""
        seen = []
        async with asyncio.timeout(timeout):
            while True:
                seen.append(await self.next(timeout))
                if wanted(seen[-1]):
                    return seen


class InProcessServer(Server):
    """What `baton serve` runs (`create_app` with its lifespan: worker, timers, outbox), in this
    process: uvicorn in the test's event loop on a loopback port, so the HTTP is real (streams
    stream; a browser or a webhook sender reaches it) and nothing pays for a process start.

    Its settings are read as the child process would read them: from this process's environment
    with `env` over it (e.g. `MovableClock.env`, webhook and SMTP URLs, `PAGE_ENV`). Its log
    records go to `log` as JSON lines while it serves, as `baton serve` writes them. It cannot be
    killed and refuses failpoints (they exit the process): tests about that are marked `process`.
    """

    _uvicorn: _Uvicorn | None = None
    _serving: asyncio.Task[None] | None = None
    _socket: socket.socket | None = None
    _logging: _LogFile | None = None
    _app: Any = None

    def parts(self) -> Any:
        """What the app serves on (`baton.wiring.Parts`): its store, runtime and worker."""
        return self._app.state.parts

    def settings(self) -> Settings:
        """The settings `baton serve` would read in a child process with this environment."""
        changed = {k: v for k, v in self._env.items() if os.environ.get(k) != v}
        saved = {k: os.environ.get(k) for k in changed}
        os.environ.update(changed)
        try:
            return Settings()
        finally:
            for name, value in saved.items():
                if value is None:
                    del os.environ[name]
                else:
                    os.environ[name] = value

    async def start(self) -> None:
        from web.app import create_app

        unknown = set(self._args) - {"--no-worker"}
        assert not unknown, f"in process, `baton serve` takes only --no-worker, not {unknown}"
        settings = self.settings()
        assert not settings.failpoints, "a failpoint exits the process: mark the test `process`"
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self.port = int(self._socket.getsockname()[1])
        self.base_url = f"http://127.0.0.1:{self.port}"
        self._logging = _LogFile(self._log, settings.log_level)
        app = create_app(settings, worker="--no-worker" not in self._args)
        self._app = app
        # A test keeps its clients for its whole length (the access matrix: one a person), idle
        # between calls: at uvicorn's 5 s keep-alive a pooled connection can be closed by the
        # server in the instant the client sends on it (an httpx.ReadError seen once in a loaded
        # clean-clone run). A test's connections stay open while it runs.
        config = uvicorn.Config(
            app,
            log_config=None,
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=5,
            timeout_keep_alive=3600,
        )
        self._uvicorn = _Uvicorn(config)
        self._serving = asyncio.create_task(self._serve(self._uvicorn, self._socket))

        async def ready() -> bool:
            assert self._uvicorn is not None
            assert self._serving is not None
            if self._serving.done() and not self._uvicorn.started:
                raise AssertionError(f"server did not start: {self.log_tail()}")
            return self._uvicorn.started

        await eventually(ready, what="server to start")

    async def _serve(self, server: _Uvicorn, sock: socket.socket) -> None:
        # uvicorn says a failed lifespan with SystemExit; start() reports it with the log.
        with contextlib.suppress(SystemExit):
            await server.serve(sockets=[sock])

    @property
    def store(self) -> SqlStore:
        """The store the app serves from, to inject faults into its writes (`tests.faults`)."""
        store = self._app.state.parts.store
        assert isinstance(store, SqlStore)
        return store

    def kill(self) -> None:
        raise AssertionError("a server in this process cannot be killed: mark the test `process`")

    async def wait_exit(self, timeout: float = 20.0) -> int:
        raise AssertionError("a server in this process does not exit: mark the test `process`")

    async def stop(self) -> None:
        for client in self._clients:
            await client.aclose()
        try:
            if self._uvicorn is not None and self._serving is not None:
                self._uvicorn.should_exit = True
                await self._serving
        finally:
            if self._socket is not None:
                self._socket.close()
            if self._logging is not None:
                self._logging.close()


class _Uvicorn(uvicorn.Server):
    """`uvicorn.Server` that leaves the test process's signal handlers alone."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class _LogFile:
    """Every log record of this process, as `baton serve` writes them (JSON lines), to a file."""

    NOISY = ("agent_framework", "uvicorn.access")

    def __init__(self, path: Path, level: str) -> None:
        self._handler: logging.Handler | None = telemetry.json_lines(
            logging.FileHandler(path, encoding="utf-8")
        )
        root = logging.getLogger()
        self._levels = {name: logging.getLogger(name).level for name in ("", *self.NOISY)}
        root.addHandler(self._handler)
        root.setLevel(level.upper())
        for noisy in self.NOISY:
            logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))

    def close(self) -> None:
        if self._handler is None:
            return
        logging.getLogger().removeHandler(self._handler)
        self._handler.close()
        self._handler = None
        for name, level in self._levels.items():
            logging.getLogger(name).setLevel(level)


class _Serving:
    """Where `baton_server` serves: set for each test by tests/conftest.py from its markers."""

    in_process = False


SERVING = _Serving()


@contextlib.asynccontextmanager
async def baton_server(
    db_url: str,
    tokens: dict[str, str],
    log: Path,
    env: dict[str, str] | None = None,
    *,
    args: Sequence[str] = (),
) -> AsyncIterator[Server]:
    """A running server on `db_url` (`args` go to `baton serve`); stopped or killed on exit.

    In this process (`InProcessServer`) unless the test is marked `process` (`SERVING`).
    """
    kind = InProcessServer if SERVING.in_process else Server
    server = kind(db_url, tokens, log, env or {}, args)
    try:
        await server.start()
        yield server
    finally:
        await server.stop()


async def refunds(db_url: str) -> list[dict[str, Any]]:
    """The back office's refunds, read straight from the database."""
    office = await BackOffice.open(db_url)
    try:
        return await office.list_refunds()
    finally:
        await office.close()


async def stored_run(db_url: str, run_id: str) -> dict[str, Any]:
    """A run with its requests and audit events, read straight from the file (no server needed)."""
    store = await open_store(db_url)
    try:
        run = await store.get_run(run_id)
        assert run is not None, f"no run {run_id} in {db_url}"
        requests = await store.list_requests(RequestFilter(run_id=run_id, limit=500))
        events = await store.list_events(run_id=run_id)
        return run.model_dump(mode="json") | {
            "requests": [r.model_dump(mode="json") for r in requests.items],
            "events": [e.model_dump(mode="json") for e in events],
        }
    finally:
        await store.close()


def sql(db_url: str, statement: str) -> list[dict[str, Any]]:
    """Run one SQL statement on a database beside the store (SQLite or PostgreSQL); its rows."""
    return sql_each(db_url, [statement])[0]


def sql_each(db_url: str, statements: Sequence[str]) -> list[list[dict[str, Any]]]:
    """Run SQL statements one by one on one connection beside the store; the rows of each."""
    if db_url.startswith("sqlite:///"):
        path = db_url.removeprefix("sqlite:///")
        with contextlib.closing(sqlite3.connect(path)) as conn:
            conn.row_factory = sqlite3.Row
            found = [[dict(r) for r in conn.execute(s)] for s in statements]
            conn.commit()
            return found

    async def fetch() -> list[list[dict[str, Any]]]:
        import asyncpg

        conn = await asyncpg.connect(db_url)
        try:
            return [[dict(r) for r in await conn.fetch(s)] for s in statements]
        finally:
            await conn.close()

    # Callers may be inside a running event loop: the query gets a loop of its own.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, fetch()).result()


VOLATILE = {"job_listeners"}  # process liveness, renewed by the clock, not by any request


def digest(db_url: str) -> str:
    """Every row of every table, hashed: what "changed nothing" is checked against.

    Rows are compared as a set per table, whatever order the database returns them in.
    `job_listeners` is left out: a waiting worker registers and renews its row there on its own
    clock (PostgreSQL only), which no request stores or changes.
    """
    if db_url.startswith("sqlite:///"):
        listing = "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
    else:
        listing = "SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema()"
    tables = sorted(r["name"] for r in sql(db_url, listing) if r["name"] not in VOLATILE)
    found = sql_each(db_url, [f'SELECT * FROM "{t}"' for t in tables])
    rows = {
        table: sorted(json.dumps(r, sort_keys=True, default=str) for r in table_rows)
        for table, table_rows in zip(tables, found, strict=True)
    }
    return hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()


def jobs(db_url: str) -> list[dict[str, Any]]:
    """The queued and leased background jobs, read straight from the database."""
    return sql(db_url, "SELECT * FROM jobs ORDER BY id")


def fired_failpoints(log: Path) -> list[str]:
    """The failpoints a server's log says fired, in order."""
    fired = []
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            if record.get("message") == "failpoint fired":
                fired.append(str(record["failpoint"]))
    return fired


def types_of(events: Sequence[dict[str, Any]]) -> list[str]:
    """The types of audit events, in order."""
    return [e["type"] for e in events]


class MovableClock:
    """`BATON_CLOCK_FILE` for a test's servers: `jump` moves every process's clock at once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seconds = 0.0
        self._write()

    @property
    def env(self) -> dict[str, str]:
        return {"BATON_CLOCK_FILE": str(self.path)}

    def jump(self, **delta: float) -> None:
        self.seconds += timedelta(**delta).total_seconds()
        self._write()

    def _write(self) -> None:
        # Written beside and renamed over: a reader never sees a half-written number.
        spare = self.path.with_suffix(".next")
        spare.write_text(repr(self.seconds))
        spare.replace(self.path)


async def escalated_purchase(server: Server, clock: MovableClock) -> list[dict[str, Any]]:
    """A purchase whose two approvals (legal's, finance's) escalated to managers."""
    run = await server.start_run(LATE_PURCHASE)

    async def both(status: str) -> list[dict[str, Any]] | None:
        found = [r for r in (await server.run(run["id"]))["requests"] if r["status"] == status]
        return found if len(found) == 2 else None

    await eventually(lambda: both("pending"), what="legal and finance asked")
    clock.jump(seconds=100)
    escalated = await eventually(lambda: both("escalated"), what="both escalated to managers")
    assert escalated is not None
    return escalated


CHAIRS = {
    "workflow": "purchase",
    "input": {"item": "chairs", "amount": 900, "vendor": "Fabrikam", "requester": "sam"},
}
"""A purchase that legal and finance approve, then finance reviews as an order (started by sam)."""
APPROVER_OF: dict[str, str] = {"finance": "fay", "legal": "lex"}


async def reviewed_purchase(server: Server) -> dict[str, Any]:
    """The pending review of a purchase of chairs, once legal and finance approved it."""
    run = await server.start_run(CHAIRS)

    async def pending(kind: str) -> dict[str, Any] | None:
        found = [
            r
            for r in (await server.run(run["id"]))["requests"]
            if r["status"] == "pending" and r["kind"] == kind
        ]
        return found[0] if found else None

    for _ in range(2):
        asked = await eventually(lambda: pending("approval"), what="an approval of the purchase")
        reply = await server.respond(
            asked["id"], {"decision": "approve"}, user=APPROVER_OF[asked["team"]]
        )
        assert reply.status_code == 200, reply.text
    return await eventually(lambda: pending("review"), what="the purchase's review")
