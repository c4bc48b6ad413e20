"""Checkpoint types are found from a workflow's executors, not listed by hand."""

from __future__ import annotations

import dataclasses
import enum
from typing import Never, TypedDict

from agent_framework import (
    Agent,
    Executor,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)
from agent_framework.orchestrations import SequentialBuilder
from pydantic import BaseModel

from executors.platform.chat_clients import ScriptedChatClient
from workflows.platform.checkpoints import checkpoint_types_of, type_key


class Colour(enum.Enum):
    RED = "red"


class Part(BaseModel):
    colour: Colour


class Totals(TypedDict):
    parts: int


@dataclasses.dataclass
class Question:
    text: str
    totals: Totals


class Answer(BaseModel):
    parts: list[Part]
    note: str | None = None


class Order(BaseModel):
    item: str


class Sent(BaseModel):
    order: Order


class Asker(Executor):
    @handler
    async def on_order(self, message: Order, ctx: WorkflowContext[Sent]) -> None:
        await ctx.request_info(Question("which?", {"parts": 1}), Answer)

    @response_handler
    async def on_answer(
        self, request: Question, answer: Answer, ctx: WorkflowContext[Sent]
    ) -> None:
        await ctx.send_message(Sent(order=Order(item="x")))


class Taker(Executor):
    @handler
    async def on_sent(self, message: Sent, ctx: WorkflowContext[Never, list[str]]) -> None:
        await ctx.yield_output([message.order.item])


def test_request_response_message_and_nested_types_are_found() -> None:
    asker, taker = Asker(id="asker"), Taker(id="taker")
    workflow = WorkflowBuilder(name="found", start_executor=asker).add_edge(asker, taker).build()

    found = checkpoint_types_of(workflow)

    for cls in (Order, Sent, Question, Totals, Answer, Part, Colour):
        assert type_key(cls) in found, cls
    assert not any(key.startswith("builtins:") for key in found)


class Verdict(BaseModel):
    score: int
    part: Part


def test_an_agents_response_format_is_found_a_reply_held_for_review_holds_it() -> None:
    """MAF parses an agent's reply into its `response_format` (`AgentResponse.value`), and a
    reply held for a person (`with_request_info`) keeps that value in the pause's checkpoint."""
    rater = Agent(
        client=ScriptedChatClient(lambda messages, options: []),
        name="rater",
        default_options={"response_format": Verdict},
    )
    workflow = SequentialBuilder(participants=[rater]).with_request_info(agents=["rater"]).build()

    found = checkpoint_types_of(workflow)

    assert {type_key(Verdict), type_key(Part), type_key(Colour)} <= found
