"""Baton beside its peers on the same work: one `request_info`, its answer, completion.

The minimal human-in-the-loop cycle, done four ways, each in a child process of its own (so its
CPU time and its fsyncs are its own), interleaved A/B/C/D then D/C/B/A over `rounds` rounds; each
system's figure is its best round (the one least disturbed by the machine):

- `baton`: a registered plain-MAF workflow (bare MAF's executor: `ctx.request_info`, then
  `@response_handler` completes) started with `Runtime.start`, driven by the worker to its pause,
  its request listed and answered with `RequestService.respond`, driven to completion: Baton's
  whole path on a SQLite file (WAL, `synchronous=FULL`), as `baton serve` wires it.
- `langgraph`: a LangGraph `StateGraph` whose node calls `interrupt()`, resumed with
  `Command(resume=...)`, checkpointed by `SqliteSaver` on a SQLite file (its defaults).
- `maf_file`: bare MAF with `FileCheckpointStorage` (JSON files; no fsync), restored on a fresh
  workflow instance as a new process would.
- `maf_memory`: bare MAF with `InMemoryCheckpointStorage`: the framework's own cost.

Per system: `cycles_per_s`, `cpu_ms` per cycle (the child's user + system CPU over the timed
cycles, `time.process_time`), and `fsyncs_per_cycle`: the `fsync` and `fdatasync` calls of a
round, counted by `strace --seccomp-bpf -f -c` when strace is here (only those calls stop the
child), less those of the same child run with no timed cycle (its set-up and warm-up), per
cycle. `peers_load1_max` is the highest 1-minute load average at the start of a round.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypedDict

if TYPE_CHECKING:
    from baton.wiring import Parts
    from human.records import User

SYSTEMS: Final = ("baton", "langgraph", "maf_file", "maf_memory")
_STRACE: Final = shutil.which("strace")
TRACE: Final = (
    (_STRACE, "--seccomp-bpf", "-f", "-qq", "-c", "-e", "trace=fsync,fdatasync")
    if _STRACE
    else None
)
"""How the children are traced to count their fsyncs, if strace is here."""
WARMUP: Final = 5


@dataclass(frozen=True)
class Round:
    """One child's timed cycles."""

    cycles: int
    wall_s: float
    cpu_s: float


def peers_available() -> str | None:
    """Why the peers cannot be measured here (LangGraph not installed), or None."""
    try:
        import langgraph.checkpoint.sqlite  # noqa: F401
    except ImportError:
        return "LangGraph is not installed: pip install -e '.[bench]'"
    return None


def peer_figures(
    cycles: int = 300, rounds: int = 2, root: Path | None = None
) -> dict[str, float | int | str]:
    """Every system's figures and Baton's ratios to its peers, from interleaved child processes.

    Args:
        cycles: Timed cycles per child (after `WARMUP` untimed ones).
        rounds: Rounds of all four systems, alternating their order.
        root: Where the systems' files go (one disk for all; default: the system's temp).

    Returns:
        `minimal_<system>_cycles_per_s`, `_cpu_ms`, `_fsyncs_per_cycle` (when strace is
        present), `minimal_vs_langgraph`, `minimal_fsyncs_per_cycle`, `minimal_cpu_vs_bare_maf`
        and `peers_load1_max` (the highest 1-minute load average at the start of a round).
    """
    best: dict[str, Round] = {}
    synced: dict[str, list[int]] = {system: [] for system in SYSTEMS}
    loads: list[float] = []
    with tempfile.TemporaryDirectory(prefix="baton-peers-", dir=root) as scratch:
        for n in range(rounds):
            loads.append(round(os.getloadavg()[0], 2))
            for system in SYSTEMS if n % 2 == 0 else tuple(reversed(SYSTEMS)):
                got, calls = _child(system, cycles, Path(scratch) / f"{system}-{n}")
                if system not in best or got.wall_s < best[system].wall_s:
                    best[system] = got
                synced[system].append(calls)
        baseline = {  # the same children with no timed cycle: their set-up and warm-up alone
            system: _child(system, 0, Path(scratch) / f"{system}-0-cycles")[1] for system in SYSTEMS
        }
    traced = TRACE is not None and all(-1 not in calls for calls in synced.values())
    fsyncs = {
        system: round((min(calls) - baseline[system]) / cycles, 2) if traced else None
        for system, calls in synced.items()
    }
    rate = {system: got.cycles / got.wall_s for system, got in best.items()}
    cpu_ms = {system: got.cpu_s / got.cycles * 1e3 for system, got in best.items()}
    figures: dict[str, float | int | str] = {}
    for system in SYSTEMS:
        figures[f"minimal_{system}_cycles_per_s"] = round(rate[system], 1)
        figures[f"minimal_{system}_cpu_ms"] = round(cpu_ms[system], 2)
        if (per_cycle := fsyncs[system]) is not None:
            figures[f"minimal_{system}_fsyncs_per_cycle"] = per_cycle
    figures["minimal_vs_langgraph"] = round(rate["baton"] / rate["langgraph"], 2)
    figures["minimal_cpu_vs_bare_maf"] = round(cpu_ms["baton"] / cpu_ms["maf_memory"], 2)
    if (baton_fsyncs := fsyncs["baton"]) is not None:
        figures["minimal_fsyncs_per_cycle"] = baton_fsyncs
    figures["peers_load1_max"] = max(loads)
    return figures


def _child(system: str, cycles: int, folder: Path) -> tuple[Round, int]:
    """One system's child: its round, and its `fsync` and `fdatasync` calls (-1: not counted)."""
    got, calls, _ = run_child(["baton.bench_peers", system, str(cycles)], folder, what=system)
    return got, calls


