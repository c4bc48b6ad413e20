"""Baton beside its peers on the same work, each system in a child process of its own.

Two workloads, each done by every system that can do it, each in a child process of its own (so
its CPU time and its fsyncs are its own), interleaved A/B/…/E then E/…/B/A over `rounds` rounds;
each system's figure is its best round (the one least disturbed by the machine).

`minimal`: one `request_info`, its answer, completion.

- `baton`: a registered plain-MAF workflow (bare MAF's executor: `ctx.request_info`, then
  `@response_handler` completes) started with `Runtime.start`, driven by the worker to its pause,
  its request listed and answered with `RequestService.respond`, driven to completion: Baton's
  whole path on a SQLite file (WAL, `synchronous=FULL`), as `baton serve` wires it (its
  telemetry too: off unless an exporter is configured).
- `langgraph`: a LangGraph `StateGraph` whose node calls `interrupt()`, resumed with
  `Command(resume=...)`, checkpointed by `SqliteSaver` on a SQLite file (its defaults).
- `maf_file`: bare MAF with `FileCheckpointStorage` (JSON files; no fsync), restored on a fresh
  workflow instance as a new process would.
- `maf_memory`: bare MAF with `InMemoryCheckpointStorage`: the framework's own cost.
- `maf_bare`: bare MAF with no checkpoint storage, answered on the same workflow instance, one
  instance kept for every cycle: MAF's work of the cycle and nothing else (durable nowhere).
- `baton_rows`: Baton's statements and commits with none of its layers (`baton.bench_rows`):
  the same workflow driven as Baton drives it (one kept instance, no storage, one snapshot at the
  pause, encoded as Baton's, restored to resume), and the statements of Baton's minimal cycle, in
  its order and transactions at its durability, on a file Baton's migrations made. Not a system
  anyone runs: what Baton would cost with its statements and nothing between (see below).

`refund`: an agent's three model turns (look the order up; propose the refund; say what was
refunded), a person's approval before the refund, and the refund itself: a durable back-office
write (one SQLite transaction, WAL, `synchronous=FULL`, an `INSERT ... ON CONFLICT DO NOTHING`
keyed by the call's idempotency key, then the refund read back), as the shipped back office
(`executors/shipped/back_office`) makes it.

- `baton`: the shipped `refund` workflow (120 on order A-1002, one approval by support-leads) on
  the scripted model, the same path as `minimal`'s; its back office keeps its tables in Baton's
  file, as `baton serve` has it by default.
- `langgraph`: an explicit LangGraph agent: a chat model node and a `ToolNode` with
  `lookup_order` and `issue_refund`, looping until the model answers without a tool call; the
  refund tool calls `interrupt()` for the approval before it writes, and the run is resumed with
  `Command(resume=...)`; checkpointed by `SqliteSaver`. The model is a LangChain chat model that
  plays the same three turns from the conversation, as Baton's scripted client does; the back
  office is a file of its own, made by the shipped back office's migrations, seeded with the
  same orders and written with the same statements.
- `maf_memory`: bare MAF, as its samples write it: an `Agent` on the same scripted turns with
  the two tools, the refund tool marked `approval_mode="always_require"`, in a workflow of one
  `AgentExecutor`; resumed on a fresh instance from its pause checkpoint in an
  `InMemoryCheckpointStorage`, with MAF's approval response (`baton.bench_maf`). Only the refund
  is durable (the same back office as LangGraph's): the framework's own cost of the work.
- `maf_bare`: the same agent with no checkpoint storage, the approval answered on the same
  instance: MAF's work of the cycle and the refund's durable write, nothing else. Its agent and
  workflow are built for each cycle, as for `maf_memory` (the executor keeps the conversation),
  where Baton resets a kept instance: a build took 0.21 ms of CPU at fe48b37.

Per system: `<workload>_<system>_cycles_per_s`, `_cpu_ms` per cycle (the child's user + system
CPU over the timed cycles, `time.process_time`), both from untraced children, and
`_fsyncs_per_cycle`: the `fsync` and `fdatasync` calls of one more child of the same cycles, run
after the rounds under `strace --seccomp-bpf -f` when strace is here, between the marks the child
makes at its timed cycles' ends (`GATED`), per cycle. The timed rounds are not
traced: strace stops a child at each of those calls, which costs a system in proportion to how
often it syncs (LangGraph's refund cycle ran at about half its untraced rate traced). Then
`<workload>_vs_langgraph` (Baton's cycles per second over LangGraph's, each system's best round;
`<workload>_vs_langgraph_by_round`, the same within each round, to show how far rounds differ),
`<workload>_fsyncs_per_cycle` (Baton's), `<workload>_cpu_vs_bare_maf` (Baton's CPU per cycle
over bare MAF's in memory, `maf_memory`'s), `<workload>_cpu_vs_langgraph` and
`<workload>_fsyncs_vs_langgraph` (Baton's over LangGraph's), `peers_load1_max`, the highest
1-minute load average at the start of a round, and `peers_load1_by_round`, each round's in order.
With the refund workload, one at a time, `refund_langgraph_bytes_per_paused_run`: what a
LangGraph refund thread left at its interrupt adds to `SqliteSaver`'s file, measured as Baton's
`bytes_per_paused_run` (`baton.bench_langgraph.bytes_per_paused_refund`, `paused` threads in a
child of its own; `baton bench` divides Baton's by it: `bytes_per_paused_run_vs_langgraph`).

**The pause and the resume.** Every system's cycle marks the moment its request is there to answer
(`paused()`: Baton's request listed, LangGraph's interrupt returned, MAF's `request_info` event out
of its run), and each timed cycle is split there: `<workload>_<system>_pause_ms_p50` and `_p95`
(the cycle's start until then: the run started and driven to its pause, the pause durable where
the system makes it so), `_resume_ms_p50` and `_p95` (from then to the cycle's end: the answer
given, the run resumed and ended), of the same untraced child as the rates;
`<workload>_pause_vs_langgraph` and `<workload>_resume_vs_langgraph` are Baton's medians over
LangGraph's (below 1: Baton's is shorter). A child some of whose timed cycles marked no pause
fails the bench.

**Runs in flight at once** (`in_flight` > 1, `make bench` 32): the same children, each with
`in_flight` tasks going round the cycle at once on its one event loop (one untimed cycle each
first), the timed cycles rounded up to a multiple of `in_flight`; every key prefixed
`concurrent<N>_` (`concurrent32_minimal_vs_langgraph`, ...), with no floor (below: two durable
commits one after the other are a cycle's floor one run at a time, not with runs sharing commits),
so no `maf_bare`, which serves only the floor. Baton's worker then drives as many runs at once, each
cycle waiting for its own run's drives only (`Worker.drain(run_id)`); LangGraph runs on
`AsyncSqliteSaver` with `ainvoke`, its nodes `async def` (`baton.bench_langgraph`); bare MAF runs
each cycle on instances of its own, as it does one at a time. Each child reports `most_at_once`, the
most timed cycles begun and not yet ended at one moment; a child with fewer than `in_flight` fails
the bench (a system that never lets the event loop go during a cycle shows as 1).

**What durability itself costs.** `<workload>_floor_commit_us` is the median one-row commit at
`synchronous=FULL` on the peers' disk (`baton.bench.measure_floor_commit_us`), measured before
the workload's rounds. A cycle durable at its pause and at its answer needs at least MAF's work
(`maf_bare`) and two such commits, one after the other: `<workload>_floor_vs_langgraph` is the
rate of such a cycle over LangGraph's, the most any system built on MAF could reach on this disk
this way, and `<workload>_baton_own_ms` is what Baton's cycle takes beyond it (its checkpoint,
its request, routing, audit, transcript and jobs, and its reads), in ms of wall time.

**What Baton's statements cost, and what its layers do** (the minimal workload, one at a time).
`minimal_rows_vs_langgraph` is `baton_rows`' rate over LangGraph's: how far a cycle making every
statement Baton makes, and committing as Baton commits, could go beside LangGraph with nothing
between the API and the database; `minimal_rows_cpu_vs_bare_maf` its CPU a cycle over
`maf_memory`'s (as `minimal_cpu_vs_bare_maf` is Baton's); and `minimal_layers_ms` what Baton's
cycle takes beyond it in ms of wall time: its runtime, worker, service and store, their checks
and records, the hand-offs to the writer thread and the pause's proof.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

from baton import eventloop

if TYPE_CHECKING:
    from baton.wiring import Parts
    from human.records import Run, User

SYSTEMS: Final = ("baton", "langgraph", "maf_file", "maf_memory", "maf_bare", "baton_rows")
"""The systems of the `minimal` workload."""
WORKLOADS: Final[dict[str, tuple[str, ...]]] = {
    "minimal": SYSTEMS,
    "refund": ("baton", "langgraph", "maf_memory", "maf_bare"),
}
"""Each workload and the systems that do it."""
IN_FLIGHT_WORKLOADS: Final[dict[str, tuple[str, ...]]] = {
    "minimal": ("baton", "langgraph", "maf_file", "maf_memory"),
    "refund": ("baton", "langgraph", "maf_memory"),
}
"""Each workload and the systems that do it with runs in flight at once: all but `maf_bare`,
which serves only the floor, a figure of one run at a time."""
_STRACE: Final = shutil.which("strace")
TRACE: Final = (
    (
        _STRACE,
        "--seccomp-bpf",
        "-f",
        "-qq",
        "-e",
        "signal=none",
        "-e",
        "trace=fsync,fdatasync,access,faccessat,faccessat2",  # the syncs, and the marks (`gate`)
    )
    if _STRACE
    else None
)
"""How the children are traced to count their fsyncs, if strace is here."""
WARMUP: Final = 5
HALVES: Final = ("pause_ms_p50", "pause_ms_p95", "resume_ms_p50", "resume_ms_p95")
"""A cycle's two halves as each child reports them (`Round`), split where it marks `paused()`."""
GATED: Final = "BATON_BENCH_GATED"
"""In a child's environment, how the child marks its timed cycles' two ends (`gate`).

`wait`: before its first timed cycle it writes `TIMED` on a line of its own to stdout, after its
last `UNTIMED`, and each time reads a line from stdin before it goes on (`bench_instructions`
switches callgrind's counting on and off there). `mark`: it asks whether the file `MARK` + `TIMED`
(then `UNTIMED`) exists, which it never does: a system call a tracer sees in its place among the
child's others (`fsyncs_of` counts the fsyncs between the two).
"""
MARK: Final = "/baton-bench-mark/"
TIMED: Final = "timed cycles begin"
UNTIMED: Final = "timed cycles ended"
T = TypeVar("T")


