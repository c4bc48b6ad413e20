"""`baton bench-instructions`: a cycle's instructions, counted by callgrind between its markers.

A child executes some five billion instructions setting up (imports, the store, the warm-up); a
Baton minimal cycle about eleven million. The count must be of the timed cycles alone.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from baton.bench_instructions import (
    _instrumentation,
    count,
    instructions_unavailable,
    per_cycle,
    ratios,
    systems_of,
)
from baton.bench_peers import child_args


def test_instructions_can_be_counted_here() -> None:
    assert instructions_unavailable() is None  # .ci/run installs valgrind


def test_a_baton_cycle_is_counted_alone_between_the_child_s_markers(tmp_path: Path) -> None:
    cycles = 8
    counted = count(["-m", *child_args("minimal", "baton", cycles)], tmp_path, what="minimal baton")
    # 11.35M at d98265f; with the set-up counted too it would be above 600M a cycle
    assert 5_000_000 < per_cycle(counted, cycles) < 25_000_000


def test_the_count_is_of_the_code_between_the_markers(tmp_path: Path) -> None:
    # A child that marks its work as bench_peers' children mark their timed cycles: the same
    # work twice as long counts twice the instructions, within the hand-over's few thousand.
    child = tmp_path / "child.py"
    child.write_text(
        "import sys\n"
        "from baton.bench_peers import TIMED, UNTIMED, gate\n"
        "def work(n):\n"
        "    return sum(i * i for i in range(n))\n"
        "work(300_000)  # set-up, not counted\n"
        "gate(TIMED)\n"
        "work(int(sys.argv[1]))\n"
        "gate(UNTIMED)\n"
        "work(300_000)  # the end, not counted\n"
    )
    once, twice = (
        count([str(child), str(n)], tmp_path / str(n), what=f"{n} squares") for n in (5_000, 10_000)
    )
    assert once > 1_000_000  # what it did between the markers is counted
    assert abs(twice - 2 * once) < 100_000  # and little else


def test_a_cycle_is_the_count_over_the_cycles() -> None:
    assert per_cycle(120, 4) == 30


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
        per_cycle(10, 0)


def test_a_failing_child_is_told_not_counted(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="failed under callgrind"):
        count(["-m", *child_args("minimal", "no_such_system", 1)], tmp_path, what="minimal none")


def test_a_child_that_never_marks_its_cycles_is_told_not_counted(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="did not stop at its timed cycles"):
        count(["-c", "pass"], tmp_path, what="unmarked")


def test_a_child_vgdb_cannot_reach_is_told() -> None:
    with pytest.raises(RuntimeError, match="vgdb could not switch the minimal baton child's"):
        _instrumentation(os.getpid(), "on", "minimal baton")  # no valgrind runs this process
