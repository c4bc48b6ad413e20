"""MAF's `03-workflows/tool-approval/group_chat_builder_tool_approval.py`, as MAF wrote it.

At agent-framework 5eb3eb745, less its `main()`, its event-stream printing and its Foundry client:
a `GroupChatBuilder` whose selector function gives the QA engineer the first round and the DevOps
engineer the second, in which `deploy_to_production` needs approval. Its agents are built as
`main()` builds them, on the model Baton is configured with.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any

from agent_framework import Agent, Content, Message, tool
from agent_framework.orchestrations import GroupChatBuilder, GroupChatState
from pydantic import BaseModel

from baton.api import RunServices, register, scripted_plays

DEPLOYED: list[str] = []
"""The deployments that really ran (in this process): an approved call runs once."""


# 1. Define tools for different agents
# NOTE: approval_mode="never_require" is for sample brevity.
# Use "always_require" in production; see samples/02-agents/tools/function_tool_with_approval.py
# and samples/02-agents/tools/function_tool_with_approval_and_sessions.py.
@tool(approval_mode="never_require")
def run_tests(test_suite: Annotated[str, "Name of the test suite to run"]) -> str:
    """Run automated tests for the application."""
    return f"Test suite '{test_suite}' completed: 47 passed, 0 failed, 0 skipped"


@tool(approval_mode="never_require")
def check_staging_status() -> str:
    """Check the current status of the staging environment."""
    return "Staging environment: Healthy, Version 2.3.0 deployed, All services running"


@tool(approval_mode="always_require")
def deploy_to_production(
    version: Annotated[str, "The version to deploy"],
    components: Annotated[str, "Comma-separated list of components to deploy"],
) -> str:
    """Deploy specified components to production. Requires human approval."""
    DEPLOYED.append(f"{version} {components}")
    return f"Production deployment complete: Version {version}, Components: {components}"


@tool(approval_mode="never_require")
def create_rollback_plan(version: Annotated[str, "The version being deployed"]) -> str:
    """Create a rollback plan for the deployment."""
    return (
        f"Rollback plan created for version {version}: "
        "Automated rollback to v2.2.0 if health checks fail within 5 minutes"
    )


# 2. Define the speaker selector function
def select_next_speaker(state: GroupChatState) -> str:
    """Select the next speaker based on the conversation flow.

    This simple selector follows a predefined flow:
    1. QA Engineer runs tests
    2. DevOps Engineer checks staging and creates rollback plan
    3. DevOps Engineer deploys to production (triggers approval)
    """
    if not state.conversation:
        raise RuntimeError("Conversation is empty; cannot select next speaker.")

    if len(state.conversation) == 1:
        return "QAEngineer"  # First speaker

    return "DevOpsEngineer"  # Subsequent speakers


# --- Baton --------------------------------------------------------------------------------------


class TaskInput(BaseModel):
    task: str


@register("group_chat_deploy", input_model=TaskInput, start_message=lambda i: i.task)
def build_workflow(services: RunServices) -> Any:
    qa_engineer = Agent(
        client=services.chat_clients.for_persona("QAEngineer"),
        name="QAEngineer",
        instructions=(
            "You are a QA engineer responsible for running tests before deployment. "
            "Run the appropriate test suites and report results clearly."
        ),
        tools=[run_tests],
    )

    devops_engineer = Agent(
        client=services.chat_clients.for_persona("DevOpsEngineer"),
        name="DevOpsEngineer",
        instructions=(
            "You are a DevOps engineer responsible for deployments. First check staging "
            "status and create a rollback plan, then proceed with production deployment "
            "without the need for further instructions."
        ),
        tools=[check_staging_status, create_rollback_plan, deploy_to_production],
    )

    # 4. Build a group chat workflow with the selector function
    # max_rounds=2: Set a hard limit to 2 rounds
    return GroupChatBuilder(
        participants=[qa_engineer, devops_engineer],
        max_rounds=2,
        selection_func=select_next_speaker,
    ).build()


def _results(messages: Sequence[Message]) -> list[Any]:
    return [c.result for m in messages for c in m.contents if c.type == "function_result"]


def qa_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """Run the integration suite, then say how it went."""
    done = _results(messages)
    if not done:
        suite = json.dumps({"test_suite": "integration"})
        return [Content.from_function_call("call-tests", "run_tests", arguments=suite)]
    return [Content.from_text(f"{done[-1]}. Ready for deployment.")]


def devops_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """Check staging and plan the rollback at once, then deploy, then say what happened."""
    done = _results(messages)
    version = json.dumps({"version": "2.4.0"})
    if not any("Staging environment" in str(r) for r in done):
        return [
            Content.from_function_call("call-staging", "check_staging_status", arguments="{}"),
            Content.from_function_call("call-rollback", "create_rollback_plan", arguments=version),
        ]
    if not any("Production deployment" in str(r) or "ejected" in str(r) for r in done):
        deploy = json.dumps({"version": "2.4.0", "components": "api,web,worker"})
        return [Content.from_function_call("call-deploy", "deploy_to_production", arguments=deploy)]
    return [Content.from_text(str(done[-1]))]


scripted_plays({"QAEngineer": qa_play, "DevOpsEngineer": devops_play})
