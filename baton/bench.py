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
  durable commit at FULL; a cycle makes five commits (run with its start job, pause, answer with
  its resume job, the back office's refund, completion with the ledger's effect record), three
  of them durable (the start and the end commit at NORMAL and ride on the next FULL one).
- `bytes_per_paused_run`: growth of `store.size_bytes()` over `paused` paused runs (run,
  checkpoint, request, audit and job rows, indexes included), per run.
- `rss_growth_mb_10k_paused`: resident memory of a `baton serve` child (logging at WARNING)
  with `paused` runs paused (started through its HTTP API, driven by its own worker) minus its
  RSS idle after a warm-up of full cycles; paused runs must live only in the store.
- `list_pending_10k_ms_p50`: the first page (limit 50) of `RequestService.list(status=pending)`
  with those `paused` requests pending; the median of 200 reads.
- `request_page_200_msgs_ms_p50`: a request page whose context holds 200 messages, served in
  process; see `baton/bench_pages.py`.
- `http_answer_to_resumed_ms_p50`, `_p95`: against a `baton serve` child on its own new SQLite
  file, `http_cycles` refund 120 cycles over HTTP one at a time: from sending lee's
  `POST /api/requests/{id}/respond` until `GET /api/runs/{id}`, read every `HTTP_POLL_S`, shows
  the run completed (the answer's commit, the child's worker resuming the run through its refund
  to completion, and the read that sees it). Polled, not streamed: on SQLite `/api/stream` polls
  the file every 0.2 s (`human.store.sqlite.WATCH_POLL_S`), which would be most of the figure.
  (No `pg_` twin.)

The same figures on PostgreSQL carry the prefix `pg_` (`pg_floor_commit_us` is a one-row
INSERT and COMMIT through asyncpg, PostgreSQL's defaults: `fsync` on, `synchronous_commit` on;
`bare_maf_cycle_ms` has no database and no `pg_` twin). To keep `make bench` near ten minutes on
two cores they run on fewer runs by default: 500 cycles, and `pg_paused_runs` (4,000) paused
runs for `pg_bytes_per_paused_run`, `pg_rss_growth_mb_paused` and `pg_list_pending_ms_p50`. Each
runs on a new database of one server:
`BATON_BENCH_POSTGRES_URL` (`--pg-url`), else a throwaway server started from Debian's
`postgresql` binaries (`baton.devpg`, as the tests do) in the system's temporary folder. Beyond
those:

- `pg_cycles_per_s_workers_1`, `_2`, `_4`: full cycles per second with that many `baton worker`
  child processes on one database. This process starts the runs (`Runtime.start` without a
  worker of its own: the start job is queued and NOTIFYs one worker) and answers each request as
  lee as soon as the audit feed (LISTEN) shows it, keeping `SCALE_IN_FLIGHT` runs going; the
  workers drive every run to its pause and, after the answer, to completion. Counted from the
  end of `SCALE_WARMUP_CYCLES` untimed cycles per worker (each process warms its own caches and
  opens its own connections) to the last of `scale_cycles` timed ones, in each round.