@dataclass(frozen=True)
class Round:
    """One child's timed cycles."""

    cycles: int
    wall_s: float
    cpu_s: float
    most_at_once: int = 1
    """The most timed cycles begun and not yet ended at one moment: 1 when each cycle ran to its
    end before the next began (as every cycle would that never lets the event loop go)."""
    paused_cycles: int = 0
    """The timed cycles that marked their pause (`paused()`), each split there in two halves."""
    pause_ms_p50: float = 0.0
    """A timed cycle's start until its pause, in ms: the median; 0 if none marked."""
    pause_ms_p95: float = 0.0
    resume_ms_p50: float = 0.0
    """The pause until the cycle's end (the answer and the run's end), in ms: the median."""
    resume_ms_p95: float = 0.0


_PAUSE_MARKS: Final = contextvars.ContextVar[list[float] | None]("bench_pause_marks", default=None)


def paused() -> None:
    """Mark that the timed cycle under way reached its pause: its request is there to answer.

    Every system's cycle calls it once, where a person could first see the question (Baton's
    request listed, LangGraph's interrupt returned, MAF's request_info event out of its run);
    `_timed` splits each cycle there into its pause and its resume. Outside a cycle, nothing.
    """
    marks = _PAUSE_MARKS.get()
    if marks is not None:
        marks.append(time.perf_counter())


