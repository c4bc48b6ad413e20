"""Sign in and out of the pages with a local account (the session cookie; see `web.auth`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from baton.errors import BadCredentials, TooManySignIns
from human.forms import FormValues
from web.auth import authenticator_of, csrf_checked_form, page_user_of, sign_in, sign_out
from web.deps import PartsDep
from web.templating import render

router = APIRouter(include_in_schema=False)


def local_path(target: str | None) -> str:
    """`target` if it is a path on this site, else the inbox: never a redirect elsewhere."""
    if not target or not target.startswith("/") or target.startswith(("//", "/\\")):
        return "/"
    return target


@router.get("/signin", name="signin_page")
async def signin_page(request: Request, parts: PartsDep, next: str = "/") -> HTMLResponse:
    """The sign-in form."""
    page: dict[str, Any] = {"next": local_path(next), "name": "", "errors": {}, "problem": None}
    return render(request, "signin.html", page, user=await page_user_of(request, parts.store))


@router.post("/signin")
async def signin(request: Request, parts: PartsDep) -> Response:
    """Check the name and password; 303 to where the person was going, else the form again."""
    form = FormValues((await csrf_checked_form(request)).multi_items())
    name, password = (form.get("name") or "").strip(), form.get("password") or ""
    target = local_path(form.get("next"))
    page: dict[str, Any] = {"next": target, "name": name, "problem": None}
    missing = {
        field: "Required." for field, value in (("name", name), ("password", password)) if not value
    }
    if missing:
        return render(request, "signin.html", page | {"errors": missing}, status_code=422)
    try:
        await sign_in(request, parts.store, name, password)
    except BadCredentials:
        problem = "Unknown name or wrong password."
        return render(
            request, "signin.html", page | {"errors": {}, "problem": problem}, status_code=401
        )
    except TooManySignIns as exc:
        problem = f"{str(exc)[0].upper()}{str(exc)[1:]}."
        locked = render(
            request, "signin.html", page | {"errors": {}, "problem": problem}, status_code=429
        )
        locked.headers["Retry-After"] = str(exc.retry_after_s)
        return locked
    return RedirectResponse(target, status_code=303)


# Where Azure Container Apps (and App Service) authentication ends its own sign-in.
EASYAUTH_LOGOUT = "/.auth/logout"


@router.post("/signout")
async def signout(request: Request, parts: PartsDep) -> Response:
    """End the session; behind easyauth, the platform's sign-in too."""
    await csrf_checked_form(request)
    await sign_out(request, parts.store)
    easyauth = authenticator_of(request).mode == "easyauth"
    return RedirectResponse(EASYAUTH_LOGOUT if easyauth else "/signin", status_code=303)