- `pg_cpu_ms_per_cycle_workers_1`, `_2`, `_4`: the CPU (user and system, `psutil`) the worker
  processes spent together over those timed cycles, per cycle; `pg_cpu_2_workers_vs_1` and
  `pg_cpu_4_workers_vs_1` divide it by the one worker's. A worker more should cost no CPU more
  (one queued job wakes one worker). `SCALE_ROUNDS` rounds, the order of 1, 2 and 4 workers
  reversed every other round; `pg_workers_load1_by_round` is the load average at each round's
  start. `pg_waits_per_cycle_workers_N` and `pg_preemptions_per_cycle_workers_N`: the workers'
  voluntary and involuntary context switches a cycle (every thread's), where more processes
  than cores show their cost. `pg_worker_figures` measures only these (the quick way to check
  them).

Without PostgreSQL (no URL, no binaries, or a server that does not start) the `pg_` figures are
missing and `pg_unavailable` says why; `postgres=False` leaves them out on purpose.

The bench prints nothing; `baton bench` prints the figures. Like `cli.py`, whose command it is,
it wires the layers together (store, runtime, worker, service, and a token for the HTTP client).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import socket
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Never

import asyncpg
import httpx
import psutil  # type: ignore[import-untyped]
from agent_framework import (
    CheckpointStorage,
    Executor,
    InMemoryCheckpointStorage,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)
from pydantic import BaseModel

from baton import devpg
from baton.bench_peers import by_round, in_round_order, paused, say, say_round
from baton.demo import seed_demo
from baton.errors import StoreError
from baton.settings import Settings
from baton.wiring import Parts, open_parts
from human.policy import Route
from human.records import User
from human.service import RequestService
from human.stats import percentile
from human.store import open_store
from human.store.base import RequestFilter, Store
from workflows.platform.registry import register
from workflows.platform.runtime import Runtime
from workflows.platform.worker import Worker

REFUND_120: Final = {"order_id": "A-1002", "amount": 120, "reason": "broken"}
APPROVE: Final = {"decision": "approve"}
FLOOR_COMMITS: Final = 500
BARE_CYCLES: Final = 300
WARMUP_CYCLES: Final = 10
SERVER_WARMUP_CYCLES: Final = 20
LIST_READS: Final = 200
PAUSE_WINDOW: Final = 16  # runs started but not yet paused, at most, while building the set
HTTP_CONCURRENCY: Final = 8
HTTP_POLL_S: Final = 0.005  # how often a run is read over HTTP while waiting for it to move on
SERVER_START_S: Final = 60.0
PAUSE_SET_TIMEOUT_S: Final = 900.0
PAUSE_COUNT_EVERY_S: Final = 0.025  # how often the pausing loop counts the paused runs
SCALE_WORKERS: Final = (1, 2, 4)
SCALE_IN_FLIGHT: Final = 16  # runs started and not yet completed, at most, in the worker figures
SCALE_WARMUP_CYCLES: Final = 20
SCALE_TIMEOUT_S: Final = 900.0
SCALE_ROUNDS: Final = 2  # rounds of 1, 2 and 4 workers, the order reversed every other round

Figures = dict[str, float | int | str]


async def run_bench(
    *,
    runs: int = 1000,
    paused: int = 10_000,
    postgres: bool = True,
    pg_url: str | None = None,
    pg_runs: int = 500,
    pg_paused: int = 4000,
    scale_cycles: int = 300,
    http_cycles: int = 200,
    scale_rounds: int = SCALE_ROUNDS,
) -> Figures:
    """Measure every figure of `baton bench` in one go, on the disk of the default database.

    Args:
        runs: Sequential full cycles for the pause, resume and throughput figures.
        paused: Runs left paused for the size, memory and listing figures.
        postgres: Measure the `pg_` figures too.
        pg_url: A PostgreSQL server to measure on (any database of it; the bench creates its
            own); None starts a throwaway one.
        pg_runs: `runs` on PostgreSQL (fewer by default: a PostgreSQL cycle takes longer).
        pg_paused: `paused` on PostgreSQL (`pg_paused_runs`; fewer by default, for time).
        scale_cycles: Timed cycles of each worker count in each of `scale_rounds` rounds.
        http_cycles: Timed cycles of the `http_answer_to_resumed_ms_` figures.
        scale_rounds: Rounds of 1, 2 and 4 workers (`worker_figures`).

    Returns:
        The figures by name (see the module docstring for what each one measures), with
        `pg_unavailable` saying why instead of the `pg_` figures if PostgreSQL could not be had.

    Raises:
        ValueError: If a count is below 1.
        RuntimeError: If a run does not pause or complete as the refund workflow should, or a
            child process fails.
    """
    if min(runs, paused, pg_runs, pg_paused, scale_cycles, http_cycles, scale_rounds) < 1:
        raise ValueError("every count must be at least 1")
    with tempfile.TemporaryDirectory(prefix="bench-", dir=scratch_root()) as tmp:
        folder = Path(tmp)
        floor_us = measure_floor_commit_us(folder / "floor.db")
        bare_ms = await measure_bare_maf_cycle_ms()
        cycles = await measure_cycles(f"sqlite:///{folder / 'cycles.db'}", runs)
        held = await measure_paused(f"sqlite:///{folder / 'paused.db'}", paused, folder)
        # imported here: the web app it renders with is nothing a cycle's child needs
        from baton.bench_pages import measure_request_page

        page_ms = await measure_request_page(folder)  # baton/bench_pages.py
        answered = await measure_http_answer(f"sqlite:///{folder / 'http.db'}", http_cycles, folder)
        figures: Figures = {
            "floor_commit_us": round(floor_us, 1),
            "bare_maf_cycle_ms": round(bare_ms, 3),
            **_store_figures("", "_10k", floor_us, runs, cycles, held),
            "request_page_200_msgs_ms_p50": round(page_ms, 3),
            "http_answer_to_resumed_ms_p50": round(_percentile(answered, 50), 3),
            "http_answer_to_resumed_ms_p95": round(_percentile(answered, 95), 3),
        }
        say(
            f"SQLite: {figures['cycles_per_s']} refund cycles/s, pause"
            f" {figures['pause_ms_p50']} ms and resume {figures['resume_ms_p50']} ms (medians),"
            f" {figures['bytes_per_paused_run']:,} bytes a paused run"
            f" (load {os.getloadavg()[0]:.2f})"
        )
        if postgres:
            figures |= await postgres_figures(
                pg_url, pg_runs, pg_paused, scale_cycles, folder, scale_rounds
            )
    return figures


def _store_figures(
    prefix: str, held_tag: str, floor_us: float, runs: int, cycles: CycleTimes, held: PausedFigures
) -> Figures:
    """The figures every backend has, named with `prefix` (and `held_tag`: the paused set)."""
    return {
        f"{prefix}pause_ms_p50": round(_percentile(cycles.pause_ms, 50), 3),
        f"{prefix}pause_ms_p95": round(_percentile(cycles.pause_ms, 95), 3),
        f"{prefix}resume_ms_p50": round(_percentile(cycles.resume_ms, 50), 3),
        f"{prefix}resume_ms_p95": round(_percentile(cycles.resume_ms, 95), 3),
        f"{prefix}cycles_per_s": round(runs / cycles.total_s, 1),
        f"{prefix}cycle_floor_commits": round(cycles.total_s / runs * 1e6 / floor_us, 1),
        f"{prefix}bytes_per_paused_run": round(held.bytes_per_run),
        f"{prefix}rss_growth_mb{held_tag}_paused": round(held.rss_growth_mb, 2),
        f"{prefix}list_pending{held_tag}_ms_p50": round(held.list_ms_p50, 3),
    }


async def postgres_figures(
    pg_url: str | None,
    runs: int,
    paused: int,
    scale_cycles: int,
    folder: Path,
    scale_rounds: int = SCALE_ROUNDS,
) -> Figures:
    """The `pg_` figures, each on a new database of one server; `pg_unavailable` if none.

    Args:
        pg_url: A PostgreSQL server (any database of it); None starts a throwaway one.
        runs: Sequential cycles for the pause, resume and throughput figures.
        paused: Runs left paused for the size, memory and listing figures.
        scale_cycles: Timed cycles of each worker count in each of `scale_rounds` rounds.
        folder: Where child processes' logs go.
        scale_rounds: Rounds of 1, 2 and 4 workers (`worker_figures`).

    Returns:
        The figures by name, or only `pg_unavailable` saying why there is no server to use.
    """
    with contextlib.ExitStack() as stack:
        if pg_url is None:
            try:
                pg_url = stack.enter_context(devpg.running()).url()
            except (StoreError, OSError) as exc:
                return {"pg_unavailable": f"no PostgreSQL server: {exc}"}
        try:
            floor_db = await _new_database(pg_url, "floor")
        except (OSError, asyncpg.PostgresError) as exc:
            return {"pg_unavailable": f"cannot use the PostgreSQL server: {exc}"}
        floor_us = await measure_pg_floor_commit_us(floor_db)
        cycles = await measure_cycles(await _new_database(pg_url, "cycles"), runs)
        held = await measure_paused(await _new_database(pg_url, "paused"), paused, folder)
        figures: Figures = {
            "pg_floor_commit_us": round(floor_us, 1),
            **_store_figures("pg_", "", floor_us, runs, cycles, held),
            "pg_paused_runs": paused,
        }
        figures |= await worker_figures(pg_url, scale_cycles, folder, scale_rounds)
    return figures


async def worker_figures(
    pg_url: str, scale_cycles: int, folder: Path, rounds: int = SCALE_ROUNDS
) -> Figures:
    """The `pg_cycles_per_s_workers_N` and `pg_cpu_ms_per_cycle_workers_N` figures and the ratios.

    Each round measures 1, 2 and 4 workers in turn, each on a new database, and every other round
    in the reverse order (1, 2, 4, then 4, 2, 1), so that a load that rises or falls over the
    rounds falls alike on each count; the figures sum the rounds' cycles, seconds and CPU.

    Args:
        pg_url: A PostgreSQL server (any database of it).
        scale_cycles: Timed cycles of each measurement.
        folder: Where the workers' logs go.
        rounds: How many times to measure each worker count.

    Returns:
        The figures by name, with `pg_cpu_2_workers_vs_1` and `pg_cpu_4_workers_vs_1`: CPU per
        cycle with 2 and 4 workers over that with 1; `pg_waits_per_cycle_workers_N` and
        `pg_preemptions_per_cycle_workers_N`, the workers' voluntary and involuntary context
        switches a cycle (every thread's); and `pg_workers_load1_by_round`, the load average at
        each round's start.
    """
    seconds = dict.fromkeys(SCALE_WORKERS, 0.0)
    cpu_s = dict.fromkeys(SCALE_WORKERS, 0.0)
    waits = dict.fromkeys(SCALE_WORKERS, 0)
    preemptions = dict.fromkeys(SCALE_WORKERS, 0)
    loads: list[float] = []
    for n in range(rounds):
        loads.append(round(os.getloadavg()[0], 2))
        this_round: dict[int, float] = {}
        for workers in in_round_order(SCALE_WORKERS, n):
            db_url = await _new_database(pg_url, f"workers{workers}")
            timed = await measure_worker_cycles(db_url, workers, scale_cycles, folder)
            seconds[workers] += timed.seconds
            cpu_s[workers] += timed.cpu_s
            waits[workers] += timed.waits
            preemptions[workers] += timed.preemptions
            this_round[workers] = timed.cpu_s / scale_cycles * 1e3
        cpu = ", ".join(f"{workers} {this_round[workers]:.2f} ms" for workers in SCALE_WORKERS)
        say_round("PostgreSQL workers", n, rounds, loads, f"{cpu} of the workers' CPU a cycle")
    cycles = scale_cycles * rounds
    figures: Figures = {}
    for workers in SCALE_WORKERS:
        figures[f"pg_cycles_per_s_workers_{workers}"] = round(cycles / seconds[workers], 1)
    for workers in SCALE_WORKERS:
        figures[f"pg_cpu_ms_per_cycle_workers_{workers}"] = round(cpu_s[workers] / cycles * 1e3, 2)
    for workers in SCALE_WORKERS:
        figures[f"pg_waits_per_cycle_workers_{workers}"] = round(waits[workers] / cycles, 1)
    for workers in SCALE_WORKERS:
        figures[f"pg_preemptions_per_cycle_workers_{workers}"] = round(
            preemptions[workers] / cycles, 1
        )
    figures["pg_workers_load1_by_round"] = by_round(loads)
    for workers in SCALE_WORKERS[1:]:
        figures[f"pg_cpu_{workers}_workers_vs_1"] = round(cpu_s[workers] / cpu_s[1], 3)
    return figures


async def pg_worker_figures(
    pg_url: str | None = None, scale_cycles: int = 300, rounds: int = SCALE_ROUNDS
) -> Figures:
    """Only the worker figures (`worker_figures`), on `pg_url` or a throwaway server, with `load1`.

    The quick way to measure them alone: `python -c 'import asyncio; from baton.bench import
    pg_worker_figures as f; print(asyncio.run(f(rounds=2)))'`.
    """
    with contextlib.ExitStack() as stack:
        if pg_url is None:
            pg_url = stack.enter_context(devpg.running()).url()
        with tempfile.TemporaryDirectory(prefix="bench-", dir=scratch_root()) as tmp:
            load1 = round(os.getloadavg()[0], 2)
            figures = await worker_figures(pg_url, scale_cycles, Path(tmp), rounds)
    return figures | {"load1": load1, "load1_end": round(os.getloadavg()[0], 2)}


async def _new_database(server_url: str, what: str) -> str:
    return await devpg.create_database(server_url, f"bench_{what}_{secrets.token_hex(4)}")


def scratch_root() -> Path:
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


async def measure_pg_floor_commit_us(db_url: str, commits: int = FLOOR_COMMITS) -> float:
    """The median time of a one-row INSERT in its own transaction through asyncpg, in µs.

    Args:
        db_url: A new PostgreSQL database on the server being measured.
        commits: How many commits to time (after a few untimed ones).

    Returns:
        The median commit time in microseconds.
    """
    conn = await asyncpg.connect(db_url)
    try:
        await conn.execute("CREATE TABLE floor (id BIGSERIAL PRIMARY KEY, body TEXT NOT NULL)")
        body = "x" * 100
        timings: list[float] = []
        for n in range(commits + 20):
            started = time.perf_counter()
            async with conn.transaction():
                await conn.execute("INSERT INTO floor (body) VALUES ($1)", body)
            if n >= 20:
                timings.append(time.perf_counter() - started)
    finally:
        await conn.close()
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


BARE_TYPES: Final = [f"{__name__}:{t.__qualname__}" for t in (BareAsk, BareAnswer)]
"""The bare workflow's types, for a checkpoint storage's allow-list."""


def bare_workflow() -> Workflow:
    """The bare workflow: one `BareGate`."""
    return WorkflowBuilder(name="bare", start_executor=BareGate()).build()


async def bare_cycle(storage: CheckpointStorage) -> None:
    """Start, pause, restore on a fresh instance and complete the bare workflow on `storage`.

    Raises:
        RuntimeError: If the bare workflow does not pause or complete.
    """
    asking = bare_workflow()
    asked = await asking.run(BareAsk(amount=120.0), checkpoint_storage=storage)
    request_ids = [e.request_id for e in asked.get_request_info_events()]
    paused()
    checkpoint_id = await asking.resolve_pause_checkpoint_id(
        request_ids, checkpoint_storage=storage
    )
    if checkpoint_id is None:
        raise RuntimeError("bare MAF saved no pause checkpoint")
    done = await bare_workflow().run(
        checkpoint_id=checkpoint_id,
        responses={request_ids[0]: BareAnswer(decision="approve")},
        checkpoint_storage=storage,
    )
    if done.get_outputs() != ["approve 120.0"]:
        raise RuntimeError(f"bare MAF cycle ended with {done.get_outputs()}")


async def bare_cycle_in_place(workflow: Workflow) -> None:
    """Start, pause and complete a run of `workflow` (a `bare_workflow()`), with no checkpoints.

    MAF's work of the cycle and nothing else: no snapshot is taken, and nothing of the run
    outlives the process. The instance is kept from cycle to cycle (its one executor keeps
    nothing), as Baton keeps its own: each `run` of it starts a new run.

    Raises:
        RuntimeError: If the bare workflow does not pause or complete.
    """
    asked = await workflow.run(BareAsk(amount=120.0))
    request_ids = [e.request_id for e in asked.get_request_info_events()]
    if len(request_ids) != 1:
        raise RuntimeError(f"bare MAF asked {len(request_ids)} requests, not one")
    paused()
    done = await workflow.run(responses={request_ids[0]: BareAnswer(decision="approve")})
    if done.get_outputs() != ["approve 120.0"]:
        raise RuntimeError(f"bare MAF cycle ended with {done.get_outputs()}")


async def measure_bare_maf_cycle_ms(cycles: int = BARE_CYCLES) -> float:
    """The median start, pause, restore-on-a-fresh-instance and complete cycle of bare MAF, in ms.

    Each cycle has its own `InMemoryCheckpointStorage`, as one conversation would.

    Args:
        cycles: How many cycles to time (after a few untimed ones).

    Returns:
        The median cycle time in milliseconds.
    """
    timings: list[float] = []
    for n in range(cycles + WARMUP_CYCLES):
        started = time.perf_counter()
        await bare_cycle(InMemoryCheckpointStorage())
        if n >= WARMUP_CYCLES:
            timings.append(time.perf_counter() - started)
    return statistics.median(timings) * 1e3


class MinimalInput(BaseModel):
    """The minimal workflow's input: the amount a person approves."""

    amount: float = 120.0


MINIMAL_ANSWER: Final = {"decision": "answer", "answer": {"decision": "approve"}}
"""The answer to the minimal workflow's one request, as the API takes it."""


def register_minimal() -> None:
    """Register the bare workflow on Baton as `bench_minimal`, asking support-leads."""
    register(
        "bench_minimal",
        input_model=MinimalInput,
        start_message=lambda given: BareAsk(amount=given.amount),
        routes={BareAsk: Route(team="support-leads", title="Approve {amount}")},
        reuse=True,
    )(lambda _services: bare_workflow())


# full cycles through the service layer ------------------------------------------------------


@dataclass(frozen=True)
class CycleTimes:
    """Timings of sequential full cycles."""

    pause_ms: list[float]
    resume_ms: list[float]
    total_s: float


@dataclass(frozen=True)
class Seeded:
    """A demo-seeded database's parts (`open_parts`, as `baton serve` wires them) and two people."""

    parts: Parts
    starter: User
    approver: User

    @property
    def runtime(self) -> Runtime:
        """The parts' runtime."""
        return self.parts.runtime

    @property
    def worker(self) -> Worker:
        """The parts' worker, which drives the runs this process starts."""
        return self.parts.worker

    @property
    def requests(self) -> RequestService:
        """The parts' request service."""
        return self.parts.requests

    @property
    def store(self) -> Store:
        """The parts' store."""
        return self.parts.store


@contextlib.asynccontextmanager
async def seeded_parts(db_url: str, *, local_worker: bool = True) -> AsyncIterator[Seeded]:
    """`open_parts` on `db_url` as `baton serve` wires it, seeded with the demo."""
    async with open_parts(Settings(database_url=db_url), local_worker=local_worker) as parts:
        await seed_demo(parts.store, parts.settings.database_url)
        starter, approver = await parts.store.get_user("sam"), await parts.store.get_user("lee")
        assert starter is not None
        assert approver is not None
        yield Seeded(parts, starter, approver)


async def one_cycle(
    parts: Seeded,
    workflow: str = "refund",
    given: dict[str, Any] = REFUND_120,
    answer: dict[str, Any] = APPROVE,
) -> tuple[float, float]:
    """Start `workflow`, drive it to its one request, answer it, drive it to completion.

    Returns:
        The times to the pause and from the pause to completion, in ms.

    Raises:
        RuntimeError: If the run does not pause on one request or does not complete.
    """
    started = time.perf_counter()
    run = await parts.runtime.start(workflow, given, actor=parts.starter.name)
    await parts.worker.drain()
    page = await parts.requests.list(RequestFilter(run_id=run.id, status="pending"))
    if len(page.items) != 1:
        raise RuntimeError(f"run {run.id} did not pause on one request: {page.items}")
    paused = time.perf_counter()
    await parts.requests.respond(page.items[0].id, dict(answer), responder=parts.approver)
    await parts.worker.drain()
    done = await parts.runtime.get(run.id)
    if done.status != "completed":
        raise RuntimeError(f"run {run.id} ended {done.status}: {done.error}")
    finished = time.perf_counter()
    return (paused - started) * 1e3, (finished - paused) * 1e3


async def measure_cycles(db_url: str, runs: int) -> CycleTimes:
    """Time `runs` sequential start, pause, answer, complete cycles of `refund` 120.

    Args:
        db_url: A new database (either backend); it is seeded with the demo.
        runs: How many cycles to time (after a few untimed ones).

    Returns:
        Each cycle's pause and resume times and the total time of the timed cycles.
    """
    async with seeded_parts(db_url) as parts:
        for _ in range(WARMUP_CYCLES):
            await one_cycle(parts)
        pauses: list[float] = []
        resumes: list[float] = []
        started = time.perf_counter()
        for _ in range(runs):
            pause_ms, resume_ms = await one_cycle(parts)
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
    """The nearest-rank percentile `q` (0 to 100) of timings there must be."""
    found = percentile(values, q / 100)
    if found is None:
        raise RuntimeError("no timings to take a percentile of")
    return found


async def measure_paused(db_url: str, paused: int, folder: Path) -> PausedFigures:
    """Pause `paused` runs through a `baton serve` child, then measure size, memory and listing.

    The child serves a new seeded database; it warms up on full cycles over HTTP, its RSS is
    read idle, then `paused` runs are started through `POST /api/runs` (at most `PAUSE_WINDOW`
    of them not yet paused at a time) and driven by the child's own worker.

    Args:
        db_url: A new database (either backend); it is seeded with the demo.
        paused: How many runs to leave paused.
        folder: Where the child's log goes.

    Returns:
        Bytes per paused run, the child's RSS growth in MB and the median first-page listing.

    Raises:
        RuntimeError: If the child fails or a run does not pause.
    """
    store = await open_store(db_url)
    try:
        async with _warm_server(db_url, store, folder) as (pid, client, tokens):
            idle_rss = psutil.Process(pid).memory_info().rss
            size_before = await store.size_bytes()
            await _pause_many(client, tokens["sam"], store, paused)
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
    from web.auth import new_token, token_hash

    user = await store.get_user(name)
    assert user is not None
    token = new_token()
    await store.add_token(user.id, token_hash(token), "bench")
    return token


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _spawn(db_url: str, log: Path, *args: str) -> asyncio.subprocess.Process:
    """`baton ARGS` in a child process on `db_url`, its output in `log`."""
    # The child inherits this environment, with the bench's database and no failpoints.
    env = os.environ | {
        "BATON_DATABASE_URL": db_url,
        "BATON_LOG_LEVEL": "WARNING",
        "BATON_FAILPOINTS": "",
    }
    with log.open("wb") as sink:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "baton",
            *args,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=sink,
            stderr=sink,
        )


