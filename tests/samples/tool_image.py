"""An agent whose tool returns an image (`Content.from_data`), continued in a second turn.

Not a MAF sample verbatim: the shape of MAF's `02-agents/tools/` samples with a tool returning
rich content (MAF's `FunctionTool.parse_result` keeps a returned `Content` as it is: the model
gets the image as the call's result) and of `02-agents/conversations/` (a second turn on the
same session), at agent-framework 5eb3eb745. On the scripted model the agent draws the chart in
its first turn; in the next it says which images it still sees in the conversation (their media
types and sizes), so an output shows whether the continued run hands the model the image.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from agent_framework import Agent, Content, Message, tool
from pydantic import BaseModel

from baton.api import RunServices, register, scripted_plays
from tests.samples.multimodal_approval import png, seen_images


@tool
def render_chart(metric: Annotated[str, "What to chart"]) -> list[Content]:
    """Draw a chart of a metric; the chart image is returned."""
    return [
        Content.from_text(text=f"Chart of {metric}:"),
        Content.from_data(data=png(seed=3), media_type="image/png"),
    ]


class AskInput(BaseModel):
    question: str


@register("tool_image", input_model=AskInput)
def build_workflow(services: RunServices) -> Any:
    return Agent(
        client=services.chat_clients.for_persona("tool-image-analyst"),
        name="ChartAnalyst",
        instructions="You draw charts with your tool and discuss them.",
        tools=[render_chart],
    )


def analyst_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    asked = [m for m in messages if m.role == "user"]
    results = [c for m in messages for c in m.contents if c.type == "function_result"]
    if len(asked) == 1 and not results:
        return [
            Content.from_function_call(
                "call-chart", "render_chart", arguments='{"metric": "sales"}'
            )
        ]
    images = seen_images(messages)
    return [Content.from_text(f"Turn {len(asked)}: I see {images or 'no image'}.")]


scripted_plays({"tool-image-analyst": analyst_play})
