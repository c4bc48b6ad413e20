"""Resident memory of a Baton process over many completed drives, and what it holds per run.

Each workload runs in a child process of its own (`python -m baton.bench_memory WORKFLOW CYCLES
WARMUP FOLDER [--built-per-drive]`), wired as `baton serve` wires itself: settings from the
environment, logging at WARNING, `configure_telemetry` (nothing exports: metrics and MAF's spans
off), `open_parts` with its worker, on a new demo-seeded SQLite file. A cycle starts a run, the
worker drives it to its pause, its request is answered, the worker drives it to completion: two
completed drives. After `WARMUP` untimed cycles (SQLite's page caches and the interpreter's fill
up), the child reads its RSS (psutil, after `gc.collect()`), then again every
`MARK_EVERY_DRIVES` drives and at the end:

- `rss_growth_mb_10k_drives`: the last reading minus the first, `bench_minimal` (bare MAF's
  one-`request_info` executor registered on Baton, `baton.bench.register_minimal`), 5,000 cycles
  by default (`rss_drives`). `rss_growth_mb_by_2k_drives`: the growth at each mark, in MB.
- `refund_rss_growth_mb_2k_drives`: the same for `refund` (three scripted model turns, an
  approval, the back office's refund), 1,000 cycles by default (`refund_rss_drives`).

The child also reports, after warm-up and at the end, what it holds per run (`held_of`): jobs
the worker holds, tasks alive, drives' checkpoint storages alive, and the live objects of every
class of Baton's, MAF's, OpenTelemetry's and pydantic's modules; those counts must not grow with
the runs done (tests/benchmarks/test_bench_memory.py). The shipped workflows keep their built
instances (`register(reuse=True)`); `--built-per-drive` builds one for every drive instead, as
for a workflow registered without reuse (MAF's agents and tools are then made for every drive).
"""

from __future__ import annotations

import asyncio
import gc
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Final

import psutil  # type: ignore[import-untyped]

from baton import eventloop

MINIMAL_CYCLES: Final = 5000
REFUND_CYCLES: Final = 1000
WARMUP_CYCLES: Final = 200
MARK_EVERY_DRIVES: Final = 2000
DRIVES_PER_CYCLE: Final = 2
HELD_MODULES: Final = (
    *("baton.", "human.", "workflows.", "executors.", "web."),
    *("agent_framework", "opentelemetry", "pydantic"),
)
"""Whose classes' live objects are counted (`held_of`)."""