def run_child(
    module_args: list[str], folder: Path, *, what: str
) -> tuple[Round, int, dict[str, Any]]:
    """`python -m MODULE ARGS… FOLDER` traced: its round, its fsync calls, its whole JSON line.

    The child prints one JSON object as its last line, with at least `cycles`, `wall_s` and
    `cpu_s`. The calls are its `fsync` and `fdatasync` calls, -1 if they were not counted: under
    `strace --seccomp-bpf` only those two calls stop the child, so the timing is hardly touched;
    without strace (or where tracing is not permitted) they are not counted.
    """
    folder.mkdir(parents=True, exist_ok=True)
    summary = folder / "fsyncs.txt"
    trace = [*TRACE, "-o", str(summary)] if TRACE else []
    done = subprocess.run(
        [*trace, sys.executable, "-m", *module_args, str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the {what} cycles failed: {done.stderr[-2000:]}")
    got = json.loads(done.stdout.strip().splitlines()[-1])
    calls = _calls(summary.read_text()) if summary.exists() else -1
    return Round(cycles=got["cycles"], wall_s=got["wall_s"], cpu_s=got["cpu_s"]), calls, got


def _calls(summary: str) -> int:
    """The `calls` column of `strace -c`'s fsync and fdatasync rows."""
    total = 0
    for line in summary.splitlines():
        fields = line.split()
        if fields and fields[-1] in ("fsync", "fdatasync") and re.fullmatch(r"\d+", fields[3]):
            total += int(fields[3])
    return total


# the children ---------------------------------------------------------------------------------


async def _baton(cycles: int, folder: Path) -> Round:
    from baton.bench import register_minimal
    from baton.demo import seed_demo
    from baton.settings import Settings
    from baton.wiring import open_parts

    register_minimal()
    settings = Settings(database_url=f"sqlite:///{folder / 'baton.db'}")
    async with open_parts(settings) as parts:
        await seed_demo(parts.store, settings.database_url)
        approver = await parts.store.get_user("lee")
        assert approver is not None

        async def cycle() -> None:
            await baton_cycle(parts, approver)

        return await _timed(cycle, cycles)


async def baton_cycle(parts: Parts, approver: User) -> None:
    """One minimal cycle in Baton: start, drive to the pause, answer, drive to the end."""
    from baton.bench import MINIMAL_ANSWER
    from human.store.base import RequestFilter

    run = await parts.runtime.start("bench_minimal", {"amount": 120}, actor="sam")
    await parts.worker.drain()
    page = await parts.requests.list(RequestFilter(run_id=run.id, status="pending"))
    [request] = page.items
    await parts.requests.respond(request.id, dict(MINIMAL_ANSWER), responder=approver)
    await parts.worker.drain()
    if (await parts.runtime.get(run.id)).status != "completed":
        raise RuntimeError(f"run {run.id} did not complete")


async def _langgraph(cycles: int, folder: Path) -> Round:
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Command, interrupt

    class State(TypedDict, total=False):
        amount: float
        decision: str

    def gate(state: State) -> State:
        answer = interrupt({"amount": state["amount"]})
        return {"decision": f"{answer['decision']} {state['amount']}"}

    builder = StateGraph(State)
    builder.add_node("gate", gate)
    builder.add_edge(START, "gate")
    builder.add_edge("gate", END)
    conn = sqlite3.connect(folder / "langgraph.db", check_same_thread=False)
    graph = builder.compile(checkpointer=SqliteSaver(conn))
    count = 0

    async def cycle() -> None:
        nonlocal count
        count += 1
        config: Any = {"configurable": {"thread_id": f"t{count}"}}
        asked = graph.invoke({"amount": 120.0}, config)
        if "__interrupt__" not in asked:
            raise RuntimeError("LangGraph did not interrupt")
        done = graph.invoke(Command(resume={"decision": "approve"}), config)
        if done.get("decision") != "approve 120.0":
            raise RuntimeError(f"LangGraph ended with {done}")

    try:
        return await _timed(cycle, cycles)
    finally:
        conn.close()


async def _maf(cycles: int, folder: Path, *, on_file: bool) -> Round:
    from agent_framework import FileCheckpointStorage, InMemoryCheckpointStorage

    from baton.bench import BARE_TYPES, bare_cycle

    async def cycle() -> None:
        storage = (
            FileCheckpointStorage(str(folder), allowed_checkpoint_types=BARE_TYPES)
            if on_file
            else InMemoryCheckpointStorage()
        )
        await bare_cycle(storage)

    return await _timed(cycle, cycles)


async def _timed(cycle: Any, cycles: int) -> Round:
    for _ in range(WARMUP):
        await cycle()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(cycles):
        await cycle()
    return Round(cycles, time.perf_counter() - wall, time.process_time() - cpu)


async def _measure(system: str, cycles: int, folder: Path) -> Round:
    if system == "baton":
        return await _baton(cycles, folder)
    if system == "langgraph":
        return await _langgraph(cycles, folder)
    return await _maf(cycles, folder, on_file=system == "maf_file")


def main(argv: list[str]) -> None:
    """`python -m baton.bench_peers SYSTEM CYCLES FOLDER`: one child; its round as JSON."""
    system, cycles, folder = argv[0], int(argv[1]), Path(argv[2])
    got = asyncio.run(_measure(system, cycles, folder))
    sys.stdout.write(json.dumps({"cycles": got.cycles, "wall_s": got.wall_s, "cpu_s": got.cpu_s}))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
