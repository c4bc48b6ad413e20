"""`baton bench` end to end on a few runs: every figure is there and is a positive number.

The PostgreSQL figures run on the session's test server (`BATON_TEST_POSTGRES_URL` or the
throwaway one `baton.devpg` starts), each on a new database of it.
"""

from __future__ import annotations

import contextlib
import math
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from baton import bench_concurrent, bench_peers
from baton.bench import postgres_figures, run_bench
from baton.bench_concurrent import concurrent_figures
from baton.bench_peers import (
    HALVES,
    IN_FLIGHT_WORKLOADS,
    WORKLOADS,
    Round,
    child_args,
    peer_figures,
    peers_available,
    reporting,
)

CYCLE_KEYS = {
    "pause_ms_p50",
    "pause_ms_p95",
    "resume_ms_p50",
    "resume_ms_p95",
    "cycles_per_s",
    "cycle_floor_commits",
    "bytes_per_paused_run",
}
KEYS = {
    "floor_commit_us",
    "bare_maf_cycle_ms",
    *CYCLE_KEYS,
    "rss_growth_mb_10k_paused",
    "list_pending_10k_ms_p50",
    "pg_floor_commit_us",
    *(f"pg_{key}" for key in CYCLE_KEYS),
    "pg_rss_growth_mb_paused",
    "pg_list_pending_ms_p50",
    "pg_paused_runs",
    "pg_cycles_per_s_workers_1",
    "pg_cycles_per_s_workers_2",
    "pg_cycles_per_s_workers_4",
    "pg_cpu_ms_per_cycle_workers_1",
    "pg_cpu_ms_per_cycle_workers_2",
    "pg_cpu_ms_per_cycle_workers_4",
    "pg_cpu_2_workers_vs_1",
    "pg_cpu_4_workers_vs_1",
    *(f"pg_{what}_per_cycle_workers_{n}" for what in ("waits", "preemptions") for n in (1, 2, 4)),
    "pg_workers_load1_by_round",
    "request_page_200_msgs_ms_p50",
    "http_answer_to_resumed_ms_p50",
    "http_answer_to_resumed_ms_p95",
}


async def test_every_figure_is_measured_and_positive(postgres_server: str) -> None:
    figures = await run_bench(
        runs=5,
        paused=30,
        pg_url=postgres_server,
        pg_runs=5,
        pg_paused=20,
        scale_cycles=10,
        http_cycles=3,
        scale_rounds=1,  # the order reversed every other round: tests/unit/test_bench_rounds.py
    )

    assert set(figures) == KEYS
    assert figures["pg_paused_runs"] == 20
    # a load average at the start of each round of 1, 2 and 4 workers
    assert len(str(figures.pop("pg_workers_load1_by_round")).split()) == 1
    for key, value in figures.items():
        assert isinstance(value, int | float), key
        assert math.isfinite(value), key
        assert value > 0, f"{key} = {value}"


async def test_an_unreachable_postgres_is_said_not_skipped(tmp_path: Path) -> None:
    figures = await postgres_figures(
        "postgresql://nobody@127.0.0.1:1/none", runs=1, paused=1, scale_cycles=1, folder=tmp_path
    )

    assert list(figures) == ["pg_unavailable"]
    assert "cannot use the PostgreSQL server" in str(figures["pg_unavailable"])


Children = list[tuple[list[str], bool, Round]]


def children_of(
    monkeypatch: pytest.MonkeyPatch,
    *modules: Any,
    then: Callable[[list[str], Path, Round], None] | None = None,
) -> Children:
    """Each child the benchmark runs: its module and arguments, whether traced, and its round.

    `then(module_args, folder, round)` looks at each child as it ends, its folder still there.
    """
    ran: Children = []
    real = bench_peers.run_child

    def recorded(
        module_args: list[str], folder: Path, *, what: str, traced: bool = True
    ) -> tuple[Round, int, dict[str, Any]]:
        got = real(module_args, folder, what=what, traced=traced)
        ran.append((module_args, traced, got[0]))
        if then is not None:
            then(module_args, folder, got[0])
        return got

    for module in modules:
        monkeypatch.setattr(module, "run_child", recorded)
    return ran


