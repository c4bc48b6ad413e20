"""A functional workflow whose agents are its module's, and a person's review between them.

The shape of MAF's `python/samples/03-workflows/functional/agent_integration.py` (its
`cached_pipeline`: each agent call in a `@step`, the agents module globals built at import on
one client) with a `ctx.request_info` between the two steps. The scripted model stands in for
the sample's `FoundryChatClient`. The same two agents serve every run this process drives, at
once: each run's conversation holds its own agents' turns only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_framework import Agent, Content, Message, RunContext, step, workflow
from pydantic import BaseModel

from baton.api import RunServices, register, scripted_plays
from executors.platform.chat_clients import make_chat_client


def _asked(messages: Sequence[Message]) -> str:
    return next(m.text for m in reversed(messages) if m.role == "user")


def _summarize(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    return [Content.from_text(f"In one sentence: {_asked(messages).removeprefix('Summarize: ')}")]


def _revise(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    summary, _, note = _asked(messages).removeprefix("Revise: ").partition("\nNote: ")
    return [Content.from_text(f"{summary} ({note})")]


scripted_plays({"functional-writer": _summarize, "functional-editor": _revise})

writer_agent = Agent(
    name="WriterAgent",
    instructions="Summarize the given content in one sentence.",
    client=make_chat_client("scripted", "functional-writer"),
)

editor_agent = Agent(
    name="EditorAgent",
    instructions="Revise the summary as the reviewer's note says.",
    client=make_chat_client("scripted", "functional-editor"),
)


@step
async def generate_summary(doc: str) -> str:
    return (await writer_agent.run(f"Summarize: {doc}")).text


@step
async def revise_summary(summary: str, note: str) -> str:
    return (await editor_agent.run(f"Revise: {summary}\nNote: {note}")).text


@workflow
async def reviewed_summary(document: str, ctx: RunContext) -> str:
    """Summarize a document, have a person review it, revise it as they say."""
    summary = await generate_summary(document)
    note = await ctx.request_info({"summary": summary}, str)
    return await revise_summary(summary, note)


class Document(BaseModel):
    document: str = "A technical document about machine learning."


@register("functional_agents", input_model=Document, start_message=lambda d: d.document)
def build_workflow(services: RunServices) -> object:
    return reviewed_summary
