"""`baton bench`: what a durable pause and answer cost, measured against the disk they land on.

Every figure comes from one call of `run_bench`, in a temporary folder under `var/` (the default
database's filesystem), so the floor and the product write to the same disk:

- `floor_commit_us`: plain `sqlite3`, a one-row INSERT and COMMIT, WAL, `synchronous=FULL`;
  the median of 500 commits. The unit the cycle is counted in.
- `bare_maf_cycle_ms`: the same shape in bare MAF with `InMemoryCheckpointStorage`: a
  class-based executor asks with `ctx.request_info`, a fresh workflow instance restores the pause
  checkpoint and its `@response_handler` completes; the median cycle. The framework's own cost.
- `pause_ms_p50`, `pause_ms_p95`: `Runtime.start` of `refund` with amount 120 (one approval by
  support-leads) until the worker has driven it and its pending request is listed by
  `RequestService.list`, on a fresh seeded store, as the API uses it (the starting process's
  worker takes the run's start job in the same transaction).
- `resume_ms_p50`, `resume_ms_p95`: `RequestService.respond` as lee with `{"decision": "approve"}`
  until the run is completed (refund issued once, effect and audit recorded).
- `cycles_per_s`: `runs` such cycles (start, pause, list, answer, completed) one after another.
- `cycle_floor_commits`: one cycle's mean time in floor commits. Every pause and answer is a
  durable commit at FULL; a cycle makes six (run with its start job, pause, answer with its
  resume job, the back office's refund, the ledger's effect, completion), so six is its floor.
- `bytes_per_paused_run`: growth of `store.size_bytes()` over `paused` paused runs (run,
  checkpoint, request, audit and job rows, indexes included), per run.
- `rss_growth_mb_10k_paused`: resident memory of a `baton serve` child (logging at WARNING)
  with `paused` runs paused (started through its HTTP API, driven by its own worker) minus its
  RSS idle after a warm-up of full cycles; paused runs must live only in the store.
- `list_pending_10k_ms_p50`: the first page (limit 50) of `RequestService.list(status=pending)`
  with those `paused` requests pending; the median of 200 reads.
- `request_page_200_msgs_ms_p50`: a request page whose context holds 200 messages, served in
  process; see `baton/bench_pages.py`.

The bench prints nothing; `baton bench` prints the figures. Like `cli.py`, whose command it is,
it wires the layers together (store, runtime, worker, service, and a token for the HTTP client).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import socket
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Never

import httpx
import psutil  # type: ignore[import-untyped]
from agent_framework import (
    Executor,
    InMemoryCheckpointStorage,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)

from baton.bench_pages import measure_request_page
from baton.demo import seed_demo
from human.records import User
from human.service import RequestService
from human.store import open_store
from human.store.base import RequestFilter, Store
from web.auth import new_token, token_hash
from workflows.runtime import Runtime
from workflows.worker import Worker

REFUND_120: Final = {"order_id": "A-1002", "amount": 120, "reason": "broken"}
APPROVE: Final = {"decision": "approve"}
FLOOR_COMMITS: Final = 500
BARE_CYCLES: Final = 300
WARMUP_CYCLES: Final = 10
SERVER_WARMUP_CYCLES: Final = 20
LIST_READS: Final = 200
PAUSE_WINDOW: Final = 16  # runs started but not yet paused, at most, while building the set
HTTP_CONCURRENCY: Final = 8
SERVER_START_S: Final = 60.0
PAUSE_SET_TIMEOUT_S: Final = 900.0


async def run_bench(*, runs: int = 1000, paused: int = 10_000) -> dict[str, float | int]:
    """Measure every figure of `baton bench` in one go, on the disk of the default database.

    Args:
        runs: Sequential full cycles for the pause, resume and throughput figures.
        paused: Runs left paused for the size, memory and listing figures.

    Returns:
        The figures by name (see the module docstring for what each one measures).

    Raises:
        ValueError: If `runs` or `paused` is below 1.
        RuntimeError: If a run does not pause or complete as the refund workflow should, or the
            server child fails.
    """
    if runs < 1 or paused < 1:
        raise ValueError("runs and paused must be at least 1")
    with tempfile.TemporaryDirectory(prefix="bench-", dir=_scratch_root()) as tmp:
        folder = Path(tmp)
        floor_us = measure_floor_commit_us(folder / "floor.db")
        bare_ms = await measure_bare_maf_cycle_ms()
        cycles = await measure_cycles(folder / "cycles.db", runs)
        held = await measure_paused(folder / "paused.db", paused)
        page_ms = await measure_request_page(folder)  # baton/bench_pages.py
    return {
        "floor_commit_us": round(floor_us, 1),
        "bare_maf_cycle_ms": round(bare_ms, 3),
        "pause_ms_p50": round(_percentile(cycles.pause_ms, 50), 3),
        "pause_ms_p95": round(_percentile(cycles.pause_ms, 95), 3),
        "resume_ms_p50": round(_percentile(cycles.resume_ms, 50), 3),
        "resume_ms_p95": round(_percentile(cycles.resume_ms, 95), 3),
        "cycles_per_s": round(runs / cycles.total_s, 1),
        "cycle_floor_commits": round(cycles.total_s / runs * 1e6 / floor_us, 1),
        "bytes_per_paused_run": round(held.bytes_per_run),
        "rss_growth_mb_10k_paused": round(held.rss_growth_mb, 2),
        "list_pending_10k_ms_p50": round(held.list_ms_p50, 3),
        "request_page_200_msgs_ms_p50": round(page_ms, 3),
    }


def _scratch_root() -> Path:
    """`var/`, where the default database lives: the disk the figures are about."""
    root = Path("var")
    root.mkdir(parents=True, exist_ok=True)
    return root


# the floor ----------------------------------------------------------------------------------


def measure_floor_commit_us(path: Path, commits: int = FLOOR_COMMITS) -> float:
    """The median time of a one-row INSERT+COMMIT in plain sqlite3 (WAL, FULL), in µs.

    Args:
        path: A new database file on the disk being measured.
        commits: How many commits to time (after a few untimed ones).

    Returns:
        The median commit time in microseconds.
    """
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("CREATE TABLE floor (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        body = "x" * 100
        timings: list[float] = []
        for n in range(commits + 20):
            started = time.perf_counter()
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO floor (body) VALUES (?)", (body,))
            conn.execute("COMMIT")
            if n >= 20:
                timings.append(time.perf_counter() - started)
    finally:
        conn.close()
    return statistics.median(timings) * 1e6


# bare MAF -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class BareAsk:
    """The bare workflow's request: what a person would be asked."""

    amount: float


