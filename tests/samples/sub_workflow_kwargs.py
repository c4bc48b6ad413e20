# ruff: noqa: T201
# Copyright (c) Microsoft. All rights reserved.

"""MAF's `03-workflows/composition/sub_workflow_kwargs.py`, as MAF wrote it.

At agent-framework 5eb3eb745, less its `main()` (its printing too), its `load_dotenv()`, its
Foundry client and the imports only `main()` used (`asyncio`, `os`, `Message`,
`FoundryChatClient`, `AzureCliCredential`, `load_dotenv`): a data agent in a sequential
sub-workflow (`WorkflowExecutor`) inside a sequential parent, whose tools read the parent run's
kwargs (`user_token`, `service_config`), given by `register(run_kwargs=...)` as `main()` gives
them to `run`. The workflows are built as `main()` builds them, on the model Baton is configured
with, but for three things (`# Baton:`):

- the tools read the kwargs from their `FunctionInvocationContext` (`ctx.kwargs`, as MAF's
  `02-agents/tools/function_tool_with_kwargs.py` does): the sample reads a tool's `**kwargs`,
  which MAF 1.26 leaves empty (on MAF alone too: "for user anonymous (none access)" and
  "Service 'users' not found in configuration");
- a person reviews the data agent's reply (`.with_request_info()` on the sub-workflow, whose
  `WorkflowExecutor` is given `propagate_request=True`: the parent has no executor of its own to
  answer the request), so that the agent calls its tools again after a restart, on the reason a
  person sends it back with;
- the `WorkflowExecutor` is given `allow_direct_output=True`: the sub-workflow's reply is
  otherwise sent as a message to no one (the parent has nothing after it), and the parent has no
  output at all (`main()` prints no "[Final Answer]" on MAF 1.26).

On the scripted model the agent fetches what the request names, calls each service the person's
reasons name too, and answers with its tools' results: the kwargs they saw, after the restart too.
"""

import json
from typing import Annotated, Any

from agent_framework import (
    Agent,
    FunctionInvocationContext,
    WorkflowExecutor,
    tool,
)
from agent_framework.orchestrations import SequentialBuilder

"""
Sample: Sub-Workflow kwargs Propagation

This sample demonstrates how custom context (kwargs) flows from a parent workflow
through to agents in sub-workflows. When you pass kwargs to the parent workflow's
run(), they automatically propagate to nested sub-workflows.

Key Concepts:
- kwargs passed to parent workflow.run() propagate to sub-workflows
- Sub-workflow agents receive the same kwargs as the parent workflow
- Works with nested WorkflowExecutor compositions at any depth
- Useful for passing authentication tokens, configuration, or request context

Prerequisites:
- FOUNDRY_PROJECT_ENDPOINT must be your Microsoft Foundry Agent Service (V2) project endpoint.
- FOUNDRY_MODEL must be set to your Azure OpenAI model deployment name.
"""


# Define tools that access custom context via **kwargs
# NOTE: approval_mode="never_require" is for sample brevity. Use "always_require" in production;
# see samples/02-agents/tools/function_tool_with_approval.py and
# samples/02-agents/tools/function_tool_with_approval_and_sessions.py.
@tool(approval_mode="never_require")
def get_authenticated_data(
    resource: Annotated[str, "The resource to fetch"],
    ctx: FunctionInvocationContext,  # Baton: MAF 1.26 passes run kwargs here, not in **kwargs
) -> str:
    """Fetch data using the authenticated user context from kwargs."""
    kwargs = ctx.kwargs  # Baton: as above
    user_token = kwargs.get("user_token", {})
    user_name = user_token.get("user_name", "anonymous")
    access_level = user_token.get("access_level", "none")

    print(f"\n[get_authenticated_data] kwargs keys: {list(kwargs.keys())}")
    print(f"[get_authenticated_data] User: {user_name}, Access: {access_level}")

    return f"Fetched '{resource}' for user {user_name} ({access_level} access)"


