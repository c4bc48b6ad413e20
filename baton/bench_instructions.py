"""Instructions a cycle, Baton beside its peers: counted by valgrind, whatever the machine does.

`baton bench` times cycles, and time on a shared machine moves by a third from one run to the
next (see docs/benchmarks.md): a change of a few per cent cannot be seen in it, nor can a
ratio to LangGraph be trusted to a tenth. The instructions a process executes do not move so:
valgrind's callgrind counts every one of them (in user space: the kernel's work, an fsync's
included, is not counted), and two counts of the same code differ by about 1 % at most (0.1 to
1.3 % in the runs so far).

Each system's child of `baton.bench_peers` (the same cycles `baton bench` times) runs under
callgrind with its counting off, and stops before its first timed cycle and after its last
(`bench_peers.GATED`): there `vgdb` switches the counting on and off, so that the count is of
the timed cycles alone, and over `cycles` it is one cycle's instructions. (Until 2026-12 the count
was the difference of two children, one with `cycles` timed cycles and one with none, both
counted whole: some five billion instructions of set-up each, which moved by some 40 million
between the two and ran callgrind's slowest way; a count now repeats to within a few hundred
instructions beside the cycles' own variation, and takes a fifth of the time.) `PYTHONHASHSEED=0`
makes the children's dict and set orders repeat, and `PYTHONDONTWRITEBYTECODE=1` makes anything
a cycle imports be compiled alike every time. The children run as many at once as the machine
has cores: callgrind runs a child's counted cycles some thirty times slower, and its count does
not depend on what runs beside it. A figure depends on the method a little (counted by hand as
the difference of 120 and 20 cycles, five of six figures came out up to 2.3 % higher than the
two-children method's): compare figures counted alike.

Figures: `<workload>_<system>_instructions` (a cycle's), `<workload>_instructions_vs_langgraph`
(LangGraph's over Baton's: how many times fewer Baton executes), `<workload>_instructions_vs_
maf_memory` (Baton's over bare MAF's with its checkpoints in memory, the CPU aim's baseline),
`<workload>_instructions_vs_maf_bare` (Baton's over bare MAF's with no checkpoint storage: MAF's
work of the cycle), and `<workload>_baton_own_instructions` (Baton's less bare MAF's; on the
refund workload `maf_bare` builds its agent each cycle where Baton keeps one, so this is short of
Baton's own by a build's instructions). On the minimal workload `baton_rows` is counted too
(Baton's statements and commits with none of its layers, `baton.bench_rows`):
`minimal_rows_instructions_vs_maf_memory`, and `minimal_layers_instructions`, Baton's less its.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Final

from baton.bench_peers import GATED, TIMED, UNTIMED, WORKLOADS, child_args, peers_available

SYSTEMS: Final = ("baton", "langgraph", "maf_memory", "maf_bare")
"""The systems counted, on every workload."""
ROWS: Final = "baton_rows"
"""Counted too where the workload has it (the minimal one): Baton's statements, no layers."""


def systems_of(workload: str) -> tuple[str, ...]:
    """The systems counted on `workload`."""
    return SYSTEMS + ((ROWS,) if ROWS in WORKLOADS[workload] else ())


_VALGRIND: Final = shutil.which("valgrind")
_VGDB: Final = shutil.which("vgdb")
_VGDB_WAIT: Final = 120.0
"""Seconds vgdb may take to switch a child's counting (it takes well under one)."""
_COLLECTED: Final = re.compile(r"Collected : (\d+)")


def instructions_unavailable() -> str | None:
    """Why instructions cannot be counted here (valgrind or a peer missing), or None."""
    if _VALGRIND is None or _VGDB is None:
        return "valgrind is not installed (Debian: apt-get install valgrind)"
    return peers_available()


