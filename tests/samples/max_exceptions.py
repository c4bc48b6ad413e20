# Copyright (c) Microsoft. All rights reserved.

"""MAF's `02-agents/tools/function_tool_with_max_exceptions.py`, as MAF wrote it.

Less its `main()` (its printing, and the commented-out replay in it), the "Expected Output"
string after it, its `load_dotenv()` and the imports only they used (`asyncio`,
`OpenAIChatClient`, `load_dotenv`): an agent whose `safe_divide` raises, and which MAF lets fail
once (`max_invocation_exceptions=1`, counted on the tool object), so that `main()`'s second turn
is handed "Function 'safe_divide' has reached its maximum exception limit, ..." as the call's
result. Its agent is built as `main()` builds it, on the model Baton is configured with
(`max_exceptions`); `main()`'s two turns in one session are two runs, the second continuing the
first. `max_exceptions_approval` is the same agent with `safe_divide` asking a person first,
made once at import as a module's `@tool(approval_mode="always_require",
max_invocation_exceptions=1)` is. On the scripted model the agent divides the numbers the user
gives and says what the tool returned.
"""

from typing import Annotated

from agent_framework import Agent, tool

"""
Some tools are very expensive to run, so you may want to limit the number of times
it tries to call them and fails. This sample shows a tool that can only raise exceptions a
limited number of times.
"""


# we trick the AI into calling this function with 0 as denominator to trigger the exception
@tool(max_invocation_exceptions=1)
def safe_divide(
    a: Annotated[int, "Numerator"],
    b: Annotated[int, "Denominator"],
) -> str:
    """Divide two numbers can be used with 0 as denominator."""
    try:
        result = a / b  # Will raise ZeroDivisionError
    except ZeroDivisionError as exc:
        print(f"    Tool failed with error: {exc}")  # noqa: T201
        raise

    return f"{a} / {b} = {result}"


# --- Baton --------------------------------------------------------------------------------------

import json  # noqa: E402
import re  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from typing import Any  # noqa: E402

from agent_framework import Content, FunctionTool, Message, SupportsChatGetResponse  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from baton.api import RunServices, register, scripted_plays  # noqa: E402
from tests.plays import asking, recorded  # noqa: E402

USER_MESSAGES = ["Divide 10 by 0", "Divide 100 by 0"]
"""`main()`'s turns, in order, in one session."""

asking_safe_divide = asking(safe_divide)
"""`safe_divide` asking first: one tool object, as a module's `@tool` makes it."""


class Turn(BaseModel):
    """The run's input: `main()`'s first turn, unless another is given (its second)."""

    text: str = USER_MESSAGES[0]


def tool_agent(client: SupportsChatGetResponse, divide: FunctionTool) -> Agent:
    """`main()`'s agent, on `client`."""
    # tools = Tools()
    agent = Agent(
        client=client,
        name="ToolAgent",
        instructions="Use the provided tools.",
        tools=[divide],
    )
    return agent


@register("max_exceptions", input_model=Turn)
def build_agent(services: RunServices) -> Agent:
    """`main()`'s agent: a tool MAF lets fail once."""
    return tool_agent(services.chat_clients.for_persona("dividing-agent"), safe_divide)


@register("max_exceptions_approval", input_model=Turn)
def build_asking_agent(services: RunServices) -> Agent:
    """`main()`'s agent, its fail-once tool asking a person first."""
    client = services.chat_clients.for_persona("dividing-agent")
    return tool_agent(client, asking_safe_divide)


def dividing_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """Divide the numbers the last user message gives; then say what the tool returned."""
    last = max(i for i, m in enumerate(messages) if m.role == "user" and m.text)
    asked = messages[last].text
    results = [c for m in messages[last:] for c in m.contents if c.type == "function_result"]
    a, b = (int(n) for n in re.findall(r"\d+", asked))
    if not results:
        arguments = json.dumps({"a": a, "b": b})
        return [Content.from_function_call(f"call-{a}", "safe_divide", arguments=arguments)]
    said = results[-1].result if results[-1].result is not None else results[-1].exception
    return [Content.from_text(f"{a} / {b}: the tool said: {said}")]


scripted_plays({"dividing-agent": recorded(dividing_play)})
