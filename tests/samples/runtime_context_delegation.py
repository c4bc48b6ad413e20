# Copyright (c) Microsoft. All rights reserved.
# ruff: noqa: T201

"""MAF's `02-agents/middleware/runtime_context_delegation.py`, as MAF wrote it.

At agent-framework 5eb3eb745, less its `main()` and the three `pattern_*` functions it calls (they
build the agents on a Foundry client, run them and print), its `load_dotenv()` and the imports only
they used (`asyncio`, `FoundryChatClient`, `AzureCliCredential`, `load_dotenv`,
`function_middleware`). Pattern 1's agent is built as `pattern_1_single_agent_with_closure` builds
it, on the model Baton is configured with, registered as it is (`runtime_context_delegation`): a
function middleware (`runtime_context.inject_context_middleware`, the module's one container)
copies the run's `function_invocation_kwargs` into the container, and the tools read the token,
user and tenant from it. A run's input names one of the pattern's four tests (`MAIN_TESTS`: its
query and the kwargs it passes `run`), given by `register(run_kwargs=...)` as the pattern gives
them to `run` (test 4 gives no token: the tool says so). `runtime_context_delegation_approval` is
the same agent with `send_email` asking a person first (`asking`): the approved call runs in
whatever process resumes the run, inside the middleware, which fills the container again from the
kwargs Baton gives every drive, so the email goes out with the run's token and tenant after a
restart. Patterns 2 and 3 (agents as tools, their kwargs trackers in closures of their functions)
are not registered. On the scripted model the agent calls the tools the query asks for (test 3: both
at once) and says what they returned.
"""

from collections.abc import Awaitable, Callable
from typing import Annotated

from agent_framework import Agent, FunctionInvocationContext, tool
from pydantic import Field

"""
Runtime Context Delegation Patterns

This sample demonstrates different patterns for passing runtime context (API tokens,
session data, etc.) to tools and sub-agents.

Patterns Demonstrated:

1. **Pattern 1: Single Agent with MiddlewareTypes & Closure** (Lines 130-180)
   - Best for: Single agent with multiple tools
   - How: MiddlewareTypes stores kwargs in container, tools access via closure
   - Pros: Simple, explicit state management
   - Cons: Requires container instance per agent

2. **Pattern 2: Hierarchical Agents with kwargs Propagation** (Lines 190-240)
   - Best for: Parent-child agent delegation with as_tool()
   - How: kwargs automatically propagate through as_tool() wrapper
   - Pros: Automatic, works with nested delegation, clean separation
   - Cons: None - this is the recommended pattern for hierarchical agents

3. **Pattern 3: Mixed - Hierarchical with MiddlewareTypes** (Lines 250-300)
   - Best for: Complex scenarios needing both delegation and state management
   - How: Combines automatic kwargs propagation with middleware processing
   - Pros: Maximum flexibility, can transform/validate context at each level
   - Cons: More complex setup

Key Concepts:
- Runtime Context: Session-specific data like API tokens, user IDs, tenant info
- MiddlewareTypes: Intercepts function calls to access/modify kwargs
- Closure: Functions capturing variables from outer scope
- kwargs Propagation: Automatic forwarding of runtime context through delegation chains

Environment Setup:
- Configure Azure credentials (e.g., via Azure CLI)
- Run `az login` to authenticate
- Set FOUNDRY_PROJECT_ENDPOINT to your Microsoft Foundry project endpoint
- Set FOUNDRY_MODEL to the model deployment name (for example: gpt-4o)

"""


class SessionContextContainer:
    """Container for runtime session context accessible via closure."""

    def __init__(self) -> None:
        """Initialize with None values for runtime context."""
        self.api_token: str | None = None
        self.user_id: str | None = None
        self.session_metadata: dict[str, str] = {}

    async def inject_context_middleware(
        self,
        context: FunctionInvocationContext,
        call_next: Callable[[], Awaitable[None]],
    ) -> None:
        """MiddlewareTypes that extracts runtime context from kwargs and stores in container.

        This middleware runs before tool execution and makes runtime context
        available to tools via the container instance.
        """
        # Extract runtime context from kwargs
        self.api_token = context.kwargs.get("api_token")
        self.user_id = context.kwargs.get("user_id")
        self.session_metadata = context.kwargs.get("session_metadata", {})

        # Log what we captured (for demonstration)
        if self.api_token or self.user_id:
            print("[MiddlewareTypes] Captured runtime context:")
            print(f"  - API Token: {'[PRESENT]' if self.api_token else '[NOT PROVIDED]'}")
            print(f"  - User ID: {'[PRESENT]' if self.user_id else '[NOT PROVIDED]'}")
            print(f"  - Session Metadata Keys: {list(self.session_metadata.keys())}")

        # Continue to tool execution
        await call_next()


