# Copyright (c) Microsoft. All rights reserved.

"""MAF's `02-agents/tools/function_tool_recover_from_failures.py`, as MAF wrote it.

At agent-framework 5eb3eb745, less its `main()` (its printing, and the commented-out replay in
it), the "Expected Output" string of `main()` after it, its `load_dotenv()` and the imports only
they used (`asyncio`, `OpenAIChatClient`, `load_dotenv`): an agent whose `safe_divide` raises
`ZeroDivisionError`, which MAF hands the model as the call's result ("Error: Function failed."),
and a `greet` that does not. Its agent is built as `main()` builds it, on the model Baton is
configured with, registered as it is (`recover_from_failures`); `main()`'s two turns in one
session ("Divide 10 by 0", then "Greet Bob") are two runs, the second continuing the first
(`continues`). `recover_from_failures_approval` is the same agent with `safe_divide` asking a
person first, as `@tool(approval_mode="always_require")` makes a tool ask (`asking`): the
approved call raises, and the model hears it as MAF says it. On the scripted model the agent
calls the tool the last user message asks for and says what it returned.
"""

from typing import Annotated

from agent_framework import Agent, tool

"""
Tool exceptions handled by returning the error for the agent to recover from.

Shows how a tool that throws an exception creates gracefull recovery and can keep going.
The LLM decides whether to retry the call or to respond with something else, based on the exception.
"""


# NOTE: approval_mode="never_require" is for sample brevity. Use "always_require" in production;
# see samples/02-agents/tools/function_tool_with_approval.py
# and samples/02-agents/tools/function_tool_with_approval_and_sessions.py.
@tool(approval_mode="never_require")
def greet(name: Annotated[str, "Name to greet"]) -> str:
    """Greet someone."""
    return f"Hello, {name}!"


# we trick the AI into calling this function with 0 as denominator to trigger the exception
@tool(approval_mode="never_require")
def safe_divide(
    a: Annotated[int, "Numerator"],
    b: Annotated[int, "Denominator"],
) -> str:
    """Divide two numbers can be used with 0 as denominator."""
    try:
        result = a / b  # Will raise ZeroDivisionError
    except ZeroDivisionError as exc:
        print(f"    Tool failed: with error: {exc}")  # noqa: T201
        raise

    return f"{a} / {b} = {result}"


# --- Baton --------------------------------------------------------------------------------------

import json  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from typing import Any  # noqa: E402

from agent_framework import Content, FunctionTool, Message  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from baton.api import RunServices, register, scripted_plays  # noqa: E402
from tests.plays import asking  # noqa: E402


class Turn(BaseModel):
    """The run's input: `main()`'s first turn, unless another is given ("Greet Bob" next)."""

    text: str = "Divide 10 by 0"


def _agent(services: RunServices, divide: FunctionTool) -> Agent:
    """`main()`'s agent, on the model Baton is configured with."""
    # tools = Tools()
    agent = Agent(
        client=services.chat_clients.for_persona("recover-tool-agent"),
        name="ToolAgent",
        instructions="Use the provided tools.",
        tools=[greet, divide],
    )
    return agent


@register("recover_from_failures", input_model=Turn)
def build_agent(services: RunServices) -> Agent:
    """`main()`'s agent: a tool that raises, and one that does not."""
    return _agent(services, safe_divide)


@register("recover_from_failures_approval", input_model=Turn)
def build_asking_agent(services: RunServices) -> Agent:
    """`main()`'s agent, its `safe_divide` asking a person first."""
    return _agent(services, asking(safe_divide))


def tool_agent_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """Call the tool the last user message asks for; then say what it returned."""
    last = max(i for i, m in enumerate(messages) if m.role == "user")
    asked = messages[last].text
    results = [c for m in messages[last:] for c in m.contents if c.type == "function_result"]
    if asked.startswith("Divide"):
        if not results:
            arguments = json.dumps({"a": 10, "b": 0})
            return [Content.from_function_call("call-divide", "safe_divide", arguments=arguments)]
        return [
            Content.from_text(
                "Division by zero is undefined in standard arithmetic, so 10 ÷ 0 has no meaning. "
                f"(The tool said: {results[-1].result})"
            )
        ]
    if not results:
        arguments = json.dumps({"name": asked.split()[-1]})
        return [Content.from_function_call("call-greet", "greet", arguments=arguments)]
    return [Content.from_text(str(results[-1].result))]


scripted_plays({"recover-tool-agent": tool_agent_play})
