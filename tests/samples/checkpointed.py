"""A checkpoint/resume sample: state kept in checkpoint hooks and shared state across pauses.

A release goes through two sign-offs (a `bool` each, the second only after the first); the
executor counts them in its own state, saved by `on_checkpoint_save`, and notes who asked in the
workflow's shared state. On Baton every resume is a restore, so both must survive one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Never

from agent_framework import Executor, WorkflowBuilder, WorkflowContext, handler, response_handler
from pydantic import BaseModel

from baton.api import Route, RunServices, register


@dataclass
class SignOffRequest:
    release: str
    step: int
    question: str


class ReleaseGate(Executor):
    def __init__(self, id: str) -> None:
        super().__init__(id=id)
        self.approvals = 0

    @handler
    async def on_release(self, release: str, ctx: WorkflowContext) -> None:
        ctx.set_state("release", release)
        await self._ask(release, ctx)

    async def _ask(self, release: str, ctx: WorkflowContext) -> None:
        step = self.approvals + 1
        question = f"Sign off step {step} of 2 for release {release}?"
        await ctx.request_info(SignOffRequest(release, step, question), bool)

    @response_handler
    async def on_sign_off(
        self, request: SignOffRequest, approved: bool, ctx: WorkflowContext[Never, str]
    ) -> None:
        if not approved:
            await ctx.yield_output(f"{request.release} stopped at step {request.step}")
            return
        self.approvals += 1
        if self.approvals < 2:
            await self._ask(request.release, ctx)
            return
        await ctx.yield_output(
            f"{ctx.get_state('release')} released after {self.approvals} sign-offs"
        )

    async def on_checkpoint_save(self) -> dict[str, Any]:
        return {"approvals": self.approvals}

    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        self.approvals = int(state.get("approvals", 0))


# --- Baton --------------------------------------------------------------------------------------


class ReleaseInput(BaseModel):
    release: str


@register(
    "checkpointed",
    input_model=ReleaseInput,
    start_message=lambda i: i.release,
    routes={SignOffRequest: Route(team="managers", title="Sign off {release} (step {step} of 2)")},
)
def build_workflow(services: RunServices) -> Any:
    return WorkflowBuilder(name="checkpointed", start_executor=ReleaseGate("release_gate")).build()