# Create a container instance that will be shared via closure
runtime_context = SessionContextContainer()


# NOTE: approval_mode="never_require" is for sample brevity. Use "always_require" in production.
@tool(approval_mode="never_require")
async def send_email(
    to: Annotated[str, Field(description="Recipient email address")],
    subject: Annotated[str, Field(description="Email subject line")],
    body: Annotated[str, Field(description="Email body content")],
) -> str:
    """Send an email using authenticated API (simulated).

    This function accesses runtime context (API token, user ID) via closure
    from the runtime_context container.
    """
    # Access runtime context via closure
    token = runtime_context.api_token
    user_id = runtime_context.user_id
    tenant = runtime_context.session_metadata.get("tenant", "unknown")

    print("\n[send_email] Executing with runtime context:")
    print(f"  - Token: {'[PRESENT]' if token else '[NOT PROVIDED]'}")
    print(f"  - User ID: {'[PRESENT]' if user_id else '[NOT PROVIDED]'}")
    print(f"  - Tenant: {'[PRESENT]' if tenant and tenant != 'unknown' else '[NOT PROVIDED]'}")
    print("  - Recipient count: 1")
    print(f"  - Subject length: {len(subject)} chars")

    # Simulate API call with authentication
    if not token:
        return "ERROR: No API token provided - cannot send email"

    # Simulate sending email
    return f"Email sent to {to} from user {user_id} (tenant: {tenant}). Subject: '{subject}'"


@tool(approval_mode="never_require")
async def send_notification(
    message: Annotated[str, Field(description="Notification message to send")],
    priority: Annotated[str, Field(description="Priority level: low, medium, high")] = "medium",
) -> str:
    """Send a push notification using authenticated API (simulated).

    This function accesses runtime context via closure from runtime_context.
    """
    token = runtime_context.api_token
    user_id = runtime_context.user_id

    print("\n[send_notification] Executing with runtime context:")
    print(f"  - Token: {'[PRESENT]' if token else '[NOT PROVIDED]'}")
    print(f"  - User ID: {'[PRESENT]' if user_id else '[NOT PROVIDED]'}")
    print(f"  - Message length: {len(message)} chars")
    print(f"  - Priority: {priority}")

    if not token:
        return "ERROR: No API token provided - cannot send notification"

    return f"Notification sent to user {user_id} with priority {priority}: {message}"


# Pattern 2: Hierarchical agents with automatic kwargs propagation
# ================================================================


# Create tools for sub-agents (these will use kwargs propagation)
@tool(approval_mode="never_require")
async def send_email_v2(
    to: Annotated[str, Field(description="Recipient email")],
    subject: Annotated[str, Field(description="Subject")],
    body: Annotated[str, Field(description="Body")],
) -> str:
    """Send email - demonstrates kwargs propagation pattern."""
    # In this pattern, we can create a middleware to access kwargs
    # But for simplicity, we'll just simulate the operation
    return f"Email sent to {to} with subject '{subject}'"


@tool(approval_mode="never_require")
async def send_sms(
    phone: Annotated[str, Field(description="Phone number")],
    message: Annotated[str, Field(description="SMS message")],
) -> str:
    """Send SMS message."""
    return f"SMS sent to {phone}: {message}"


# Pattern 3: Mixed pattern - hierarchical with middleware processing
# ===================================================================


class AuthContextMiddleware:
    """MiddlewareTypes that validates and transforms runtime context."""

    def __init__(self) -> None:
        self.validated_tokens: list[str] = []

    async def validate_and_track(
        self, context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]
    ) -> None:
        """Validate API token and track usage."""
        api_token = context.kwargs.get("api_token")

        if api_token:
            # Simulate token validation
            if api_token.startswith("valid-"):
                print("[AuthMiddleware] Token validated successfully")
                self.validated_tokens.append(api_token)
            else:
                print("[AuthMiddleware] Token validation failed")
                # Could set context.terminate = True to block execution
        else:
            print("[AuthMiddleware] No API token provided")

        await call_next()


@tool(approval_mode="never_require")
async def protected_operation(
    operation: Annotated[str, Field(description="Operation to perform")],
) -> str:
    """Protected operation that requires authentication."""
    return f"Executed protected operation: {operation}"


# --- Baton --------------------------------------------------------------------------------------

