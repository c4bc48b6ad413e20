"""`POST /integrations/teams/messages`: the activities the Bot Connector sends Baton's Teams bot.

401 for an activity without a valid Bot Connector token (human/channels/teams_bot.py says what is
checked); 404 when the bot is not configured. An `Action.Execute` gets its invoke response (the
updated card, or one saying why not); other activities an empty 200, and the bot's replies and
card updates go out through the Bot Connector after it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, BackgroundTasks, Request, Response
from fastapi.responses import JSONResponse

from baton.errors import NotConfigured
from web.deps import PartsDep
from web.openapi import refusals

router = APIRouter(tags=["integrations"])

_APPLIED: dict[str, Any] = {
    "description": "Applied: an Adaptive Card invoke response for `Action.Execute`, else empty.",
    "content": {"application/json": {"schema": {"type": "object"}}},
}


@router.post("/integrations/teams/messages", responses=refusals(401, 404, 422) | {200: _APPLIED})
async def teams_messages(
    request: Request, parts: PartsDep, background: BackgroundTasks
) -> Response:
    """Apply an activity from Teams: a card's Approve or Reject, or `@Baton link TEAM`."""
    if parts.teams is None:
        raise NotConfigured("the Teams bot is not configured: set BATON_TEAMS_APP_ID")
    result = await parts.teams.handle(await request.body(), request.headers)
    for work in result.later:
        background.add_task(_after, work)
    if result.response is not None:
        return JSONResponse(result.response)
    return Response(status_code=200)


async def _after(work: Callable[[], Awaitable[None]]) -> None:
    """Run what the bot does once Teams has its answer (a reply, card updates)."""
    await work()