def in_round_order(items: Sequence[T], n: int) -> Sequence[T]:
    """The order of round `n` (from 0): `items` as they are, reversed every other round.

    A load that rises or falls over the rounds then falls alike on each of them.
    """
    return items if n % 2 == 0 else items[::-1]


_SAY: Final = contextvars.ContextVar[Callable[[str], None] | None]("bench_say", default=None)


@contextlib.contextmanager
def reporting(to: Callable[[str], None]) -> Iterator[None]:
    """Within it, the bench tells `to` what each round measured as the round ends (`say`).

    `baton bench` prints these lines on stderr as it goes, each with the load average at its
    round's start, so that a run of several minutes shows where it is and what the machine did.
    """
    token = _SAY.set(to)
    try:
        yield
    finally:
        _SAY.reset(token)


def say(line: str) -> None:
    """Tell whoever watches the bench (`reporting`) one line; nothing when no one does."""
    if (to := _SAY.get()) is not None:
        to(line)


def say_round(what: str, n: int, rounds: int, loads: Sequence[float], measured: str) -> None:
    """Say what round `n` (from 0) of `rounds` of `what` measured, with its load (`loads[-1]`)."""
    say(f"{what}, round {n + 1} of {rounds} (load {loads[-1]}): {measured}")


def by_round(values: Sequence[float]) -> str:
    """A figure per round, as the bench prints it: `"1.07 0.95"`."""
    return " ".join(f"{value:.2f}" for value in values)


