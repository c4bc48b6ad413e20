"""`/mcp`: a Baton API token on every message, then MCP's streamable HTTP (`web.mcp`).

The token is checked as the API checks it (`web.auth`): none, an unknown or a revoked one is a
401 in Baton's error body before the MCP layer sees anything. The route is not in the OpenAPI
document: it speaks MCP, not the JSON API.

The MCP SDK is imported, and its session manager started, beside the app's start (`McpMount.run`,
in a thread for the import) rather than before it: `baton serve` is ready as soon as without it,
and a message that arrives before MCP is up waits for it.
"""

from __future__ import annotations

import asyncio
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
    """MCP's session manager for the app's lifetime, started in the background."""

    def __init__(self) -> None:
        self._manager: Any = None
        self._ready = asyncio.Event()

    async def run(self, app: FastAPI) -> None:
        """Import the SDK (off the event loop), then serve MCP's sessions until cancelled."""
        module = await asyncio.to_thread(importlib.import_module, "web.mcp")
        async with module.mcp_sessions(app) as manager:
            self._manager = manager
            self._ready.set()
            await asyncio.Event().wait()  # until the app stops and cancels this

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Hand one authenticated message to the session manager, once it runs."""
        await self._ready.wait()
        await self._manager.handle_request(scope, receive, send)


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
        await mount.handle(scope, receive, send)


def add_mcp(app: FastAPI) -> McpMount:
    """Serve `/mcp`; the returned mount's `run(app)` is the app's to run while it serves."""
    app.state.mcp = McpMount()
    app.router.routes.append(Route(PATH, McpEndpoint(), methods=["GET", "POST", "DELETE"]))
    mount: McpMount = app.state.mcp
    return mount
