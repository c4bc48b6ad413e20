"""One caller's audit feed, live, ended when their credential ends: `/api/stream` and `/agui`.

Events come from `RequestService.watch` (the store's feed: LISTEN/NOTIFY on PostgreSQL, a poll of
the SQLite file), so they arrive from whichever process committed them. Every `recheck_s` the
caller's credential is checked again: a revoked token, a session signed out or gone idle (an open
stream is no use of it), or a change of role or teams ends the feed with `Ended`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Collection
from dataclasses import dataclass

from fastapi import Request

from baton.errors import Unauthenticated
from baton.wiring import Parts
from human.records import AuditEvent, User
from human.service import close_feed
from web.auth import user_from_request

RECHECK_S = 5.0
"""How often an open feed checks its caller's credential again."""


@dataclass(frozen=True)
class Ended:
    """The feed ended because the credential it was opened with did."""

    reason: str = "the credential this stream was opened with ended"


async def audit_feed(
    request: Request,
    parts: Parts,
    user: User,
    *,
    after: int,
    run_id: str | None = None,
    types: Collection[str] | None = None,
    recheck_s: float = RECHECK_S,
) -> AsyncGenerator[AuditEvent | Ended | None, None]:
    """Audit events `user` may see after event `after`, as they commit.

    Yields `None` when `recheck_s` passed without an event (a caller may send a keep-alive), and
    `Ended` as its last item when the caller's credential ended.
    """

    async def allowed() -> bool:
        try:
            again = await user_from_request(request, parts.store, use=False)
        except Unauthenticated:
            return False
        return again.name == user.name and again.role == user.role and again.teams == user.teams

    feed = parts.requests.watch(user, after_id=after, run_id=run_id, types=types)
    waiting: asyncio.Future[AuditEvent] | None = None
    checked = time.monotonic()
    try:
        while True:
            if waiting is None:
                waiting = asyncio.ensure_future(anext(feed))
            done, _ = await asyncio.wait({waiting}, timeout=recheck_s)
            if time.monotonic() - checked >= recheck_s:
                checked = time.monotonic()
                if not await allowed():
                    yield Ended()
                    return
            if waiting not in done:
                yield None
                continue
            try:
                event = waiting.result()
            except StopAsyncIteration:
                return
            waiting = None
            yield event
    finally:
        await close_feed(feed, waiting)  # the feed's pending step ends before it closes