def peers_available() -> str | None:
    """Why the peers cannot be measured here (LangGraph not installed), or None."""
    try:
        import langgraph.checkpoint.sqlite  # noqa: F401
    except ImportError:
        return "LangGraph is not installed: pip install -e '.[bench]'"
    return None


def peer_figures(
    cycles: int = 300,
    rounds: int = 2,
    root: Path | None = None,
    workloads: tuple[str, ...] = tuple(WORKLOADS),
    in_flight: int = 1,
    paused: int = 1_000,
) -> dict[str, float | int | str]:
    """Every system's figures and Baton's ratios to its peers, from interleaved child processes.

    Args:
        cycles: Timed cycles per child (after `WARMUP` untimed ones), rounded up to a multiple
            of `in_flight`.
        rounds: Rounds of all of a workload's systems, alternating their order.
        root: Where the systems' files go (one disk for all; default: the system's temp).
        workloads: Which of `WORKLOADS` to measure, one after the other.
        in_flight: Runs in flight at once in each child (`in_flight` tasks, each going round
            the cycle; one untimed cycle each first). Above 1, the systems of
            `IN_FLIGHT_WORKLOADS`, every key prefixed `concurrent<in_flight>_`, and no floor.
        paused: LangGraph refund threads left at their interrupt for
            `refund_langgraph_bytes_per_paused_run` (with the refund workload, one at a time).

    Returns:
        `<workload>_<system>_cycles_per_s`, `_cpu_ms`, `_fsyncs_per_cycle` (when strace is
        present), `<workload>_vs_langgraph` and `_by_round`, `<workload>_fsyncs_per_cycle`
        (Baton's), `<workload>_cpu_vs_bare_maf`, `<workload>_cpu_vs_langgraph`,
        `<workload>_fsyncs_vs_langgraph` (when both were counted), `<workload>_floor_commit_us`,
        `<workload>_floor_vs_langgraph`, `<workload>_baton_own_ms`,
        `<workload>_<system>_pause_ms_p50` and the other `HALVES`, `<workload>_pause_vs_langgraph`,
        `<workload>_resume_vs_langgraph`, `minimal_rows_vs_langgraph`,
        `minimal_rows_cpu_vs_bare_maf`, `minimal_layers_ms` (see the module's docstring),
        `refund_langgraph_bytes_per_paused_run`, `peers_load1_max` (the highest 1-minute load
        average at the start of a round) and `peers_load1_by_round` (each round's, in order,
        workload by workload).
    """
    figures: dict[str, float | int | str] = {}
    loads: list[float] = []
    with tempfile.TemporaryDirectory(prefix="baton-peers-", dir=root) as scratch:
        for workload in workloads:
            folder = Path(scratch) / workload
            figures |= _compare(workload, cycles, rounds, folder, loads, in_flight)
        if "refund" in workloads and in_flight == 1:
            _, _, got = run_child(
                ["baton.bench_peers", "paused", "langgraph", str(paused)],
                Path(scratch) / "paused",
                what="langgraph paused",
                traced=False,
            )
            figures["refund_langgraph_bytes_per_paused_run"] = round(got["bytes_per_paused_run"])
    figures["peers_load1_max"] = max(loads)
    figures["peers_load1_by_round"] = by_round(loads)
    if in_flight == 1:
        return figures
    return {f"concurrent{in_flight}_{key}": value for key, value in figures.items()}


def bytes_vs_langgraph(figures: Mapping[str, float | int | str]) -> dict[str, float]:
    """`bytes_per_paused_run_vs_langgraph`, when `figures` hold both sides; else nothing.

    Baton's `bytes_per_paused_run` (`baton.bench`: a paused refund run) over
    `refund_langgraph_bytes_per_paused_run` (`peer_figures`: a paused LangGraph refund thread).
    """
    baton = figures.get("bytes_per_paused_run")
    langgraph = figures.get("refund_langgraph_bytes_per_paused_run")
    if baton is None or not langgraph:
        return {}
    return {"bytes_per_paused_run_vs_langgraph": round(float(baton) / float(langgraph), 2)}


