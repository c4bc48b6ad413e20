"""The inbox and the request pages: server-rendered HTML, every form a plain POST (303 or 4xx).

JavaScript only enhances: the inbox reloads its list when `/api/stream` tells of a change, and an
edit shows its before -> after diff and what it leads to while it is typed. Without JavaScript the
same pages work: a refresh shows what the live update would. An edit is sent the same way either
way: "Send edit" shows the page again with the edit's check in place, inside the edit form (the
diff, its consequences, or why it is refused), and "Confirm edit" records it.
"""

from __future__ import annotations

from typing import Annotated, Any, Final

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from baton.errors import BatonError, InvalidAnswer, RequestNotFound
from baton.wiring import Parts
from human import summary
from human.forms import FormValues, answer_from_form, confirmation, errors_by_field
from human.records import HumanRequest, User
from web import views
from web.auth import csrf_checked_form
from web.deps import PageUserDep, PartsDep
from web.errors import PAGE_PROBLEMS, page_error, problem_page
from web.files import AttachmentId, file_response
from web.templating import notify, render

router = APIRouter(include_in_schema=False)

DONE: Final = {
    "approve": "Approved",
    "edit": "Approved with your edit",
    "reject": "Rejected",
    "answer": "Answered",
    "resolve": "Resolved",
    "return": "Handed back to the agent",
}

AT_TOP: Final = "#top"
"""The fragment of a 303 that follows a decision form: the top of the page it leads to.

A redirect without a fragment of its own keeps the form's (`#form-approve`): the next request
would open scrolled to its own Approve button, its title and the notice of what was just done out
of sight, and a second tap would approve a request nobody read. `#top` names no element, so the
browser opens at the top and the notice (`autofocus`, base.html) takes the focus.
"""


@router.get("/", name="inbox")
@router.get("/inbox")
async def inbox(
    request: Request,
    parts: PartsDep,
    user: PageUserDep,
    query: Annotated[views.InboxQuery, Query()],
) -> HTMLResponse:
    """Requests, pending ones of my teams first; live over SSE; just the list for htmx."""
    page = await views.inbox_page(parts, user, query)
    template = "inbox_live.html" if request.headers.get("hx-request") else "inbox.html"
    return render(request, template, page, user=user)


@router.get("/requests/{request_id}", name="request_page")
async def request_page(
    request: Request, request_id: str, parts: PartsDep, user: PageUserDep
) -> Response:
    """One request: what is asked, its context, a form per decision, its audit trail.

    One that moved away from the reader's team (escalated, reassigned) says where and when;
    any other they may not see is the same page as no request at all.
    """
    try:
        page = await views.request_page(parts, user, request_id)
    except RequestNotFound as exc:
        moved = await parts.requests.moved_away_from(request_id, viewer=user)
        if moved is None:
            raise
        said = views.moved_text(moved, parts.requests.now())
        return await page_error(request, 404, said, code=exc.code)
    return render(request, "request.html", page, user=user)


@router.get("/requests/{request_id}/attachments/{attachment_id}", name="request_attachment")
async def request_attachment(
    request_id: str,
    parts: PartsDep,
    user: PageUserDep,
    attachment_id: Annotated[str, AttachmentId],
) -> Response:
    """A file the request came with, for its page: shown (an image) or saved (anything else)."""
    kept = await parts.requests.attachment(request_id, attachment_id, viewer=user)
    return file_response(kept)


@router.post("/requests/{request_id}")
async def answer(request: Request, request_id: str, parts: PartsDep, user: PageUserDep) -> Response:
    """Answer from a decision form: 303 to the request; an edit is confirmed first; else 4xx."""
    form = FormValues((await csrf_checked_form(request)).multi_items())
    human_request = await parts.requests.get(request_id, viewer=user)
    again: dict[str, Any] = {"submitted": form.get("decision"), "raw": form}
    try:
        body = answer_from_form(human_request, form)
        if body["decision"] == "edit" and form.get("confirm") != confirmation(body):
            confirm = await _edit_preview(parts, user, request_id, body, confirms=True)
            page = await views.request_page(parts, user, request_id, confirm=confirm, **again)
            return render(request, "request.html", page, user=user)
        result = await parts.requests.respond(request_id, body, responder=user)
    except InvalidAnswer as exc:
        if form.get("decision") not in human_request.allowed_decisions:
            again["problem"] = str(exc)  # no form of that decision to show it on
        page = await views.request_page(parts, user, request_id, errors=exc.errors, **again)
        return render(request, "request.html", page, user=user, status_code=422)
    except PAGE_PROBLEMS as exc:
        return await _refused(request, parts, user, request_id, exc)
    following = await views.next_request(parts, user, after=request_id)
    then = " Next, the most urgent of your work:" if following else " Nothing else waits for you."
    notify(request, _answered(result.outcome, body["decision"], result.request, user) + then)
    return RedirectResponse(
        (f"/requests/{following.id}" if following else "/") + AT_TOP, status_code=303
    )


