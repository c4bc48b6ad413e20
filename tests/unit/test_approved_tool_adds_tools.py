"""An approved call runs with the run's live tools, as MAF's loop runs it (`ctx.add_tools`).

MAF's `02-agents/tools/dynamic_tool_exposure.py` with its loader needing approval: on MAF alone
the approved `load_math_tools` adds `factorial` and `fibonacci` for the model's next turn; Baton
runs the approved call itself (`BatonCalls`), and must hand the tool the same live tools list.
"""

from __future__ import annotations

from typing import Any

from agent_framework import Agent, Content, FunctionInvocationContext, Message, tool
from pydantic import BaseModel

from baton.api import RunServices, register, scripted_plays
from baton.wiring import Parts
from executors.platform.chat_clients import PLAYS, ScriptedChatClient
from human.store.base import RequestFilter


@tool(approval_mode="never_require")
def factorial(n: int) -> str:
    """Compute the factorial of n."""
    result = 1
    for value in range(2, n + 1):
        result *= value
    return f"{n}! = {result}"


@tool(approval_mode="always_require")
def load_math_tools(ctx: FunctionInvocationContext) -> str:
    """Load additional math tools so they can be used."""
    ctx.add_tools([factorial])
    return "Loaded math tools: factorial."


def _play(messages: Any, options: dict[str, Any]) -> list[Content]:
    tools = [t.name for t in options.get("tools") or []]
    results = [str(c.result) for m in messages for c in m.contents if c.type == "function_result"]
    if not results:
        return [Content.from_function_call("load-1", "load_math_tools", arguments="{}")]
    if len(results) == 1 and "factorial" in tools:
        return [Content.from_function_call("fact-1", "factorial", arguments='{"n": 5}')]
    return [Content.from_text(" | ".join(results))]


scripted_plays({"progressive-math": _play})


class Question(BaseModel):
    text: str


def _agent(client: Any) -> Agent:
    return Agent(client=client, name="MathAgent", tools=[load_math_tools])


@register("progressive_math", input_model=Question)
def build(services: RunServices) -> Agent:
    return _agent(services.chat_clients.for_persona("progressive-math"))


async def test_an_approved_call_adds_tools_as_on_maf_alone(parts: Parts) -> None:
    agent = _agent(ScriptedChatClient(PLAYS["progressive-math"]))
    session = agent.create_session()
    alone = await agent.run("What is 5 factorial?", session=session)
    [asked] = alone.user_input_requests
    approved = Message("user", [asked.to_function_approval_response(approved=True)])
    alone = await agent.run(approved, session=session)
    assert alone.text == "Loaded math tools: factorial. | 5! = 120"

    run = await parts.runtime.start(
        "progressive_math", {"text": "What is 5 factorial?"}, actor="sam"
    )
    await parts.worker.drain()
    [request] = (await parts.requests.list(RequestFilter(run_id=run.id, status="pending"))).items
    lee = await parts.store.get_user("lee")
    assert lee is not None
    await parts.requests.respond(request.id, {"decision": "approve"}, responder=lee)
    await parts.worker.drain()
    done = await parts.runtime.get(run.id)
    assert done.status == "completed", done.error
    assert done.output["text"] == alone.text  # before: "Error: Function failed." (RuntimeError)
