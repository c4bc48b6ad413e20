"""Annotated dependencies: the parts `create_app` opened, and the caller."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from baton.errors import Unauthenticated
from baton.wiring import Parts
from human.access import (
    check_can_cancel,
    check_can_manage_people,
    check_can_reassign,
    check_can_run,
)
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


async def watching_user(
    request: Request,
    _bearer: Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)],
) -> User:
    """The authenticated caller of a stream: opening it or keeping it open is no use of a session.

    An open page's stream would otherwise keep a session that nobody uses alive forever.
    """
    return await user_from_request(request, parts(request).store, use=False)


PartsDep = Annotated[Parts, Depends(parts)]
UserDep = Annotated[User, Depends(current_user)]
WatcherDep = Annotated[User, Depends(watching_user)]


# A role check as a dependency runs before FastAPI validates the body: a caller who may not call
# a route at all is told so (403), never what was wrong with what they sent (422).


async def runner(user: UserDep) -> User:
    """The caller, if they may start runs (viewers only look)."""
    check_can_run(user)
    return user


async def admin(user: UserDep) -> User:
    """The caller, if they may manage teams and users (admins)."""
    check_can_manage_people(user)
    return user


async def reassigner(request_id: str, user: UserDep, request: Request) -> User:
    """The caller, if they may move request `request_id` (404 if they may not see it)."""
    check_can_reassign(user, await parts(request).requests.get(request_id, viewer=user))
    return user


async def canceller(run_id: str, user: UserDep, request: Request) -> User:
    """The caller, if they may cancel run `run_id` (404 if they may not see it)."""
    await parts(request).runtime.get(run_id, viewer=user)
    check_can_cancel(user)
    return user


RunnerDep = Annotated[User, Depends(runner)]
CancellerDep = Annotated[User, Depends(canceller)]
AdminDep = Annotated[User, Depends(admin)]
ReassignerDep = Annotated[User, Depends(reassigner)]


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
