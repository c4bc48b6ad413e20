# Copyright (c) Microsoft. All rights reserved.

"""MAF's `02-agents/tools/function_tool_with_max_invocations.py`, as MAF wrote it.

Less its `main()` (its printing, and the commented-out replay in it), the "Expected Output"
string after it, its `load_dotenv()` and the imports only they used (`asyncio`,
`OpenAIChatClient`, `load_dotenv`): an agent whose `unicorn_function` MAF lets run once
(`max_invocations=1`, counted on the tool object), so that `main()`'s second turn is handed
"Function 'unicorn_function' has reached its maximum invocation limit, ..." as the call's
result. Its agent is built as `main()` builds it, on the model Baton is configured with
(`max_invocations`); `main()`'s two turns in one session are two runs, the second continuing the
first. `max_invocations_approval` is the same agent with `unicorn_function` asking a person
first, made once at import as a module's `@tool(approval_mode="always_require",
max_invocations=1)` is: on MAF alone the second turn's approved call is refused by the limit.
On the scripted model the agent calls the tool with the number the user asks for and says what
it returned.
"""

from typing import Annotated

from agent_framework import Agent, tool

"""
For tools you can specify if there is a maximum number of invocations allowed.
This sample shows a tool that can only be invoked once.
"""


@tool(max_invocations=1)
def unicorn_function(times: Annotated[int, "The number of unicorns to return."]) -> str:
    """This function returns precious unicorns!"""
    return f"{'🦄' * times}✨"


# --- Baton --------------------------------------------------------------------------------------

import json  # noqa: E402
import re  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from typing import Any  # noqa: E402

from agent_framework import Content, FunctionTool, Message, SupportsChatGetResponse  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from baton.api import RunServices, register, scripted_plays  # noqa: E402
from tests.plays import asking, recorded  # noqa: E402

USER_MESSAGES = ["Call 5 unicorns!", "Call 10 unicorns and use the function to do it."]
"""`main()`'s turns, in order, in one session."""

asking_unicorn_function = asking(unicorn_function)
"""`unicorn_function` asking first: one tool object, as a module's `@tool` makes it."""


class Turn(BaseModel):
    """The run's input: `main()`'s first turn, unless another is given (its second)."""

    text: str = USER_MESSAGES[0]


def tool_agent(client: SupportsChatGetResponse, unicorns: FunctionTool) -> Agent:
    """`main()`'s agent, on `client`."""
    # tools = Tools()
    agent = Agent(
        client=client,
        name="ToolAgent",
        instructions="Use the provided tools.",
        tools=[unicorns],
    )
    return agent


@register("max_invocations", input_model=Turn)
def build_agent(services: RunServices) -> Agent:
    """`main()`'s agent: a tool MAF lets run once."""
    return tool_agent(services.chat_clients.for_persona("unicorn-agent"), unicorn_function)


@register("max_invocations_approval", input_model=Turn)
def build_asking_agent(services: RunServices) -> Agent:
    """`main()`'s agent, its once-only tool asking a person first."""
    client = services.chat_clients.for_persona("unicorn-agent")
    return tool_agent(client, asking_unicorn_function)


def unicorn_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """Call the tool with the number the last user message asks for; then say what it returned."""
    last = max(i for i, m in enumerate(messages) if m.role == "user" and m.text)
    asked = messages[last].text
    results = [c for m in messages[last:] for c in m.contents if c.type == "function_result"]
    times = int(re.findall(r"\d+", asked)[0])
    if not results:
        arguments = json.dumps({"times": times})
        call = Content.from_function_call(f"call-{times}", "unicorn_function", arguments=arguments)
        return [call]
    said = results[-1].result if results[-1].result is not None else results[-1].exception
    return [Content.from_text(f"{times} unicorns asked; the tool said: {said}")]


scripted_plays({"unicorn-agent": recorded(unicorn_play)})