def count(python_args: list[str], folder: Path, *, what: str) -> int:
    """The instructions of the timed cycles of the child `python ARGS… FOLDER`.

    The child runs under callgrind with its counting off (valgrind's least slowing: its set-up
    runs some five times faster so than counted) and stops at its timed cycles' two ends
    (`bench_peers.GATED`); there `vgdb` switches the counting on and off, so that the count is of
    the timed cycles alone (and of some 20,000 instructions of the hand-over, which repeat to
    within a few hundred).
    """
    if _VALGRIND is None or _VGDB is None:
        raise RuntimeError(instructions_unavailable())
    folder.mkdir(parents=True, exist_ok=True)
    log, said = folder / "valgrind.log", folder / "stderr.txt"
    with (
        said.open("w") as stderr,
        subprocess.Popen(
            [
                _VALGRIND,
                "--tool=callgrind",
                "--instr-atstart=no",
                f"--callgrind-out-file={folder / 'callgrind.out'}",
                f"--log-file={log}",
                sys.executable,
                *python_args,
                str(folder),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env={
                **os.environ,
                GATED: "wait",
                "PYTHONHASHSEED": "0",
                "PYTHONDONTWRITEBYTECODE": "1",
            },
        ) as child,
    ):
        assert child.stdin is not None
        assert child.stdout is not None
        switched = 0
        try:
            for line, switch in ((TIMED, "on"), (UNTIMED, "off")):
                if child.stdout.readline().strip() != line:
                    break  # it failed before or within its cycles: told below
                _instrumentation(child.pid, switch, what)
                child.stdin.write("go on\n")
                child.stdin.flush()
                switched += 1
            child.stdin.close()
            child.stdout.read()
        except BaseException:
            child.kill()  # (and leaving the `with` waits for it)
            raise
    if child.returncode != 0:
        tail = log.read_text()[-1000:] if log.exists() else ""
        raise RuntimeError(
            f"the {what} child failed under callgrind: {said.read_text()[-2000:]}\n{tail}".rstrip()
        )
    if switched != 2:
        raise RuntimeError(f"the {what} child did not stop at its timed cycles' ends")
    found = _COLLECTED.search(log.read_text())
    if found is None:
        raise RuntimeError(f"callgrind reported no count for the {what} child (see {log})")
    return int(found.group(1))


def _instrumentation(pid: int, switch: str, what: str) -> None:
    """Switch callgrind's counting in the child `pid` `switch` ("on", "off") through vgdb.

    The child waits in a read for its go-ahead: vgdb reaches a valgrind blocked in a system call
    through ptrace.
    """
    assert _VGDB is not None
    try:
        done = subprocess.run(
            [_VGDB, f"--pid={pid}", "instrumentation", switch],
            capture_output=True,
            text=True,
            check=False,
            timeout=_VGDB_WAIT,
        )
    except subprocess.TimeoutExpired:
        raise RuntimeError(
            f"vgdb did not switch the {what} child's counting {switch} in {_VGDB_WAIT:.0f} s"
            " (it reaches a waiting child through ptrace: may this user trace processes here?)"
        ) from None
    if done.returncode != 0:
        raise RuntimeError(
            f"vgdb could not switch the {what} child's counting {switch}: "
            f"{(done.stderr or done.stdout)[-1000:]}"
        )


def per_cycle(counted: int, cycles: int) -> float:
    """One cycle's instructions: the count of `cycles` timed cycles, over them."""
    if cycles < 1:
        raise ValueError("at least one timed cycle")
    return counted / cycles


def ratios(workload: str, counts: dict[str, float]) -> dict[str, float]:
    """A workload's figures from each system's instructions a cycle."""
    baton, langgraph, bare = counts["baton"], counts["langgraph"], counts["maf_bare"]
    figures = {
        **{f"{workload}_{system}_instructions": round(n) for system, n in counts.items()},
        f"{workload}_instructions_vs_langgraph": round(langgraph / baton, 3),
        f"{workload}_instructions_vs_maf_memory": round(baton / counts["maf_memory"], 3),
        f"{workload}_instructions_vs_maf_bare": round(baton / bare, 3),
        f"{workload}_baton_own_instructions": round(baton - bare),
    }
    if (rows := counts.get(ROWS)) is not None:
        figures[f"{workload}_rows_instructions_vs_maf_memory"] = round(
            rows / counts["maf_memory"], 3
        )
        figures[f"{workload}_layers_instructions"] = round(baton - rows)
    return figures


def instruction_figures(
    cycles: int = 50,
    root: Path | None = None,
    workloads: Sequence[str] = tuple(WORKLOADS),
    jobs: int | None = None,
) -> dict[str, float | int | str]:
    """Every system's instructions a cycle on `workloads`, and Baton's ratios (module docstring).

    Args:
        cycles: Timed cycles of each child, the ones counted (after `bench_peers.WARMUP`
            untimed ones).
        root: Where the children's files go (default: the system's temp).
        workloads: Which of `bench_peers.WORKLOADS` to count.
        jobs: Children at once (default: the cores this process may use).
    """
    if (missing := instructions_unavailable()) is not None:
        raise RuntimeError(missing)
    if cycles < 1:
        raise ValueError("at least one timed cycle")
    at_once = jobs or len(os.sched_getaffinity(0))
    children = [(workload, system) for workload in workloads for system in systems_of(workload)]
    figures: dict[str, float | int | str] = {"instructions_load1": round(os.getloadavg()[0], 2)}
    with tempfile.TemporaryDirectory(prefix="baton-instructions-", dir=root) as scratch:
        pool = ThreadPoolExecutor(max_workers=at_once)
        try:
            counted = dict(
                zip(
                    children,
                    pool.map(
                        lambda child: count(
                            ["-m", *child_args(child[0], child[1], cycles)],
                            Path(scratch) / "-".join(child),
                            what=f"{child[0]} {child[1]}",
                        ),
                        children,
                    ),
                    strict=True,
                )
            )
        finally:  # a failed child ends the count: the children not yet started never start
            pool.shutdown(cancel_futures=True)
    for workload in workloads:
        counts = {
            system: per_cycle(counted[(workload, system)], cycles)
            for system in systems_of(workload)
        }
        figures |= ratios(workload, counts)
    figures["instructions_cycles"] = cycles
    figures["instructions_load1_end"] = round(os.getloadavg()[0], 2)
    return figures
