"""MAF's `03-workflows/human-in-the-loop/agents_with_approval_requests.py`, as MAF wrote it.

At agent-framework 5eb3eb745, less its `main()` (with its printing of each approval request and
its automatic approval of every one) and its Foundry client (with its `os`, `azure.identity` and
`dotenv` imports and `load_dotenv()` call), laid out by `ruff format` (its long string literals
split, their text unchanged; the lines of its docstring over 100 columns wrapped): an
`EmailPreprocessor` executor, an email-writing agent whose `read_historical_email_data` and
`send_email` tools need approval, and a `conclude_workflow` executor that yields the agent's
reply, in a `WorkflowBuilder`. Its agent, executors and workflow are built as `main()` builds
them, the agent on the model Baton is configured with, and a run's input is the incoming email
`main()` makes (`Email`). On the scripted model, given the priority sender's note, the agent
looks up the date and its team, asks to read each of three team members' mail of the week at
once (three approvals open together), then asks to send the sender a status update made of what
it read, and ends saying what it sent: a read a person refused is missing from the update, the
refusal in its place, and a refused send says the update was not sent.
"""

# Copyright (c) Microsoft. All rights reserved.

import asyncio
import json
from dataclasses import dataclass
from typing import Annotated

from agent_framework import (
    Agent,
    AgentExecutorResponse,
    Content,
    Executor,
    WorkflowBuilder,
    WorkflowContext,
    executor,
    handler,
    tool,
)
from typing_extensions import Never  # noqa: UP035

"""
Sample: Agents in a workflow with AI functions requiring approval

This sample creates a workflow that automatically replies to incoming emails.
If historical email data is needed, it uses an AI function to read the data,
which requires human approval before execution.

This sample works as follows:
1. An incoming email is received by the workflow.
2. The EmailPreprocessor executor preprocesses the email, adding special notes if the sender is
   important.
3. The preprocessed email is sent to the Email Writer agent, which generates a response.
4. If the agent needs to read historical email data, it calls the read_historical_email_data AI
   function, which triggers an approval request.
5. The sample automatically approves the request for demonstration purposes.
6. Once approved, the AI function executes and returns the historical email data to the agent.
7. The agent uses the historical data to compose a comprehensive email response.
8. The response is sent to the conclude_workflow_executor, which yields the final response.

Purpose:
Show how to integrate AI functions with approval requests into a workflow.

Demonstrate:
- Creating AI functions that require approval before execution.
- Building a workflow that includes an agent and executors.
- Handling approval requests during workflow execution.

Prerequisites:
- FOUNDRY_PROJECT_ENDPOINT must be your Microsoft Foundry Agent Service (V2) project endpoint.
- FOUNDRY_MODEL must be set to your Azure OpenAI model deployment name.
- Authentication via azure-identity. Use AzureCliCredential and run az login before executing the
  sample.
- Basic familiarity with WorkflowBuilder, edges, events, request_info events (type='request_info'),
  and streaming runs.
"""


# NOTE: approval_mode="never_require" is for sample brevity. Use "always_require" in production;
# See:
# samples/02-agents/tools/function_tool_with_approval.py
# samples/02-agents/tools/function_tool_with_approval_and_sessions.py.
@tool(approval_mode="never_require")
def get_current_date() -> str:
    """Get the current date in YYYY-MM-DD format."""
    # For demonstration purposes, we return a fixed date.
    return "2025-11-07"


@tool(approval_mode="never_require")
def get_team_members_email_addresses() -> list[dict[str, str]]:
    """Get the email addresses of team members."""
    # In a real implementation, this might query a database or directory service.
    return [
        {
            "name": "Alice",
            "email": "alice@contoso.com",
            "position": "Software Engineer",
            "manager": "John Doe",
        },
        {
            "name": "Bob",
            "email": "bob@contoso.com",
            "position": "Product Manager",
            "manager": "John Doe",
        },
        {
            "name": "Charlie",
            "email": "charlie@contoso.com",
            "position": "Senior Software Engineer",
            "manager": "John Doe",
        },
        {
            "name": "Mike",
            "email": "mike@contoso.com",
            "position": "Principal Software Engineer Manager",
            "manager": "VP of Engineering",
        },
    ]


