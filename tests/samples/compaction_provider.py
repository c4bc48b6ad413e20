# Copyright (c) Microsoft. All rights reserved.

"""MAF's `02-agents/compaction/compaction_provider.py`, as MAF wrote it.

At agent-framework 5eb3eb745, less its `main()` (its four turns, its printing of the stored
history) and the "Example output" string after it, its `load_dotenv()` and the imports only
they used (`asyncio`, `OpenAIChatClient`, `load_dotenv`); `main()`'s comments on the history,
the compaction provider and their order are kept where it builds them, in `_agent`: an agent
whose `InMemoryHistoryProvider(skip_excluded=True)` history a `CompactionProvider` trims before
each turn (a sliding window of three groups) and compacts after it (older tool-call groups
marked excluded, a `[Tool results: ...]` summary in their place), its chat middleware printing
what the model receives. Its agent is built as `main()` builds it, on the model Baton is
configured with, registered as it is (`compaction_provider`); `main()`'s later three turns in
one session are runs that each continue the one before (`continues`). Its `_approval` variant
is the same agent with `get_weather` asking a person first (`asking`). On the
scripted model the agent asks for the weather in the city the last user message names and
says it; asked for the warmest, it checks the warmest city it was handed again (a call that
asks, in the `_approval` variant, after the compaction of the turns before), then names it and
the cities it compared: a history compacted otherwise than on MAF alone shows in the answer.
"""

# ruff: noqa: T201, E501

from collections.abc import Sequence
from typing import Any

from agent_framework import (
    Agent,
    ChatContext,
    CompactionProvider,
    InMemoryHistoryProvider,
    Message,
    SlidingWindowStrategy,
    ToolResultCompactionStrategy,
    chat_middleware,
    tool,
)

"""
CompactionProvider with Agent Example

Demonstrates ``CompactionProvider`` as part of a real agent's context-provider
pipeline alongside ``InMemoryHistoryProvider``.

The compaction provider uses two separate strategies:

- ``before_strategy``: Applied to the loaded history before the model sees it.
  Here a ``SlidingWindowStrategy`` keeps only the last 3 message groups, so
  older turns get dropped as the conversation grows.
- ``after_strategy``: Applied to the stored history after each turn.
  Here a ``ToolResultCompactionStrategy`` collapses all but the most recent
  tool-call group into short ``[Tool results: ...]`` summaries.

A chat middleware logs the messages the model actually receives (after context
providers and compaction have run) so you can see the effect of compaction.

This sample intentionally is too aggressive in excluding content, because you can see
that the last turn actually does not have the full context any longer and is therefore
only comparing the results from Paris and Tokyo and not from London.

Run with:
    uv run samples/02-agents/compaction/compaction_provider.py
"""


@tool(approval_mode="never_require")
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    weather_data = {
        "London": "cloudy, 12°C",
        "Paris": "sunny, 18°C",
        "Tokyo": "rainy, 22°C",
    }
    return weather_data.get(city, f"No data for {city}")


@chat_middleware
async def log_model_input(context: ChatContext, call_next: Any) -> None:
    """Chat middleware that logs the messages sent to the model (after compaction)."""
    msgs: Sequence[Message] = context.messages
    print(f"\n  Model receives {len(msgs)} messages:")
    for i, m in enumerate(msgs, 1):
        text = m.text or ", ".join(c.type for c in m.contents)
        print(f"    {i:02d}. [{m.role}] {text[:70]}")
    await call_next()


# --- Baton --------------------------------------------------------------------------------------

import json  # noqa: E402
import re  # noqa: E402

from agent_framework import Content, FunctionTool  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from baton.api import RunServices, register, scripted_plays  # noqa: E402
from tests.plays import asking  # noqa: E402

QUERIES = [
    "What is the weather in London?",
    "How about Paris?",
    "And Tokyo?",
    "Which city is the warmest?",
]
"""`main()`'s four turns, in order, in one session."""


class Turn(BaseModel):
    """The run's input: `main()`'s first query, unless another is given (its next ones)."""

    text: str = QUERIES[0]


