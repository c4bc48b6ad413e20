# Copyright (c) Microsoft. All rights reserved.

"""
Sample: Checkpointing and Resuming a Workflow

Purpose:
This sample shows how to enable checkpointing for a long-running workflow
that can be paused and resumed.

What you learn:
- How to configure checkpointing storage (InMemoryCheckpointStorage for testing)
- How to resume a workflow from a checkpoint after interruption
- How to implement executor state management with checkpoint hooks
- How to handle workflow interruptions and automatic recovery

Pipeline:
This sample shows a workflow that computes factor pairs for numbers up to a given limit:
1) A start executor that receives the upper limit and creates the initial task
2) A worker executor that processes each number to find its factor pairs
3) The worker uses checkpoint hooks to save/restore its internal state

Prerequisites:
- Basic understanding of workflow concepts, including executors, edges, events, etc.
"""

import asyncio
import sys
from dataclasses import dataclass
from random import random
from typing import Any

from agent_framework import (
    Executor,
    InMemoryCheckpointStorage,
    WorkflowBuilder,
    WorkflowCheckpoint,
    WorkflowContext,
    handler,
)

if sys.version_info >= (3, 12):
    from typing import override  # type: ignore # pragma: no cover
else:
    from typing_extensions import override  # type: ignore[import] # pragma: no cover


@dataclass
class ComputeTask:
    """Task containing the list of numbers remaining to be processed."""

    remaining_numbers: list[int]


class StartExecutor(Executor):
    """Initiates the workflow by providing the upper limit for factor pair computation."""

    @handler
    async def start(self, upper_limit: int, ctx: WorkflowContext[ComputeTask]) -> None:
        """Start the workflow with a list of numbers to process."""
        print(f"StartExecutor: Starting factor pair computation up to {upper_limit}")
        await ctx.send_message(ComputeTask(remaining_numbers=list(range(1, upper_limit + 1))))


class WorkerExecutor(Executor):
    """Processes numbers to compute their factor pairs and manages executor state for checkpointing."""

    def __init__(self, id: str) -> None:
        super().__init__(id=id)
        self._composite_number_pairs: dict[int, list[tuple[int, int]]] = {}

    @handler
    async def compute(
        self,
        task: ComputeTask,
        ctx: WorkflowContext[ComputeTask, dict[int, list[tuple[int, int]]]],
    ) -> None:
        """Process the next number in the task, computing its factor pairs."""
        next_number = task.remaining_numbers.pop(0)

        print(f"WorkerExecutor: Computing factor pairs for {next_number}")
        pairs: list[tuple[int, int]] = []
        for i in range(1, next_number):
            if next_number % i == 0:
                pairs.append((i, next_number // i))
        self._composite_number_pairs[next_number] = pairs

        if not task.remaining_numbers:
            # All numbers processed - output the results
            await ctx.yield_output(self._composite_number_pairs)
        else:
            # More numbers to process - continue with remaining task
            await ctx.send_message(task)

    @override
    async def on_checkpoint_save(self) -> dict[str, Any]:
        """Save the executor's internal state for checkpointing."""
        return {"composite_number_pairs": self._composite_number_pairs}

    @override
    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        """Restore the executor's internal state from a checkpoint."""
        self._composite_number_pairs = state.get("composite_number_pairs", {})


# --- Baton: the registration (the sample's `main()` is left out, with its simulated ------------
# --- interruptions: a kill -9 is the interruption here; its workflow is built as `main()` ------
# --- builds it, without the InMemoryCheckpointStorage Baton replaces. One pause added: the -----
# --- worker asks a person before it goes on past a number, answered after a restart) ----------

from agent_framework import Workflow, response_handler  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from baton.api import RunServices, register  # noqa: E402


@dataclass
class GoOn:
    """What the worker asks: go on with the remaining numbers?"""

    done: int
    task: ComputeTask


class AskingWorkerExecutor(WorkerExecutor):
    """The sample's worker, asking a person once it has computed `ask_after`."""

    ask_after = 5

    @handler
    async def compute(
        self,
        task: ComputeTask,
        ctx: WorkflowContext[ComputeTask, dict[int, list[tuple[int, int]]]],
    ) -> None:
        if task.remaining_numbers and task.remaining_numbers[0] == self.ask_after + 1:
            await ctx.request_info(GoOn(done=self.ask_after, task=task), str)
            return
        await WorkerExecutor.compute(self, task, ctx)

    @response_handler
    async def go_on(
        self,
        asked: GoOn,
        answer: str,
        ctx: WorkflowContext[ComputeTask, dict[int, list[tuple[int, int]]]],
    ) -> None:
        await WorkerExecutor.compute(self, asked.task, ctx)


class Limit(BaseModel):
    upper_limit: int = 10


def build(asking: bool = True, checkpoint_storage: Any = None) -> Workflow:
    """`main()`'s workflow."""
    start = StartExecutor(id="start")
    worker = AskingWorkerExecutor(id="worker") if asking else WorkerExecutor(id="worker")
    return (
        WorkflowBuilder(start_executor=start, checkpoint_storage=checkpoint_storage)
        .add_edge(start, worker)
        .add_edge(worker, worker)  # Self-loop for iterative processing
        .build()
    )


@register("checkpoint_with_resume", input_model=Limit, start_message=lambda i: i.upper_limit)
def build_workflow(services: RunServices) -> Workflow:
    """MAF's checkpoint_with_resume: factor pairs up to a limit, a person asked half way."""
    return build()
