"""Ending a run while some of its requests are still open.

MAF keeps a run waiting while any `request_info` is pending. A workflow that has decided (one of
two parallel approvals was rejected, or expired) calls `end_run`: its output is yielded, and the
runtime completes the run at once; the requests still open close as `cancelled`, each audited.
"""

from __future__ import annotations

from typing import Any

from agent_framework import WorkflowContext, WorkflowEvent

END_EVENT = "baton_end"


async def end_run(ctx: WorkflowContext[Any, Any], output: Any) -> None:
    """Yield `output` and complete the run now, cancelling whatever it still waits for."""
    await ctx.yield_output(output)
    await ctx.add_event(WorkflowEvent(END_EVENT, data={}))  # type: ignore[arg-type]
