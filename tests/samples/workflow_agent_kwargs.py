# Copyright (c) Microsoft. All rights reserved.

import json
from typing import Annotated, Any

from agent_framework import Agent, tool
from agent_framework.orchestrations import SequentialBuilder
from dotenv import load_dotenv
from pydantic import Field

# Load environment variables from .env file
load_dotenv()

"""
Sample: Workflow as Agent with kwargs Propagation to @tool Tools

This sample demonstrates how to flow custom context (skill data, user tokens, etc.)
through a workflow exposed Agent(client=via,) to @tool functions using the **kwargs pattern.

Key Concepts:
- Build a workflow using SequentialBuilder (or any builder pattern)
- Expose the workflow as a reusable agent via Agent(client=workflow,)
- Pass custom context as kwargs when invoking workflow_agent.run()
- kwargs are stored in State and propagated to all agent invocations
- @tool functions receive kwargs via **kwargs parameter

When to use Agent(client=workflow,):
- To treat an entire workflow orchestration as a single agent
- To compose workflows into higher-level orchestrations
- To maintain a consistent agent interface for callers

Prerequisites:
- FOUNDRY_PROJECT_ENDPOINT must be your Microsoft Foundry Agent Service (V2) project endpoint.
- FOUNDRY_MODEL must be set to your Azure OpenAI model deployment name.
"""


# Define tools that accept custom context via **kwargs
# NOTE: approval_mode="never_require" is for sample brevity.
# Use "always_require" in production; see samples/02-agents/tools/function_tool_with_approval.py and
# samples/02-agents/tools/function_tool_with_approval_and_sessions.py.
@tool(approval_mode="never_require")
def get_user_data(
    query: Annotated[str, Field(description="What user data to retrieve")],
    **kwargs: Any,
) -> str:
    """Retrieve user-specific data based on the authenticated context."""
    user_token = kwargs.get("user_token", {})
    user_name = user_token.get("user_name", "anonymous")
    access_level = user_token.get("access_level", "none")

    print(f"\n[get_user_data] Received kwargs keys: {list(kwargs.keys())}")
    print(f"[get_user_data] User: {user_name}")
    print(f"[get_user_data] Access level: {access_level}")

    return f"Retrieved data for user {user_name} with {access_level} access: {query}"


@tool(approval_mode="always_require")  # Baton: a person approves each call
def call_api(
    endpoint_name: Annotated[str, Field(description="Name of the API endpoint to call")],
    **kwargs: Any,
) -> str:
    """Call an API using the configured endpoints from custom_data."""
    custom_data = kwargs.get("custom_data", {})
    api_config = custom_data.get("api_config", {})

    base_url = api_config.get("base_url", "unknown")
    endpoints = api_config.get("endpoints", {})

    print(f"\n[call_api] Received kwargs keys: {list(kwargs.keys())}")
    print(f"[call_api] Base URL: {base_url}")
    print(f"[call_api] Available endpoints: {list(endpoints.keys())}")

    if endpoint_name in endpoints:
        return f"Called {base_url}{endpoints[endpoint_name]} successfully"
    return f"Endpoint '{endpoint_name}' not found in configuration"



# --- Baton: MAF's `03-workflows/agents/workflow_as_agent_kwargs.py`, less its `main()` and its ----
# --- Foundry client: its agent, workflow and `.as_agent()` built as `main()` builds them, its -----
# --- kwargs given by `run_kwargs` as `main()` gives them to `run`; `call_api` needs approval ------

from collections.abc import Sequence  # noqa: E402

from agent_framework import Content, Message, SupportsChatGetResponse  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from baton.api import RunServices, register, scripted_plays  # noqa: E402
from tests.samples.model_trace import traced  # noqa: E402


class Prompt(BaseModel):
    text: str


CUSTOM_DATA = {
    "api_config": {
        "base_url": "https://api.example.com",
        "endpoints": {
            "users": "/v1/users",
            "orders": "/v1/orders",
            "products": "/v1/products",
        },
    },
}

USER_TOKEN = {
    "user_name": "bob@contoso.com",
    "access_level": "admin",
}


def main_kwargs(prompt: Prompt | None = None, services: RunServices | None = None) -> dict[str, Any]:
    """`main()`'s kwargs, given to `workflow_agent.run`."""
    return {"function_invocation_kwargs": {"custom_data": CUSTOM_DATA, "user_token": USER_TOKEN}}


def build_agent(client: SupportsChatGetResponse, ask: bool = True) -> Any:
    """`main()`'s agent, workflow and agent, on `client` (`call_api` approved by a person where `ask`)."""
    # Create agent with tools that use kwargs
    agent = Agent(
        client=client,
        name="assistant",
        instructions=(
            "You are a helpful assistant. Use the available tools to help users. "
            "When asked about user data, use get_user_data. "
            "When asked to call an API, use call_api."
        ),
        tools=[get_user_data, call_api if ask else tool(call_api.func, approval_mode="never_require")],
    )

    # Build a sequential workflow
    workflow = SequentialBuilder(participants=[agent]).build()

    # Expose the workflow as an agent Agent(client=using,)
    return workflow.as_agent()


@register("workflow_agent_kwargs", input_model=Prompt, run_kwargs=main_kwargs)
def build(services: RunServices) -> Any:
    return build_agent(services.chat_clients.for_persona("workflow-agent-kwargs"))


QUERIES = [
    "Please get my user data and then call the users API endpoint.",
    "Now call the orders API endpoint.",
]


def _play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """The user data, then the endpoint the last question names; then what they returned."""
    asked = [m.text for m in messages if m.role == "user"][-1]
    results = [c for m in messages for c in m.contents if c.type == "function_result"]
    calls = [c for m in messages for c in m.contents if c.type == "function_call"]
    last = max(i for i, m in enumerate(messages) if m.role == "user")
    recent = [c for m in messages[last + 1 :] for c in m.contents]
    done = [c for c in recent if c.type == "function_result"]
    endpoint = "orders" if "orders" in asked else "users"
    called = {c.name for c in recent if c.type == "function_call"}
    if "user data" in asked and "get_user_data" not in called:
        arguments = json.dumps({"query": "profile"})
        return [Content.from_function_call(f"call-user-{len(calls)}", "get_user_data", arguments=arguments)]
    if "call_api" not in called:
        arguments = json.dumps({"endpoint_name": endpoint})
        return [Content.from_function_call(f"call-api-{len(calls)}", "call_api", arguments=arguments)]
    said = " | ".join(str(c.result) for c in done)
    return [Content.from_text(f"{said} (handed {len(messages)}, {len(results)} results)")]


scripted_plays({"workflow-agent-kwargs": traced(_play)})