def _answered(outcome: str, decision: str, done: HumanRequest, user: User) -> str:
    """What an answer did, for the notice on the next page (which is another request's)."""
    title = f"“{done.title}”"
    if outcome == "repeated":
        who = "You" if done.answered_by == user.name else done.answered_by
        return f"{who} had already given this answer to {title}; nothing changed."
    if outcome == "partial":
        left = done.approvals_required - len(summary.approvers(done))
        return (
            f"Your approval of {title} is recorded; {left} more approval by another person "
            f"of {done.team} is needed."
        )
    return f"{DONE.get(decision, 'Answered')}: {title}."


@router.get("/requests/{request_id}/live", name="request_live")
async def request_live(
    request: Request,
    request_id: str,
    parts: PartsDep,
    user: PageUserDep,
    after: Annotated[int, Query(ge=0, le=2**63 - 1)] = 0,
) -> HTMLResponse:
    """What changed on a request since its page was drawn (htmx): a banner and its decision."""
    page = await views.request_live(parts, user, request_id, after)
    return render(request, "_partials/request_live.html", page, user=user)


@router.post("/requests/{request_id}/preview")
async def preview_edit(
    request: Request, request_id: str, parts: PartsDep, user: PageUserDep
) -> HTMLResponse:
    """The before -> after diff of an edit being typed (htmx) and what it leads to, or why not.

    It carries no digest: an edit is confirmed only on the check `Send edit` shows, with or
    without JavaScript.
    """
    form = FormValues((await csrf_checked_form(request)).multi_items())
    human_request = await parts.requests.get(request_id, viewer=user)
    # a form at its Confirm step goes back to Send edit: its check is stale now
    page: dict[str, Any] = {
        "preview": None,
        "errors": None,
        "sent_again": form.get("confirm"),
        "page_currency": summary.currency_of(human_request),  # the diff's money
    }
    try:
        body = answer_from_form(human_request, form)
        page["preview"] = await _edit_preview(parts, user, request_id, body)
    except InvalidAnswer as exc:
        by_field, rest = errors_by_field(exc.errors)
        page["errors"] = {"by_field": by_field, "rest": rest}
        return render(request, "_partials/edit_refresh.html", page, status_code=422)
    return render(request, "_partials/edit_refresh.html", page)


@router.post("/requests/{request_id}/takeover")
async def take_over(
    request: Request, request_id: str, parts: PartsDep, user: PageUserDep
) -> Response:
    """Take an open request over (it comes back as a takeover assigned to me): 303, or 4xx.

    Confirmed first: a post without `confirm=yes` shows the page again asking, in place.
    """
    confirmed = (await csrf_checked_form(request)).get("confirm") == "yes"
    try:
        if not confirmed:
            await parts.requests.check_take_over(request_id, responder=user)
            page = await views.request_page(parts, user, request_id)
            return render(request, "request.html", page | {"take_over_check": True}, user=user)
        await parts.requests.take_over(request_id, responder=user)
    except PAGE_PROBLEMS as exc:
        return await _refused(request, parts, user, request_id, exc)
    notify(request, "You took this over: it comes back to you as a takeover request, linked below.")
    return RedirectResponse(f"/requests/{request_id}{AT_TOP}", status_code=303)


@router.post("/requests/{request_id}/claim")
async def claim(request: Request, request_id: str, parts: PartsDep, user: PageUserDep) -> Response:
    """Claim a request for a while: 303 with the claim shown; a 409 page if someone holds it."""
    await csrf_checked_form(request)
    try:
        claimed = await parts.requests.claim(request_id, user=user)
    except PAGE_PROBLEMS as exc:
        return await _refused(request, parts, user, request_id, exc)
    notify(request, f"Claimed: no one else of {claimed.team} may answer it while you hold it.")
    return RedirectResponse(f"/requests/{request_id}", status_code=303)


@router.post("/requests/{request_id}/release")
async def release(
    request: Request, request_id: str, parts: PartsDep, user: PageUserDep
) -> Response:
    """Release a claim (one's own, or anyone's for an admin): 303, or a 4xx page."""
    await csrf_checked_form(request)
    try:
        await parts.requests.release(request_id, user=user)
    except PAGE_PROBLEMS as exc:
        return await _refused(request, parts, user, request_id, exc)
    notify(request, "Released: anyone of the team may answer it now.")
    return RedirectResponse(f"/requests/{request_id}", status_code=303)


async def _edit_preview(
    parts: Parts, user: User, request_id: str, body: dict[str, Any], *, confirms: bool = False
) -> dict[str, Any]:
    """An edit's before -> after `diff`, its `consequences` and (`confirms`) the `digest`."""
    preview = await parts.requests.preview(request_id, body, responder=user)
    return {
        "diff": preview.diff or {},
        "consequences": preview.consequences,
        "digest": confirmation(body) if confirms else None,
    }


async def _refused(
    request: Request, parts: Parts, user: User, request_id: str, exc: BatonError
) -> HTMLResponse:
    """The request's page again, telling why an action on it was refused."""

    async def page_with(problem: str) -> dict[str, Any]:
        return await views.request_page(parts, user, request_id, problem=problem)

    return await problem_page(request, exc, "request.html", page_with, user=user)
