# Copyright (c) Microsoft. All rights reserved.

import asyncio
import os
from textwrap import dedent

from agent_framework import Agent, Content, InlineSkill, Message, SkillFrontmatter, SkillsProvider
from dotenv import load_dotenv

"""
Skill Tool Approval — Require human approval before running skill tools

Every tool exposed by :class:`SkillsProvider` (``load_skill``,
``read_skill_resource``, and ``run_skill_script``) requires host approval by
default. This sample shows the manual human-in-the-loop pattern: the agent
pauses and returns approval requests, and the application approves or rejects
each one before the agent continues.

How it works:
1. A code-defined skill with a script is registered via SkillsProvider.
2. Because skill tools require approval by default, the agent pauses and returns
   approval requests in ``result.user_input_requests`` instead of executing
   tools immediately.
3. The application inspects each request and calls
   ``request.to_function_approval_response(approved=True|False)`` to approve
   or reject.
4. The approval response is sent back via ``agent.run(approval_response, session=session)``
   and the agent continues — running the tool if approved, or receiving an
   error if rejected.

To approve skill tools automatically instead of prompting, use
``ToolApprovalMiddleware`` with one of the static auto-approval rules — see
``samples/02-agents/skills/skills_auto_approval/skills_auto_approval.py``.

Prerequisites:
- FOUNDRY_PROJECT_ENDPOINT must be your Microsoft Foundry Agent Service (V2) project endpoint.
- FOUNDRY_MODEL (defaults to "gpt-4o-mini").
"""

# Load environment variables from .env file
load_dotenv()

# Define a code skill with a script that performs a sensitive operation
deployment_skill = InlineSkill(
    frontmatter=SkillFrontmatter(
        name="deployment", description="Tools for deploying application versions to production"
    ),
    instructions=dedent("""\
        Use this skill when the user asks to deploy an application.

        1. Run the deploy script with the version and environment parameters.
    """),
)


@deployment_skill.script
def deploy(version: str, environment: str = "staging") -> str:
    """Deploy the application to the specified environment."""
    return f"Deployed version {version} to {environment}"


# --- Baton: the registration (the sample's `main()` is left out, with its Foundry client: the ----
# --- agent is built as `main()` builds it, on the model Baton is configured with; a person --------
# --- answers the approvals its loop answers in code) ------------------------------------------

import json  # noqa: E402

from pydantic import BaseModel  # noqa: E402

from baton.api import RunServices, register, scripted_plays  # noqa: E402


class Deployment(BaseModel):
    query: str


@register("script_approval", input_model=Deployment, start_message=lambda d: d.query)
def build_agent(services: RunServices) -> Agent:
    """`main()`'s client, skills provider and agent."""
    client = services.chat_clients.for_persona("skill-deployer")

    # Create the skills provider. All skill tools require approval by default.
    skills_provider = SkillsProvider(
        source=[deployment_skill],
    )

    return Agent(
        client=client,
        instructions="You are a deployment assistant. Use the deployment skill to deploy applications.",
        context_providers=[skills_provider],
    )


def _play(messages, options):  # the model's turns: load the skill, run its script, say the result
    results = [c for m in messages for c in m.contents if c.type == "function_result"]
    if not results:
        arguments = {"skill_name": "deployment"}
        return [Content.from_function_call("call-1", "load_skill", arguments=json.dumps(arguments))]
    if len(results) == 1:
        arguments = {
            "skill_name": "deployment",
            "script_name": "deploy",
            "args": {"version": "2.5.0", "environment": "production"},
        }
        return [
            Content.from_function_call("call-2", "run_skill_script", arguments=json.dumps(arguments))
        ]
    return [Content.from_text(str(results[-1].result))]


scripted_plays({"skill-deployer": _play})