def timed_untraced(ran: Children, args: list[str], rate: float) -> bool:
    """Whether `rate` (cycles per second, as reported) is an untraced child's of `args`."""
    return any(
        a == args and not traced and round(got.cycles / got.wall_s, 1) == rate
        for a, traced, got in ran
    )


def untraced(ran: Children, args: list[str]) -> Round:
    """The round of the one untraced child of `args`."""
    [got] = [got for a, traced, got in ran if a == args and not traced]
    return got


def wall_ms_of(ran: Children, args: list[str]) -> float:
    """The wall time a cycle of the one untraced child of `args`, in ms."""
    got = untraced(ran, args)
    return got.wall_s / got.cycles * 1e3


def assert_split_at_the_pause(
    figures: dict[str, float | int | str], ran: Children, prefix: str, in_flight: int
) -> None:
    """Every timed cycle of every system marked its pause, and the figures are its children's."""
    systems_of = WORKLOADS if in_flight == 1 else IN_FLIGHT_WORKLOADS
    for workload, systems in systems_of.items():
        for system in systems:
            got = untraced(ran, child_args(workload, system, 3, in_flight))
            assert got.paused_cycles == got.cycles, (workload, system)
            assert 0 < got.pause_ms_p50 <= got.pause_ms_p95, (workload, system)
            assert 0 < got.resume_ms_p50 <= got.resume_ms_p95, (workload, system)
            for half in HALVES:
                key = f"{prefix}{workload}_{system}_{half}"
                assert figures[key] == round(getattr(got, half), 2), key
        baton, langgraph = (
            untraced(ran, child_args(workload, system, 3, in_flight))
            for system in ("baton", "langgraph")
        )
        assert figures[f"{prefix}{workload}_pause_vs_langgraph"] == pytest.approx(
            baton.pause_ms_p50 / langgraph.pause_ms_p50, abs=0.006
        ), workload
        assert figures[f"{prefix}{workload}_resume_vs_langgraph"] == pytest.approx(
            baton.resume_ms_p50 / langgraph.resume_ms_p50, abs=0.006
        ), workload


