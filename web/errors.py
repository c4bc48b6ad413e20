"""BatonError categories to HTTP statuses, decided once, here: JSON for the API, HTML for pages.

A page that needs a signed-in person and has none redirects to the sign-in page (htmx is told to
go there instead of swapping it in); every other refusal of a page is an error page with the same
status the API would answer with.

Below `web/`, an `Invalid` error's `loc` names a field of what the function was given
(`["decision"]`); a route says where its caller sent that, `with sent_in("body"):` around the
call, so the API answers `["body", "decision"]`. FastAPI's own parsing errors name it already.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Final
from urllib.parse import urlencode

from fastapi import Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from baton.errors import (
    BatonError,
    Closed,
    Conflict,
    Invalid,
    NotFound,
    NotPermitted,
    RequestClaimed,
    RequestNotFound,
    StoreUnavailable,
    TooManySignIns,
    Unauthenticated,
)
from human.records import User
from web.auth import page_user_of
from web.templating import hour_text, render

logger = logging.getLogger(__name__)

_STATUS: Final = (
    (Unauthenticated, 401),
    (NotFound, 404),
    (NotPermitted, 403),
    (Conflict, 409),
    (Closed, 410),
    (Invalid, 422),
    (TooManySignIns, 429),
    (StoreUnavailable, 503),
)

TITLES: Final = {
    401: "Please sign in",
    403: "Not allowed",
    404: "Not found",
    405: "Not allowed here",
    409: "Already decided",
    410: "Closed",
    422: "Please check what you sent",
    429: "Too many attempts",
    500: "Something went wrong",
    503: "Please try again shortly",
}


def status_of(exc: BatonError) -> int:
    """The HTTP status of a BatonError."""
    return next((code for cls, code in _STATUS if isinstance(exc, cls)), 500)


@contextmanager
def sent_in(part: str) -> Iterator[None]:
    """Locate the errors of an `Invalid` raised inside in the request's `part` (body, query)."""
    try:
        yield
    except Invalid as exc:
        raise exc.at(part) from exc


PAGE_PROBLEMS: Final = (Conflict, Closed)
"""What a page's action shows on the page it acted on, rather than on an error page."""


def said_to_people(exc: BatonError) -> str:
    """A refusal as a page says it: to its reader (`to_reader`), else the API's own text.

    The API names the request and the claim's exact end for programs; a person on the request's
    page needs who holds it, until when in their day, and what they can do about it; a refusal
    of what they tried says "You cannot … because …".
    """
    if isinstance(exc, RequestNotFound):  # the same whether it never was or is not theirs
        return "There is no request at this address, or you may not see it."
    if isinstance(exc, RequestClaimed) and exc.facts.get("claimed_until"):
        by = exc.facts.get("claimed_by")
        until = hour_text(datetime.fromisoformat(str(exc.facts["claimed_until"])))
        return f"{by} is working on this until {until}; try again after that, or ask {by}."
    return exc.to_reader or str(exc)


async def problem_page(
    request: Request,
    exc: BatonError,
    template: str,
    page_with: Callable[[str], Awaitable[dict[str, Any]]],
    *,
    user: User,
) -> HTMLResponse:
    """The page an action was refused on again, `exc` told as its problem, at `exc`'s status."""
    page = await page_with(said_to_people(exc))
    return render(request, template, page, user=user, status_code=status_of(exc))


def is_page(request: Request) -> bool:
    """Whether `request` is for a page (HTML) rather than the JSON API or an integration."""
    path = request.url.path
    return not (
        path in ("/api", "/healthz", "/mcp")
        or path.startswith(("/api/", "/integrations/", "/agui/"))
    )


async def on_baton_error(request: Request, exc: Exception) -> Response:
    """Answer a BatonError with its status: a JSON body naming it, or an error page."""
    assert isinstance(exc, BatonError)
    status = status_of(exc)
    if isinstance(exc, StoreUnavailable):
        logger.warning("store unavailable", extra={"path": request.url.path, "error": str(exc)})
    elif status >= 500:  # a fault of Baton's or its store's: the log must say so
        logger.error(
            "request failed",
            extra={"path": request.url.path, "error": str(exc), "code": exc.code},
        )
    if is_page(request):
        page = await page_error(request, status, said_to_people(exc), code=exc.code)
        if isinstance(exc, StoreUnavailable):
            page.headers["Retry-After"] = str(exc.retry_after_s)
        return page
    body: dict[str, Any] = {"error": exc.code, "detail": str(exc)}
    if isinstance(exc, Invalid) and exc.errors:
        body["errors"] = exc.errors
    body.update({k: v for k, v in exc.facts.items() if v is not None})
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    if isinstance(exc, TooManySignIns | StoreUnavailable):
        headers = {"Retry-After": str(exc.retry_after_s)}
    return JSONResponse(body, status_code=status, headers=headers)


async def on_validation_error(request: Request, exc: Exception) -> Response:
    """FastAPI's own parsing errors, in Baton's error shape, naming each field."""
    assert isinstance(exc, RequestValidationError)
    errors = [
        {"loc": ["body"], "msg": f"the body is not valid JSON: {e.get('ctx', {}).get('error', '')}"}
        if e["type"] == "json_invalid"
        else {"loc": [str(p) for p in e["loc"]], "msg": e["msg"]}
        for e in exc.errors()
    ]
    first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
    detail = f"{'.'.join(first['loc'])}: {first['msg']}"
    if is_page(request):
        return await page_error(request, 422, detail, code="invalid", errors=errors)
    return JSONResponse(
        {"error": "invalid", "detail": detail, "errors": errors},
        status_code=422,
    )


_HTTP_CODES: Final = {404: "not_found", 405: "method_not_allowed"}


async def on_http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own errors (no such path, wrong method): an error page, or Baton's error body."""
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code < 400:
        return await http_exception_handler(request, exc)
    if is_page(request):
        return await page_error(request, exc.status_code, str(exc.detail), code="http")
    body = {"error": _HTTP_CODES.get(exc.status_code, "http_error"), "detail": str(exc.detail)}
    return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)


async def page_error(
    request: Request,
    status: int,
    detail: str,
    *,
    code: str,
    errors: list[dict[str, Any]] | None = None,
) -> Response:
    """The error page of a page request (a way to sign in, for a 401)."""
    if status == 401:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        to_sign_in = f"/signin?{urlencode({'next': target})}"
        if request.headers.get("hx-request"):
            return Response(status_code=401, headers={"HX-Redirect": to_sign_in})
        if request.method in ("GET", "HEAD"):
            return RedirectResponse(to_sign_in, status_code=303)
    context = {
        "status": status,
        "title": TITLES.get(status, "Error"),
        "detail": detail,
        "code": code,
        "errors": errors or [],
    }
    return render(request, "error.html", context, user=await _viewer(request), status_code=status)


async def _viewer(request: Request) -> User | None:
    """Who is looking at an error page, for its navigation; nobody if that cannot be told."""
    known: User | None = getattr(request.state, "page_user", None)
    if known is not None:
        return known  # the page's dependency found them already
    parts = getattr(request.app.state, "parts", None)
    if parts is None:
        return None
    try:
        return await page_user_of(request, parts.store)
    except BatonError:
        return None
