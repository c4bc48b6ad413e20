"""Annotated dependencies: the parts `create_app` opened, and the caller."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from baton.errors import Unauthenticated
from baton.wiring import Parts
from human.records import User
from web.auth import page_user_of, user_from_request


def parts(request: Request) -> Parts:
    """The opened parts of this app."""
    found: Parts = request.app.state.parts
    return found


async def current_user(request: Request) -> User:
    """The authenticated caller."""
    return await user_from_request(request, parts(request).store)


async def watching_user(request: Request) -> User:
    """The authenticated caller of a stream: opening it or keeping it open is no use of a session.

    An open page's stream would otherwise keep a session that nobody uses alive forever.
    """
    return await user_from_request(request, parts(request).store, use=False)


PartsDep = Annotated[Parts, Depends(parts)]
UserDep = Annotated[User, Depends(current_user)]
WatcherDep = Annotated[User, Depends(watching_user)]


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
