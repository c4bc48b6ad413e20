"""`/mcp` and `baton mcp`: any MCP client asks a person through Baton's inbox.

An MCP server (the official `mcp` SDK) with four tools: `request_approval`, `ask_question`,
`request_review` and `get_answer`. Each ask is a run of the platform's `ask` workflow
(`workflows.platform.ask`), so it is a durable request in the same inbox, routed by the same
policies file and answered like any other (page, API, Slack, CLI); the tool either waits for the
answer, telling the client what happens through MCP progress notifications, or returns at
`wait_seconds` with the ask's id, which `get_answer` reads (or waits on) later, from any process.

Who asks: over HTTP (`/mcp`, streamable HTTP, served by `web.routes.mcp`) every message carries a
Baton API token (`Authorization: Bearer bt_…`), checked as the API checks it (`web.auth`): no
token, an unknown or a revoked one is a 401 before the MCP layer sees anything. Over stdio
(`baton mcp`), the token given by `--token` / `BATON_TOKEN`, checked again at every call, or a
name given with `--as` (whoever runs `baton` against the database may act as anyone already, as
the CLI's other commands do). The caller starts the ask's run: a viewer cannot ask, and four-eyes
keeps the token's person from approving their own agent's ask. The client's name and version
(MCP's `clientInfo`) are shown on the request as the agent that asked.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any

from fastapi import FastAPI
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import ToolAnnotations
from pydantic import Field, JsonValue

from baton.errors import BatonError, Invalid, UserNotFound
from baton.wiring import Parts
from human.records import User
from web.auth import user_of_token
from web.routes.mcp import SCOPE_USER
from workflows.platform.ask import AskOutcome

logger = logging.getLogger(__name__)


INSTRUCTIONS = (
    "Baton asks a person for you and returns their typed answer. Before a risky or "
    "irreversible action, call request_approval and go ahead only on approve (or edit: then with "
    "the arguments given back). ask_question asks for information or a choice; request_review "
    "has a draft approved, edited or rejected. Each call waits up to wait_seconds; if nobody has "
    "answered by then its status is waiting: keep its request_id and call get_answer later. "
    "An expired, cancelled or failed ask is never an approval."
)

Identify = Callable[[Context | None], Awaitable[User]]

Team = Annotated[
    str | None,
    Field(description="The team to ask; the policies file's rules, where they name one, win."),
]

Wait = Annotated[
    float,
    Field(
        ge=0,
        description="How long to wait for the answer, in seconds (0: return at once with the "
        "request_id; the server's bound is BATON_MCP_MAX_WAIT_SECONDS).",
    ),
]


def build_server(parts_of: Callable[[], Parts], identify: Identify) -> MCPServer:
    """The MCP server over the parts `parts_of()` gives, its callers told by `identify`."""
    server: MCPServer = MCPServer(
        "baton", title="Baton: ask a person", version="0.1.0", instructions=INSTRUCTIONS
    )

    async def ask(ctx: Context, fields: dict[str, Any], wait_seconds: float) -> AskOutcome:
        parts = parts_of()
        with refused_as_tool_error():
            _check_wait(wait_seconds, parts)
            user = await identify(ctx)
            run, after = await parts.asks.ask(fields, user=user, agent=client_of(ctx))
            logger.info("mcp ask", extra={"run_id": run.id, "user": user.name})
            return await parts.asks.wait(
                run.id,
                viewer=user,
                wait_s=wait_seconds,
                progress=reporter(ctx, wait_seconds),
                after=after,
            )

    @server.tool(
        annotations=ToolAnnotations(title="Ask a person to approve an action", open_world_hint=True)
    )
    async def request_approval(
        action: Annotated[str, Field(description="The tool or action you want to run.")],
        arguments: Annotated[
            dict[str, JsonValue],
            Field(
                description="Its arguments, exactly as you would run it. A file among them as a "
                "data URI (a screenshot: data:image/png;base64,...) is shown to the person."
            ),
        ],
        reason: Annotated[str, Field(description="Why you want to run it, for the person.")],
        ctx: Context,
        team: Team = None,
        wait_seconds: Wait = 60,
    ) -> AskOutcome:
        """Ask a person to approve an action before you take it.

        The policies file decides first: an allowed action is approved at once, a forbidden one
        refused at once; otherwise a person of the team the policy names decides: approve, edit
        (run it with the arguments in the answer instead) or reject (do not run it; the reason
        says why).
        """
        fields = {"kind": "approval", "action": action, "arguments": arguments, "reason": reason}
        return await ask(ctx, fields | {"team": team}, wait_seconds)

    @server.tool(annotations=ToolAnnotations(title="Ask a person a question", open_world_hint=True))
    async def ask_question(
        question: Annotated[str, Field(description="What you need to know or decide.")],
        ctx: Context,
        options: Annotated[
            list[str] | None, Field(description="Choices to offer; the person may write another.")
        ] = None,
        team: Team = None,
        wait_seconds: Wait = 60,
    ) -> AskOutcome:
        """Ask a person a question; the answer is their words (or one of the options)."""
        fields = {"kind": "question", "question": question, "options": options or []}
        return await ask(ctx, fields | {"team": team}, wait_seconds)

    @server.tool(
        annotations=ToolAnnotations(title="Ask a person to review a draft", open_world_hint=True)
    )
    async def request_review(
        draft: Annotated[JsonValue, Field(description="The draft: text, or a JSON document.")],
        ctx: Context,
        team: Team = None,
        wait_seconds: Wait = 60,
    ) -> AskOutcome:
        """Ask a person to review a draft: approve it, edit it (use their content) or reject it."""
        return await ask(ctx, {"kind": "review", "draft": draft, "team": team}, wait_seconds)

    @server.tool(
        annotations=ToolAnnotations(title="Read or wait for an answer", read_only_hint=True)
    )
    async def get_answer(
        request_id: Annotated[
            str, Field(min_length=1, max_length=200, description="The request_id an ask returned.")
        ],
        ctx: Context,
        wait_seconds: Wait = 0,
    ) -> AskOutcome:
        """Where an ask stands: its answer once given; waits up to wait_seconds for one."""
        parts = parts_of()
        with refused_as_tool_error():
            _check_wait(wait_seconds, parts)
            user = await identify(ctx)
            after = await parts.asks.position()
            return await parts.asks.wait(
                request_id,
                viewer=user,
                wait_s=wait_seconds,
                progress=reporter(ctx, wait_seconds),
                after=after,
            )

    return server


def _check_wait(wait_seconds: float, parts: Parts) -> None:
    bound = parts.settings.mcp_max_wait_seconds
    if wait_seconds > bound:
        raise Invalid(
            f"wait_seconds: at most {bound:g} on this server; wait again with get_answer",
            [{"loc": ["wait_seconds"], "msg": f"at most {bound:g}"}],
        )


@contextlib.contextmanager
def refused_as_tool_error() -> Any:
    """A refusal (BatonError) as the tool's error result, naming what was wrong."""
    try:
        yield
    except Invalid as exc:
        fields = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', []) if p != 'input')}: {e.get('msg')}"
            for e in exc.errors
        )
        raise ToolError(f"{exc.code}: {fields or exc}") from exc
    except BatonError as exc:
        raise ToolError(f"{exc.code}: {exc}") from exc


