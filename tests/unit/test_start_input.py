"""What a start executor whose handler takes a union gets (`executors.platform.agents`).

MAF's declarative workflows start on an entry executor whose one handler takes
`dict[str, Any] | str | Message | list[Message]`, and their samples pass `run({"age": 8})` or
`run("a product")`. Registered without a `start_message`, such a workflow gets the typed input's
values (several fields), or its text (one text field); and it takes a conversation.
"""

from __future__ import annotations

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