@dataclass(frozen=True)
class BareAnswer:
    """The bare workflow's answer."""

    decision: str


class BareGate(Executor):
    """Asks once with `request_info`; completes when answered."""

    def __init__(self) -> None:
        super().__init__(id="gate")

    @handler
    async def on_bare_ask(self, message: BareAsk, ctx: WorkflowContext[Never, str]) -> None:
        """Ask a person."""
        await ctx.request_info(message, BareAnswer)

    @response_handler
    async def on_bare_answer(
        self, request: BareAsk, answer: BareAnswer, ctx: WorkflowContext[Never, str]
    ) -> None:
        """Complete with the answer."""
        await ctx.yield_output(f"{answer.decision} {request.amount}")


def _bare_workflow() -> Workflow:
    return WorkflowBuilder(name="bare", start_executor=BareGate()).build()


async def measure_bare_maf_cycle_ms(cycles: int = BARE_CYCLES) -> float:
    """The median start, pause, restore-on-a-fresh-instance and complete cycle of bare MAF, in ms.

    Each cycle has its own `InMemoryCheckpointStorage`, as one conversation would.

    Args:
        cycles: How many cycles to time (after a few untimed ones).

    Returns:
        The median cycle time in milliseconds.

    Raises:
        RuntimeError: If the bare workflow does not pause or complete.
    """
    timings: list[float] = []
    for n in range(cycles + WARMUP_CYCLES):
        started = time.perf_counter()
        storage = InMemoryCheckpointStorage()
        asking = _bare_workflow()
        asked = await asking.run(BareAsk(amount=120.0), checkpoint_storage=storage)
        request_ids = [e.request_id for e in asked.get_request_info_events()]
        checkpoint_id = await asking.resolve_pause_checkpoint_id(
            request_ids, checkpoint_storage=storage
        )
        if checkpoint_id is None:
            raise RuntimeError("bare MAF saved no pause checkpoint")
        done = await _bare_workflow().run(
            checkpoint_id=checkpoint_id,
            responses={request_ids[0]: BareAnswer(decision="approve")},
            checkpoint_storage=storage,
        )
        if done.get_outputs() != ["approve 120.0"]:
            raise RuntimeError(f"bare MAF cycle ended with {done.get_outputs()}")
        if n >= WARMUP_CYCLES:
            timings.append(time.perf_counter() - started)
    return statistics.median(timings) * 1e3


# full cycles through the service layer ------------------------------------------------------


@dataclass(frozen=True)
class CycleTimes:
    """Timings of sequential full cycles."""

    pause_ms: list[float]
    resume_ms: list[float]
    total_s: float


@dataclass(frozen=True)
class Parts:
    """A store with a runtime and worker wired as `create_app` wires them."""

    store: Store
    runtime: Runtime
    worker: Worker
    requests: RequestService
    starter: User
    approver: User