def client_of(ctx: Context) -> str:
    """The MCP client's name and version, as its `clientInfo` gave them ('' if it gave none)."""
    params = ctx.session.client_params
    if params is None:
        return ""
    info = params.client_info
    return f"{info.name} {info.version}".strip()[:300]


def reporter(ctx: Context, total: float) -> Callable[[float, str], Awaitable[None]]:
    """Tell the client how the wait goes (MCP progress notifications, if it asked for them)."""

    async def report(elapsed: float, words: str) -> None:
        await ctx.report_progress(min(elapsed, total), total or None, words)

    return report


# over HTTP: /mcp --------------------------------------------------------------------------------


async def http_caller(ctx: Context | None) -> User:
    """The caller the `/mcp` endpoint authenticated for this message."""
    request = ctx.request_context.request if ctx is not None else None
    user = getattr(request, "scope", {}).get(SCOPE_USER)
    if not isinstance(user, User):  # the endpoint lets nothing through without one
        raise ToolError("unauthenticated: no caller")
    return user


@contextlib.asynccontextmanager
async def mcp_sessions(app: FastAPI) -> AsyncIterator[StreamableHTTPSessionManager]:
    """MCP's session manager, running while the block runs (the app's parts must be open)."""
    server = build_server(lambda: app.state.parts, http_caller)
    # Bearer tokens, never ambient credentials, admit a caller (behind easyauth a browser's
    # cross-site write is refused by web.auth), so DNS rebinding gains an attacker nothing.
    server.streamable_http_app(
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False)
    )
    manager = server.session_manager  # its Starlette app is not used: McpEndpoint is the route
    async with manager.run():
        yield manager


# over stdio: baton mcp --------------------------------------------------------------------------


def token_caller(parts: Parts, token: str) -> Identify:
    """The token's owner, checked at every call: a token revoked meanwhile is refused."""

    async def identify(ctx: Context | None) -> User:
        return await user_of_token(token, parts.store)

    return identify


def named_caller(parts: Parts, name: str) -> Identify:
    """The Baton user `name` (as `baton run --as NAME`), read again at every call."""

    async def identify(ctx: Context | None) -> User:
        user = await parts.store.get_user(name)
        if user is None:
            raise UserNotFound(f"no user {name!r}: add one with baton users add")
        return user

    return identify


async def serve_stdio(parts: Parts, identify: Identify) -> None:
    """Serve MCP on this process's stdin and stdout until the client closes them."""
    await build_server(lambda: parts, identify).run_stdio_async()
