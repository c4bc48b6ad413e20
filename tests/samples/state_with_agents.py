# Copyright (c) Microsoft. All rights reserved.

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import uuid4

from agent_framework import (
    Agent,
    AgentExecutorRequest,
    AgentExecutorResponse,
    Message,
    WorkflowBuilder,
    WorkflowContext,
    executor,
)
from agent_framework.openai import OpenAIChatOptions
from dotenv import load_dotenv
from pydantic import BaseModel
from typing_extensions import Never

# Load environment variables from .env file
load_dotenv()

"""
Sample: Workflow state with agents and conditional routing.

Store an email once by id, classify it with a detector agent, then either draft a reply with an assistant
agent or finish with a spam notice. Stream events as the workflow runs.

Purpose:
Show how to:
- Use workflow state to decouple large payloads from messages and pass around lightweight references.
- Enforce structured agent outputs with Pydantic models via response_format for robust parsing.
- Route using conditional edges based on a typed intermediate DetectionResult.
- Compose agent backed executors with function style executors and yield the final output when the workflow completes.

Prerequisites:
- FOUNDRY_PROJECT_ENDPOINT must be your Microsoft Foundry Agent Service (V2) project endpoint.
- FOUNDRY_MODEL must be set to your Azure OpenAI model deployment name.
- Familiarity with WorkflowBuilder, executors, conditional edges, and streaming runs.
"""

EMAIL_STATE_PREFIX = "email:"
CURRENT_EMAIL_ID_KEY = "current_email_id"


class DetectionResultAgent(BaseModel):
    """Structured output returned by the spam detection agent."""

    is_spam: bool
    reason: str


class EmailResponse(BaseModel):
    """Structured output returned by the email assistant agent."""

    response: str


@dataclass
class DetectionResult:
    """Internal detection result enriched with the state email_id for later lookups."""

    is_spam: bool
    reason: str
    email_id: str


@dataclass
class Email:
    """In memory record stored in state to avoid re-sending large bodies on edges."""

    email_id: str
    email_content: str


def get_condition(expected_result: bool):
    """Create a condition predicate for DetectionResult.is_spam.

    Contract:
    - If the message is not a DetectionResult, allow it to pass to avoid accidental dead ends.
    - Otherwise, return True only when is_spam matches expected_result.
    """

    def condition(message: Any) -> bool:
        if not isinstance(message, DetectionResult):
            return True
        return message.is_spam == expected_result

    return condition


@executor(id="store_email")
async def store_email(email_text: str, ctx: WorkflowContext[AgentExecutorRequest]) -> None:
    """Persist the raw email content in state and trigger spam detection.

    Responsibilities:
    - Generate a unique email_id (UUID) for downstream retrieval.
    - Store the Email object under a namespaced key and set the current id pointer.
    - Emit an AgentExecutorRequest asking the detector to respond.
    """
    new_email = Email(email_id=str(uuid4()), email_content=email_text)
    ctx.set_state(f"{EMAIL_STATE_PREFIX}{new_email.email_id}", new_email)
    ctx.set_state(CURRENT_EMAIL_ID_KEY, new_email.email_id)

    await ctx.send_message(
        AgentExecutorRequest(
            messages=[Message("user", contents=[new_email.email_content])], should_respond=True
        )
    )


@executor(id="to_detection_result")
async def to_detection_result(
    response: AgentExecutorResponse, ctx: WorkflowContext[DetectionResult]
) -> None:
    """Parse spam detection JSON into a structured model and enrich with email_id.

    Steps:
    1) Validate the agent's JSON output into DetectionResultAgent.
    2) Retrieve the current email_id from workflow state.
    3) Send a typed DetectionResult for conditional routing.
    """
    parsed = DetectionResultAgent.model_validate_json(response.agent_response.text)
    email_id: str = ctx.get_state(CURRENT_EMAIL_ID_KEY)
    await ctx.send_message(
        DetectionResult(is_spam=parsed.is_spam, reason=parsed.reason, email_id=email_id)
    )


@executor(id="submit_to_email_assistant")
async def submit_to_email_assistant(
    detection: DetectionResult, ctx: WorkflowContext[AgentExecutorRequest]
) -> None:
    """Forward non spam email content to the drafting agent.

    Guard:
    - This path should only receive non spam. Raise if misrouted.
    """
    if detection.is_spam:
        raise RuntimeError("This executor should only handle non-spam messages.")

    # Load the original content by id from workflow state and forward it to the assistant.
    email: Email = ctx.get_state(f"{EMAIL_STATE_PREFIX}{detection.email_id}")
    await ctx.send_message(
        AgentExecutorRequest(
            messages=[Message("user", contents=[email.email_content])], should_respond=True
        )
    )


