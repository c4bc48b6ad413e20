"""What a start executor whose handler takes a union gets (`executors.platform.agents`).

MAF's declarative workflows start on an entry executor whose one handler takes
`dict[str, Any] | str | Message | list[Message]`, and their samples pass `run({"age": 8})` or
`run("a product")`. Registered without a `start_message`, such a workflow gets the typed input's
values (several fields), or its text (one text field); and it takes a conversation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Never

from agent_framework import (
    Executor,
    Message,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
)
from pydantic import BaseModel

from executors.platform.agents import takes_conversation
from workflows.platform.registry import WorkflowSpec


class Entry(Executor):
    """The declarative entry's shape: one handler of a union."""

    @handler
    async def start(
        self,
        message: dict[str, Any] | str | Message | list[Message],
        ctx: WorkflowContext[Never, dict[str, Any]],
    ) -> None:
        await ctx.yield_output({"type": type(message).__name__, "value": message})


class Age(BaseModel):
    age: int


class Product(BaseModel):
    text: str


def union_workflow() -> Workflow:
    return WorkflowBuilder(name="entry", start_executor=Entry(id="entry")).build()


async def received(model: type[BaseModel], value: BaseModel) -> Any:
    workflow = union_workflow()
    spec = WorkflowSpec(
        name="entry", description="", input_model=model, build=lambda services: workflow
    )
    [output] = (await workflow.run(spec.first_message(value, workflow))).get_outputs()
    return output


async def test_several_fields_come_as_the_values_a_script_passes() -> None:
    assert await received(Age, Age(age=8)) == {"type": "dict", "value": {"age": 8}}


async def test_one_text_field_comes_as_the_text() -> None:
    got = await received(Product, Product(text="a desk lamp"))
    assert got == {"type": "str", "value": "a desk lamp"}


def test_a_union_with_a_list_of_messages_takes_a_conversation() -> None:
    assert takes_conversation(union_workflow())


def test_a_magentic_orchestration_takes_no_conversation_made_an_agent_or_not() -> None:
    """Its orchestrator starts on one task message (MAF's own second turn fails): a continuing
    start is refused (`invalid_continues`), where a sequential orchestration takes one."""
    from agent_framework import Agent
    from agent_framework.orchestrations import MagenticBuilder, SequentialBuilder

    from executors.platform.agents import as_workflow
    from executors.platform.chat_clients import ScriptedChatClient

    def agent(name: str) -> Agent:
        return Agent(client=ScriptedChatClient(lambda m, o: []), name=name)

    magentic = MagenticBuilder(participants=[agent("a")], manager_agent=agent("m")).build()
    sequential = SequentialBuilder(participants=[agent("b")]).build()

    assert not takes_conversation(magentic)
    assert not takes_conversation(as_workflow(magentic.as_agent(name="mag"), "mag"))
    assert takes_conversation(sequential)
    assert takes_conversation(as_workflow(sequential.as_agent(name="seq"), "seq"))


class Sum(Executor):
    """MAF's `aggregate_results_of_different_types.py` dispatcher's shape: a list of numbers."""

    @handler
    async def start(self, numbers: list[int], ctx: WorkflowContext[Never, int]) -> None:
        await ctx.yield_output(sum(numbers))


@dataclass
class Email:
    sender: str
    body: str


class Inbox(Executor):
    """`agents_with_approval_requests.py`'s start: a dataclass."""

    @handler
    async def start(self, email: Email, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"{email.sender}: {email.body}")


class Numbers(BaseModel):
    numbers: list[int]


class IncomingEmail(BaseModel):
    sender: str
    body: str


async def first_output(executor: Executor, model: type[BaseModel], value: BaseModel) -> Any:
    workflow = WorkflowBuilder(name="w", start_executor=executor).build()
    spec = WorkflowSpec(name="w", description="", input_model=model, build=lambda s: workflow)
    [output] = (await workflow.run(spec.first_message(value, workflow))).get_outputs()
    return output


async def test_one_field_of_the_type_the_start_takes_comes_as_its_value() -> None:
    assert await first_output(Sum(id="sum"), Numbers, Numbers(numbers=[5, 6, 7])) == 18


async def test_fields_of_a_dataclass_the_start_takes_build_it() -> None:
    email = IncomingEmail(sender="kim", body="Hello")
    assert await first_output(Inbox(id="inbox"), IncomingEmail, email) == "kim: Hello"
