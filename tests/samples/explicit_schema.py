# Copyright (c) Microsoft. All rights reserved.

"""MAF's `02-agents/tools/function_tool_with_explicit_schema.py`, as MAF wrote it.

At agent-framework 5eb3eb745, less its `main()` (its printing), its `load_dotenv()` and the
imports only they used (`asyncio`, `OpenAIChatClient`, `load_dotenv`): an agent whose two tools
give the model explicit schemas (`@tool(schema=...)`: a pydantic model, and a JSON schema dict)
rather than ones inferred from their signatures. Its agent is built as `main()` builds it, on the
model Baton is configured with, registered as it is (`explicit_schema`), and a run's input is
`main()`'s query. `explicit_schema_approval` is the same agent with `get_weather` asking a person
first, as `@tool(approval_mode="always_require")` makes a tool ask (`asking`). On the scripted
model the agent asks for Seattle's weather and the time at once (the time with no arguments: the
schema's default) and says what both returned; it checks, at each turn, that it is offered
exactly the two explicit schemas (`OFFERED_TOOLS`, as MAF offers them alone), and says so if not.
"""

from typing import Annotated

from agent_framework import Agent, tool
from pydantic import BaseModel, Field

"""
Function Tool with Explicit Schema Example

This example demonstrates how to provide an explicit schema to the @tool decorator
using the `schema` parameter, bypassing the automatic inference from the function
signature. This is useful when you want full control over the tool's parameter
schema that the AI model sees, or when the function signature does not accurately
represent the desired schema.

Two approaches are shown:
1. Using a Pydantic BaseModel subclass as the schema
2. Using a raw JSON schema dictionary as the schema
"""


# Approach 1: Pydantic model as explicit schema
class WeatherInput(BaseModel):
    """Input schema for the weather tool."""

    location: Annotated[str, Field(description="The city name to get weather for")]
    unit: Annotated[str, Field(description="Temperature unit: celsius or fahrenheit")] = "celsius"


@tool(
    name="get_weather",
    description="Get the current weather for a given location.",
    schema=WeatherInput,
    approval_mode="never_require",
)
def get_weather(location: str, unit: str = "celsius") -> str:
    """Get the current weather for a location."""
    return f"The weather in {location} is 22 degrees {unit}."


# Approach 2: JSON schema dictionary as explicit schema
get_current_time_schema = {
    "type": "object",
    "properties": {
        "timezone": {
            "type": "string",
            "description": "The timezone to get the current time for",
            "default": "UTC",
        },
    },
}


@tool(
    name="get_current_time",
    description="Get the current time in a given timezone.",
    schema=get_current_time_schema,
    approval_mode="never_require",
)
def get_current_time(timezone: str = "UTC") -> str:
    """Get the current time."""
    from datetime import datetime
    from zoneinfo import ZoneInfo

    return f"The current time in {timezone} is {datetime.now(ZoneInfo(timezone)).isoformat()}"


# --- Baton --------------------------------------------------------------------------------------

import json  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from typing import Any  # noqa: E402

from agent_framework import Content, FunctionTool, Message  # noqa: E402

from baton.api import RunServices, register, scripted_plays  # noqa: E402
from tests.plays import asking  # noqa: E402


class Query(BaseModel):
    """The run's input: `main()`'s query, unless another is given."""

    text: str = "What is the weather in Seattle and what time is it?"


def _agent(services: RunServices, weather: FunctionTool) -> Agent:
    """`main()`'s agent, on the model Baton is configured with."""
    return Agent(
        client=services.chat_clients.for_persona("explicit-schema-assistant"),
        name="AssistantAgent",
        instructions="You are a helpful assistant. Use the available tools to answer questions.",
        tools=[weather, get_current_time],
    )


@register("explicit_schema", input_model=Query)
def build_agent(services: RunServices) -> Agent:
    """`main()`'s agent: two tools of explicit schemas."""
    return _agent(services, get_weather)


@register("explicit_schema_approval", input_model=Query)
def build_asking_agent(services: RunServices) -> Agent:
    """`main()`'s agent, its `get_weather` asking a person first."""
    return _agent(services, asking(get_weather))


OFFERED_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather for a given location.",
            "parameters": {
                "description": "Input schema for the weather tool.",
                "properties": {
                    "location": {
                        "description": "The city name to get weather for",
                        "title": "Location",
                        "type": "string",
                    },
                    "unit": {
                        "default": "celsius",
                        "description": "Temperature unit: celsius or fahrenheit",
                        "title": "Unit",
                        "type": "string",
                    },
                },
                "required": ["location"],
                "title": "WeatherInput",
                "type": "object",
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_current_time",
            "description": "Get the current time in a given timezone.",
            "parameters": get_current_time_schema,
        },
    },
]
"""What the model is offered, as MAF offers it (`FunctionTool.to_json_schema_spec`): the schemas
the sample gives, not ones inferred from the functions' signatures."""


def assistant_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """Check the tools offered; ask for Seattle's weather and the time at once; say both."""
    offered = [t.to_json_schema_spec() for t in options.get("tools") or ()]
    if offered != OFFERED_TOOLS:
        return [Content.from_text(f"Offered other tools: {json.dumps(offered)}")]
    results = [str(c.result) for m in messages for c in m.contents if c.type == "function_result"]
    if not results:
        return [
            Content.from_function_call(
                "call-weather", "get_weather", arguments=json.dumps({"location": "Seattle"})
            ),
            Content.from_function_call("call-time", "get_current_time", arguments="{}"),
        ]
    return [Content.from_text(" ".join(results))]


scripted_plays({"explicit-schema-assistant": assistant_play})
