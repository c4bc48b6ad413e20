"""`/api/stream`: the audit trail as Server-Sent Events, live, from every process.

Each event is one audit event (`id:` its id, `event:` its type, `data:` the event as JSON), sent as
its transaction commits in whichever process wrote it: the store's feed is PostgreSQL's
LISTEN/NOTIFY, or a poll of the SQLite file. The first message, `ready`, carries the id the stream
starts after; a client that reconnects with `Last-Event-ID` (browsers do) gets every event it
missed, then the live ones. `?run_id=` keeps one run's events; `?types=` a comma-separated list of
types. A caller sees the events of the runs they may see (human.access), an admin every event.
The stream checks its caller's credential again every `RECHECK_S`: a revoked token, a session
signed out or gone idle (an open stream is not a use of it), or a change of the caller's role or
teams ends it with an `ended` message.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Header, Query, Request
from sse_starlette import EventSourceResponse

from baton.errors import Invalid, Unauthenticated
from human.records import AuditEvent
from human.service import close_feed
from web.auth import user_from_request
from web.deps import PartsDep, WatcherDep
from web.openapi import schema_ref

router = APIRouter(prefix="/api", tags=["stream"])

_MESSAGE = {
    "description": "One message of the stream (a ping is a comment line).",
    "type": "object",
    "required": ["event", "data"],
    "properties": {
        "id": {"type": "string", "description": "The audit event's id; none on ready, ended."},
        "event": {"type": "string", "description": "`ready`, an audit event's type, or `ended`."},
        "data": {
            "type": "string",
            "contentMediaType": "application/json",
            "contentSchema": {
                "anyOf": [
                    schema_ref(AuditEvent.__name__),
                    {
                        "title": "Ready",
                        "type": "object",
                        "required": ["after", "user"],
                        "properties": {"after": {"type": "integer"}, "user": {"type": "string"}},
                    },
                    {
                        "title": "Ended",
                        "type": "object",
                        "required": ["reason"],
                        "properties": {"reason": {"type": "string"}},
                    },
                ]
            },
        },
        "retry": {"type": "integer", "minimum": 0},
    },
}
"""A message as the OpenAPI document publishes it: JSON `data` of the `event` it names."""

PING_S = 15
RECHECK_S = 5.0
"""How often an open stream checks its caller's credential again (a revoked token, a session
signed out or changed, ends the stream within this)."""


@router.get(
    "/stream",
    response_class=EventSourceResponse,
    responses={
        200: {
            "description": "Audit events as they happen: `ready`, then one message per event.",
            "content": {"text/event-stream": {"schema": _MESSAGE}},
        }
    },
)
async def stream(
    request: Request,
    parts: PartsDep,
    user: WatcherDep,
    run_id: str | None = None,
    types: Annotated[str | None, Query(description="Comma-separated event types.")] = None,
    last_event_id: Annotated[str | None, Header()] = None,
) -> EventSourceResponse:
    """Audit events as they happen (text/event-stream)."""
    after = await _after(last_event_id, parts)
    wanted = {t.strip() for t in types.split(",") if t.strip()} if types else None

    async def allowed() -> bool:
        try:
            again = await user_from_request(request, parts.store, use=False)
        except Unauthenticated:
            return False
        return again.name == user.name and again.role == user.role and again.teams == user.teams

    async def messages() -> AsyncIterator[dict[str, str]]:
        yield {"event": "ready", "data": json.dumps({"after": after, "user": user.name})}
        feed = parts.requests.watch(user, after_id=after, run_id=run_id, types=wanted)
        waiting: asyncio.Future[AuditEvent] | None = None
        checked = time.monotonic()
        try:
            while True:
                if waiting is None:
                    waiting = asyncio.ensure_future(anext(feed))
                done, _ = await asyncio.wait({waiting}, timeout=RECHECK_S)
                if time.monotonic() - checked >= RECHECK_S:
                    checked = time.monotonic()
                    if not await allowed():
                        ended = {"reason": "the credential this stream was opened with ended"}
                        yield {"event": "ended", "data": json.dumps(ended)}
                        return
                if waiting in done:
                    try:
                        event = waiting.result()
                    except StopAsyncIteration:
                        return
                    waiting = None
                    yield {
                        "id": str(event.id),
                        "event": event.type,
                        "data": event.model_dump_json(),
                    }
        finally:
            await close_feed(feed, waiting)

    return EventSourceResponse(messages(), ping=PING_S)


async def _after(last_event_id: str | None, parts: PartsDep) -> int:
    if last_event_id is None or not last_event_id.strip():
        return await parts.store.last_event_id()
    try:
        value = int(last_event_id)
    except ValueError as exc:
        raise Invalid(
            "Last-Event-ID is not an event id this stream sent",
            [{"loc": ["header", "last-event-id"], "msg": "must be an integer event id"}],
        ) from exc
    if value < 0:
        raise Invalid(
            "Last-Event-ID is not an event id this stream sent",
            [{"loc": ["header", "last-event-id"], "msg": "must be zero or more"}],
        )
    return value
