"""Annotated dependencies: the parts `create_app` opened, and the caller."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from baton.errors import Unauthenticated
from baton.wiring import Parts
from human.records import User
from web.auth import page_user_of, user_from_request


def parts(request: Request) -> Parts:
    """The opened parts of this app."""
    found: Parts = request.app.state.parts
    return found


BEARER = HTTPBearer(
    scheme_name="bearer",
    bearerFormat="bt_...",
    description="An API token (`baton tokens create NAME`, or `POST /api/tokens`). A browser "
    "signed in to the pages may call the API with its session cookie instead.",
    auto_error=False,
)
"""Publishes the bearer scheme on every route that takes `UserDep`; `web.auth` checks it."""


async def current_user(
    request: Request,
    _bearer: Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)],
) -> User:
    """The authenticated caller (a bearer token or a signed-in session: `web.auth`)."""
    return await user_from_request(request, parts(request).store)


PartsDep = Annotated[Parts, Depends(parts)]
UserDep = Annotated[User, Depends(current_user)]


async def page_user(request: Request) -> User:
    """The signed-in person a page is for; `Unauthenticated` (a way to sign-in) if nobody.

    Kept on `request.state.page_user` for the error page, should the page be refused.
    """
    user = await page_user_of(request, parts(request).store)
    if user is None:
        raise Unauthenticated("sign in to see this page")
    request.state.page_user = user  # for an error page of this request: no second look-up
    return user


PageUserDep = Annotated[User, Depends(page_user)]