async def _stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), 15.0)
        except TimeoutError:
            proc.kill()
            await proc.wait()


@contextlib.asynccontextmanager
async def _server(db_url: str, log: Path) -> AsyncIterator[tuple[int, str]]:
    """`baton serve` on a loopback port in a child process; its pid and base URL."""
    port = _free_port()
    base_url = f"http://127.0.0.1:{port}"
    proc = await _spawn(db_url, log, "serve", "--host", "127.0.0.1", "--port", str(port))
    try:
        await _wait_ready(proc, base_url, log)
        yield proc.pid, base_url
    finally:
        await _stop(proc)


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


async def _http_cycle(client: httpx.AsyncClient, tokens: dict[str, str]) -> float:
    """One full cycle over HTTP: start as sam, wait for the request, approve as lee, completed.

    Returns:
        The ms from sending the answer to seeing the run completed (`GET /api/runs/{id}`).
    """
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
    answered = time.perf_counter()
    reply = await client.post(f"/api/requests/{request_id}/respond", json=APPROVE, headers=lee)
    if reply.status_code != 200:
        raise RuntimeError(f"respond: {reply.status_code} {reply.text}")
    await _poll_run(client, run_id, sam, lambda r: r["status"] == "completed")
    return (time.perf_counter() - answered) * 1e3