def _compare(
    workload: str, cycles: int, rounds: int, scratch: Path, loads: list[float], in_flight: int
) -> dict[str, float | int | str]:
    """One workload's figures; the load average at each round's start goes to `loads`."""
    from baton.bench import measure_floor_commit_us

    systems = (WORKLOADS if in_flight == 1 else IN_FLIGHT_WORKLOADS)[workload]
    scratch.mkdir(parents=True, exist_ok=True)
    floor_ms = measure_floor_commit_us(scratch / "floor.db") / 1e3 if in_flight == 1 else 0.0
    best: dict[str, Round] = {}
    ratios: list[float] = []  # Baton's rate over LangGraph's, round by round
    for n in range(rounds):
        loads.append(round(os.getloadavg()[0], 2))
        this_round: dict[str, Round] = {}
        for system in in_round_order(systems, n):
            got, _, _ = run_child(
                child_args(workload, system, cycles, in_flight),
                scratch / f"{system}-{n}",
                what=f"{workload} {system}",
                traced=False,
            )
            if got.most_at_once < in_flight:
                raise RuntimeError(
                    f"the {workload} {system} child had at most {got.most_at_once} cycles under"
                    f" way at once, not {in_flight}"
                )
            if got.paused_cycles != got.cycles:
                raise RuntimeError(
                    f"{got.paused_cycles} of the {workload} {system} child's {got.cycles} timed"
                    " cycles marked their pause"
                )
            this_round[system] = got
            if system not in best or got.wall_s < best[system].wall_s:
                best[system] = got
        ratios.append(this_round["langgraph"].wall_s / this_round["baton"].wall_s)
        measured = ", ".join(
            f"{system} {got.cycles / got.wall_s:.1f}/s {got.cpu_s / got.cycles * 1e3:.2f} ms"
            for system, got in this_round.items()
        )
        in_flight_said = f", {in_flight} in flight" if in_flight > 1 else ""
        say_round(
            f"peers, {workload}{in_flight_said}",
            n,
            rounds,
            loads,
            f"{measured}; Baton over LangGraph {ratios[-1]:.2f}",
        )
    fsyncs: dict[str, float | None] = {}
    for system in systems:
        calls = fsyncs_of(
            functools.partial(child_args, workload, system, in_flight=in_flight),
            cycles,
            scratch / system,
            what=f"{workload} {system}",
        )
        timed = best[system].cycles  # `cycles` rounded up to a multiple of `in_flight`
        fsyncs[system] = None if calls is None else calls / timed
    rate = {system: got.cycles / got.wall_s for system, got in best.items()}
    cpu_ms = {system: got.cpu_s / got.cycles * 1e3 for system, got in best.items()}
    figures: dict[str, float | int | str] = {}
    for system in systems:
        figures[f"{workload}_{system}_cycles_per_s"] = round(rate[system], 1)
        figures[f"{workload}_{system}_cpu_ms"] = round(cpu_ms[system], 2)
        if (per_cycle := fsyncs[system]) is not None:
            figures[f"{workload}_{system}_fsyncs_per_cycle"] = round(per_cycle, 2)
        for half in HALVES:
            figures[f"{workload}_{system}_{half}"] = round(getattr(best[system], half), 2)
    figures[f"{workload}_vs_langgraph"] = round(rate["baton"] / rate["langgraph"], 2)
    figures[f"{workload}_vs_langgraph_by_round"] = by_round(ratios)
    figures[f"{workload}_cpu_vs_bare_maf"] = round(cpu_ms["baton"] / cpu_ms["maf_memory"], 2)
    figures[f"{workload}_cpu_vs_langgraph"] = round(cpu_ms["baton"] / cpu_ms["langgraph"], 2)
    for half in ("pause", "resume"):  # the medians of the best rounds
        baton_ms = getattr(best["baton"], f"{half}_ms_p50")
        langgraph_ms = getattr(best["langgraph"], f"{half}_ms_p50")
        figures[f"{workload}_{half}_vs_langgraph"] = round(baton_ms / langgraph_ms, 2)
    if (baton_fsyncs := fsyncs["baton"]) is not None:
        figures[f"{workload}_fsyncs_per_cycle"] = round(baton_fsyncs, 2)
        if langgraph_fsyncs := fsyncs["langgraph"]:  # unrounded, both
            figures[f"{workload}_fsyncs_vs_langgraph"] = round(baton_fsyncs / langgraph_fsyncs, 2)
    if in_flight > 1:  # the floor is a figure of one run at a time (see the module's docstring)
        return figures
    figures[f"{workload}_floor_commit_us"] = round(floor_ms * 1e3, 1)
    floor_cycle_ms = 1e3 / rate["maf_bare"] + 2 * floor_ms  # MAF's work and two durable commits
    figures[f"{workload}_floor_vs_langgraph"] = round(1e3 / floor_cycle_ms / rate["langgraph"], 2)
    figures[f"{workload}_baton_own_ms"] = round(1e3 / rate["baton"] - floor_cycle_ms, 3)
    if "baton_rows" in rate:
        rows_ms = 1e3 / rate["baton_rows"]
        figures[f"{workload}_rows_vs_langgraph"] = round(rate["baton_rows"] / rate["langgraph"], 2)
        figures[f"{workload}_rows_cpu_vs_bare_maf"] = round(
            cpu_ms["baton_rows"] / cpu_ms["maf_memory"], 2
        )
        figures[f"{workload}_layers_ms"] = round(1e3 / rate["baton"] - rows_ms, 3)
    return figures


