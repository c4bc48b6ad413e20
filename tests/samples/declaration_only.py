"""A plain agent with a declaration-only tool: MAF hands the call back, a person carries it out."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agent_framework import Agent, Content, FunctionTool, Message, WorkflowBuilder
from pydantic import BaseModel

from baton.api import RunServices, register, scripted_plays

get_user_location = FunctionTool(
    name="get_user_location",
    func=None,
    description="Get the user's current city. Only the user knows this.",
    input_model={
        "type": "object",
        "properties": {"reason": {"type": "string", "description": "Why the location is needed"}},
        "required": ["reason"],
    },
)


# --- Baton --------------------------------------------------------------------------------------


class WeatherInput(BaseModel):
    question: str


@register("declaration_only", input_model=WeatherInput, start_message=lambda i: i.question)
def build_workflow(services: RunServices) -> Any:
    agent = Agent(
        client=services.chat_clients.for_persona("weather"),
        name="WeatherBot",
        instructions="Answer weather questions; ask for the user's city with get_user_location.",
        tools=[get_user_location],
    )
    return WorkflowBuilder(name="declaration_only", start_executor=agent).build()


def weather_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    results = [c for m in messages for c in m.contents if c.type == "function_result"]
    if results:
        return [Content.from_text(f"It is sunny in {results[-1].result} today.")]
    arguments = json.dumps({"reason": "to look up the local forecast"})
    return [Content.from_function_call("call-where", "get_user_location", arguments=arguments)]


scripted_plays({"weather": weather_play})
