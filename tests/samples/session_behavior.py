# Copyright (c) Microsoft. All rights reserved.
# ruff: noqa: T201, E501

"""MAF's `02-agents/middleware/session_behavior_middleware.py`, as MAF wrote it.

At agent-framework 5eb3eb745, less its `main()` (its printing, and its session: the agent's executor
makes the session MAF runs it in), its `load_dotenv()` and the imports only they used (`asyncio`,
`FoundryChatClient`, `AzureCliCredential`, `load_dotenv`): an agent whose middleware counts the
run's input messages and the messages MAF's `InMemoryHistoryProvider` keeps in the session, before
and after the agent runs. Its agent is built as `main()` builds it, on the model Baton is
configured with, registered as it is (`session_behavior`); `main()`'s two turns in one session
("What's the weather like in Tokyo?", then "How about in London?") are two runs, the second
continuing the first (`continues`). The model is handed the same messages as on MAF alone, and the
middleware counts as on MAF alone at the second turn: 1 input message, 4 in the session's history,
8 after the run (`test_a_middleware_sees_a_continued_turn_s_input_and_history_as_on_maf_alone`:
Baton puts the earlier turn in the session, where MAF keeps it). `session_behavior_approval` is the
same agent with `get_weather` asking a person first (`asking`): the approved call runs once, in
whatever process resumes the run. On the scripted model the agent asks for the weather in the city
the last user message names and says what the tool returned (its weather is random, as MAF's).
"""

from collections.abc import Awaitable, Callable
from typing import Annotated

from agent_framework import (
    Agent,
    AgentContext,
    InMemoryHistoryProvider,
    tool,
)
from pydantic import Field

"""
Thread Behavior MiddlewareTypes Example

This sample demonstrates how middleware can access and track session state across multiple agent runs.
The example shows:

- How AgentContext.session property behaves across multiple runs
- How middleware can access conversation history through the session
- The timing of when session messages are populated (before vs after call_next() call)
- How to track session state changes across runs

Key behaviors demonstrated:
1. First run: context.messages is populated, context.session is initially empty (before call_next())
2. After call_next(): session contains input message + response from agent
3. Second run: context.messages contains only current input, session contains previous history
4. After call_next(): session contains full conversation history (all previous + current messages)
"""


# NOTE: approval_mode="never_require" is for sample brevity. Use "always_require" in production;
# see samples/02-agents/tools/function_tool_with_approval.py
# and samples/02-agents/tools/function_tool_with_approval_and_sessions.py.
@tool(approval_mode="never_require")
def get_weather(
    location: Annotated[str, Field(description="The location to get the weather for.")],
) -> str:
    """Get the weather for a given location."""
    from random import randint

    conditions = ["sunny", "cloudy", "rainy", "stormy"]
    return f"The weather in {location} is {conditions[randint(0, 3)]} with a high of {randint(10, 30)}°C."


async def thread_tracking_middleware(
    context: AgentContext,
    call_next: Callable[[], Awaitable[None]],
) -> None:
    """MiddlewareTypes that tracks and logs session behavior across runs."""
    session_message_count = 0
    if context.session:
        memory_state = context.session.state.get(InMemoryHistoryProvider.DEFAULT_SOURCE_ID, {})
        session_message_count = len(memory_state.get("messages", []))

    print(f"[MiddlewareTypes pre-execution] Current input messages: {len(context.messages)}")
    print(f"[MiddlewareTypes pre-execution] Session history messages: {session_message_count}")

    # Call call_next to execute the agent
    await call_next()

    # Check session state after agent execution
    updated_session_message_count = 0
    if context.session:
        memory_state = context.session.state.get(InMemoryHistoryProvider.DEFAULT_SOURCE_ID, {})
        updated_session_message_count = len(memory_state.get("messages", []))

    print(
        f"[MiddlewareTypes post-execution] Updated session messages: {updated_session_message_count}"
    )


# --- Baton --------------------------------------------------------------------------------------

import json  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from typing import Any  # noqa: E402

from agent_framework import Content, FunctionTool, Message  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from baton.api import RunServices, register, scripted_plays  # noqa: E402
from tests.plays import asking  # noqa: E402


class Turn(BaseModel):
    """The run's input: `main()`'s first query, unless another is given ("How about in London?")."""

    text: str = "What's the weather like in Tokyo?"


def _agent(services: RunServices, weather: FunctionTool) -> Agent:
    """`main()`'s agent, on the model Baton is configured with."""
    agent = Agent(
        client=services.chat_clients.for_persona("session-behavior-weather"),
        name="WeatherAgent",
        instructions="You are a helpful weather assistant.",
        tools=weather,
        middleware=[thread_tracking_middleware],
    )
    return agent


@register("session_behavior", input_model=Turn)
def build_agent(services: RunServices) -> Agent:
    """`main()`'s agent: its middleware counts the session's messages."""
    return _agent(services, get_weather)


@register("session_behavior_approval", input_model=Turn)
def build_asking_agent(services: RunServices) -> Agent:
    """`main()`'s agent, its `get_weather` asking a person first."""
    return _agent(services, asking(get_weather))


CITIES = ("Tokyo", "London")


def weather_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """Ask for the weather in the city the last user message names; then say what it is."""
    last = max(i for i, m in enumerate(messages) if m.role == "user")
    results = [c for m in messages[last:] for c in m.contents if c.type == "function_result"]
    if results:
        said = results[-1].result
        if isinstance(said, list):
            said = "".join(part.text or "" for part in said)
        return [Content.from_text(f"Here you are: {said}")]
    city = next(c for c in CITIES if c in messages[last].text)
    arguments = json.dumps({"location": city})
    return [Content.from_function_call(f"call-{city}", "get_weather", arguments=arguments)]


scripted_plays({"session-behavior-weather": weather_play})
