"""The refund workload in bare MAF, for `baton.bench_peers`: the framework's own cost of it.

`refund_agent`: the same work as Baton's `refund`, as MAF's own samples write it: an `Agent` on
Baton's scripted client playing the same three turns (`executors/shipped/plays.py`
`refund_play`), with `lookup_order` and `issue_refund` tools, the refund tool marked
`approval_mode="always_require"`, in a workflow of one `AgentExecutor`. MAF turns the approval
into a `request_info`; the run is resumed on a fresh workflow instance, as a new process would,
from its pause checkpoint in an `InMemoryCheckpointStorage` (so nothing of the run is durable but
the refund), with the approval as MAF's `function_approval_response`. Or, with no checkpoint
storage at all, answered on the same instance: MAF's work of the cycle and the refund's write.

The back office is a SQLite file of its own (`baton.bench_office.OfficeFile`: the shipped
migrations and statements), the refund keyed by the cycle (one refund a cycle, also with cycles
in flight at once: the key is the cycle's context's, which MAF's tool thread inherits).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any

from agent_framework import (
    Agent,
    AgentExecutor,
    AgentResponse,
    FunctionTool,
    InMemoryCheckpointStorage,
    Workflow,
    WorkflowBuilder,
    tool,
)

from baton.bench import REFUND_120
from baton.bench_office import OfficeFile
from baton.bench_peers import paused
from executors.platform.chat_clients import ScriptedChatClient
from executors.shipped.plays import refund_play
from executors.shipped.refund_desk import INSTRUCTIONS
from human.effects import idempotency_key


def _tools(office: OfficeFile, key: contextvars.ContextVar[str]) -> list[FunctionTool]:
    """`lookup_order` and `issue_refund` on `office`; the refund keyed by `key`'s value."""

    @tool(name="lookup_order", description="Look up an order by id: customer, total, currency.")
    def lookup_order(order_id: Annotated[str, "Order id"]) -> dict[str, Any]:
        return office.lookup_order(order_id)

    @tool(
        name="issue_refund",
        description="Refund part or all of an order to the customer.",
        approval_mode="always_require",
    )
    def issue_refund(
        order_id: Annotated[str, "Order id"], amount: Annotated[float, "Amount"]
    ) -> dict[str, Any]:
        return office.issue_refund(key.get(), order_id, amount)

    return [lookup_order, issue_refund]


@contextlib.asynccontextmanager
async def refund_agent(
    folder: Path, *, checkpoints: bool = True
) -> AsyncIterator[Callable[[], Awaitable[None]]]:
    """One refund cycle to time, on files in `folder`: 120 on order A-1002, asked and approved.

    `checkpoints=False`: no checkpoint storage; the approval is answered on the same workflow
    instance, so the cycle is MAF's work and the refund's write alone (nothing else survives the
    process).
    """
    office = await OfficeFile.made(folder)
    key = contextvars.ContextVar[str]("refund_key")
    tools = _tools(office, key)

    def workflow() -> Workflow:
        agent = Agent(ScriptedChatClient(refund_play), INSTRUCTIONS, name="refund", tools=tools)
        return WorkflowBuilder(start_executor=AgentExecutor(agent, id="refund")).build()

    count = 0

    async def cycle() -> None:
        nonlocal count
        count += 1
        key.set(idempotency_key(f"bare-{count}", "approved", "issue_refund"))
        asking = workflow()
        storage = InMemoryCheckpointStorage() if checkpoints else None  # one conversation's
        asked = await asking.run(json.dumps(REFUND_120), checkpoint_storage=storage)
        [request] = asked.get_request_info_events()
        paused()
        responses = {request.request_id: request.data.to_function_approval_response(True)}
        if storage is None:  # answered on the same instance
            done = await asking.run(responses=responses)
        else:  # resumed on a fresh instance from the pause checkpoint, as a new process would
            checkpoint_id = await asking.resolve_pause_checkpoint_id(
                [request.request_id], checkpoint_storage=storage
            )
            if checkpoint_id is None:
                raise RuntimeError("bare MAF saved no pause checkpoint")
            done = await workflow().run(
                checkpoint_id=checkpoint_id, responses=responses, checkpoint_storage=storage
            )
        if done.get_request_info_events():
            raise RuntimeError("bare MAF's refund still waits after its approval")
        said = [o.text for o in done.get_outputs() if isinstance(o, AgentResponse)]
        if not said or not said[-1].startswith("Refunded 120.00"):
            raise RuntimeError(f"bare MAF's refund ended with {done.get_outputs()}")

    try:
        yield cycle
    finally:
        office.close()
