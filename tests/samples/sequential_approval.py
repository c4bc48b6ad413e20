"""A tool approval on a plain agent in a sequential orchestration: MAF's `approval_mode`.

The agent's `execute_database_query` is a plain `@tool(approval_mode="always_require")`; Baton
asks a person (routed by the policies file like any tool) and runs the approved call.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any

from agent_framework import Agent, Content, Message, tool
from agent_framework_orchestrations import SequentialBuilder
from pydantic import BaseModel

from baton.api import RunServices, register, scripted_plays

EXECUTED: list[str] = []
"""The queries that really ran (in this process): an approved call runs once."""


@tool(approval_mode="always_require")
def execute_database_query(
    query: Annotated[str, "The SQL query to execute against the production database"],
) -> str:
    """Execute a SQL query against the production database. Requires human approval."""
    EXECUTED.append(query)
    return f"Query executed successfully. Results: 3 rows affected by '{query}'"


@tool(approval_mode="never_require")
def get_database_schema() -> str:
    """Get the current database schema. Does not require approval."""
    return "Tables: users (id, name, email), orders (id, user_id, total, status)"


# --- Baton --------------------------------------------------------------------------------------


class TaskInput(BaseModel):
    task: str


@register("sequential_approval", input_model=TaskInput, start_message=lambda i: i.task)
def build_workflow(services: RunServices) -> Any:
    database_agent = Agent(
        client=services.chat_clients.for_persona("database"),
        name="DatabaseAgent",
        instructions="You are a database assistant. Check the schema before running queries.",
        tools=[execute_database_query, get_database_schema],
    )
    return SequentialBuilder(name="sequential_approval", participants=[database_agent]).build()


def database_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """Read the schema, then run the query the task names, then report what came back."""
    results = [c for m in messages for c in m.contents if c.type == "function_result"]
    if not results:
        return [Content.from_function_call("call-schema", "get_database_schema", arguments="{}")]
    if len(results) == 1:
        task = next(m.text for m in messages if m.role == "user")
        query = task.split(":", 1)[-1].strip()
        arguments = json.dumps({"query": query})
        return [
            Content.from_function_call("call-query", "execute_database_query", arguments=arguments)
        ]
    return [Content.from_text(f"Done: {results[-1].result}")]


scripted_plays({"database": database_play})
