"""The base of the app's own ASGI middleware: each acts on HTTP requests and passes the rest on."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send


class HttpMiddleware:
    """ASGI middleware of HTTP requests: lifespan and other scopes pass straight through."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Hand an HTTP request to `http`, anything else to the app as it is."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.http(scope, receive, send)

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        """What the middleware does with an HTTP request (`self.app` is the rest of the stack)."""
        raise NotImplementedError