@executor(id="finalize_and_send")
async def finalize_and_send(
    response: AgentExecutorResponse, ctx: WorkflowContext[Never, str]
) -> None:
    """Validate the drafted reply and yield the final output."""
    parsed = EmailResponse.model_validate_json(response.agent_response.text)
    await ctx.yield_output(f"Email sent: {parsed.response}")


@executor(id="handle_spam")
async def handle_spam(detection: DetectionResult, ctx: WorkflowContext[Never, str]) -> None:
    """Yield output describing why the email was marked as spam."""
    if detection.is_spam:
        await ctx.yield_output(f"Email marked as spam: {detection.reason}")
    else:
        raise RuntimeError("This executor should only handle spam messages.")


def create_spam_detection_agent(client: Any, sender_reputation: Any = None) -> Agent:
    """Creates a spam detection agent (its client passed in; Baton: a tool asking first added)."""
    return Agent(
        client=client,
        instructions=(
            "You are a spam detection assistant that identifies spam emails. "
            "Always return JSON with fields is_spam (bool) and reason (string)."
        ),
        default_options=OpenAIChatOptions[Any](response_format=DetectionResultAgent),
        # response_format enforces structured JSON from each agent.
        name="spam_detection_agent",
        tools=[sender_reputation] if sender_reputation else None,
    )


def create_email_assistant_agent(client: Any) -> Agent:
    """Creates an email assistant agent (its client passed in)."""
    return Agent(
        client=client,
        instructions=(
            "You are an email assistant that helps users draft responses to emails with professionalism. "
            "Return JSON with a single field 'response' containing the drafted reply."
        ),
        # response_format enforces structured JSON from each agent.
        default_options=OpenAIChatOptions[Any](response_format=EmailResponse),
        name="email_assistant_agent",
    )


# --- Baton: the registration (the sample's `main()` is left out, with its Foundry client: its ---
# --- workflow is built as `main()` builds it, its agents on the model Baton is configured -------
# --- with. One pause added: the detector's tool asking a person first, so that the state -------
# --- `to_detection_result` and `submit_to_email_assistant` read is read after a restart) -------

import json  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from typing import Annotated  # noqa: E402

from agent_framework import Content, Workflow, tool  # noqa: E402

from baton.api import RunServices, register, scripted_plays  # noqa: E402
from tests.plays import recorded  # noqa: E402


@tool(approval_mode="always_require")
def check_sender_reputation(sender: Annotated[str, "The sender's address"]) -> str:
    """Look up a sender's reputation."""
    return f"{sender}: known colleague, no spam reports"


def build(spam_client: Any, assistant_client: Any, asking: bool = True) -> Workflow:
    """`main()`'s workflow."""
    spam_detection_agent = create_spam_detection_agent(
        spam_client, check_sender_reputation if asking else None
    )
    email_assistant_agent = create_email_assistant_agent(assistant_client)
    return (
        WorkflowBuilder(start_executor=store_email)
        .add_edge(store_email, spam_detection_agent)
        .add_edge(spam_detection_agent, to_detection_result)
        .add_edge(to_detection_result, submit_to_email_assistant, condition=get_condition(False))
        .add_edge(to_detection_result, handle_spam, condition=get_condition(True))
        .add_edge(submit_to_email_assistant, email_assistant_agent)
        .add_edge(email_assistant_agent, finalize_and_send)
        .build()
    )


class EmailText(BaseModel):
    email: str


@register(
    "state_with_agents",
    input_model=EmailText,
    start_message=lambda i: i.email,
)
def build_workflow(services: RunServices) -> Workflow:
    """MAF's state_with_agents: an email stored in state, classified, answered."""
    return build(
        services.chat_clients.for_persona("state-spam-detector"),
        services.chat_clients.for_persona("state-email-assistant"),
    )


def detector_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """Checks the sender once (when it has the tool), then says whether the email is spam."""
    results = [c for m in messages for c in m.contents if c.type == "function_result"]
    if options.get("tools") and not results:
        asked = '{"sender": "ann@contoso.com"}'
        return [Content.from_function_call("call-rep", "check_sender_reputation", arguments=asked)]
    text = messages[-1].text if not results else [m for m in messages if m.role == "user"][-1].text
    spam = "WINNER" in text
    why = f"read {text[:30]!r}" + (f"; {results[-1].result}" if results else "")
    return [Content.from_text(json.dumps({"is_spam": spam, "reason": why}))]


def assistant_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """Drafts a reply naming the email it was handed."""
    said = " | ".join(f"{m.role}:{m.text}" for m in messages)
    return [Content.from_text(json.dumps({"response": f"Thanks, noted. ({said})"}))]


scripted_plays(
    {
        "state-spam-detector": recorded(detector_play),
        "state-email-assistant": recorded(assistant_play),
    }
)