async def measure_http_answer(db_url: str, cycles: int, folder: Path) -> list[float]:
    """Answer-to-completed times over HTTP against a `baton serve` child, one cycle at a time.

    The child serves a new seeded database; after `SERVER_WARMUP_CYCLES` untimed cycles, each
    cycle starts a refund 120 as sam, waits for its request, and times lee's
    `POST /api/requests/{id}/respond` until `GET /api/runs/{id}` (polled every
    `HTTP_POLL_S`) shows the run completed: the answer's commit, the child's worker resuming the
    run to its refund and completion, and the read that sees it.

    Args:
        db_url: A new database (either backend); it is seeded with the demo.
        cycles: How many cycles to time.
        folder: Where the child's log goes.

    Returns:
        Each timed cycle's answer-to-completed time, in ms.
    """
    store = await open_store(db_url)
    try:
        async with _warm_server(db_url, store, folder) as (_pid, client, tokens):
            return [await _http_cycle(client, tokens) for _ in range(cycles)]
    finally:
        await store.close()


@contextlib.asynccontextmanager
async def _warm_server(
    db_url: str, store: Store, folder: Path
) -> AsyncIterator[tuple[int, httpx.AsyncClient, dict[str, str]]]:
    """`baton serve` on `store`'s database, seeded, after `SERVER_WARMUP_CYCLES` HTTP cycles.

    Yields its pid, a client of it, and bearer tokens of sam (who starts) and lee (who answers).
    """
    await seed_demo(store, db_url)
    tokens = {name: await _token(store, name) for name in ("sam", "lee")}
    log = folder / f"serve-{secrets.token_hex(3)}.log"
    async with (
        _server(db_url, log) as (pid, base_url),
        httpx.AsyncClient(base_url=base_url, timeout=60.0) as client,
    ):
        for _ in range(SERVER_WARMUP_CYCLES):
            await _http_cycle(client, tokens)
        yield pid, client, tokens


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
        await asyncio.sleep(HTTP_POLL_S)