@contextlib.asynccontextmanager
async def _parts(path: Path) -> AsyncIterator[Parts]:
    store = await open_store(f"sqlite:///{path}")
    try:
        await seed_demo(store)
        runtime = Runtime(store)
        worker = Worker(store, runtime)
        runtime.attach_worker(worker)
        starter, approver = await store.get_user("sam"), await store.get_user("lee")
        assert starter is not None
        assert approver is not None
        yield Parts(store, runtime, worker, RequestService(store, worker=worker), starter, approver)
    finally:
        await store.close()


async def _one_cycle(parts: Parts) -> tuple[float, float]:
    started = time.perf_counter()
    run = await parts.runtime.start("refund", REFUND_120, actor=parts.starter.name)
    await parts.worker.drain()
    page = await parts.requests.list(RequestFilter(run_id=run.id, status="pending"))
    if len(page.items) != 1:
        raise RuntimeError(f"run {run.id} did not pause on one request: {page.items}")
    paused = time.perf_counter()
    await parts.requests.respond(page.items[0].id, dict(APPROVE), responder=parts.approver)
    await parts.worker.drain()
    done = await parts.runtime.get(run.id)
    if done.status != "completed":
        raise RuntimeError(f"run {run.id} ended {done.status}: {done.error}")
    finished = time.perf_counter()
    return (paused - started) * 1e3, (finished - paused) * 1e3


async def measure_cycles(path: Path, runs: int) -> CycleTimes:
    """Time `runs` sequential start, pause, answer, complete cycles of `refund` 120.

    Args:
        path: A new database file; it is seeded with the demo.
        runs: How many cycles to time (after a few untimed ones).

    Returns:
        Each cycle's pause and resume times and the total time of the timed cycles.
    """
    async with _parts(path) as parts:
        for _ in range(WARMUP_CYCLES):
            await _one_cycle(parts)
        pauses: list[float] = []
        resumes: list[float] = []
        started = time.perf_counter()
        for _ in range(runs):
            pause_ms, resume_ms = await _one_cycle(parts)
            pauses.append(pause_ms)
            resumes.append(resume_ms)
        total_s = time.perf_counter() - started
    return CycleTimes(pause_ms=pauses, resume_ms=resumes, total_s=total_s)


# many paused runs in a server ---------------------------------------------------------------


@dataclass(frozen=True)
class PausedFigures:
    """Size, memory and listing with many runs paused."""

    bytes_per_run: float
    rss_growth_mb: float
    list_ms_p50: float


def _percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


async def measure_paused(path: Path, paused: int) -> PausedFigures:
    """Pause `paused` runs through a `baton serve` child, then measure size, memory and listing.

    The child serves a new seeded database; it warms up on full cycles over HTTP, its RSS is
    read idle, then `paused` runs are started through `POST /api/runs` (at most `PAUSE_WINDOW`
    of them not yet paused at a time) and driven by the child's own worker.

    Args:
        path: A new database file; it is seeded with the demo.
        paused: How many runs to leave paused.

    Returns:
        Bytes per paused run, the child's RSS growth in MB and the median first-page listing.

    Raises:
        RuntimeError: If the child fails or a run does not pause.
    """
    db_url = f"sqlite:///{path}"
    store = await open_store(db_url)
    try:
        await seed_demo(store)
        tokens = {name: await _token(store, name) for name in ("sam", "lee")}
        async with (
            _server(db_url, path.with_suffix(".log")) as (pid, base_url),
            httpx.AsyncClient(base_url=base_url, timeout=60.0) as client,
        ):
            for _ in range(SERVER_WARMUP_CYCLES):
                await _http_cycle(client, tokens)
            idle_rss = psutil.Process(pid).memory_info().rss
            size_before = await store.size_bytes()
            await _pause_many(client, tokens["sam"], path, paused)
            paused_rss = psutil.Process(pid).memory_info().rss
            size_after = await store.size_bytes()
            list_ms = await _list_pending_ms(RequestService(store), paused)
    finally:
        await store.close()
    return PausedFigures(
        bytes_per_run=(size_after - size_before) / paused,
        rss_growth_mb=(paused_rss - idle_rss) / 2**20,
        list_ms_p50=list_ms,
    )


async def _token(store: Store, name: str) -> str:
    user = await store.get_user(name)
    assert user is not None
    token = new_token()
    await store.add_token(user.id, token_hash(token), "bench")
    return token


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.asynccontextmanager
async def _server(db_url: str, log: Path) -> AsyncIterator[tuple[int, str]]:
    """`baton serve` on a loopback port in a child process; its pid and base URL."""
    port = _free_port()
    base_url = f"http://127.0.0.1:{port}"
    # The child inherits this environment, with the bench's database and no failpoints.
    env = os.environ | {
        "BATON_DATABASE_URL": db_url,
        "BATON_LOG_LEVEL": "WARNING",
        "BATON_FAILPOINTS": "",
    }
    with log.open("wb") as sink:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "baton",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=sink,
            stderr=sink,
        )
    try:
        await _wait_ready(proc, base_url, log)
        yield proc.pid, base_url
    finally:
        if proc.returncode is None:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), 15.0)
            except TimeoutError:
                proc.kill()
                await proc.wait()


