# Copyright (c) Microsoft. All rights reserved.

"""Scenario 2 of MAF's `02-agents/tools/control_total_tool_executions.py`, as MAF wrote it.

Its tools and `scenario_max_function_calls()`'s agent, less the scenario's printing, its run and
its `OpenAIChatClient` (the other scenarios' `max_iterations` and `max_invocations` are the
shapes of `max_invocations` and of Baton's own `capped_calls` persona): a research agent on a
client whose tool loop may run 20 model turns but only 4 calls in all (`max_function_calls=4`),
asked the weather of five cities and travel tips. Registered as `total_tool_calls`;
`total_tool_calls_approval` is the same agent with `search_web` asking a person first, made once
at import as a module's `@tool(approval_mode="always_require")` is. On the scripted model the
agent asks three calls a turn (two cities' weather and a search, then three cities') and, once
MAF stops the loop, says what it learned.
"""

from typing import Annotated

from agent_framework import Agent, tool


# NOTE: approval_mode="never_require" is for sample brevity.
# Use "always_require" in production; see function_tool_with_approval.py.
@tool(approval_mode="never_require")
def search_web(query: Annotated[str, "The search query to look up."]) -> str:
    """Search the web for information."""
    return f"Results for '{query}': [page1, page2, page3]"


@tool(approval_mode="never_require")
def get_weather(city: Annotated[str, "The city to get the weather for."]) -> str:
    """Get the current weather for a city."""
    return f"Weather in {city}: Sunny, 22°C"


# --- Baton --------------------------------------------------------------------------------------

import json  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from typing import Any  # noqa: E402

from agent_framework import Content, FunctionTool, Message  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from baton.api import RunServices, register, scripted_plays  # noqa: E402
from tests.plays import asking, recorded  # noqa: E402

USER_MESSAGES = [
    "Search for the weather in Paris, London, Tokyo, New York, and Sydney, and also search for "
    "best travel tips."
]
"""The scenario's one turn."""

asking_search_web = asking(search_web)
"""`search_web` asking first: one tool object, as a module's `@tool` makes it."""


class Turn(BaseModel):
    """The run's input: the scenario's question."""

    text: str = USER_MESSAGES[0]


def tool_agent(client: Any, search: FunctionTool) -> Agent:
    """`scenario_max_function_calls()`'s agent, on `client`."""
    # 1. Allow many iterations but cap total function calls to 4.
    #    If the model requests 3 parallel searches per iteration, after 2
    #    iterations (6 calls) the limit is hit and the loop stops.
    client.function_invocation_configuration["max_iterations"] = 20
    client.function_invocation_configuration["max_function_calls"] = 4

    agent = Agent(
        client=client,
        name="ResearchAgent",
        instructions=(
            "You are a research assistant. Use the search_web and get_weather "
            "tools to answer the user's question comprehensively."
        ),
        tools=[search, get_weather],
    )
    return agent


@register("total_tool_calls", input_model=Turn)
def build_agent(services: RunServices) -> Agent:
    """The scenario's agent: 4 tool calls in all."""
    return tool_agent(services.chat_clients.for_persona("research-capped"), search_web)


@register("total_tool_calls_approval", input_model=Turn)
def build_asking_agent(services: RunServices) -> Agent:
    """The scenario's agent, its `search_web` asking a person first."""
    client = services.chat_clients.for_persona("research-capped")
    return tool_agent(client, asking_search_web)


BATCHES = [
    [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "London"}),
     ("search_web", {"query": "best travel tips"})],
    [("get_weather", {"city": "Tokyo"}), ("get_weather", {"city": "New York"}),
     ("get_weather", {"city": "Sydney"})],
]  # fmt: skip


def capped_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """Three calls a turn while the loop lets it; then what every result said."""
    results = [c for m in messages for c in m.contents if c.type == "function_result"]
    calls = [c for m in messages for c in m.contents if c.type == "function_call"]
    batch = len(calls) // 3
    if options.get("tool_choice") != "none" and batch < len(BATCHES):
        return [
            Content.from_function_call(f"call-{batch}-{i}", name, arguments=json.dumps(args))
            for i, (name, args) in enumerate(BATCHES[batch])
        ]
    said = "; ".join(str(r.result) for r in results)
    return [
        Content.from_text(
            f"{len(results)} results (tool_choice {options.get('tool_choice')}): {said}"
        )
    ]


scripted_plays({"research-capped": recorded(capped_play)})
