"""The bench's rounds: each reverses the last one's order; every thread's switches count.

And the one ratio `baton bench` takes across two of its parts (Baton's bytes over LangGraph's),
and each timed cycle split at its pause into the pause and the resume.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from baton import bench, bench_peers
from baton.bench import WorkerCycles, worker_figures
from baton.bench_peers import (
    WARMUP,
    Round,
    _timed,
    bytes_vs_langgraph,
    in_round_order,
    paused,
    reporting,
    timed_calls,
)


def test_every_other_round_runs_in_reverse() -> None:
    assert [in_round_order((1, 2, 4), n) for n in range(3)] == [(1, 2, 4), (4, 2, 1), (1, 2, 4)]


async def test_the_worker_counts_are_measured_forth_then_back_and_summed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    measured: list[int] = []

    async def new_database(server_url: str, what: str) -> str:
        return f"{server_url}/{what}"

    async def measure(db_url: str, workers: int, cycles: int, folder: Path) -> WorkerCycles:
        measured.append(workers)
        return WorkerCycles(seconds=1.0, cpu_s=0.01 * workers, waits=workers, preemptions=3)

    monkeypatch.setattr(bench, "_new_database", new_database)
    monkeypatch.setattr(bench, "measure_worker_cycles", measure)

    said: list[str] = []
    with reporting(said.append):
        figures = await worker_figures("postgresql://bench", 10, tmp_path, rounds=3)

    assert measured == [1, 2, 4, 4, 2, 1, 1, 2, 4]
    assert figures["pg_cpu_ms_per_cycle_workers_2"] == 2.0  # 3 rounds of 20 ms over 3 of 10 cycles
    assert figures["pg_cpu_4_workers_vs_1"] == 4.0
    assert figures["pg_waits_per_cycle_workers_4"] == 0.4
    assert figures["pg_preemptions_per_cycle_workers_1"] == 0.3
    assert figures["pg_cycles_per_s_workers_1"] == 10.0
    assert len(str(figures["pg_workers_load1_by_round"]).split()) == 3
    # each round said as it ends, with its load: 10, 20 and 40 ms of CPU over 10 cycles
    assert [line.split(" (load ")[0] for line in said] == [
        f"PostgreSQL workers, round {n} of 3" for n in (1, 2, 3)
    ]
    assert all(
        line.endswith("1 1.00 ms, 2 2.00 ms, 4 4.00 ms of the workers' CPU a cycle")
        for line in said
    )


def test_a_process_switches_are_counted_on_every_thread() -> None:
    process = psutil.Process()
    before = bench._switches(process)[0]
    slept, counted = threading.Event(), threading.Event()

    def sleeper() -> None:
        for _ in range(20):
            time.sleep(0.001)  # each sleep gives the CPU up: a voluntary switch
        slept.set()
        counted.wait()  # alive while counted: an ended thread's task is gone from /proc

    thread = threading.Thread(target=sleeper)
    thread.start()
    slept.wait()
    main_thread_only = process.num_ctx_switches().voluntary
    after = bench._switches(process)[0]
    counted.set()
    thread.join()

    # the sleeper's twenty waits count, which the main thread's own count does not see
    assert after - before >= 20
    assert after >= main_thread_only + 20


def test_a_paused_runs_bytes_are_divided_by_langgraphs_only_when_both_were_measured() -> None:
    both = {"bytes_per_paused_run": 7_897, "refund_langgraph_bytes_per_paused_run": 12_186}
    assert bytes_vs_langgraph(both) == {"bytes_per_paused_run_vs_langgraph": 0.65}
    assert bytes_vs_langgraph({"bytes_per_paused_run": 7_897}) == {}  # no peers measured
    assert bytes_vs_langgraph({"refund_langgraph_bytes_per_paused_run": 12_186}) == {}


async def test_each_timed_cycle_is_split_at_its_pause_and_the_warm_up_is_left_out() -> None:
    begun = 0

    async def cycle() -> None:
        nonlocal begun
        begun += 1
        await asyncio.sleep(0.002)
        paused()
        await asyncio.sleep(0.004)
        paused()  # a second mark moves nothing: the pause is the first

    got = await _timed(cycle, 5)

    assert begun == WARMUP + 5
    assert got.paused_cycles == 5
    # lower bounds only: a sleep does not end before its time, however busy the machine
    assert 2 <= got.pause_ms_p50 <= got.pause_ms_p95
    assert 4 <= got.resume_ms_p50 <= got.resume_ms_p95


async def test_with_runs_in_flight_each_cycle_has_its_own_pause() -> None:
    """Of two tasks going round at once, the one whose cycles mark is split; the other is not.

    The marking cycles take 3 ms to their mark and 1 ms after it, while the other task's cycles,
    0.5 ms each, begin and end meanwhile: marks shared between the tasks would split those too,
    and shorter.
    """
    order: dict[asyncio.Task[object], int] = {}  # each task by the order it began in

    async def cycle() -> None:
        task = asyncio.current_task()
        assert task is not None
        if order.setdefault(task, len(order)) % 2 == 0:  # the first of each gather's two tasks
            await asyncio.sleep(0.003)
            paused()
            await asyncio.sleep(0.001)  # the other task's cycles end meanwhile
        else:
            await asyncio.sleep(0.0005)

    got = await _timed(cycle, 8, in_flight=2)

    assert got.most_at_once == 2
    assert got.cycles == 8
    assert len(order) == 4  # two tasks untimed (one cycle each), then two timed
    assert got.paused_cycles == 4  # the marking task's four, none of the other's
    assert got.pause_ms_p50 >= 3  # lower bound: a sleep does not end before its time


async def test_a_cycle_marking_no_pause_is_not_split_and_a_mark_outside_one_is_nothing() -> None:
    paused()  # no cycle under way

    async def cycle() -> None:
        await asyncio.sleep(0)

    got = await _timed(cycle, 3)

    assert (got.paused_cycles, got.pause_ms_p50, got.resume_ms_p95) == (0, 0.0, 0.0)


def test_a_child_whose_cycles_did_not_all_mark_their_pause_fails_the_bench(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def child(module_args: list[str], folder: Path, *, what: str, traced: bool = True) -> Any:
        system = module_args[2]
        marked = 2 if system == "langgraph" else 3  # LangGraph's child lost a cycle's mark
        return Round(3, 1.0, 1.0, paused_cycles=marked, pause_ms_p50=1.0, resume_ms_p50=1.0), -1, {}

    monkeypatch.setattr(bench_peers, "run_child", child)

    with pytest.raises(RuntimeError, match="2 of the minimal langgraph child's 3 timed cycles"):
        bench_peers._compare("minimal", 3, 1, tmp_path, [], 1)


TRACE = """\
501   fsync(3)                          = 0
501   access("/baton-bench-mark/timed cycles begin", F_OK) = -1 ENOENT (No such file or directory)
502   fdatasync(5 <unfinished ...>
501   access("/etc/ld.so.preload", R_OK) = -1 ENOENT (No such file or directory)
502   <... fdatasync resumed>)          = 0
502   fsync(5)                          = 0
501   access("/baton-bench-mark/timed cycles ended", F_OK) = -1 ENOENT (No such file or directory)
502   fsync(5)                          = 0
"""


def test_the_fsyncs_counted_are_those_between_the_child_s_marks() -> None:
    # the set-up's before the first mark and the end's after the last are not the cycles'; a
    # call another thread's interrupted is one call, not two
    assert timed_calls(TRACE, what="minimal baton") == 2


def test_a_trace_without_the_marks_is_told_not_counted() -> None:
    unmarked = "\n".join(line for line in TRACE.splitlines() if "ended" not in line)
    with pytest.raises(RuntimeError, match="did not mark its timed cycles' ends"):
        timed_calls(unmarked, what="minimal baton")


async def test_a_child_marks_its_timed_cycles_as_its_environment_asks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[tuple[str, int]] = []
    monkeypatch.setattr(bench_peers.os, "access", lambda path, mode: asked.append((path, mode)))
    monkeypatch.setenv(bench_peers.GATED, "mark")

    async def cycle() -> None:
        asked.append(("cycle", 0))

    await _timed(cycle, 2)
    warm_up = [("cycle", 0)] * WARMUP
    timed = [("/baton-bench-mark/timed cycles begin", 0), ("cycle", 0), ("cycle", 0)]
    assert asked == [*warm_up, *timed, ("/baton-bench-mark/timed cycles ended", 0)]
