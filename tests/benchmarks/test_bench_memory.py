"""What a Baton process holds does not grow with the runs it completed (`baton.bench_memory`).

The figure itself (`rss_growth_mb_10k_drives`) is a measurement, not an assertion; this proves its
cause stays fixed with exact counts: after 300 more completed drives of the refund agent, on
instances the process keeps (`register(reuse=True)`) and on instances built for every drive (each
drive then builds a workflow, an agent, its chat client and tools, and MAF creates OpenTelemetry
instruments for them), the child holds exactly the objects it held after its warm-up, class by
class, and no job, task or checkpoint storage of a finished run. (Without `configure_telemetry`'s
no-op meter provider, OpenTelemetry's proxy provider kept 4 `_ProxyMeter` and 4 `_ProxyHistogram`
more per refund cycle, and this test failed on exactly those two classes.)
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from baton.bench_memory import rss_figures, run_child


@pytest.mark.parametrize("built_per_drive", [False, True], ids=["kept", "built_per_drive"])
def test_300_more_drives_leave_every_count_of_live_objects_as_it_was(
    tmp_path: Path, built_per_drive: bool
) -> None:
    got = run_child(
        "refund", cycles=150, warmup=20, folder=tmp_path, built_per_drive=built_per_drive
    )

    after_warmup, after_runs = got["held"]
    assert got["drives"] == 300
    grown = {
        kind: (after_warmup.get(kind, 0), count)
        for kind, count in after_runs.items()
        if count != after_warmup.get(kind, 0)
    }
    assert grown == {}
    assert after_runs["worker jobs held"] == 0
    assert after_runs.get("workflows.platform.checkpoints.RunCheckpointStorage", 0) == 0


def test_the_rss_figures_are_read_from_children(tmp_path: Path) -> None:
    figures = rss_figures(drives=20, refund_drives=10, warmup_cycles=2, root=tmp_path)

    assert figures["rss_drives"] == 20
    assert figures["refund_rss_drives"] == 10
    for key in ("rss_growth_mb_10k_drives", "refund_rss_growth_mb_2k_drives"):
        assert isinstance(figures[key], float), key
        assert math.isfinite(figures[key]), key
    assert len(str(figures["rss_growth_mb_by_2k_drives"]).split()) == 1  # the end: 20 drives
