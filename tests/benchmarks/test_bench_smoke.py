"""`baton bench` end to end on a few runs: every figure is there and is a positive number."""

from __future__ import annotations

import math

from baton.bench import run_bench

KEYS = {
    "floor_commit_us",
    "bare_maf_cycle_ms",
    "pause_ms_p50",
    "pause_ms_p95",
    "resume_ms_p50",
    "resume_ms_p95",
    "cycles_per_s",
    "cycle_floor_commits",
    "bytes_per_paused_run",
    "rss_growth_mb_10k_paused",
    "list_pending_10k_ms_p50",
    "request_page_200_msgs_ms_p50",
}


async def test_every_figure_is_measured_and_positive() -> None:
    figures = await run_bench(runs=5, paused=30)

    assert set(figures) == KEYS
    for key, value in figures.items():
        assert isinstance(value, int | float), key
        assert math.isfinite(value), key
        assert value > 0, f"{key} = {value}"