def child_args(workload: str, system: str, cycles: int, in_flight: int = 1) -> list[str]:
    """One system's child: `python -m` these, then its folder (`IN_FLIGHT` only above 1)."""
    args = ["baton.bench_peers", workload, system, str(cycles)]
    return args if in_flight == 1 else [*args, str(in_flight)]


def fsyncs_of(
    args_for: Callable[[int], list[str]], cycles: int, folder: Path, *, what: str
) -> int | None:
    """The `fsync` and `fdatasync` calls of `cycles` timed cycles of the child `args_for(cycles)`.

    Counted apart from the timed rounds (a traced fsync stops the child, see `run_child`), in a
    traced child that marks its timed cycles' ends (`GATED`): the calls between the two marks.
    None where strace is missing or may not trace.
    """
    if TRACE is None:
        return None
    calls = run_child(args_for(cycles), folder / "traced", what=f"{what} traced")[1]
    return None if calls == -1 else calls


def run_child(
    module_args: list[str], folder: Path, *, what: str, traced: bool = True
) -> tuple[Round, int, dict[str, Any]]:
    """`python -m MODULE ARGS… FOLDER`: its round, its fsync calls, its whole JSON line.

    The child prints one JSON object as its last line, with at least `cycles`, `wall_s` and
    `cpu_s`. The calls are its `fsync` and `fdatasync` calls when `traced` (under `strace
    --seccomp-bpf`, which stops the child at those two calls only), else -1, as they are without
    strace or where tracing is not permitted. Time only an untraced child: each stop costs the
    child two trips through the tracer, which slows a system by how often it syncs (LangGraph's
    refund cycle, 16 fsyncs, ran at about half its untraced rate), not by what it does.
    """
    folder.mkdir(parents=True, exist_ok=True)
    summary = folder / "fsyncs.txt"
    trace = [*TRACE, "-o", str(summary)] if TRACE and traced else []
    done = subprocess.run(
        [*trace, sys.executable, "-m", *module_args, str(folder)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, GATED: "mark"} if trace else None,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the {what} cycles failed: {done.stderr[-2000:]}")
    got = json.loads(done.stdout.strip().splitlines()[-1])
    calls = timed_calls(summary.read_text(), what=what) if summary.exists() else -1
    fields = {name: got[name] for name in Round.__dataclass_fields__ if name in got}
    return Round(**fields), calls, got


_SYNC: Final = re.compile(r"^\d+\s+f(?:data)?sync\(")
"""A line of strace's where an `fsync` or `fdatasync` call begins (`PID  fsync(7 ...`)."""


def timed_calls(trace: str, *, what: str) -> int:
    """The `fsync` and `fdatasync` calls of strace's `trace` between the child's two marks."""
    lines = trace.splitlines()
    ends = [
        next((n for n, line in enumerate(lines) if f'"{MARK}{said}"' in line), None)
        for said in (TIMED, UNTIMED)
    ]
    if ends[0] is None or ends[1] is None:
        raise RuntimeError(f"the traced {what} child did not mark its timed cycles' ends")
    return sum(1 for line in lines[ends[0] + 1 : ends[1]] if _SYNC.match(line))


# the children ---------------------------------------------------------------------------------


async def _baton(workload: str, cycles: int, folder: Path, in_flight: int) -> Round:
    from baton.bench import APPROVE, MINIMAL_ANSWER, REFUND_120, register_minimal
    from baton.demo import seed_demo
    from baton.observability import configure_telemetry
    from baton.settings import Settings
    from baton.wiring import open_parts

    workflow, run_input, answer = "refund", dict[str, Any](REFUND_120), dict[str, Any](APPROVE)
    if workload == "minimal":
        register_minimal()
        workflow, run_input, answer = "bench_minimal", {"amount": 120}, dict(MINIMAL_ANSWER)
    settings = Settings(database_url=f"sqlite:///{folder / 'baton.db'}")
    if in_flight > 1:  # as many drives at once as runs in flight
        settings = settings.model_copy(update={"worker_concurrency": in_flight})
    configure_telemetry(settings)  # as `baton serve` does: off unless an exporter is configured
    async with open_parts(settings) as parts:
        await seed_demo(parts.store, settings.database_url)
        approver = await parts.store.get_user("lee")
        assert approver is not None

        async def cycle() -> None:
            done = await baton_cycle(parts, approver, workflow, run_input, answer)
            if workload == "refund" and not str(done.output["text"]).startswith("Refunded 120"):
                raise RuntimeError(f"run {done.id} ended with {done.output}")

        return await _timed(cycle, cycles, in_flight)


async def baton_cycle(
    parts: Parts, approver: User, workflow: str, run_input: dict[str, Any], answer: dict[str, Any]
) -> Run:
    """One cycle in Baton: start, drive to the pause, answer, drive to the end; the run ended.

    Each wait is for this run's drive alone, so with runs in flight the others go on meanwhile.
    """
    from human.store.base import RequestFilter

    run = await parts.runtime.start(workflow, dict(run_input), actor="sam")
    await parts.worker.drain(run.id)
    page = await parts.requests.list(RequestFilter(run_id=run.id, status="pending"))
    [request] = page.items
    paused()
    await parts.requests.respond(request.id, dict(answer), responder=approver)
    await parts.worker.drain(run.id)
    done = await parts.runtime.get(run.id)
    if done.status != "completed":
        raise RuntimeError(f"run {run.id} ended {done.status}: {done.error}")
    return done


async def _maf(cycles: int, folder: Path, in_flight: int, *, on_file: bool) -> Round:
    from agent_framework import FileCheckpointStorage, InMemoryCheckpointStorage

    from baton.bench import BARE_TYPES, bare_cycle

    async def cycle() -> None:
        storage = (
            FileCheckpointStorage(str(folder), allowed_checkpoint_types=BARE_TYPES)
            if on_file
            else InMemoryCheckpointStorage()
        )
        await bare_cycle(storage)

    return await _timed(cycle, cycles, in_flight)


async def _timed(cycle: Callable[[], Awaitable[object]], cycles: int, in_flight: int = 1) -> Round:
    """`cycles` (rounded up to a multiple of `in_flight`) timed, `in_flight` tasks going round.

    First `WARMUP` untimed cycles, one run at a time; with runs in flight, one untimed cycle per
    task, all at once. Each cycle that marks its pause (`paused()`) is split there.
    """
    under_way = most = 0
    halves: list[tuple[float, float]] = []  # each cycle's pause and resume, in seconds

    async def going_round(count: int) -> None:
        nonlocal under_way, most
        for _ in range(count):
            under_way += 1
            most = max(most, under_way)
            marks: list[float] = []
            mark = _PAUSE_MARKS.set(marks)  # this task's own: each task has its own context
            began = time.perf_counter()
            try:
                await cycle()
            finally:
                ended = time.perf_counter()
                _PAUSE_MARKS.reset(mark)
                under_way -= 1
            if marks:
                halves.append((marks[0] - began, ended - marks[0]))

    if in_flight == 1:
        await going_round(WARMUP)
        halves.clear()
        gate(TIMED)
        wall, cpu = time.perf_counter(), time.process_time()
        await going_round(cycles)
        took = time.perf_counter() - wall, time.process_time() - cpu
        gate(UNTIMED)
        return _round(cycles, took, 1, halves)
    per_task = -(-cycles // in_flight)
    await asyncio.gather(*(going_round(1) for _ in range(in_flight)))
    most = 0  # the timed cycles'
    halves.clear()
    gate(TIMED)
    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(going_round(per_task) for _ in range(in_flight)))
    took = time.perf_counter() - wall, time.process_time() - cpu
    gate(UNTIMED)
    return _round(per_task * in_flight, took, most, halves)


def gate(said: str) -> None:
    """Mark an end of the timed cycles (`said`: `TIMED` or `UNTIMED`) as `GATED` asks, if it does.

    Blocking: under `wait` the event loop waits with it (the clocks have stopped or not started).
    """
    how = os.environ.get(GATED)
    if how == "mark":
        os.access(f"{MARK}{said}", os.F_OK)
    elif how == "wait":
        sys.stdout.write(f"{said}\n")
        sys.stdout.flush()
        sys.stdin.readline()


def _round(
    cycles: int, took: tuple[float, float], most: int, halves: Sequence[tuple[float, float]]
) -> Round:
    """A child's `Round`, with the percentiles of its cycles' `halves` in ms.

    `took`: wall and CPU seconds; `halves`: each cycle's pause and resume, in seconds (the
    percentiles are 0 where no cycle marked its pause).
    """
    from human.stats import percentile

    def ms(n: int, share: float) -> float:
        return (percentile([pair[n] for pair in halves], share) or 0.0) * 1e3

    return Round(
        cycles,
        *took,
        most_at_once=most,
        paused_cycles=len(halves),
        pause_ms_p50=ms(0, 0.5),
        pause_ms_p95=ms(0, 0.95),
        resume_ms_p50=ms(1, 0.5),
        resume_ms_p95=ms(1, 0.95),
    )


async def _measure(workload: str, system: str, cycles: int, folder: Path, in_flight: int) -> Round:
    if system not in (WORKLOADS if in_flight == 1 else IN_FLIGHT_WORKLOADS).get(workload, ()):
        raise ValueError(f"no {system} child for the {workload} workload, {in_flight} in flight")
    if system == "baton":
        return await _baton(workload, cycles, folder, in_flight)
    if system == "langgraph":
        from baton.bench_langgraph import minimal_graph, refund_agent

        graph = refund_agent if workload == "refund" else minimal_graph
        async with graph(folder, in_flight) as cycle:
            return await _timed(cycle, cycles, in_flight)
    if workload == "refund":  # maf_memory, maf_bare
        from baton import bench_maf

        checkpoints = system == "maf_memory"
        async with bench_maf.refund_agent(folder, checkpoints=checkpoints) as cycle:
            return await _timed(cycle, cycles, in_flight)
    if system == "baton_rows":
        from baton.bench_rows import rows_cycle

        async with rows_cycle(folder) as rows:
            return await _timed(rows, cycles)
    if system == "maf_bare":
        from baton.bench import bare_cycle_in_place, bare_workflow

        return await _timed(functools.partial(bare_cycle_in_place, bare_workflow()), cycles)
    return await _maf(cycles, folder, in_flight, on_file=system == "maf_file")


def main(argv: list[str]) -> None:
    """`python -m baton.bench_peers WORKLOAD SYSTEM CYCLES [IN_FLIGHT] FOLDER`: its round, JSON.

    `paused langgraph N FOLDER`: N LangGraph refund threads left at their interrupt, and
    `bytes_per_paused_run` beside the round.
    """
    workload, system, cycles, folder = argv[0], argv[1], int(argv[2]), Path(argv[-1])
    in_flight = int(argv[3]) if len(argv) == 5 else 1
    if (workload, system) == ("paused", "langgraph"):  # CYCLES refund threads left paused
        from baton.bench_langgraph import bytes_per_paused_refund

        wall, cpu = time.perf_counter(), time.process_time()
        held = eventloop.run(bytes_per_paused_refund(folder, cycles))
        took = Round(cycles, time.perf_counter() - wall, time.process_time() - cpu)
        sys.stdout.write(json.dumps(asdict(took) | {"bytes_per_paused_run": held}) + "\n")
        return
    got = eventloop.run(_measure(workload, system, cycles, folder, in_flight))
    sys.stdout.write(json.dumps(asdict(got)))
    sys.stdout.write("\n")


if __name__ == "__main__":
    # The module imported by its name, not this `__main__` copy of it: the cycles of the other
    # bench modules mark their pause (`paused()`) in that one's timer.
    from baton import bench_peers

    bench_peers.main(sys.argv[1:])