async def _pause_many(client: httpx.AsyncClient, token: str, store: Store, count: int) -> None:
    """Start `count` runs over HTTP and wait until all are waiting, a bounded window at a time."""
    headers = {"Authorization": f"Bearer {token}"}
    body = {"workflow": "refund", "input": REFUND_120}
    posts: set[asyncio.Task[httpx.Response]] = set()
    posted = waiting = 0
    deadline = time.monotonic() + PAUSE_SET_TIMEOUT_S
    counted_at = 0.0
    try:
        baseline = await _paused_runs(store)
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
            if time.monotonic() - counted_at < PAUSE_COUNT_EVERY_S and posted < count:
                continue
            counted_at = time.monotonic()
            waiting = await _paused_runs(store) - baseline
            failed = await store.list_runs(status="failed", workflow=None, cursor=None, limit=1)
            if failed.items:
                raise RuntimeError("a run failed while pausing the set")
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {waiting} of {count} runs paused in time")
    finally:
        for task in posts:
            task.cancel()


async def _paused_runs(store: Store) -> int:
    """Runs waiting on a person: each refund 120 pauses on one pending request."""
    return (await store.count_requests(RequestFilter())).get("pending", 0)


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


# cycles per second with N worker processes ------------------------------------------------


@dataclass(frozen=True)
class WorkerCycles:
    """How long the timed cycles of `measure_worker_cycles` took; the workers' CPU over them.

    `_spent` reads the same fields as totals so far (`seconds` the clock's); `since` makes the
    difference of two readings.
    """

    seconds: float
    cpu_s: float
    waits: int
    """The workers' voluntary context switches (a thread gave the CPU up to wait)."""
    preemptions: int
    """The workers' involuntary context switches (a thread was switched out while running)."""

    def since(self, start: WorkerCycles) -> WorkerCycles:
        """What was spent from the reading `start` to this one."""
        return WorkerCycles(
            self.seconds - start.seconds,
            self.cpu_s - start.cpu_s,
            self.waits - start.waits,
            self.preemptions - start.preemptions,
        )