def test_baton_is_measured_beside_langgraph_and_bare_maf_on_the_same_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert peers_available() is None, "the bench extra (LangGraph) is part of the dev install"
    ran = children_of(monkeypatch, bench_peers)

    said: list[str] = []
    with reporting(said.append):
        figures = peer_figures(cycles=3, rounds=1, root=tmp_path, paused=5)

    # each round said as it ends: its load, every system's rate and CPU, Baton's ratio
    assert len(said) == len(WORKLOADS), said
    for line, (workload, systems) in zip(said, WORKLOADS.items(), strict=True):
        assert line.startswith(f"peers, {workload}, round 1 of 1 (load "), line
        assert all(f"{system} " in line for system in systems), line
        assert line.endswith(f"Baton over LangGraph {figures[f'{workload}_vs_langgraph']:.2f}")

    for workload, systems in WORKLOADS.items():
        for system in systems:
            assert figures[f"{workload}_{system}_cycles_per_s"] > 0, (workload, system)
            assert figures[f"{workload}_{system}_cpu_ms"] > 0, (workload, system)
        assert isinstance(figures[f"{workload}_vs_langgraph"], float), workload
        # one round, so its one ratio is the best rounds' ratio
        [within] = str(figures[f"{workload}_vs_langgraph_by_round"]).split()
        assert float(within) == pytest.approx(figures[f"{workload}_vs_langgraph"], abs=0.006)
        # The rates compared are untraced children's: strace stops a child at each fsync, and
        # the systems sync at very different rates (LangGraph's refund ran at about half).
        for system in systems:
            args = ["baton.bench_peers", workload, system, "3"]
            rate = float(figures[f"{workload}_{system}_cycles_per_s"])
            assert timed_untraced(ran, args, rate), (workload, system)
    for ratio in ("minimal_cpu_vs_bare_maf", "refund_cpu_vs_bare_maf", "peers_load1_max"):
        assert isinstance(figures[ratio], float), ratio
    for workload in WORKLOADS:  # Baton's CPU a cycle over LangGraph's, both as reported
        cpu = [float(figures[f"{workload}_{system}_cpu_ms"]) for system in ("baton", "langgraph")]
        assert figures[f"{workload}_cpu_vs_langgraph"] == pytest.approx(cpu[0] / cpu[1], abs=0.01)
    # each cycle split where its request is there to answer: its pause, then its resume
    assert_split_at_the_pause(figures, ran, "", 1)
    # a LangGraph refund thread left at its interrupt: its checkpoints and writes, in bytes
    assert int(figures["refund_langgraph_bytes_per_paused_run"]) > 1_000
    for workload in WORKLOADS:
        # What durability itself costs: MAF's work alone, and two durable commits after it (wall
        # times of the one round's untraced children, which are the best rounds).
        floor_ms = float(figures[f"{workload}_floor_commit_us"]) / 1e3
        assert floor_ms > 0, workload
        bare_ms, langgraph_ms, baton_ms = (
            wall_ms_of(ran, ["baton.bench_peers", workload, system, "3"])
            for system in ("maf_bare", "langgraph", "baton")
        )
        # The ratio is rounded to 0.01 and the commit to 0.1 us; the latter's error grows with
        # the ratio (22.8 on a loaded runner, where LangGraph's children ran slowest): relative.
        assert float(figures[f"{workload}_floor_vs_langgraph"]) == pytest.approx(
            langgraph_ms / (bare_ms + 2 * floor_ms), rel=5e-4, abs=0.006
        ), workload
        assert float(figures[f"{workload}_baton_own_ms"]) == pytest.approx(
            baton_ms - bare_ms - 2 * floor_ms, abs=0.001
        ), workload
    # Baton's statements with no layers: their rate beside LangGraph's, their CPU beside
    # bare MAF's, and what Baton's layers take beyond them (the one round's untraced children)
    rows_ms, langgraph_ms, baton_ms = (
        wall_ms_of(ran, ["baton.bench_peers", "minimal", system, "3"])
        for system in ("baton_rows", "langgraph", "baton")
    )
    assert float(figures["minimal_rows_vs_langgraph"]) == pytest.approx(
        langgraph_ms / rows_ms, abs=0.006
    )
    assert float(figures["minimal_layers_ms"]) == pytest.approx(baton_ms - rows_ms, abs=0.001)
    rows_cpu, maf_cpu = (
        float(figures[f"minimal_{system}_cpu_ms"]) for system in ("baton_rows", "maf_memory")
    )
    # each CPU figure rounded to 0.01 ms: near 1 ms the ratio of the two may be 0.02 out
    assert figures["minimal_rows_cpu_vs_bare_maf"] == pytest.approx(rows_cpu / maf_cpu, abs=0.02)
    assert "refund_rows_vs_langgraph" not in figures  # the rows of the minimal cycle alone
    # one load average a round: the one round of each workload
    assert len(str(figures["peers_load1_by_round"]).split()) == len(WORKLOADS)
    if shutil.which("strace"):  # counted where strace may trace: durable peers sync, MAF never
        assert figures["minimal_fsyncs_per_cycle"] == figures["minimal_baton_fsyncs_per_cycle"]
        assert figures["refund_fsyncs_per_cycle"] == figures["refund_baton_fsyncs_per_cycle"]
        # The pause and the answer wait for the disk; the start and the end ride on them. A WAL
        # checkpoint adds two (the log, then the file) when one falls in the three cycles.
        assert 2 <= float(figures["minimal_baton_fsyncs_per_cycle"]) < 3
        # A refund adds the back office's durable refund; its effect record rides the end.
        assert 3 <= float(figures["refund_baton_fsyncs_per_cycle"]) < 4
        for workload in WORKLOADS:
            baton, langgraph = (
                float(figures[f"{workload}_{system}_fsyncs_per_cycle"])
                for system in ("baton", "langgraph")
            )
            assert langgraph > 0, workload
            assert float(figures[f"{workload}_fsyncs_vs_langgraph"]) == pytest.approx(
                baton / langgraph, abs=0.01
            ), workload
        assert figures["minimal_maf_file_fsyncs_per_cycle"] == 0
        assert figures["minimal_maf_memory_fsyncs_per_cycle"] == 0
        assert figures["minimal_maf_bare_fsyncs_per_cycle"] == 0
        assert 2 <= float(figures["minimal_baton_rows_fsyncs_per_cycle"]) < 3  # as Baton's
        # bare MAF keeps its checkpoints in memory: only the back office's refund syncs
        assert 1 <= float(figures["refund_maf_memory_fsyncs_per_cycle"]) < 2
        assert 1 <= float(figures["refund_maf_bare_fsyncs_per_cycle"]) < 2


