"""`/mcp`: a Baton API token on every message, then MCP's streamable HTTP (`web.mcp`).

The token is checked as the API checks it (`web.auth`): none, an unknown or a revoked one is a
401 in Baton's error body before the MCP layer sees anything. The route is not in the OpenAPI
document: it speaks MCP, not the JSON API.

The MCP SDK is imported (in a thread) and its session manager started by the first message to
`/mcp`, not when the app starts: `baton serve` starts as fast as without it, and only a server that
is asked over MCP pays for the SDK.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import importlib
import logging
from typing import Any, Final

from fastapi import FastAPI, Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from baton.errors import BatonError
from baton.wiring import Parts
from web.auth import authenticator_of
from web.errors import on_baton_error

logger = logging.getLogger(__name__)

PATH: Final = "/mcp"
SCOPE_USER: Final = "baton.mcp_user"
"""Where the endpoint leaves the caller it authenticated, for the MCP tools to read."""


class McpMount:
    """MCP's session manager, started by the first message to `/mcp` and stopped with the app."""

    def __init__(self) -> None:
        self._manager: Any = None
        self._ready = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def handle(self, app: FastAPI, scope: Scope, receive: Receive, send: Send) -> None:
        """Hand one authenticated message to the session manager, starting it the first time."""
        if self._task is None:  # in a context of its own, not the first message's
            self._task = asyncio.create_task(self._run(app), context=contextvars.Context())
        ready = asyncio.ensure_future(self._ready.wait())
        await asyncio.wait({ready, self._task}, return_when=asyncio.FIRST_COMPLETED)
        if not self._ready.is_set():  # it failed to start: say why, as any server error
            ready.cancel()
            self._task.result()
            raise RuntimeError("MCP's session manager stopped before it started")
        await self._manager.handle_request(scope, receive, send)

    async def stop(self) -> None:
        """End MCP's sessions, and the waits of their calls with them."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self, app: FastAPI) -> None:
        module = await asyncio.to_thread(importlib.import_module, "web.mcp")  # off the loop
        async with module.mcp_sessions(app) as manager:
            self._manager = manager
            self._ready.set()
            await asyncio.Event().wait()  # until stopped


class McpEndpoint:
    """`/mcp`: authenticate as the API does, then MCP."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse a caller without a valid credential; hand the rest to MCP."""
        request = Request(scope, receive)
        app: Any = scope["app"]
        parts: Parts = app.state.parts
        try:
            user = await authenticator_of(request).user_of(request, parts.store)
        except BatonError as exc:
            await (await on_baton_error(request, exc))(scope, receive, send)
            return
        scope[SCOPE_USER] = user
        mount: McpMount = app.state.mcp
        await mount.handle(app, scope, receive, send)


def add_mcp(app: FastAPI) -> McpMount:
    """Serve `/mcp`; the returned mount's `stop()` is the app's to call when it stops."""
    app.state.mcp = McpMount()
    app.router.routes.append(Route(PATH, McpEndpoint(), methods=["GET", "POST", "DELETE"]))
    mount: McpMount = app.state.mcp
    return mount