def _spent(procs: list[asyncio.subprocess.Process]) -> WorkerCycles:
    """A reading: the clock, and the processes' CPU seconds and context switches so far.

    The CPU is user and system, their children's too. The switches are every thread's, from
    `/proc/PID/task/*/status` (psutil's count is the main thread's alone); where there is no
    `/proc`, psutil's.
    """
    cpu, waits, preemptions = 0.0, 0, 0
    for proc in procs:
        process = psutil.Process(proc.pid)
        times = process.cpu_times()
        cpu += times.user + times.system + times.children_user + times.children_system
        voluntary, involuntary = _switches(process)
        waits += voluntary
        preemptions += involuntary
    return WorkerCycles(time.perf_counter(), cpu, waits, preemptions)


def _switches(process: psutil.Process) -> tuple[int, int]:
    """Voluntary and involuntary context switches of all of `process`'s threads."""
    tasks = Path(f"/proc/{process.pid}/task")
    if not tasks.is_dir():
        counted = process.num_ctx_switches()
        return counted.voluntary, counted.involuntary
    voluntary = involuntary = 0
    for task in tasks.iterdir():
        try:
            status = (task / "status").read_text()
        except OSError:  # the thread ended meanwhile
            continue
        for line in status.splitlines():
            name, _, value = line.partition(":")
            if name == "voluntary_ctxt_switches":
                voluntary += int(value)
            elif name == "nonvoluntary_ctxt_switches":
                involuntary += int(value)
    return voluntary, involuntary