def _agent(services: RunServices, weather: FunctionTool) -> Agent:
    """`main()`'s agent, history and compaction, on the model Baton is configured with."""
    client = services.chat_clients.for_persona("compaction-weather")

    # History provider loads/stores conversation messages in session.state.
    # skip_excluded=True means get_messages() will omit messages that were
    # marked as excluded by the CompactionProvider's after_strategy.
    history = InMemoryHistoryProvider(skip_excluded=True)

    compaction = CompactionProvider(
        # BEFORE each turn: SlidingWindow drops older message groups from
        # the loaded context so the model's input stays bounded. With
        # keep_last_groups=3, only the 3 most recent non-system groups are
        # sent to the model — older turns are not shown to the model.
        before_strategy=SlidingWindowStrategy(keep_last_groups=3, preserve_system=True),
        # AFTER each turn: ToolResultCompaction marks older tool-call groups
        # (assistant function_call + tool result messages) as excluded and
        # inserts a short "[Tool results: ...]" summary. The original messages
        # stay in storage with _excluded=True; skip_excluded on the history
        # provider ensures they won't be loaded on the next turn.
        after_strategy=ToolResultCompactionStrategy(keep_last_tool_call_groups=1),
        history_source_id=history.source_id,
    )

    # Provider order matters:
    #   before_run: history loads → compaction trims (forward order)
    #   after_run:  compaction marks exclusions → history stores (reverse order)
    agent = Agent(
        client=client,
        name="WeatherAssistant",
        instructions="You are a helpful weather assistant. Use the get_weather tool when asked about weather.",
        tools=[weather],
        context_providers=[history, compaction],
        middleware=[log_model_input],
    )
    return agent


@register("compaction_provider", input_model=Turn)
def build_agent(services: RunServices) -> Agent:
    """`main()`'s agent: its stored history compacted after each turn, its input before."""
    return _agent(services, get_weather)


@register("compaction_provider_approval", input_model=Turn)
def build_asking_agent(services: RunServices) -> Agent:
    """`main()`'s agent, its `get_weather` asking a person first."""
    return _agent(services, asking(get_weather))


CITIES = ("London", "Paris", "Tokyo")
DEGREES = re.compile(r"(-?\d+)°C")


def _said(content: Content) -> str:
    said = content.result
    if isinstance(said, list):
        said = "".join(part.text or "" for part in said)
    return str(said)


def weather_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """Ask for the weather in the city the last user message names and say it; asked for the
    warmest, check again the warmest of the cities whose weather it was handed (a call and its
    result, or a summary), then name it and the cities it compared."""
    last = max(i for i, m in enumerate(messages) if m.role == "user")
    asked = messages[last].text
    results = [c for m in messages[last:] for c in m.contents if c.type == "function_result"]
    if "warmest" not in asked:
        if results:
            return [Content.from_text(f"The weather is {_said(results[-1])}.")]
        city = next(c for c in CITIES if c in asked)
        return [
            Content.from_function_call(
                f"call-{city}", "get_weather", arguments=json.dumps({"city": city})
            )
        ]
    calls = {c.call_id: c for m in messages for c in m.contents if c.type == "function_call"}
    seen: dict[str, int] = {}
    for m in messages:
        for c in m.contents:
            if c.type == "function_result" and c.call_id in calls:
                city = str((calls[c.call_id].parse_arguments() or {})["city"])
                found = DEGREES.search(_said(c))
                if found:
                    seen[city] = int(found[1])
        for found_city in CITIES:
            if m.text.startswith("[Tool results:") and found_city in m.text:
                seen.setdefault(found_city, int(DEGREES.search(m.text)[1]))  # type: ignore[index]
    warmest = max(seen, key=seen.__getitem__)
    if not results:
        return [
            Content.from_function_call(
                "call-again", "get_weather", arguments=json.dumps({"city": warmest})
            )
        ]
    return [
        Content.from_text(
            f"{warmest} is the warmest at {seen[warmest]}°C; I compared {', '.join(sorted(seen))}."
        )
    ]


scripted_plays({"compaction-weather": weather_play})