def test_baton_and_its_peers_are_measured_with_runs_in_flight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refunds: list[tuple[str, int, int]] = []  # system, cycles run, refunds made

    def counted(module_args: list[str], folder: Path, got: Round) -> None:
        _, workload, system, _, in_flight = module_args
        if workload == "refund":  # the back office: Baton's file, or the peer's own
            office = folder / ("baton.db" if system == "baton" else "back_office.db")
            with contextlib.closing(sqlite3.connect(office)) as conn:
                [made] = conn.execute("SELECT count(*) FROM refunds").fetchone()
            refunds.append((system, got.cycles + int(in_flight), made))  # + warm-up
        assert got.most_at_once == (int(in_flight) if got.cycles else 0), module_args

    ran = children_of(monkeypatch, bench_peers, then=counted)

    said: list[str] = []
    with reporting(said.append):
        figures = peer_figures(cycles=3, rounds=1, root=tmp_path, in_flight=2)

    assert [line.split(" (load")[0] for line in said] == [
        f"peers, {workload}, 2 in flight, round 1 of 1" for workload in IN_FLIGHT_WORKLOADS
    ]

    for workload, systems in IN_FLIGHT_WORKLOADS.items():
        for system in systems:
            # 3 cycles rounded up to 2 in flight: 4, two at a time (checked in `counted`)
            assert figures[f"concurrent2_{workload}_{system}_cycles_per_s"] > 0, system
            assert figures[f"concurrent2_{workload}_{system}_cpu_ms"] > 0, system
        assert isinstance(figures[f"concurrent2_{workload}_vs_langgraph"], float), workload
        assert isinstance(figures[f"concurrent2_{workload}_cpu_vs_bare_maf"], float), workload
        assert isinstance(figures[f"concurrent2_{workload}_cpu_vs_langgraph"], float), workload
        [within] = str(figures[f"concurrent2_{workload}_vs_langgraph_by_round"]).split()
        assert float(within) == pytest.approx(
            figures[f"concurrent2_{workload}_vs_langgraph"], abs=0.006
        )
        for system in systems:  # rates of untraced children (see the test above)
            args = child_args(workload, system, 3, 2)
            rate = float(figures[f"concurrent2_{workload}_{system}_cycles_per_s"])
            assert timed_untraced(ran, args, rate), (workload, system)
    assert_split_at_the_pause(figures, ran, "concurrent2_", 2)
    assert all(key.startswith("concurrent2_") for key in figures)
    assert not any("floor" in key or "maf_bare" in key for key in figures)  # one run at a time
    # Every system refunds once a cycle with runs in flight: two cycles keyed alike would make
    # one refund between them (the key is the table's primary key; a repeat does nothing).
    assert {system for system, *_ in refunds} == set(IN_FLIGHT_WORKLOADS["refund"])
    for system, cycles, made in refunds:
        assert made == cycles, system
    if shutil.which("strace"):
        # at most the pause's and the answer's, a WAL checkpoint's two aside (fewer when runs in
        # flight share a commit, which two cycles need not do)
        assert 0 < float(figures["concurrent2_minimal_baton_fsyncs_per_cycle"]) < 3
        assert float(figures["concurrent2_minimal_langgraph_fsyncs_per_cycle"]) > 0
        assert figures["concurrent2_minimal_maf_memory_fsyncs_per_cycle"] == 0


