"""A functional workflow (`@workflow`) that asks people in rounds, in plain Python.

The shape of MAF's functional samples with more than one question: a loop that asks a person
until they are satisfied (`ctx.request_info` with MAF's own request ids, each round's answer a
typed dataclass), an expensive `@step` before it that a replay must not repeat, and a question
asked from inside a step. MAF replays the function from its top at every answer, so each round
needs every earlier answer again: Baton keeps them in the run's checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_framework import RunContext, step, workflow
from pydantic import BaseModel

from baton.api import RunServices, register

DRAFTS: list[str] = []
"""Every draft `write_draft` wrote in this process (a replay must not write another)."""


@dataclass
class Review:
    """A reviewer's verdict on a draft."""

    approved: bool
    note: str = ""


@dataclass
class DraftReview:
    """What a reviewer sees: the draft and the round."""

    draft: str
    round: int


@step
async def write_draft(topic: str) -> str:
    DRAFTS.append(topic)
    return f"A draft on {topic}"


@step
async def choose_channel(draft: str, ctx: RunContext) -> str:
    """A question from inside a step: once answered, the step's result is cached."""
    return str(await ctx.request_info({"draft": draft, "ask": "Where should it go?"}, str))


@workflow(name="functional_rounds")
async def rounds(topic: str, ctx: RunContext) -> str:
    draft = await write_draft(topic)
    notes: list[str] = []
    for round_ in range(1, 4):
        review: Review = await ctx.request_info(DraftReview(draft, round_), Review)
        if review.approved:
            channel = await choose_channel(draft)
            return f"{draft} approved in round {round_} for {channel} after: {notes}"
        notes.append(review.note)
        draft = f"{draft} (revised: {review.note})"
    return f"{draft} abandoned after: {notes}"


class Topic(BaseModel):
    topic: str = "durable pauses"


@register("functional_rounds", input_model=Topic, start_message=lambda given: given.topic)
def build_workflow(services: RunServices) -> object:
    return rounds.build()