def rss_figures(
    drives: int = MINIMAL_CYCLES * DRIVES_PER_CYCLE,
    refund_drives: int = REFUND_CYCLES * DRIVES_PER_CYCLE,
    warmup_cycles: int = WARMUP_CYCLES,
    root: Path | None = None,
) -> dict[str, float | int | str]:
    """The RSS growth of a child process over `drives` minimal and `refund_drives` refund drives.

    Args:
        drives: Completed drives of `bench_minimal` after the warm-up (two a cycle).
        refund_drives: Completed drives of `refund` after the warm-up.
        warmup_cycles: Untimed cycles before the first reading.
        root: Where the children's databases go (default: the system's temp).

    Returns:
        `rss_growth_mb_10k_drives`, `rss_growth_mb_by_2k_drives`, `rss_drives`,
        `refund_rss_growth_mb_2k_drives`, `refund_rss_drives` (see the module docstring).
    """
    with tempfile.TemporaryDirectory(prefix="baton-rss-", dir=root) as scratch:
        minimal = run_child("bench_minimal", drives // 2, warmup_cycles, Path(scratch) / "min")
        refund = run_child("refund", refund_drives // 2, warmup_cycles, Path(scratch) / "refund")
    return {
        "rss_growth_mb_10k_drives": _growth_mb(minimal["rss"]),
        "rss_growth_mb_by_2k_drives": " ".join(
            f"{(rss - minimal['rss'][0]) / 2**20:.2f}" for rss in minimal["rss"][1:]
        ),
        "rss_drives": minimal["drives"],
        "refund_rss_growth_mb_2k_drives": _growth_mb(refund["rss"]),
        "refund_rss_drives": refund["drives"],
    }


def _growth_mb(readings: list[int]) -> float:
    return round((readings[-1] - readings[0]) / 2**20, 2)


def run_child(
    workflow: str, cycles: int, warmup: int, folder: Path, *, built_per_drive: bool = False
) -> dict[str, Any]:
    """One child's readings: `drives`, `rss` (bytes, first after warm-up) and `held` (two).

    Raises:
        RuntimeError: If the child fails.
    """
    folder.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "baton.bench_memory", workflow, str(cycles), str(warmup)]
    flags = ["--built-per-drive"] if built_per_drive else []
    done = subprocess.run(
        [*command, str(folder), *flags], capture_output=True, text=True, check=False, cwd=Path.cwd()
    )
    if done.returncode != 0:
        raise RuntimeError(f"the {workflow} memory child failed: {done.stderr[-2000:]}")
    got: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return got


def held_of(parts: Any) -> dict[str, int]:
    """What a process holds that could grow with the runs it did: exact counts, after a full GC.

    Jobs the worker holds (`Worker.holding`), tasks alive, and the live objects of each class of
    `HELD_MODULES` (by `module.qualname`).
    """
    gc.collect()
    counts: Counter[str] = Counter()
    for obj in gc.get_objects():
        kind = type(obj)
        module = kind.__dict__.get("__module__")
        if isinstance(module, str) and module.startswith(HELD_MODULES):
            counts[f"{module}.{kind.__qualname__}"] += 1
    counts["worker jobs held"] = parts.worker.holding()
    counts["asyncio tasks"] = len(asyncio.all_tasks())
    return dict(counts)


async def _measure(
    workflow: str, cycles: int, warmup: int, folder: Path, built_per_drive: bool
) -> dict[str, Any]:
    from baton.bench import (
        APPROVE,
        MINIMAL_ANSWER,
        REFUND_120,
        one_cycle,
        register_minimal,
        seeded_parts,
    )
    from baton.observability import configure_telemetry
    from baton.settings import Settings
    from baton.telemetry import configure_logging
    from workflows.platform import registry

    configure_logging("WARNING")
    configure_telemetry(Settings())  # as `baton serve` and `baton worker` do
    register_minimal()
    given, answer = (
        ({"amount": 120}, MINIMAL_ANSWER) if workflow == "bench_minimal" else (REFUND_120, APPROVE)
    )
    me = psutil.Process()
    async with seeded_parts(f"sqlite:///{folder / 'baton.db'}") as parts:
        if built_per_drive:  # the shipped workflows are registered by now
            registry.build_for_every_drive(workflow)

        async def cycle() -> None:
            await one_cycle(parts, workflow, given, answer)

        for _ in range(warmup):
            await cycle()
        held = [held_of(parts.parts)]
        readings = [me.memory_info().rss]
        for n in range(1, cycles + 1):
            await cycle()
            if n * DRIVES_PER_CYCLE % MARK_EVERY_DRIVES == 0 or n == cycles:
                gc.collect()
                readings.append(me.memory_info().rss)
        held.append(held_of(parts.parts))
    return {"drives": cycles * DRIVES_PER_CYCLE, "rss": readings, "held": held}


def main(argv: list[str]) -> None:
    """`python -m baton.bench_memory WORKFLOW CYCLES WARMUP FOLDER [--built-per-drive]`: JSON."""
    workflow, cycles, warmup, folder = argv[0], int(argv[1]), int(argv[2]), Path(argv[3])
    built_per_drive = "--built-per-drive" in argv[4:]
    got = eventloop.run(_measure(workflow, cycles, warmup, folder, built_per_drive))
    sys.stdout.write(json.dumps(got) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
