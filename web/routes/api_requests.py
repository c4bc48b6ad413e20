"""`/api/requests`: list, read and answer human requests."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Query
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from baton.errors import Invalid
from human.access import View, view_filter
from human.kinds import KINDS
from human.records import AuditEvent, HumanRequest, RequestStatus
from human.store.base import RequestFilter
from web.deps import PartsDep, ReassignerDep, UserDep
from web.errors import sent_in
from web.files import FILE_RESPONSES, AttachmentId, file_response
from web.openapi import refusals
from web.replies import Outcome, RequestPage

router = APIRouter(prefix="/api/requests", tags=["requests"], default_response_class=JSONResponse)

Blank = BeforeValidator(lambda value: value or None)
"""A blank query parameter is no filter, as a form sends an unset one."""


@router.get("")
async def list_requests(
    parts: PartsDep,
    user: UserDep,
    view: Annotated[
        View | None,
        Blank,
        Query(
            description="A saved view, as the inbox's tabs list it: `mine` (open requests of "
            "your teams, assigned to you or claimed by you, that you may act on now: none "
            "another person's claim holds, none four-eyes keeps from you, none you approved "
            "already), `unassigned` (open, nobody assigned or claiming), `claimed` (by you), "
            "`overdue` (as `mine`, past their deadline, whoever may act), `answered` (by you) or "
            "`all`. The views of open requests list the most urgent first; the other filters "
            "narrow any view. A blank `view`, `status`, `kind`, `team`, `workflow` or `assignee` "
            "is no filter."
        ),
    ] = None,
    status: Annotated[RequestStatus | None, Blank] = None,
    team: str | None = None,
    kind: str | None = Query(None, description=f"One of {', '.join(KINDS)}."),
    workflow: str | None = Query(None, description="Only requests of runs of this workflow."),
    assignee: str | None = Query(
        None, description="Only requests assigned to this person (`me`: to you)."
    ),
    overdue: bool = Query(False, description="Only open requests past their deadline."),
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
    """Requests you may see, newest first: `{"items": [...], "next_cursor": ...}`."""
    if kind and kind not in KINDS:
        raise Invalid(
            f"query.kind: must be one of {', '.join(KINDS)}",
            [{"loc": ["query", "kind"], "msg": f"must be one of {', '.join(KINDS)}"}],
        )
    now = parts.requests.now()
    flt = RequestFilter(
        status=status,
        team=team or None,
        kind=kind or None,
        workflow=workflow or None,
        assignee=user.name if assignee == "me" else assignee or None,
        overdue_at=now if overdue else None,
        run_id=run_id,
        search=q,
        cursor=cursor,
        limit=limit,
    )
    if view:
        flt = flt.model_copy(update=view_filter(view, user, now, (status,) if status else None))
    with sent_in("query"):
        page = await parts.requests.list(flt, viewer=user)
    return RequestPage(items=page.items, next_cursor=page.next_cursor)


@router.get("/{request_id}", responses=refusals(404))
async def get_request(request_id: str, parts: PartsDep, user: UserDep) -> HumanRequest:
    """One request with its answers."""
    return await parts.requests.get(request_id, viewer=user)


@router.get(
    "/{request_id}/attachments/{attachment_id}",
    response_class=Response,
    responses=FILE_RESPONSES | refusals(404),
)
async def get_attachment(
    request_id: str,
    parts: PartsDep,
    user: UserDep,
    attachment_id: Annotated[str, AttachmentId],
) -> Response:
    """A file the request came with (its `attachments`): 200; 404 (no such file, or no request).

    404 where the request lists no file of that id, or you may not see the request.
    """
    kept = await parts.requests.attachment(request_id, attachment_id, viewer=user)
    return file_response(kept)


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
