"""Baton with 32 runs in flight at once: what group commit saves, and how close to the CPU it runs.

The minimal workload of `baton.bench_peers` (the registered `bench_minimal` workflow: one
`request_info`, its answer, completion), with `IN_FLIGHT` runs in flight at once in one child
process, on a SQLite file (WAL, `synchronous=FULL`) wired as `baton serve` wires it, its worker
driving up to `IN_FLIGHT` runs at a time. Each of `IN_FLIGHT` tasks goes round the cycle: start
(`Runtime.start`), the drive to the pause (`Worker.drain`), the request listed and answered
(`RequestService.respond`), the drive to completion (`Worker.drain`), each wait for that task's
own run's drive only (`Worker.drain(run_id)`), so the tasks drift apart and a commit shares its
fsync with whatever other runs' pauses and answers queued meanwhile, as independent runs would.
(Before 6db006a each waited for every drive under way, so the tasks went round in step, all the
pauses committing together, then all the answers: group commit's best case.)

The child is run as `baton.bench_peers` runs its systems (`run_child`): CPU by
`time.process_time` over the timed cycles (every thread of the child, the writer thread
included), untraced; fsyncs by one more child of each variant under `strace --seccomp-bpf -f`,
between the marks it makes at its timed cycles' ends (`bench_peers.GATED`). Over `rounds` rounds
the figure is the best round's.

- `concurrent32_cycles_per_s`: completed cycles per second of wall time.
- `concurrent32_cpu_ms`: the child's CPU milliseconds per cycle.
- `concurrent32_fsyncs_per_cycle`: `fsync` + `fdatasync` calls per cycle (strace; absent
  without it); `concurrent32_durable_commits_per_cycle`: the store's own count of FULL commits
  (`SqliteStore.durable_syncs`) per cycle, which needs no strace.
- `concurrent32_vs_cpu_ceiling`: cycles/s ÷ (1000 ÷ CPU ms per cycle * usable cores). Usable
  cores = min(len(os.sched_getaffinity(0)), 1): the process is one asyncio event loop, which
  holds the GIL for almost all of a cycle's work (MAF, pydantic, the service layer); its one
  writer thread runs SQLite's C code and waits on fsync with the GIL released, a small share,
  not a second core's worth of work. So 1.0 means the loop never waits (for the disk or a
  core); a figure a little above 1 is the writer's share running beside the loop.
- `concurrent32_waiting_for_cpu`: the share of the wall time the event loop's thread waited,
  runnable, for a core (`/proc/thread-self/schedstat`; 0 where it cannot be read): on a busy
  machine, what keeps the figure above from 1 that is not the process's own waiting.
- `concurrent32_solo_…`: the same, the store committing one transaction per batch.
- `concurrent32_vs_solo`: cycles/s with group commit ÷ without, same run.
- `concurrent32_load1`: the 1-minute load average at the start of the first round;
  `concurrent32_load1_by_round`: at the start of each round, in order.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Final

from baton import eventloop
from baton.bench_peers import (
    TIMED,
    UNTIMED,
    Round,
    baton_cycle,
    by_round,
    fsyncs_of,
    gate,
    in_round_order,
    run_child,
    say_round,
)
from human.store.sqlite import SqliteStore

IN_FLIGHT: Final = 32
MODULE: Final = "baton.bench_concurrent"
USABLE_CORES: Final = min(len(os.sched_getaffinity(0)), 1)
"""The cores the CPU ceiling counts: one event loop (see the module's docstring)."""


VARIANTS: Final = {
    "group": (SqliteStore.max_batch, SqliteStore.batch_window_s),
    "solo": (1, 0.0),
}
"""The store's batch limit and window per variant: group commit as shipped, and one per commit."""


def concurrent_figures(
    cycles: int = 640, rounds: int = 2, root: Path | None = None
) -> dict[str, float | int | str]:
    """The `concurrent32_` figures from child processes, with and without group commit.

    Rounds alternate the variants (group, solo, then solo, group, ...); each variant's figure is
    its best round. `solo` is the same child with the store's batches limited to one transaction
    (`SqliteStore.max_batch = 1`): every durable write its own fsync, as before group commit.

    Args:
        cycles: Timed cycles per child, rounded up to a multiple of `IN_FLIGHT` (after one
            untimed cycle per task).
        rounds: Rounds of both variants.
        root: Where the children's files go (default: the system's temp).
    """
    per_task = max(1, -(-cycles // IN_FLIGHT))
    load1 = round(os.getloadavg()[0], 2)
    best: dict[str, Round] = {}
    counted: dict[str, int | None] = {}
    commits: dict[str, list[int]] = {name: [] for name in VARIANTS}
    waited: dict[str, float] = {}
    loads: list[float] = []
    with tempfile.TemporaryDirectory(prefix="baton-concurrent-", dir=root) as scratch:
        for n in range(rounds):
            loads.append(round(os.getloadavg()[0], 2))
            this_round: dict[str, Round] = {}
            for name in in_round_order(tuple(VARIANTS), n):
                got, _, extra = run_child(
                    _args(name, per_task), Path(scratch) / f"{name}-{n}", what=name, traced=False
                )
                this_round[name] = got
                if name not in best or got.wall_s < best[name].wall_s:
                    best[name], waited[name] = got, float(extra["runqueue_s"])
                commits[name].append(int(extra["durable_syncs"]))
            said = (
                f"{name} commit {got.cycles / got.wall_s:.1f}/s" for name, got in this_round.items()
            )
            say_round(f"{IN_FLIGHT} in flight", n, rounds, loads, ", ".join(said))
        for name in VARIANTS:
            counted[name] = fsyncs_of(
                functools.partial(_args, name), per_task, Path(scratch) / name, what=name
            )
    figures: dict[str, float | int | str] = {}
    rates: dict[str, float] = {}
    for name, prefix in (("group", "concurrent32"), ("solo", "concurrent32_solo")):
        got = best[name]
        rate = rates[name] = got.cycles / got.wall_s
        cpu_ms = got.cpu_s / got.cycles * 1e3
        figures[f"{prefix}_cycles_per_s"] = round(rate, 1)
        figures[f"{prefix}_cpu_ms"] = round(cpu_ms, 2)
        figures[f"{prefix}_durable_commits_per_cycle"] = round(min(commits[name]) / got.cycles, 3)
        if (calls := counted[name]) is not None:
            figures[f"{prefix}_fsyncs_per_cycle"] = round(calls / got.cycles, 3)
        figures[f"{prefix}_vs_cpu_ceiling"] = round(rate / (1000 / cpu_ms * USABLE_CORES), 3)
        figures[f"{prefix}_waiting_for_cpu"] = round(waited[name] / got.wall_s, 3)
    figures["concurrent32_vs_solo"] = round(rates["group"] / rates["solo"], 2)
    figures["concurrent32_load1"] = load1
    figures["concurrent32_load1_by_round"] = by_round(loads)
    return figures


def _args(variant: str, per_task: int) -> list[str]:
    max_batch, window_s = VARIANTS[variant]
    return [MODULE, str(per_task), str(max_batch), str(window_s)]


async def _in_flight(
    per_task: int, folder: Path, *, max_batch: int, window_s: float
) -> tuple[Round, int, float]:
    """`IN_FLIGHT` tasks of `per_task` timed cycles each: the round, FULL commits, run-queue s."""
    from baton.bench import MINIMAL_ANSWER, register_minimal
    from baton.demo import seed_demo
    from baton.observability import configure_telemetry
    from baton.settings import Settings
    from baton.wiring import open_parts

    register_minimal()
    settings = Settings(
        database_url=f"sqlite:///{folder / 'baton.db'}", worker_concurrency=IN_FLIGHT
    )
    configure_telemetry(settings)  # as `baton serve` does: off unless an exporter is configured
    answer = dict(MINIMAL_ANSWER)
    async with open_parts(settings) as parts:
        store = parts.store
        if not isinstance(store, SqliteStore):
            raise RuntimeError("the concurrent figures are SQLite's")
        store.max_batch, store.batch_window_s = max_batch, window_s
        await seed_demo(store, settings.database_url)
        approver = await store.get_user("lee")
        assert approver is not None

        async def cycles(count: int) -> None:
            for _ in range(count):
                await baton_cycle(parts, approver, "bench_minimal", {"amount": 120}, answer)

        await asyncio.gather(*(cycles(1) for _ in range(IN_FLIGHT)))  # warm-up
        gate(TIMED)
        synced, queued = store.durable_syncs, _runqueue_s()
        wall, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(cycles(per_task) for _ in range(IN_FLIGHT)))
        timed = Round(per_task * IN_FLIGHT, time.perf_counter() - wall, time.process_time() - cpu)
        gate(UNTIMED)
        return timed, store.durable_syncs - synced, _runqueue_s() - queued


def _runqueue_s() -> float:
    """Seconds this thread (the event loop's) has waited, runnable, for a core (0 if unknown)."""
    try:
        return int(Path("/proc/thread-self/schedstat").read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def main(argv: list[str]) -> None:
    """`python -m baton.bench_concurrent PER_TASK MAX_BATCH WINDOW_S FOLDER`: its round as JSON."""
    per_task, max_batch, window_s, folder = (
        int(argv[0]),
        int(argv[1]),
        float(argv[2]),
        Path(argv[3]),
    )
    got, synced, queued = eventloop.run(
        _in_flight(per_task, folder, max_batch=max_batch, window_s=window_s)
    )
    line = {"cycles": got.cycles, "wall_s": got.wall_s, "cpu_s": got.cpu_s}
    sys.stdout.write(json.dumps(line | {"durable_syncs": synced, "runqueue_s": queued}) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