@tool(approval_mode="never_require")
def call_configured_service(
    service_name: Annotated[str, "Name of the service to call"],
    ctx: FunctionInvocationContext,  # Baton: MAF 1.26 passes run kwargs here, not in **kwargs
) -> str:
    """Call a service using configuration from kwargs."""
    kwargs = ctx.kwargs  # Baton: as above
    config = kwargs.get("service_config", {})
    services = config.get("services", {})

    print(f"\n[call_configured_service] kwargs keys: {list(kwargs.keys())}")
    print(f"[call_configured_service] Available services: {list(services.keys())}")

    if service_name in services:
        endpoint = services[service_name]
        return f"Called service '{service_name}' at {endpoint}"
    return f"Service '{service_name}' not found in configuration"


# --- Baton --------------------------------------------------------------------------------------

import re  # noqa: E402
from collections.abc import Sequence  # noqa: E402

from agent_framework import Content, Message, Workflow  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from baton.api import RunServices, register, scripted_plays  # noqa: E402


class Ask(BaseModel):
    """The run's input: what `main()` asks, unless another question is given."""

    text: str = "Please fetch my profile data and then call the users service."


def context_for_run(ask: Ask, services: RunServices) -> dict[str, Any]:
    """`main()`'s kwargs, given to MAF's `workflow.run` at every drive."""
    # Define custom context that will flow through to the sub-workflow's agent
    user_token = {
        "user_name": "alice@contoso.com",
        "access_level": "admin",
        "session_id": "sess_12345",
    }

    service_config = {
        "services": {
            "users": "https://api.example.com/v1/users",
            "orders": "https://api.example.com/v1/orders",
            "inventory": "https://api.example.com/v1/inventory",
        },
        "timeout": 30,
    }
    return {
        "function_invocation_kwargs": {"user_token": user_token, "service_config": service_config}
    }


@register(
    "sub_workflow_kwargs",
    input_model=Ask,
    start_message=lambda ask: ask.text,
    run_kwargs=context_for_run,
)
def build_workflow(services: RunServices) -> Workflow:
    """`main()`'s workflows, the data agent's reply held for a person."""
    # Create chat client
    client = services.chat_clients.for_persona("subworkflow-kwargs-data")

    # Create an agent with tools that use kwargs
    inner_agent = Agent(
        client=client,
        name="data_agent",
        instructions=(
            "You are a data access agent. Use the available tools to help users. "
            "When asked to fetch data, use get_authenticated_data. "
            "When asked to call a service, use call_configured_service."
        ),
        tools=[get_authenticated_data, call_configured_service],
    )

    # Build the inner (sub) workflow with the agent
    inner_workflow = (
        SequentialBuilder(participants=[inner_agent])
        .with_request_info()  # Baton: a person reviews the agent's reply
        .build()
    )

    # Wrap the inner workflow in a WorkflowExecutor to use it as a sub-workflow
    subworkflow_executor = WorkflowExecutor(
        workflow=inner_workflow,
        id="data_subworkflow",
        propagate_request=True,  # Baton: the review goes to a person
        allow_direct_output=True,  # Baton: the agent's answer is the output
    )

    # Build the outer (parent) workflow containing the sub-workflow
    outer_workflow = SequentialBuilder(participants=[subworkflow_executor]).build()
    return outer_workflow


SERVICE = re.compile(r"call the (\w+) service")


def data_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """Fetch the profile, call each service asked for (a person's reasons too), then report."""
    asked = " ".join(m.text for m in messages if m.role == "user")
    calls = {c.call_id for m in messages for c in m.contents if c.type == "function_call"}
    wanted = [("get_authenticated_data", {"resource": "profile"})] + [
        ("call_configured_service", {"service_name": name}) for name in SERVICE.findall(asked)
    ]
    due = [
        Content.from_function_call(f"call-{i}", name, arguments=json.dumps(arguments))
        for i, (name, arguments) in enumerate(wanted)
        if f"call-{i}" not in calls
    ]
    if due:
        return due
    results = [str(c.result) for m in messages for c in m.contents if c.type == "function_result"]
    return [Content.from_text(" | ".join(results))]


scripted_plays({"subworkflow-kwargs-data": data_play})
