"""`create_app(settings)`: the HTTP edge and, unless told otherwise, the worker beside it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.sessions import SessionMiddleware
from starlette.types import Message, Receive, Scope, Send

from baton import failpoints
from baton.errors import BatonError
from baton.observability import configure_telemetry
from baton.settings import Settings
from baton.telemetry import correlation_id
from baton.wiring import open_parts, prepare
from web.agui import Followers
from web.asgi import HttpMiddleware
from web.auth import SESSION_COOKIE, Authenticator
from web.errors import on_baton_error, on_http_error, on_validation_error
from web.guard import BodyGuard
from web.headers import SecurityHeaders
from web.openapi import BatonApi
from web.routes import (
    agui,
    api_people,
    api_requests,
    api_runs,
    docs,
    health,
    mcp,
    pages,
    pages_dashboard,
    pages_runs,
    pages_signin,
    slack,
    stream,
    teams,
)
from web.templating import STATIC_DIR
from web.zones import ReaderZone

logger = logging.getLogger(__name__)


class CorrelationMiddleware(HttpMiddleware):
    """Stamp each request with `X-Request-ID` (the client's, or a new one) for logs and reply."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Set the correlation id for the request and echo it in the response."""
        given = dict(scope["headers"]).get(b"x-request-id", b"").decode("latin-1")
        value = given[:128] if given.strip() else secrets.token_hex(8)
        token = correlation_id.set(value)

        async def stamped(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", []).append((b"x-request-id", value.encode()))
            await send(message)

        try:
            await self.app(scope, receive, stamped)
        finally:
            correlation_id.reset(token)


def create_app(settings: Settings, *, worker: bool = True) -> FastAPI:
    """The Baton app: opens its parts (`baton.wiring.open_parts`) and the worker for its lifetime.

    A model provider missing a setting, or a policies file that does not validate, raises
    `InvalidSettings` / `InvalidPolicy` here, before anything serves.
    """
    failpoints.arm(settings.failpoints)
    configure_telemetry(settings)
    prepared = prepare(settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with open_parts(settings, local_worker=worker, prepared=prepared) as parts:
            task = asyncio.create_task(parts.worker.run_forever()) if worker else None
            app.state.parts = parts
            app.state.runs_worker = worker
            logger.info(
                "baton started",
                extra={"worker": worker, "database": parts.store.__class__.__name__},
            )
            try:
                yield
            finally:
                await app.state.mcp.stop()  # MCP's sessions end first, and their calls' waits
                if task is not None:  # drives under way reach their next commit, within a grace
                    await parts.worker.stop(settings.shutdown_grace_seconds)
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task

    app = BatonApi(
        title="Baton",
        summary="Durable human-in-the-loop handoffs for Microsoft Agent Framework workflows",
        version="0.1.0",
        lifespan=lifespan,
        docs_url=None,  # web/routes/docs.py serves it without a CDN
        redoc_url=None,
    )
    app.state.auth = Authenticator.from_settings(settings)
    app.state.agui_followers = Followers()
    app.add_middleware(CorrelationMiddleware)
    app.add_middleware(ReaderZone)
    app.add_middleware(BodyGuard, max_bytes=settings.max_body_bytes)
    app.add_middleware(SecurityHeaders)
    app.add_exception_handler(BatonError, on_baton_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    for module in (health, docs, api_runs, api_requests, stream, api_people, slack, teams, agui):
        app.include_router(module.router)
    add_pages(app, settings)
    mcp.add_mcp(app)
    return app


def add_pages(app: FastAPI, settings: Settings) -> None:
    """The web inbox: sessions signed with BATON_SECRET_KEY, the pages, their static files."""
    app.add_middleware(
        SessionMiddleware,
        secret_key=settings.secret_key.get_secret_value(),
        session_cookie=SESSION_COOKIE,
        max_age=settings.session_max_age_s,
        same_site="lax",
        https_only=settings.base_url.startswith("https://"),
    )
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    for module in (pages_signin, pages, pages_runs, pages_dashboard):
        app.include_router(module.router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
