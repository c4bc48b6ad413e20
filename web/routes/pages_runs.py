"""The runs pages: the list, one run with its graph, starting a run from a form, cancelling one."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from baton.errors import Invalid, InvalidInput
from human.access import check_can_run
from human.forms import FormValues, input_from_form
from web import views
from web.auth import csrf_checked_form
from web.deps import PageUserDep, PartsDep
from web.errors import PAGE_PROBLEMS, problem_page
from web.templating import notify, render
from workflows.platform import registry

router = APIRouter(include_in_schema=False)


@router.get("/runs", name="runs_page")
async def runs(
    request: Request,
    parts: PartsDep,
    user: PageUserDep,
    query: Annotated[views.RunsQuery, Query()],
) -> HTMLResponse:
    """Runs, newest first: status, workflow, waiting since."""
    page = await views.runs_page(parts, user, query)
    return render(request, "runs.html", page, user=user)


@router.get("/runs/new", name="start_page")
async def start_page(
    request: Request, user: PageUserDep, workflow: str | None = None
) -> HTMLResponse:
    """Pick a workflow; its form is generated from the workflow's input JSON Schema."""
    return render(request, "run_new.html", views.start_page(user, workflow or None), user=user)


@router.post("/runs/new")
async def start_run(request: Request, parts: PartsDep, user: PageUserDep) -> Response:
    """Start a run from the form: 303 to the run, or the form again with its errors (422)."""
    form = FormValues((await csrf_checked_form(request)).multi_items())
    check_can_run(user)
    if not form.get("workflow"):  # as the API: a missing or blank workflow is a 422
        page = views.start_page(user, None, workflow_error="Choose a workflow to start.")
        return render(request, "run_new.html", page, user=user, status_code=422)
    spec = registry.get(form.get("workflow") or "")
    try:
        run_input = input_from_form(spec.input_schema(), form)
        run = await parts.runtime.start(spec.name, run_input, actor=user.name)
    except InvalidInput as exc:
        page = views.start_page(user, spec.name, raw=form, errors=exc.errors)
        return render(request, "run_new.html", page, user=user, status_code=422)
    notify(request, f"Started a {spec.name} run.")
    return RedirectResponse(f"/runs/{run.id}", status_code=303)


@router.get("/runs/{run_id}", name="run_page")
async def run_page(
    request: Request, run_id: str, parts: PartsDep, user: PageUserDep
) -> HTMLResponse:
    """One run: its graph (where it is, where it waits), requests, conversation, audit trail."""
    page = await views.run_page(parts, user, run_id)
    template = "run_live.html" if request.headers.get("hx-request") else "run.html"
    return render(request, template, page, user=user)


@router.post("/runs/{run_id}/continue")
async def continue_run(
    request: Request, run_id: str, parts: PartsDep, user: PageUserDep
) -> Response:
    """Start the next turn of an ended run's conversation from its page: 303 to the new run.

    The form's `text` is the user's next message (the workflow's one text field); a refusal
    (nothing written, a run still asking, a workflow that takes no conversation) shows on the
    run's page again, at its status, with nothing stored.
    """
    form = FormValues((await csrf_checked_form(request)).multi_items())
    check_can_run(user)
    run = await parts.runtime.get(run_id, viewer=user)
    field = registry.get(run.workflow).text_field()
    said = (form.get("text") or "").strip()

    async def page_with(problem: str) -> dict[str, Any]:
        return await views.run_page(parts, user, run_id, problem=problem, said=said)

    if field is None or not said:
        problem = "Write the next message first." if field else "This run takes no message."
        return render(request, "run.html", await page_with(problem), user=user, status_code=422)
    try:
        later = await parts.runtime.start(
            run.workflow, {field: said}, actor=user.name, continues=run.id, viewer=user
        )
    except (*PAGE_PROBLEMS, Invalid) as exc:
        return await problem_page(request, exc, "run.html", page_with, user=user)
    notify(request, "Sent: the conversation goes on in this run.")
    return RedirectResponse(f"/runs/{later.id}", status_code=303)


@router.post("/runs/{run_id}/cancel")
async def cancel_run(request: Request, run_id: str, parts: PartsDep, user: PageUserDep) -> Response:
    """Cancel a run that has not ended, with why: 303 to it; 409 if it had ended.

    Confirmed first: a post without `confirm=yes` shows the run's page again asking, in place,
    with a "Why?" field; a confirmation without a reason (or with one too long) asks again (422),
    the text kept, nothing stored.
    """
    form = FormValues((await csrf_checked_form(request)).multi_items())
    reason = (form.get("reason") or "").strip()

    async def asking(error: str | None = None) -> HTMLResponse:
        page = await views.run_page(parts, user, run_id)
        check = {"cancel_check": True, "cancel_reason": reason, "cancel_error": error}
        return render(
            request, "run.html", page | check, user=user, status_code=422 if error else 200
        )

    async def page_with(problem: str) -> dict[str, Any]:
        return await views.run_page(parts, user, run_id, problem=problem)

    try:
        if form.get("confirm") != "yes":
            await parts.runtime.check_cancel(run_id, by=user)
            return await asking()
        if not reason:
            await parts.runtime.check_cancel(run_id, by=user)
            return await asking("Say why the run is cancelled: the people it asked are told.")
        await parts.runtime.cancel(run_id, by=user, reason=reason)
    except Invalid as exc:
        return await asking(str(exc).capitalize() + ".")
    except PAGE_PROBLEMS as exc:
        return await problem_page(request, exc, "run.html", page_with, user=user)
    notify(request, "Run cancelled; its open requests are closed.")
    return RedirectResponse(f"/runs/{run_id}", status_code=303)
