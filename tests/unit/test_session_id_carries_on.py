"""A continued run goes on in the agent's session of the turn before, as MAF keeps one session.

MAF's `02-agents/tools/function_tool_with_session_injection.py` runs three turns in one
`AgentSession`, its tool reading `ctx.session`: each turn's tool sees the same session. On Baton
a run continuing another must hand the agent a session of the same id, whether or not any of
its providers kept state in it (an approval's `tool_approval` entry did; nothing else did).
"""

from __future__ import annotations

from typing import Any

from agent_framework import Agent, Content, FunctionInvocationContext, tool
from pydantic import BaseModel

from baton.api import RunServices, register, scripted_plays
from baton.wiring import Parts

SEEN: list[str] = []


@tool(approval_mode="never_require")
async def get_weather(location: str, ctx: FunctionInvocationContext) -> str:
    """Get the weather for a given location."""
    SEEN.append(str(ctx.session.session_id if ctx.session else None))
    return f"The weather in {location} is cloudy."


def _play(messages: Any, options: dict[str, Any]) -> list[Content]:
    if messages[-1].role == "tool":
        return [Content.from_text("cloudy")]
    city = messages[-1].text.split(" in ")[-1].rstrip("?")
    return [
        Content.from_function_call(
            f"w-{city}", "get_weather", arguments=f'{{"location": "{city}"}}'
        )
    ]


scripted_plays({"session-weather": _play})


class Question(BaseModel):
    text: str


@register("session_weather", input_model=Question)
def build(services: RunServices) -> Agent:
    client = services.chat_clients.for_persona("session-weather")
    return Agent(client=client, name="WeatherAgent", tools=[get_weather])


async def test_each_turn_s_tool_sees_the_session_of_the_turn_before(parts: Parts) -> None:
    SEEN.clear()
    earlier = None
    for city in ("London", "Amsterdam"):
        run = await parts.runtime.start(
            "session_weather",
            {"text": f"What is the weather in {city}?"},
            actor="sam",
            continues=earlier,
        )
        await parts.worker.drain()
        assert (await parts.runtime.get(run.id)).status == "completed"
        earlier = run.id
    first, second = SEEN
    assert second == first  # before: a new session (id) at the second turn
