# Copyright (c) Microsoft. All rights reserved.

"""MAF's `02-agents/context_providers/todo_provider.py`, as MAF wrote it.

At agent-framework 5eb3eb745, less its `main()` (its three turns, their printing), its
`print_todo_list` (the printing `main()` does after each turn, reading the provider's store), the
"Sample output" string after `main()`, its `load_dotenv()` and the imports only they used
(`asyncio`, `os`, `AgentSession`, `TodoItem`, `FoundryChatClient`, `AzureCliCredential`,
`load_dotenv`): an agent whose `TodoProvider` gives it the todo tools and instructions and, each
turn, the current list, keeping the todos in the agent's session. Its agent is built as `main()`
builds it, on the model Baton is configured with, registered as it is (`todo_provider`); a run's
input is `main()`'s first message, and its later two are runs that each continue the one before
(`continues`), as `main()` runs them in one session. `todo_provider_approval` is the same agent
with the provider's `todos_remove` asking a person first, as `@tool(approval_mode=
"always_require")` makes a tool ask (`asking`; the provider makes its tools at each run, so a
context provider after it, `AskingFirst`, swaps it in): the approved removal runs on the todos
the session kept through the pause. On the scripted model the assistant adds main()'s four todos,
marks the venue and invites done, then removes catering and adds a hike, and each reply gives
the list the provider showed it; the last gives the list `todos_get_all` returns.
"""

from agent_framework import Agent, TodoProvider

"""
Todo List — Track work items across turns with TodoProvider

This sample shows how to use the ``TodoProvider``, a ``ContextProvider`` that gives an agent a set
of tools for managing a todo list (``todos_add``, ``todos_complete``, ``todos_remove``,
``todos_get_remaining``, ``todos_get_all``) along with instructions on how to use them. The todo
list is stored in the session state and persists across turns, so the agent can plan multi-step
work, track progress, and adjust the list as the conversation evolves.

This is a scripted, non-interactive walkthrough: it sends a sequence of messages to the agent and,
after each turn, prints the agent's reply followed by the current todo list (read directly from the
provider's store). This lets you watch the todo state evolve as the agent adds, completes, and
removes items.

Environment variables:
    FOUNDRY_PROJECT_ENDPOINT — Microsoft Foundry project endpoint URL
    FOUNDRY_MODEL            — Model deployment name

Authentication:
    Run ``az login`` before running this sample.
"""


# --- Baton --------------------------------------------------------------------------------------

import json  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from typing import Any  # noqa: E402

from agent_framework import (  # noqa: E402
    AgentSession,
    Content,
    ContextProvider,
    Message,
    SessionContext,
    SupportsChatGetResponse,
)
from pydantic import BaseModel  # noqa: E402

from baton.api import RunServices, register, scripted_plays  # noqa: E402
from tests.plays import asking  # noqa: E402

USER_MESSAGES = [
    "I'm organizing a small team offsite. Can you help me plan it? Break the work into a todo list.",  # noqa: E501
    "I've booked the venue and sent out the invites. Please update the list.",
    "Actually, let's skip catering and instead plan a group hike. Update the plan accordingly.",
]
"""`main()`'s turns, in order, in one session."""


class Turn(BaseModel):
    """The run's input: `main()`'s first message, unless another is given (its next ones)."""

    text: str = USER_MESSAGES[0]


class AskingFirst(ContextProvider):
    """Makes the tool `name` a context provider before it gave this run ask a person first."""

    def __init__(self, name: str) -> None:
        super().__init__(f"asking-{name}")
        self.name = name

    async def before_run(
        self,
        *,
        agent: Any,
        session: AgentSession | None,
        context: SessionContext,
        state: dict[str, Any],
    ) -> None:
        context.tools[:] = [
            asking(t) if getattr(t, "name", None) == self.name else t for t in context.tools
        ]


def planning_assistant(client: SupportsChatGetResponse, *asking_first: str) -> Agent:
    """`main()`'s agent, on `client`; the provider's tools named `asking_first` ask first."""
    # <create_todo_provider>
    # Create the TodoProvider and attach it to the agent as a context provider. The provider
    # contributes the todo-management tools and instructions to every agent invocation.
    todo_provider = TodoProvider()

    agent = Agent(
        client=client,
        name="PlanningAssistant",
        instructions="You are a helpful planning assistant. Use your todo list to plan and track multi-step work.",  # noqa: E501
        context_providers=[todo_provider, *(AskingFirst(name) for name in asking_first)],
    )
    # </create_todo_provider>
    return agent


@register("todo_provider", input_model=Turn)
def build_agent(services: RunServices) -> Agent:
    """`main()`'s agent: its todos kept in its session."""
    return planning_assistant(services.chat_clients.for_persona("planning-assistant"))


@register("todo_provider_approval", input_model=Turn)
def build_asking_agent(services: RunServices) -> Agent:
    """`main()`'s agent, the provider's `todos_remove` asking a person first."""
    client = services.chat_clients.for_persona("planning-assistant")
    return planning_assistant(client, "todos_remove")


TODO_LIST = "### Current todo list"
OFFSITE = [
    "Pick a date and confirm attendees",
    "Book a venue",
    "Arrange catering",
    "Send out invites",
]
"""The todos the assistant breaks the offsite into (the sample output's)."""


def _call(name: str, arguments: dict[str, Any], n: int) -> list[Content]:
    return [Content.from_function_call(f"call-{name}-{n}", name, arguments=json.dumps(arguments))]


def planning_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """main()'s three turns: add the offsite's todos; mark the venue and invites done; remove
    catering, add a hike, read the list back. Each reply quotes the list the provider showed."""
    said = [i for i, m in enumerate(messages) if m.role == "user" and m.text in USER_MESSAGES]
    asked = messages[said[-1]].text
    turn = USER_MESSAGES.index(asked)
    shown = [m.text for m in messages if m.role == "user" and m.text.startswith(TODO_LIST)]
    listed = shown[-1].removeprefix(TODO_LIST).strip()
    ids = {
        line.split(" [")[0].removeprefix("- "): line.split("] ", 1)[1]
        for line in listed.splitlines()
        if "] " in line
    }
    by_title = {title: int(number) for number, title in ids.items()}
    results = [c for m in messages[said[-1] :] for c in m.contents if c.type == "function_result"]
    if turn == 0:
        if not results:
            return _call("todos_add", {"todos": [{"title": t} for t in OFFSITE]}, turn)
        reply = "Great — I've broken this into a starter plan."
    elif turn == 1:
        if not results:
            done = [
                {"id": by_title[t], "reason": "The user did it."}
                for t in ("Book a venue", "Send out invites")
            ]
            return _call("todos_complete", {"items": done}, turn)
        reply = f"Nice work! I've marked the venue and invites as done ({results[-1].result})."
    else:
        if not results:
            return _call("todos_remove", {"ids": [by_title["Arrange catering"]]}, turn)
        if len(results) == 1:
            return _call("todos_add", {"todos": [{"title": "Plan a group hike"}]}, turn)
        if len(results) == 2:
            return _call("todos_get_all", {}, turn)
        items = json.loads(str(results[-1].result))
        now = "\n".join(
            f"[{'x' if i['is_complete'] else ' '}] {i['id']}. {i['title']}" for i in items
        )
        reply = f"Done — I removed catering and added a group hike to the plan:\n{now}"
    return [Content.from_text(f"{reply}\nThe list you had:\n{listed}")]


scripted_plays({"planning-assistant": planning_play})
