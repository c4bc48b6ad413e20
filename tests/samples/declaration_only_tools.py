"""MAF's `03-workflows/human-in-the-loop/agents_with_declaration_only_tools.py`, as MAF wrote it.

At agent-framework 5eb3eb745, less its `main()` (its printing, its inspecting of the request
and its stand-in client result, "Seattle, WA"), its sample docstring and its Foundry client (with
`load_dotenv()` and the imports only they used): an agent whose tool `get_user_location` is a
declaration only (`func=None`), so that MAF hands its call back as a request and a person gives
the result. Its agent and workflow are built as `main()` builds them, on the model Baton is
configured with; on the scripted model the agent makes up its forecast for the city it is given.
"""

import json
from collections.abc import Sequence
from typing import Any

from agent_framework import Agent, Content, FunctionTool, Message, WorkflowBuilder
from pydantic import BaseModel

from baton.api import RunServices, register, scripted_plays

# A declaration-only tool: the schema is sent to the LLM, but the framework
# has no implementation to execute. The caller must supply the result.
get_user_location = FunctionTool(
    name="get_user_location",
    func=None,
    description="Get the user's current city. Only the client application can resolve this.",
    input_model={
        "type": "object",
        "properties": {
            "reason": {"type": "string", "description": "Why the location is needed"},
        },
        "required": ["reason"],
    },
)


# --- Baton --------------------------------------------------------------------------------------


class WeatherQuestion(BaseModel):
    """The run's input: what `main()` asks the workflow, unless another question is given."""

    text: str = "What's the weather like today?"


@register("declaration_only_tools", input_model=WeatherQuestion, start_message=lambda q: q.text)
def build_workflow(services: RunServices) -> Any:
    """The sample's `main()`, as far as it builds the workflow."""
    _client = services.chat_clients.for_persona("declaration_only_tools")
    agent = Agent(
        client=_client,
        name="WeatherBot",
        instructions=(
            "You are a helpful weather assistant. "
            "When the user asks about weather, call get_user_location first, "
            "then make up a plausible forecast for that city."
        ),
        tools=[get_user_location],
    )

    workflow = WorkflowBuilder(start_executor=agent).build()
    return workflow


def weather_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """Ask where the user is (once), then make a forecast up for the city the result names."""
    results = [c for m in messages for c in m.contents if c.type == "function_result"]
    if results:
        city = results[-1].result
        return [Content.from_text(f"Today in {city}: 14°C, light rain clearing by the evening.")]
    reason = json.dumps({"reason": "to give the forecast for where the user is"})
    return [Content.from_function_call("call-location", "get_user_location", arguments=reason)]


scripted_plays({"declaration_only_tools": weather_play})