async def _wait_ready(proc: asyncio.subprocess.Process, base_url: str, log: Path) -> None:
    deadline = time.monotonic() + SERVER_START_S
    async with httpx.AsyncClient(base_url=base_url, timeout=5.0) as client:
        while True:
            if proc.returncode is not None:
                raise RuntimeError(f"baton serve exited {proc.returncode}: {_tail(log)}")
            with contextlib.suppress(httpx.TransportError):
                if (await client.get("/healthz")).status_code == 200:
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"baton serve did not start: {_tail(log)}")
            await asyncio.sleep(0.05)


def _tail(log: Path, lines: int = 20) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


async def _http_cycle(client: httpx.AsyncClient, tokens: dict[str, str]) -> None:
    """One full cycle over HTTP: start as sam, wait for the request, approve as lee, completed."""
    sam = {"Authorization": f"Bearer {tokens['sam']}"}
    lee = {"Authorization": f"Bearer {tokens['lee']}"}
    reply = await client.post(
        "/api/runs", json={"workflow": "refund", "input": REFUND_120}, headers=sam
    )
    if reply.status_code != 201:
        raise RuntimeError(f"POST /api/runs: {reply.status_code} {reply.text}")
    run_id = reply.json()["id"]
    run = await _poll_run(client, run_id, sam, lambda r: bool(r["requests"]))
    request_id = run["requests"][0]["id"]
    reply = await client.post(f"/api/requests/{request_id}/respond", json=APPROVE, headers=lee)
    if reply.status_code != 200:
        raise RuntimeError(f"respond: {reply.status_code} {reply.text}")
    await _poll_run(client, run_id, sam, lambda r: r["status"] == "completed")


async def _poll_run(
    client: httpx.AsyncClient,
    run_id: str,
    headers: dict[str, str],
    done: Callable[[dict[str, Any]], bool],
) -> dict[str, Any]:
    deadline = time.monotonic() + 30.0
    while True:
        run: dict[str, Any] = (await client.get(f"/api/runs/{run_id}", headers=headers)).json()
        if run.get("status") == "failed":
            raise RuntimeError(f"run {run_id} failed: {run.get('error')}")
        if done(run):
            return run
        if time.monotonic() > deadline:
            raise RuntimeError(f"run {run_id} stuck at {run.get('status')}")
        await asyncio.sleep(0.005)


async def _pause_many(client: httpx.AsyncClient, token: str, path: Path, count: int) -> None:
    """Start `count` runs over HTTP and wait until all are waiting, a bounded window at a time."""
    headers = {"Authorization": f"Bearer {token}"}
    body = {"workflow": "refund", "input": REFUND_120}
    posts: set[asyncio.Task[httpx.Response]] = set()
    posted = waiting = 0
    deadline = time.monotonic() + PAUSE_SET_TIMEOUT_S
    watch = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        baseline = _count_runs(watch, "waiting")
        while waiting < count:
            while (
                posted < count and len(posts) < HTTP_CONCURRENCY and posted - waiting < PAUSE_WINDOW
            ):
                posts.add(asyncio.create_task(client.post("/api/runs", json=body, headers=headers)))
                posted += 1
            if posts:
                done, posts = await asyncio.wait(
                    posts, timeout=0.01, return_when=asyncio.FIRST_COMPLETED
                )
                for task in done:
                    reply = task.result()
                    if reply.status_code != 201:
                        raise RuntimeError(f"POST /api/runs: {reply.status_code} {reply.text}")
            else:
                await asyncio.sleep(0.01)
            waiting = _count_runs(watch, "waiting") - baseline
            if _count_runs(watch, "failed"):
                raise RuntimeError("a run failed while pausing the set")
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {waiting} of {count} runs paused in time")
    finally:
        for task in posts:
            task.cancel()
        watch.close()


def _count_runs(conn: sqlite3.Connection, status: str) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM runs WHERE status = ?", (status,)).fetchone()[0])


async def _list_pending_ms(requests: RequestService, paused: int) -> float:
    """The median time of the first page of pending requests, in ms."""
    flt = RequestFilter(status="pending")
    timings: list[float] = []
    for n in range(LIST_READS + 10):
        started = time.perf_counter()
        page = await requests.list(flt)
        if n >= 10:
            timings.append(time.perf_counter() - started)
        if len(page.items) != min(flt.limit, paused):
            raise RuntimeError(f"{len(page.items)} pending requests listed, not {paused}")
    return statistics.median(timings) * 1e3
