"""Parallel requests from a sub-workflow, whose collector keeps its state in checkpoint hooks.

The sub-workflow asks for a resource and a policy check at once (two requests pending in one
run, answered in either order, each a dataclass answer); its collector counts the answers in its
own state, saved by `on_checkpoint_save`. The parent runs it with `propagate_request=True`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Never

from agent_framework import (
    Executor,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowExecutor,
    handler,
    response_handler,
)
from pydantic import BaseModel

from baton.api import RunServices, register


@dataclass
class ResourceRequest:
    resource_type: Literal["cpu", "memory", "disk", "gpu"]
    amount: int


@dataclass
class PolicyRequest:
    policy_type: Literal["quota", "security"]
    resource_type: str
    amount: int


@dataclass
class ResourceResponse:
    resource_type: str
    allocated: int
    source: str


@dataclass
class PolicyResponse:
    approved: bool
    reason: str


class Distribution(Executor):
    @handler
    async def distribute(
        self, amount: int, ctx: WorkflowContext[ResourceRequest | PolicyRequest]
    ) -> None:
        await ctx.send_message(ResourceRequest("gpu", amount))
        await ctx.send_message(PolicyRequest("security", "gpu", amount))


class ResourceRequester(Executor):
    @handler
    async def run(self, request: ResourceRequest, ctx: WorkflowContext) -> None:
        await ctx.request_info(request_data=request, response_type=ResourceResponse)

    @response_handler
    async def handle_response(
        self, original: ResourceRequest, response: ResourceResponse, ctx: WorkflowContext[Any]
    ) -> None:
        await ctx.send_message(response)


class PolicyChecker(Executor):
    @handler
    async def run(self, request: PolicyRequest, ctx: WorkflowContext) -> None:
        await ctx.request_info(request_data=request, response_type=PolicyResponse)

    @response_handler
    async def handle_response(
        self, original: PolicyRequest, response: PolicyResponse, ctx: WorkflowContext[Any]
    ) -> None:
        await ctx.send_message(response)


class ResultCollector(Executor):
    def __init__(self, id: str) -> None:
        super().__init__(id)
        self._responses: list[str] = []

    @handler
    async def collect(
        self, response: ResourceResponse | PolicyResponse, ctx: WorkflowContext[Never, str]
    ) -> None:
        if isinstance(response, ResourceResponse):
            self._responses.append(
                f"{response.allocated} {response.resource_type} from {response.source}"
            )
        else:
            self._responses.append(
                f"policy {'approved' if response.approved else 'refused'}: {response.reason}"
            )
        if len(self._responses) == 2:
            await ctx.yield_output("; ".join(sorted(self._responses)))

    async def on_checkpoint_save(self) -> dict[str, Any]:
        return {"responses": list(self._responses)}

    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        self._responses = list(state.get("responses", []))


def resource_workflow() -> Workflow:
    distribution = Distribution("distribution")
    resources, policy = ResourceRequester("resource_requester"), PolicyChecker("policy_checker")
    collector = ResultCollector("result_collector")
    return (
        WorkflowBuilder(name="resources", start_executor=distribution)
        .add_edge(distribution, resources)
        .add_edge(distribution, policy)
        .add_edge(resources, collector)
        .add_edge(policy, collector)
        .build()
    )


class Main(Executor):
    @handler
    async def start(self, amount: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(amount)

    @handler
    async def done(self, result: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"allocation: {result}")


# --- Baton --------------------------------------------------------------------------------------


class AllocationInput(BaseModel):
    amount: int


@register("sub_workflow", input_model=AllocationInput, start_message=lambda i: i.amount)
def build_workflow(services: RunServices) -> Any:
    main = Main("main")
    sub = WorkflowExecutor(resource_workflow(), id="resources", propagate_request=True)
    return (
        WorkflowBuilder(name="sub_workflow", start_executor=main)
        .add_edge(main, sub)
        .add_edge(sub, main)
        .build()
    )
