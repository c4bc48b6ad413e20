"""Bare MAF's cycles in the bench (`maf_bare`, `maf_memory`): each does the whole work, or fails.

A bare-MAF child that did less than the workload (no pause, no answer, no refund) would make
Baton look slow beside it; these run the cycles in process and read what they left.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Never

import pytest
from agent_framework import Executor, WorkflowBuilder, WorkflowContext, handler

from baton.bench import BareAsk, bare_cycle_in_place, bare_workflow
from baton.bench_maf import refund_agent


async def test_the_minimal_cycle_in_place_pauses_and_completes_on_one_instance() -> None:
    workflow = bare_workflow()

    for _ in range(3):  # the instance kept: each run of it a new run
        await bare_cycle_in_place(workflow)


class _NeverAsks(Executor):
    @handler
    async def on_ask(self, message: BareAsk, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"approve {message.amount}")


async def test_a_workflow_that_does_not_pause_fails_the_cycle() -> None:
    never = WorkflowBuilder(name="bare", start_executor=_NeverAsks(id="gate")).build()

    with pytest.raises(RuntimeError, match="asked 0 requests"):
        await bare_cycle_in_place(never)


@pytest.mark.parametrize("checkpoints", [True, False], ids=["maf_memory", "maf_bare"])
async def test_the_refund_cycle_is_approved_and_refunds_once_a_cycle(
    tmp_path: Path, checkpoints: bool
) -> None:
    async with refund_agent(tmp_path, checkpoints=checkpoints) as cycle:
        await cycle()
        await cycle()

    with sqlite3.connect(tmp_path / "back_office.db") as office:
        refunds = office.execute("SELECT order_id, amount FROM refunds ORDER BY rowid").fetchall()
    assert refunds == [("A-1002", 120.0), ("A-1002", 120.0)]
