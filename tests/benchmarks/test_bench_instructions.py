"""`baton bench-instructions`: a cycle's instructions, counted by callgrind from two children.

A child with no timed cycle executes some five billion instructions setting up (imports, the
store, the warm-up); a Baton minimal cycle about eleven million. The count of one cycle must be
the difference, not the whole.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from baton.bench_instructions import (
    count,
    instructions_unavailable,
    per_cycle,
    ratios,
    systems_of,
)
from baton.bench_peers import child_args


def test_instructions_can_be_counted_here() -> None:
    assert instructions_unavailable() is None  # .ci/run installs valgrind


def test_a_baton_cycle_is_counted_as_the_difference_of_two_children(tmp_path: Path) -> None:
    # The two children's set-ups differ now and then by some 40M instructions (under 1 % of
    # them; CI once counted 3 cycles' child 11M below the baseline): over 30 cycles such a
    # difference moves a cycle's count by 1.3M, where over 3 it made it negative.
    cycles = 30
    with ThreadPoolExecutor(max_workers=2) as pool:  # as `instruction_figures` runs them
        counted, baseline = pool.map(
            lambda timed: count(
                child_args("minimal", "baton", timed), tmp_path / str(timed), what="minimal baton"
            ),
            (cycles, 0),
        )
    assert baseline > 1_000_000_000  # the set-up is counted in both children
    cycle = per_cycle(counted, baseline, cycles)
    # 11.35M at d98265f; the whole difference, not divided by the cycles, would be above 300M
    assert 5_000_000 < cycle < 25_000_000


def test_a_cycle_is_the_difference_over_the_cycles() -> None:
    assert per_cycle(130, 10, 4) == 30


def test_the_ratios_are_langgraph_over_baton_and_baton_over_bare_mafs() -> None:
    figures = ratios(
        "minimal",
        {
            "baton": 11_000_000.4,
            "langgraph": 7_700_000,
            "maf_memory": 4_400_000,
            "maf_bare": 2_750_000,
        },
    )
    assert figures == {
        "minimal_baton_instructions": 11_000_000,
        "minimal_langgraph_instructions": 7_700_000,
        "minimal_maf_memory_instructions": 4_400_000,
        "minimal_maf_bare_instructions": 2_750_000,
        "minimal_instructions_vs_langgraph": 0.7,
        "minimal_instructions_vs_maf_memory": 2.5,
        "minimal_instructions_vs_maf_bare": 4.0,
        "minimal_baton_own_instructions": 8_250_000,
    }


def test_the_layers_are_batons_instructions_less_its_statements_alone() -> None:
    counts = {"baton": 11_000_000, "langgraph": 7_700_000, "maf_memory": 4_400_000}
    figures = ratios("minimal", counts | {"maf_bare": 2_750_000, "baton_rows": 6_600_000})
    assert figures["minimal_baton_rows_instructions"] == 6_600_000
    assert figures["minimal_rows_instructions_vs_maf_memory"] == 1.5
    assert figures["minimal_layers_instructions"] == 4_400_000
    assert systems_of("minimal")[-1] == "baton_rows"
    assert "baton_rows" not in systems_of("refund")  # the minimal cycle's statements only


def test_a_count_needs_a_timed_cycle() -> None:
    with pytest.raises(ValueError, match="at least one"):
        per_cycle(10, 5, 0)


def test_a_failing_child_is_told_not_counted(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="failed under callgrind"):
        count(child_args("minimal", "no_such_system", 1), tmp_path, what="minimal none")