async def measure_worker_cycles(
    db_url: str, workers: int, cycles: int, folder: Path
) -> WorkerCycles:
    """Full refund cycles with `workers` `baton worker` processes on one database.

    This process starts runs and answers their requests (as the API would, with no worker of its
    own), keeping `SCALE_IN_FLIGHT` runs going; the worker processes drive them.

    Args:
        db_url: A new database; it is seeded with the demo.
        workers: How many `baton worker` child processes to run.
        cycles: How many cycles to time (after `SCALE_WARMUP_CYCLES` untimed ones per worker).
        folder: Where the workers' logs go.

    Returns:
        The timed cycles' wall time and the CPU (user and system) the worker processes spent
        over it.

    Raises:
        RuntimeError: If a run fails, a worker exits, or the cycles take over `SCALE_TIMEOUT_S`.
    """
    procs: list[asyncio.subprocess.Process] = []
    async with seeded_parts(db_url, local_worker=False) as seeded:
        try:
            for n in range(workers):
                log = folder / f"worker-{workers}-{n}-{secrets.token_hex(3)}.log"
                procs.append(await _spawn(db_url, log, "worker"))
            driver = _CycleDriver(
                seeded.store, seeded.runtime, seeded.requests, seeded.starter, seeded.approver
            )
            async with asyncio.timeout(SCALE_TIMEOUT_S):
                return await driver.run(SCALE_WARMUP_CYCLES * workers, cycles, procs)
        finally:
            for proc in procs:
                await _stop(proc)