@tool(approval_mode="never_require")
def get_my_information() -> dict[str, str]:
    """Get my personal information."""
    return {
        "name": "John Doe",
        "email": "john@contoso.com",
        "position": "Software Engineer Manager",
        "manager": "Mike",
    }


@tool(approval_mode="always_require")
async def read_historical_email_data(
    email_address: Annotated[str, "The email address to read historical data from"],
    start_date: Annotated[str, "The start date in YYYY-MM-DD format"],
    end_date: Annotated[str, "The end date in YYYY-MM-DD format"],
) -> list[dict[str, str]]:
    """Read historical email data for a given email address and date range."""
    historical_data = {
        "alice@contoso.com": [
            {
                "from": "alice@contoso.com",
                "to": "john@contoso.com",
                "date": "2025-11-05",
                "subject": "Bug Bash Results",
                "body": "We just completed the bug bash and found a few issues "
                "that need immediate attention.",
            },
            {
                "from": "alice@contoso.com",
                "to": "john@contoso.com",
                "date": "2025-11-03",
                "subject": "Code Freeze",
                "body": "We are entering code freeze starting tomorrow.",
            },
        ],
        "bob@contoso.com": [
            {
                "from": "bob@contoso.com",
                "to": "john@contoso.com",
                "date": "2025-11-04",
                "subject": "Team Outing",
                "body": "Don't forget about the team outing this Friday!",
            },
            {
                "from": "bob@contoso.com",
                "to": "john@contoso.com",
                "date": "2025-11-02",
                "subject": "Requirements Update",
                "body": "The requirements for the new feature have been updated. "
                "Please review them.",
            },
        ],
        "charlie@contoso.com": [
            {
                "from": "charlie@contoso.com",
                "to": "john@contoso.com",
                "date": "2025-11-05",
                "subject": "Project Update",
                "body": "The bug bash went well. "
                "A few critical bugs but should be fixed by the end of the week.",
            },
            {
                "from": "charlie@contoso.com",
                "to": "john@contoso.com",
                "date": "2025-11-06",
                "subject": "Code Review",
                "body": "Please review my latest code changes.",
            },
        ],
    }

    emails = historical_data.get(email_address, [])
    return [email for email in emails if start_date <= email["date"] <= end_date]


@tool(approval_mode="always_require")
async def send_email(
    to: Annotated[str, "The recipient email address"],
    subject: Annotated[str, "The email subject"],
    body: Annotated[str, "The email body"],
) -> str:
    """Send an email."""
    await asyncio.sleep(1)  # Simulate sending email
    return "Email successfully sent."


@dataclass
class Email:
    sender: str
    subject: str
    body: str


class EmailPreprocessor(Executor):
    def __init__(self, special_email_addresses: set[str]) -> None:
        super().__init__(id="email_preprocessor")
        self.special_email_addresses = special_email_addresses

    @handler
    async def preprocess(self, email: Email, ctx: WorkflowContext[str]) -> None:
        """Preprocess the incoming email."""
        email_payload = (
            f"Incoming email:\nFrom: {email.sender}\nSubject: {email.subject}\nBody: {email.body}"
        )
        message = email_payload
        if email.sender in self.special_email_addresses:
            note = (
                "Priority sender context: this message is business-critical. "
                "If additional context is needed, "
                "use available tools to retrieve only the minimum relevant "
                "prior team communication related to this request."
            )
            message = f"{note}\n\n{email_payload}"

        await ctx.send_message(message)


@executor(id="conclude_workflow_executor")
async def conclude_workflow(
    email_response: AgentExecutorResponse,
    ctx: WorkflowContext[Never, str],
) -> None:
    """Conclude the workflow by yielding the final email response."""
    await ctx.yield_output(email_response.agent_response.text)


