"""A person reviews a chart an agent made: request data holding a `Message` of a text, an image
and a PDF (`Content.from_data`), answered with a text.

Not a MAF sample verbatim: the shape of MAF's `03-workflows/human-in-the-loop/` samples (an
executor's `ctx.request_info(data, str)` and its `@response_handler`) with the rich content of
`02-agents/multimodal_input/openai_chat_multimodal.py` (agent-framework 5eb3eb745). The
response handler's output names the attachments of the request it answers, their media types,
sizes and digests, so an output shows whether they came back whole from the checkpoint.
"""

from __future__ import annotations

import base64
import hashlib
import random
from typing import Any, Never

from agent_framework import (
    Content,
    Executor,
    Message,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)
from pydantic import BaseModel

from baton.api import RunServices, register
from tests.samples.multimodal_approval import png


def pdf(seed: int = 11, size: int = 60_000) -> bytes:
    """A small PDF-looking document (its stream is noise), the same for the same seed."""
    body = random.Random(seed).randbytes(size)
    head = f"%PDF-1.4\n1 0 obj << /Length {size} >> stream\n".encode()
    return head + body + b"\nendstream\n%%EOF\n"


def described(message: Message) -> str:
    """Each attachment of a message: media type, bytes, first 8 hex digits of its sha256."""
    parts = []
    for content in message.contents:
        if content.type == "data":
            data = base64.b64decode((content.uri or "").partition(",")[2])
            digest = hashlib.sha256(data).hexdigest()[:8]
            parts.append(f"{content.media_type} {len(data)} bytes {digest}")
    return "; ".join(parts)


class ChartMaker(Executor):
    """Draws the chart of a topic and asks a person to review it, chart and report attached."""

    def __init__(self, id: str = "chart_maker") -> None:
        super().__init__(id=id)

    @handler
    async def make(self, topic: str, ctx: WorkflowContext) -> None:
        chart = Message(
            role="assistant",
            contents=[
                Content.from_text(text=f"Here is the chart of {topic}, with the full report."),
                Content.from_data(data=png(), media_type="image/png"),
                Content.from_data(data=pdf(), media_type="application/pdf"),
            ],
        )
        await ctx.request_info(request_data=chart, response_type=str)

    @response_handler
    async def on_review(
        self, original_request: Message, feedback: str, ctx: WorkflowContext[Never, str]
    ) -> None:
        await ctx.yield_output(f"{feedback} (on {described(original_request)})")


class ChartInput(BaseModel):
    topic: str


@register("chart_review", input_model=ChartInput, start_message=lambda i: i.topic)
def build_workflow(services: RunServices) -> Any:
    return WorkflowBuilder(name="chart_review", start_executor=ChartMaker()).build()
