# Copyright (c) Microsoft. All rights reserved.

import asyncio
import json
import os
from typing import Annotated, Any, cast

from agent_framework import Agent, FunctionInvocationContext, Message, tool
from agent_framework.orchestrations import SequentialBuilder
from dotenv import load_dotenv
from pydantic import Field

# Load environment variables from .env file
load_dotenv()

"""
Sample: Per-Agent Workflow kwargs

This sample demonstrates how to pass different kwargs to different agents in a
workflow using per-agent targeting. When keys in function_invocation_kwargs (or
client_kwargs) match executor IDs (agent names by default), each agent
receives only its own slice of the kwargs.

Key Concepts:
- Per-agent function_invocation_kwargs target specific agents by executor ID
- Agents only receive the kwargs assigned to them (not other agents' kwargs)
- Useful when different agents need different credentials, configs, or context

Prerequisites:
- FOUNDRY_PROJECT_ENDPOINT must be your Microsoft Foundry Agent Service (V2) project endpoint.
- Environment variables configured
"""


# 1. Define a tool for the research agent — queries a company's internal
#    database using credentials passed via per-agent kwargs.
# NOTE: approval_mode="never_require" is for sample brevity. Use "always_require" in production;
# see samples/02-agents/tools/function_tool_with_approval.py
# and samples/02-agents/tools/function_tool_with_approval_and_sessions.py.
@tool(approval_mode="always_require")  # Baton: as the note says to in production: a pause
def query_company_database(
    query: Annotated[
        str,
        Field(
            description="The database query to run, e.g. 'Q3 revenue' or 'headcount by department'"
        ),
    ],
    ctx: FunctionInvocationContext,  # Baton: MAF 1.26 passes run kwargs here, not in **kwargs
) -> str:
    """Query the company's internal database for business metrics and data."""
    db_config = ctx.kwargs.get("db_config", {})
    connection_string = db_config.get("connection_string", "")
    database = db_config.get("database", "")

    if not connection_string or not database:
        return f"ERROR: missing db_config — cannot run query '{query}'"

    print(f"\n  [query_company_database] Connecting to {database} at {connection_string[:30]}...")

    # Simulated company data that the LLM would not know on its own
    return (
        f"Query results from {database}:\n"
        f"- Contoso Q3 2025 revenue: $47.2M (up 12% YoY)\n"
        f"- Top product line: CloudSync Pro ($18.6M)\n"
        f"- Engineering headcount: 342 (up from 298 in Q2)\n"
        f"- Customer churn rate: 4.1% (down from 5.3% in Q2)\n"
        f"- Net new enterprise customers: 28"
    )


# 2. Define a tool for the writer agent — retrieves the formatting style
#    from user preferences passed via per-agent kwargs.
@tool(approval_mode="never_require")
def get_formatting_instructions(
    section_title: Annotated[
        str, Field(description="The title of the section or report to format")
    ],
    ctx: FunctionInvocationContext,  # Baton: MAF 1.26 passes run kwargs here, not in **kwargs
) -> str:
    """Get the formatting instructions based on user preferences."""
    user_prefs = ctx.kwargs.get("user_preferences", {})
    output_format = user_prefs.get("format", "plain")
    language = user_prefs.get("language", "en")

    print(f"\n  [get_formatting_instructions] Format: {output_format}, Language: {language}")

    return (
        f"Formatting rules for '{section_title}':\n"
        f"- Output format: {output_format}\n"
        f"- Language/locale: {language}\n"
        f"- Include a footer: 'Generated in {output_format} for locale {language}'"
    )


# --- Baton: the registration (the sample's `main()` is left out, with its Foundry client: its ----
# --- agents and workflow are built as `main()` builds them, on the model Baton is configured ----
# --- with, its per-agent kwargs given by `run_kwargs`; the researcher's query asks a person) ----

from collections.abc import Sequence  # noqa: E402

from agent_framework import Content, Workflow  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from baton.api import RunServices, register, scripted_plays  # noqa: E402
from tests.plays import recorded  # noqa: E402

PER_AGENT_FI_KWARGS = {  # main()'s
    "researcher": {
        "db_config": {
            "connection_string": "Server=contoso-sql.database.windows.net;Database=metrics",
            "database": "contoso_metrics_prod",
        },
    },
    "writer": {
        "user_preferences": {
            "format": "markdown",
            "language": "en-US",
        },
    },
}


class Ask(BaseModel):
    request: str = "Pull Contoso's Q3 2025 performance data and write an executive summary."


def per_agent_kwargs(ask: Ask, services: RunServices) -> dict[str, Any]:
    return {"function_invocation_kwargs": PER_AGENT_FI_KWARGS}


def build(client: Any) -> Workflow:
    """`main()`'s agents and workflow."""
    researcher = Agent(
        client=client,
        name="researcher",
        instructions=(
            "You are a data analyst. Call query_company_database exactly once "
            "with the user's request as the query. Return the raw results."
        ),
        tools=[query_company_database],
    )

    writer = Agent(
        client=client,
        name="writer",
        instructions=(
            "You are a report writer. Call get_formatting_instructions exactly once, "
            "then rewrite the data you receive into a polished report following those rules."
        ),
        tools=[get_formatting_instructions],
    )
    return SequentialBuilder(participants=[researcher, writer]).build()


@register(
    "workflow_kwargs_per_agent",
    input_model=Ask,
    start_message=lambda a: a.request,
    run_kwargs=per_agent_kwargs,
)
def build_workflow(services: RunServices) -> Workflow:
    """MAF's workflow_kwargs_per_agent: each agent's tools get their own kwargs."""
    return build(services.chat_clients.for_persona("per-agent-kwargs"))


def _play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """Each agent calls its tool once, then says what the tool returned."""
    mine = (
        "query_company_database"
        if "data analyst" in str(options.get("instructions"))
        else ("get_formatting_instructions")
    )
    calls = {
        c.call_id
        for m in messages
        for c in m.contents
        if c.type == "function_call" and c.name == mine
    }
    results = [
        c
        for m in messages
        for c in m.contents
        if c.type == "function_result" and c.call_id in calls
    ]
    if results:
        return [Content.from_text(str(results[-1].result))]
    argument = {"query_company_database": {"query": "Q3 2025"}}.get(
        mine, {"section_title": "Q3 summary"}
    )
    return [Content.from_function_call(f"call-{mine}", mine, arguments=json.dumps(argument))]


play = recorded(_play)
scripted_plays({"per-agent-kwargs": play})
