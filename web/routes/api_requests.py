"""`/api/requests`: list, read and answer human requests."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from human.records import AuditEvent, HumanRequest
from human.store.base import RequestFilter
from web.deps import PartsDep, ReassignerDep, UserDep
from web.errors import sent_in
from web.openapi import refusals
from web.replies import Outcome, RequestPage

router = APIRouter(prefix="/api/requests", tags=["requests"], default_response_class=JSONResponse)


@router.get("")
async def list_requests(
    parts: PartsDep,
    user: UserDep,
    status: str | None = None,
    team: str | None = None,
    kind: str | None = None,
    run_id: str | None = None,
    q: str | None = Query(
        None,
        min_length=1,
        max_length=200,
        description="Only requests whose title, reason or context holds this text (any case), "
        "or whose id or run id it is.",
    ),
    cursor: str | None = None,
    limit: int = Query(50, ge=1, le=500),
) -> RequestPage:
    """Requests, newest first: `{"items": [...], "next_cursor": ...}`."""
    flt = RequestFilter(
        status=status, team=team, kind=kind, run_id=run_id, search=q, cursor=cursor, limit=limit
    )
    with sent_in("query"):
        page = await parts.requests.list(flt, viewer=user)
    return RequestPage(items=page.items, next_cursor=page.next_cursor)


@router.get("/{request_id}", responses=refusals(404))
async def get_request(request_id: str, parts: PartsDep, user: UserDep) -> HumanRequest:
    """One request with its answers."""
    return await parts.requests.get(request_id, viewer=user)


@router.post("/{request_id}/respond", responses=refusals(403, 404, 409, 410))
async def respond(
    request_id: str,
    parts: PartsDep,
    user: UserDep,
    body: dict[str, Any] = Body(..., examples=[{"decision": "approve"}]),  # noqa: B008
) -> Outcome:
    """Answer a request: 200 (also for the same answer again), 403, 404, 409, 410 or 422."""
    with sent_in("body"):
        result = await parts.requests.respond(request_id, body, responder=user)
    return Outcome(outcome=result.outcome, request=result.request)


@router.get("/{request_id}/events", responses=refusals(404))
async def request_events(request_id: str, parts: PartsDep, user: UserDep) -> list[AuditEvent]:
    """The request's audit trail, oldest first."""
    return await parts.requests.events(request_id, viewer=user)


@router.post("/{request_id}/takeover", responses=refusals(403, 404, 409, 410))
async def take_over(request_id: str, parts: PartsDep, user: UserDep) -> Outcome:
    """Take an open request over: it becomes a takeover for you (200; 403, 404, 409, 410)."""
    result = await parts.requests.take_over(request_id, responder=user)
    return Outcome(outcome=result.outcome, request=result.request)


class Reassign(BaseModel):
    """Body of `POST /api/requests/{id}/reassign`: a team, a person, or both."""

    model_config = ConfigDict(extra="forbid")

    team: str | None = Field(None, min_length=1)
    assignee: str | None = Field(None, min_length=1)


@router.post("/{request_id}/claim", responses=refusals(403, 404, 409, 410))
async def claim(request_id: str, parts: PartsDep, user: UserDep) -> HumanRequest:
    """Hold the request alone for a while: 200, 403, 404, 409 (held by someone else), 410."""
    return await parts.requests.claim(request_id, user=user)


@router.post("/{request_id}/release", responses=refusals(403, 404, 409, 410))
async def release(request_id: str, parts: PartsDep, user: UserDep) -> HumanRequest:
    """End your claim (an admin: anyone's): 200, 403, 404, 409 (not claimed), 410."""
    return await parts.requests.release(request_id, user=user)


@router.post("/{request_id}/reassign", responses=refusals(403, 404, 409, 410))
async def reassign(
    request_id: str, body: Reassign, parts: PartsDep, user: ReassignerDep
) -> HumanRequest:
    """Move the request to another team and/or person: 200, 403, 404, 409, 410, 422."""
    with sent_in("body"):
        return await parts.requests.reassign(
            request_id, user=user, team=body.team, assignee=body.assignee
        )
