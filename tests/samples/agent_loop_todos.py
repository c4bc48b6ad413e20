# Copyright (c) Microsoft. All rights reserved.
# ruff: noqa: E501 (MAF's lines, kept as MAF wrote them, run to its 120 columns)

"""MAF's `02-agents/middleware/agent_loop_middleware_todos.py`, as MAF wrote it.

At agent-framework 5eb3eb745, less its `todo_loop()` and `main()` (they build the agent on a Foundry
client, stream its run and print the stream and the todos), the "Sample output" string after them,
its `load_dotenv()` and the imports only they used (`asyncio`, `FoundryChatClient`,
`AzureCliCredential`, `load_dotenv`); its session is the one the agent's executor runs it in. Its agent is built as `todo_loop()` builds it, on the model Baton is configured with,
registered as it is (`agent_loop_todos`): MAF's `AgentLoopMiddleware` runs the agent again while
its `TodoProvider` (which keeps the todos in the session) has open items, at most six times. Baton
runs it without streaming, so the run's output is the loop's aggregated response (each
iteration's reply and the prompts the loop added between them), as MAF's non-streaming `run` gives
it. `agent_loop_todos_approval` is the same agent with the provider's `todos_complete` asking a
person first (`AskingTodoProvider`, Baton's): each approval ends the loop's pass as MAF's loop ends
it (a pending approval is handed back), and the approved call runs in whatever process resumes the
run, on the todos the session held when it paused; the loop then goes on, as it goes on on MAF
alone when the approval is sent back to `run` in the session. On the scripted model the planner
adds three todos, then completes one a turn, saying which.
"""

from typing import Any

from agent_framework import Agent, AgentLoopMiddleware, AgentSession, TodoProvider, todos_remaining

"""
Agent Loop Middleware: todo loop (should_continue via a provider helper)

This sample demonstrates ``AgentLoopMiddleware`` driven by a ``should_continue`` predicate built from
a ``TodoProvider``. The ``todos_remaining`` helper keeps the agent running while it still has open
todo items, so the agent plans work on its first turn and completes one item per turn afterwards.
``max_iterations`` bounds the loop as a safety cap, and a single session keeps the todo state across
iterations. After the run the sample prints the todos the agent created.

The loop is run with streaming, so the injected messages between iterations show up as ``user``
updates; the stream is printed as ``<role>: <content>`` lines.

Environment variables:
    FOUNDRY_PROJECT_ENDPOINT — Microsoft Foundry project endpoint URL
    FOUNDRY_MODEL            — Model deployment name

Authentication:
    Run ``az login`` before running this sample.
"""


# --- Baton --------------------------------------------------------------------------------------

import json  # noqa: E402
from collections.abc import Sequence  # noqa: E402

from agent_framework import Content, Message, SessionContext  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from baton.api import RunServices, register, scripted_plays  # noqa: E402


class Prompt(BaseModel):
    """The run's input: `todo_loop()`'s prompt, unless another is given."""

    text: str = "Plan and write a short 3-section blog post about Rayleigh scattering."


class AskingTodoProvider(TodoProvider):
    """MAF's `TodoProvider`, its `todos_complete` asking a person first."""

    async def before_run(
        self, *, agent: Any, session: AgentSession, context: SessionContext, state: dict[str, Any]
    ) -> None:
        await super().before_run(agent=agent, session=session, context=context, state=state)
        for added in context.tools:
            if getattr(added, "name", None) == "todos_complete":
                added.approval_mode = "always_require"


def _agent(services: RunServices, todo_provider: TodoProvider) -> Agent:
    """`todo_loop()`'s agent, on the model Baton is configured with."""
    client = services.chat_clients.for_persona("loop-todos-planner")

    # 2. ``todos_remaining`` builds a ``should_continue`` predicate that returns True while any todo
    #    item is still open. ``max_iterations`` guarantees the loop stops even if the agent stalls.
    loop = AgentLoopMiddleware(
        should_continue=todos_remaining(),
        max_iterations=6,
    )

    agent = Agent(
        client=client,
        name="planner",
        instructions=(
            "You are a writing assistant working through a todo list. "
            "On your FIRST turn, break the task into todo items using your todo tools and stop "
            "(do not start writing yet). On EACH SUBSEQUENT turn, complete exactly ONE remaining "
            "todo item, write its content, and mark it done using your tools — never complete more "
            "than one item per turn. When every item is done, give a brief final summary."
        ),
        context_providers=[todo_provider],
        middleware=[loop],
    )
    return agent


@register("agent_loop_todos", input_model=Prompt)
def build_agent(services: RunServices) -> Agent:
    """`todo_loop()`'s agent: a loop while its todos remain."""
    # 1. A TodoProvider gives the agent tools to plan and track work as todo items.
    todo_provider = TodoProvider()
    return _agent(services, todo_provider)


@register("agent_loop_todos_approval", input_model=Prompt)
def build_asking_agent(services: RunServices) -> Agent:
    """`todo_loop()`'s agent, each todo's completion asking a person first."""
    return _agent(services, AskingTodoProvider())


SECTIONS = ("What light is", "How Rayleigh scattering works", "Why the sky is blue")


def planner_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """Add a todo per section; then complete the next open one a turn, saying which."""
    calls = [c for m in messages for c in m.contents if c.type == "function_call"]
    done = [c for c in calls if c.name == "todos_complete"]
    if any(c.type == "function_result" for c in messages[-1].contents):
        if not done:
            return [Content.from_text("Here is my plan. I'll create todos for each section.")]
        return [Content.from_text(f"Section {len(done)} drafted. Marking it done.")]
    if not any(c.name == "todos_add" for c in calls):
        todos = [{"title": f'Draft "{section}" section'} for section in SECTIONS]
        arguments = json.dumps({"todos": todos})
        return [Content.from_function_call("call-add", "todos_add", arguments=arguments)]
    n = len(done) + 1
    if n > len(SECTIONS):
        return [Content.from_text("All three sections are done.")]
    arguments = json.dumps({"items": [{"id": n, "reason": f"Section {n} written"}]})
    return [Content.from_function_call(f"call-complete-{n}", "todos_complete", arguments=arguments)]


scripted_plays({"loop-todos-planner": planner_play})