# --- Baton: the registration (the sample's `main()` is left out, with its Foundry client: its ----
# --- agent, executors and workflow are built as `main()` builds them, on the model Baton is -----
# --- configured with, and the run's input is the incoming email `main()` simulates) -------------

from collections.abc import Sequence  # noqa: E402
from datetime import date, timedelta  # noqa: E402
from typing import Any  # noqa: E402

from agent_framework import Message, Workflow  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from baton.api import RunServices, register, scripted_plays  # noqa: E402


class IncomingEmail(BaseModel):
    """The email `main()` simulates, by its fields."""

    sender: str
    subject: str
    body: str


@register(
    "approval_requests",
    input_model=IncomingEmail,
    start_message=lambda e: Email(sender=e.sender, subject=e.subject, body=e.body),
)
def build_workflow(services: RunServices) -> Workflow:
    """`main()`'s agent, executors and workflow."""
    # Create agent
    email_writer_agent = Agent(
        client=services.chat_clients.for_persona("approval-email-writer"),
        name="EmailWriter",
        instructions=("You are an excellent email assistant. You respond to incoming emails."),
        # tools with `approval_mode="always_require"` will trigger approval requests
        tools=[
            read_historical_email_data,
            send_email,
            get_current_date,
            get_team_members_email_addresses,
            get_my_information,
        ],
    )

    # Create executor
    email_processor = EmailPreprocessor(special_email_addresses={"mike@contoso.com"})

    # Build the workflow
    workflow = (
        WorkflowBuilder(start_executor=email_processor, output_from=[conclude_workflow])
        .add_edge(email_processor, email_writer_agent)
        .add_edge(email_writer_agent, conclude_workflow)
        .build()
    )
    return workflow


def _loaded(result: Any) -> Any:
    try:
        return json.loads(str(result))
    except ValueError:
        return result


def _play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """The date and the team; each member's mail of the week; the update sent; what was sent."""
    email = next(m.text for m in messages if m.role == "user")
    if "Priority sender context" not in email:
        return [Content.from_text("Thank you for your email. I will get back to you shortly.")]
    calls = [str(c.call_id) for m in messages for c in m.contents if c.type == "function_call"]
    results = {
        str(c.call_id): c.result
        for m in messages
        for c in m.contents
        if c.type == "function_result"
    }
    if "call-date" not in results:
        return [
            Content.from_function_call("call-date", "get_current_date", arguments="{}"),
            Content.from_function_call(
                "call-team", "get_team_members_email_addresses", arguments="{}"
            ),
        ]
    reads = [i for i in calls if i.startswith("read-")]
    if not reads:
        today = date.fromisoformat(str(results["call-date"]))
        week = {"start_date": str(today - timedelta(days=7)), "end_date": str(today)}
        team = [m["email"] for m in _loaded(results["call-team"]) if m["manager"] == "John Doe"]
        return [
            Content.from_function_call(
                f"read-{address}",
                "read_historical_email_data",
                arguments=json.dumps({"email_address": address, **week}),
            )
            for address in team
        ]
    lines = []
    for read in reads:
        found = _loaded(results[read])
        subjects = ", ".join(e["subject"] for e in found) if isinstance(found, list) else None
        lines.append(f"{read[5:]}: {subjects or f'not read ({found})'}")
    sender = email.split("From: ")[1].split("\n")[0]
    update = {
        "to": sender,
        "subject": "Team's Status Update on the Project",
        "body": "; ".join(lines),
    }
    if "call-send" not in results:
        return [Content.from_function_call("call-send", "send_email", arguments=json.dumps(update))]
    if results["call-send"] == "Email successfully sent.":
        return [Content.from_text(f"I've sent the status update to {sender}: {update['body']}")]
    return [Content.from_text(f"The status update was not sent: {results['call-send']}")]


scripted_plays({"approval-email-writer": _play})
