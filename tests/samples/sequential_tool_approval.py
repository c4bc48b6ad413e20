"""MAF's `03-workflows/tool-approval/sequential_builder_tool_approval.py`, as MAF wrote it.

At agent-framework 5eb3eb745, less its `main()`, its event-stream printing and auto-approving
loop (`process_event_stream`) and its Foundry client (with its `os`, `azure.identity` and
`dotenv` imports and `load_dotenv()` call): a `SequentialBuilder` of one agent whose
`execute_database_query` needs approval (`@tool(approval_mode="always_require")`) beside a
`get_database_schema` that does not. Its agent is built as `main()` builds it, on the model Baton
is configured with. On the scripted model the agent reads the schema, then asks to run the
sample's update; turned down, it asks again for a narrower one, and its last reply says what
each of its queries came to: a person's reason for turning one down shows in the output.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any

from agent_framework import Agent, Content, Message, tool
from agent_framework.orchestrations import SequentialBuilder
from pydantic import BaseModel

from baton.api import RunServices, register, scripted_plays

"""
Sample: Sequential Workflow with Tool Approval Requests

This sample demonstrates how to use SequentialBuilder with tools that require human
approval before execution. The approval flow uses the existing @tool decorator
with approval_mode="always_require" to trigger human-in-the-loop interactions.

This sample works as follows:
1. A SequentialBuilder workflow is created with a single agent that has tools requiring approval.
2. The agent receives a user task and determines it needs to call a sensitive tool.
3. The tool call triggers a function_approval_request Content, pausing the workflow.
4. The sample simulates human approval by responding to the .
5. Once approved, the tool executes and the agent completes its response.
6. The workflow outputs the final conversation with all messages.

Purpose:
Show how tool call approvals integrate seamlessly with SequentialBuilder without
requiring any additional builder configuration.

Demonstrate:
- Using @tool(approval_mode="always_require") for sensitive operations.
- Handling request_info events with function_approval_request Content in sequential workflows.
- Resuming workflow execution after approval via run(responses=..., stream=True).

Prerequisites:
- FOUNDRY_PROJECT_ENDPOINT must be your Microsoft Foundry Agent Service (V2) project endpoint.
- FOUNDRY_MODEL must be set to your Azure OpenAI model deployment name.
- Basic familiarity with SequentialBuilder and streaming workflow events.
"""


# 1. Define tools - one requiring approval, one that doesn't
@tool(approval_mode="always_require")
def execute_database_query(
    query: Annotated[str, "The SQL query to execute against the production database"],
) -> str:
    """Execute a SQL query against the production database. Requires human approval."""
    # In a real implementation, this would execute the query
    return f"Query executed successfully. Results: 3 rows affected by '{query}'"


# NOTE: approval_mode="never_require" is for sample brevity. Use "always_require" in production;
# see samples/02-agents/tools/function_tool_with_approval.py and
# samples/02-agents/tools/function_tool_with_approval_and_sessions.py.
@tool(approval_mode="never_require")
def get_database_schema() -> str:
    """Get the current database schema. Does not require approval."""
    return """
    Tables:
    - users (id, name, email, created_at)
    - orders (id, user_id, total, status, created_at)
    - products (id, name, price, stock)
    """


# --- Baton --------------------------------------------------------------------------------------


class TaskInput(BaseModel):
    task: str


@register("sequential_tool_approval", input_model=TaskInput, start_message=lambda i: i.task)
def build_workflow(services: RunServices) -> Any:
    # 2. Create the agent with tools (approval mode is set per-tool via decorator)
    database_agent = Agent(
        client=services.chat_clients.for_persona("tool-approval-database"),
        name="DatabaseAgent",
        instructions=(
            "You are a database assistant. You can view the database schema and execute "
            "queries. Always check the schema before running queries. Be careful with "
            "queries that modify data."
        ),
        tools=[get_database_schema, execute_database_query],
    )

    # 3. Build a sequential workflow with the agent
    return SequentialBuilder(participants=[database_agent]).build()


UPDATE = "UPDATE orders SET status = 'processing' WHERE status = 'pending'"
"""The query MAF's sample output shows its agent running for the sample's task."""
NARROWER = f"{UPDATE} AND created_at >= CURRENT_DATE - INTERVAL '7 days'"
"""The agent's second try, when a person turns the first down."""


def database_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """The schema; the update; turned down, a narrower update; then what the queries came to."""
    results = [c for m in messages for c in m.contents if c.type == "function_result"]
    if not results:
        return [Content.from_function_call("call-schema", "get_database_schema", arguments="{}")]
    queries = [str(r.result) for r in results[1:]]
    if not queries or (len(queries) == 1 and not queries[0].startswith("Query executed")):
        query = NARROWER if queries else UPDATE
        arguments = json.dumps({"query": query})
        call_id = f"call-query-{len(queries) + 1}"
        return [Content.from_function_call(call_id, "execute_database_query", arguments=arguments)]
    return [Content.from_text(" | ".join(queries))]


scripted_plays({"tool-approval-database": database_play})