import json  # noqa: E402
import re  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from typing import Any  # noqa: E402

from agent_framework import Content, FunctionTool, Message  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from baton.api import RunServices, register, scripted_plays  # noqa: E402
from tests.plays import asking  # noqa: E402

MAIN_TESTS: dict[int, tuple[str, dict[str, Any]]] = {  # pattern 1's tests: query, and kwargs
    1: (
        "Send an email to john@example.com with subject 'Meeting Tomorrow' and body 'Don't forget "
        "our 2pm meeting.'",
        {
            "api_token": "sk-test-token-xyz-789",
            "user_id": "user-12345",
            "session_metadata": {"tenant": "acme-corp", "region": "us-west"},
        },
    ),
    2: (
        "Send a high priority notification saying 'Your order has shipped!'",
        {
            "api_token": "sk-prod-token-abc-456",
            "user_id": "user-67890",
            "session_metadata": {"tenant": "store-inc", "region": "eu-central"},
        },
    ),
    3: (
        "Send an email to alice@example.com about the new feature launch "
        "and also send a notification to remind about the team meeting.",
        {
            "api_token": "sk-dev-token-def-123",
            "user_id": "user-11111",
            "session_metadata": {"tenant": "dev-team", "region": "us-east"},
        },
    ),
    4: ("Send an email to test@example.com with subject 'Test'", {"user_id": "user-22222"}),
}


class Test(BaseModel):
    """The run's input: which of pattern 1's tests (its query and its kwargs)."""

    test: int = 1


def _agent(services: RunServices, email: FunctionTool) -> Agent:
    """Pattern 1's agent, on the model Baton is configured with."""
    client = services.chat_clients.for_persona("runtime-context-communication")

    # Create agent with both tools and shared context via middleware
    communication_agent = Agent(
        client=client,
        name="communication_agent",
        instructions=(
            "You are a communication assistant that can send emails and notifications. "
            "Use send_email for email tasks and send_notification for notification tasks."
        ),
        tools=[email, send_notification],
        # Both tools share the same context container via middleware
        middleware=[runtime_context.inject_context_middleware],
    )
    return communication_agent


def _query(typed: Test) -> str:
    return MAIN_TESTS[typed.test][0]


def _kwargs(typed: Test, services: RunServices) -> dict[str, Any]:
    """What pattern 1 passes `run` beside the query."""
    return {"function_invocation_kwargs": MAIN_TESTS[typed.test][1]}


@register("runtime_context_delegation", input_model=Test, start_message=_query, run_kwargs=_kwargs)
def build_agent(services: RunServices) -> Agent:
    """Pattern 1's agent: its tools read the run's kwargs through the middleware's container."""
    return _agent(services, send_email)


@register(
    "runtime_context_delegation_approval",
    input_model=Test,
    start_message=_query,
    run_kwargs=_kwargs,
)
def build_asking_agent(services: RunServices) -> Agent:
    """Pattern 1's agent, its `send_email` asking a person first."""
    return _agent(services, asking(send_email))


_EMAIL = re.compile(
    r"email to (\S+@\S+?)(?: with subject '([^']*)')?(?: and body '(.*)')?(?: about (.*?))?"
    r"(?: and also|$)"
)


def communication_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """Call the tools the last user message asks for (both at once for test 3); then say what
    they returned, one after the other."""
    last = max(i for i, m in enumerate(messages) if m.role == "user")
    asked = messages[last].text
    results = [c for m in messages[last:] for c in m.contents if c.type == "function_result"]
    if results:
        said = [
            "".join(x.text or "" for x in r.result) if isinstance(r.result, list) else str(r.result)
            for r in results
        ]
        return [Content.from_text(" | ".join(said))]
    calls = []
    email = _EMAIL.search(asked)
    if email:
        to, subject, body, about = email.groups()
        arguments = {
            "to": to,
            "subject": subject or (about or "").capitalize(),
            "body": body or (f"About {about}." if about else ""),
        }
        calls.append(
            Content.from_function_call("call-email", "send_email", arguments=json.dumps(arguments))
        )
    if "notification" in asked:
        saying = re.search(r"saying '([^']*)'", asked)
        arguments = {
            "message": saying.group(1) if saying else "Reminder: team meeting.",
            "priority": "high" if "high priority" in asked else "medium",
        }
        calls.append(
            Content.from_function_call(
                "call-notify", "send_notification", arguments=json.dumps(arguments)
            )
        )
    return calls


scripted_plays({"runtime-context-communication": communication_play})