def test_a_child_is_told_its_runs_in_flight_and_refuses_a_system_it_cannot_run() -> None:
    assert child_args("minimal", "baton", 3) == ["baton.bench_peers", "minimal", "baton", "3"]
    assert child_args("minimal", "baton", 3, 32)[-1] == "32"
    with pytest.raises(ValueError, match="no maf_bare child"):
        bench_peers.main(["minimal", "maf_bare", "3", "2", "/nonexistent"])


def test_32_runs_in_flight_are_measured_with_and_without_group_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = children_of(monkeypatch, bench_concurrent, bench_peers)  # its fsyncs: bench_peers

    said: list[str] = []
    with reporting(said.append):
        figures = concurrent_figures(cycles=32, rounds=1, root=tmp_path)

    [line] = said
    assert line.startswith("32 in flight, round 1 of 1 (load "), line
    assert f"group commit {figures['concurrent32_cycles_per_s']}/s" in line, line

    for prefix in ("concurrent32", "concurrent32_solo"):
        assert figures[f"{prefix}_cycles_per_s"] > 0, prefix
        assert figures[f"{prefix}_cpu_ms"] > 0, prefix
        assert 0 < float(figures[f"{prefix}_vs_cpu_ceiling"]) < 2, prefix
        assert 0 <= float(figures[f"{prefix}_waiting_for_cpu"]) < 1, prefix
    # One transaction per FULL commit without group commit: the pause and the answer, exactly.
    assert figures["concurrent32_solo_durable_commits_per_cycle"] == 2
    # With it, never more FULL commits than that: batches only ever share one.
    assert figures["concurrent32_durable_commits_per_cycle"] <= 2
    assert isinstance(figures["concurrent32_vs_solo"], float)
    assert isinstance(figures["concurrent32_load1"], float)
    assert len(str(figures["concurrent32_load1_by_round"]).split()) == 1  # one round
    for variant, prefix in (("group", "concurrent32"), ("solo", "concurrent32_solo")):
        args = bench_concurrent._args(variant, 1)
        assert timed_untraced(ran, args, float(figures[f"{prefix}_cycles_per_s"])), variant
    if shutil.which("strace"):
        assert "concurrent32_fsyncs_per_cycle" in figures
        assert "concurrent32_solo_fsyncs_per_cycle" in figures
        assert any(traced for _, traced, _ in ran)  # counted in a child of its own


async def test_a_paused_langgraph_refund_is_measured_as_batons_paused_run(tmp_path: Path) -> None:
    from baton.bench_langgraph import bytes_per_paused_refund

    held = await bytes_per_paused_refund(tmp_path, 5)

    with contextlib.closing(sqlite3.connect(tmp_path / "langgraph.db")) as conn:
        threads = conn.execute("SELECT count(DISTINCT thread_id) FROM checkpoints").fetchone()[0]
        [[checkpoints]] = conn.execute("SELECT count(*) FROM checkpoints").fetchall()
        [[writes]] = conn.execute("SELECT count(*) FROM writes").fetchall()
        [[page]] = conn.execute("PRAGMA page_size").fetchall()
    assert threads == 6  # one first, which makes the tables, then the five measured
    # each left at the refund's interrupt: its input, the start, two model turns, the lookup
    assert (checkpoints, writes) == (5 * threads, 9 * threads)
    # the pages the five added, over five: whole pages, so a multiple of a fifth of one
    assert held > 0
    assert (held * 5) % page == 0
