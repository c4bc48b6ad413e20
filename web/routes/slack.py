"""`POST /integrations/slack/actions`: Slack's signed button callbacks (human/channels/slack.py).

401 for a request Slack did not sign, or signed more than five minutes ago; 404 when Slack is not
configured. Otherwise 200 at once (with a reason modal's field errors, if any), and the outcome
goes to the callback's `response_url`.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, BackgroundTasks, Request, Response
from fastapi.responses import JSONResponse

from baton.errors import NotConfigured
from web.deps import PartsDep
from web.openapi import refusals

router = APIRouter(tags=["integrations"])


_APPLIED: dict[str, Any] = {
    "description": "Applied (the outcome goes to `response_url`); a JSON body only with a reason "
    "modal's field errors.",
    "content": {"application/json": {"schema": {"type": "object"}}},
}


@router.post("/integrations/slack/actions", responses=refusals(401, 404) | {200: _APPLIED})
async def slack_actions(request: Request, parts: PartsDep, background: BackgroundTasks) -> Response:
    """Apply an Approve or Reject click from a Baton message in Slack, or a reason modal sent."""
    if parts.slack is None:
        raise NotConfigured("Slack is not configured: set BATON_SLACK_SIGNING_SECRET")
    result = await parts.slack.act(await request.body(), request.headers)
    if result.reply is not None:
        background.add_task(parts.slack.post, result.reply)
    if result.response is not None:
        return JSONResponse(result.response)
    return Response(status_code=200)