class _CycleDriver:
    """Starts refund runs and answers their requests as the audit feed shows them paused."""

    def __init__(
        self,
        store: Store,
        runtime: Runtime,
        requests: RequestService,
        starter: User,
        approver: User,
    ) -> None:
        self._store = store
        self._runtime = runtime
        self._requests = requests
        self._starter = starter
        self._approver = approver
        self._tasks: set[asyncio.Task[Any]] = set()
        self._errors: list[BaseException] = []

    async def run(
        self, warmup: int, cycles: int, procs: list[asyncio.subprocess.Process]
    ) -> WorkerCycles:
        """Run `warmup + cycles` cycles, `SCALE_IN_FLIGHT` at a time; the timed ones' cost."""
        total = warmup + cycles
        after = await self._store.last_event_id()
        started = completed = 0
        timed_from = _spent(procs)
        for _ in range(min(SCALE_IN_FLIGHT, total)):
            self._spawn(self._runtime.start("refund", REFUND_120, actor=self._starter.name))
            started += 1
        try:
            # The feed replays every event after `after`: nothing committed before it is seen
            # is missed.
            async with contextlib.aclosing(self._store.watch(after_id=after)) as feed:
                async for event in feed:
                    self._check(procs, event.type, event.run_id)
                    if event.type == "request.created" and event.request_id:
                        answer = dict(APPROVE)
                        self._spawn(
                            self._requests.respond(
                                event.request_id, answer, responder=self._approver
                            )
                        )
                    elif event.type == "run.completed":
                        completed += 1
                        if completed == warmup:
                            timed_from = _spent(procs)
                        if completed == total:
                            break
                        if started < total:
                            run = self._runtime.start(
                                "refund", REFUND_120, actor=self._starter.name
                            )
                            self._spawn(run)
                            started += 1
        finally:
            for task in self._tasks:
                task.cancel()
        return _spent(procs).since(timed_from)

    def _spawn(self, work: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        failure = None if task.cancelled() else task.exception()
        if failure is not None:
            self._errors.append(failure)

    def _check(
        self, procs: list[asyncio.subprocess.Process], event_type: str, run_id: str | None
    ) -> None:
        if self._errors:
            raise RuntimeError(f"starting or answering a run failed: {self._errors[0]!r}")
        if event_type == "run.failed":
            raise RuntimeError(f"run {run_id} failed")
        for proc in procs:
            if proc.returncode is not None:
                raise RuntimeError(f"a baton worker exited {proc.returncode}")
