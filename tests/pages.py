"""The pages over real HTTP: signing in with a session cookie, its CSRF token, forged sessions."""

from __future__ import annotations

import base64
import contextlib
import html
import json
import re
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
from argon2 import PasswordHasher
from itsdangerous import TimestampSigner

from baton.demo import PEOPLE
from human.channels.http import tls_context
from human.store import open_store
from tests.harness import Server
from web.auth import CSRF_FIELD, CSRF_HEADER, SESSION_COOKIE

# The page tests' BATON_SECRET_KEY: knowing it, a test forges sessions the server would have made.
SECRET = "page-tests-secret-" + "s" * 40
PAGE_ENV = {"BATON_SECRET_KEY": SECRET}

_CSRF = re.compile(rf'name="{CSRF_FIELD}" value="([^"]+)"')


# argon2 at its lowest cost: the same sign-in path (the hash names its own cost), in milliseconds.
# `baton seed --demo` itself, with the library's default cost, is tested in test_pages_http.py.
CHEAP_HASHER = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)


async def demo_passwords(db_url: str, *, extra: tuple[str, ...] = ()) -> dict[str, str]:
    """A new password for each demo person, as `baton seed --demo` sets them (at a low cost).

    `extra` names people added besides the demo's (they keep their role and teams).
    """
    store = await open_store(db_url)
    try:
        passwords = {}
        people = dict(PEOPLE)
        for name in extra:
            user = await store.get_user(name)
            assert user is not None, f"no user {name}"
            people[name] = (user.role, user.teams)
        for name, (role, teams) in people.items():
            passwords[name] = secrets.token_urlsafe(9)
            await store.add_user(
                name, role=role, teams=teams, password_hash=CHEAP_HASHER.hash(passwords[name])
            )
        return passwords
    finally:
        await store.close()


def csrf_of(html: str) -> str:
    """The CSRF token a page's forms carry."""
    found = _CSRF.search(html)
    assert found, "the page has no form with a CSRF token"
    return found.group(1)


class PageClient:
    """A browser's view of the pages over HTTP: its cookies, and its session's CSRF token."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http
        self.token = ""

    async def refresh_token(self, path: str = "/") -> str:
        reply = await self.http.get(path)
        assert reply.status_code == 200, reply.text
        self.token = csrf_of(reply.text)
        return self.token

    async def post(
        self, path: str, data: dict[str, str], *, token: str | None = None
    ) -> httpx.Response:
        """POST a form with this session's CSRF token (or `token`, "" for none)."""
        given = self.token if token is None else token
        return await self.http.post(path, data=data | ({CSRF_FIELD: given} if given else {}))

    async def api_post(self, path: str, body: Any, *, csrf: bool) -> httpx.Response:
        """A JSON API write authenticated by the session cookie (with its CSRF header or not)."""
        headers = {CSRF_HEADER: self.token} if csrf else {}
        return await self.http.post(path, json=body, headers=headers)


@contextlib.asynccontextmanager
async def browser_session(server: Server) -> AsyncIterator[PageClient]:
    """A client that keeps cookies and follows no redirect, signed in to nothing yet."""
    async with httpx.AsyncClient(
        verify=tls_context(), base_url=server.base_url, follow_redirects=False, timeout=30.0
    ) as http:
        yield PageClient(http)


@contextlib.asynccontextmanager
async def browser_session_of(other: PageClient) -> AsyncIterator[PageClient]:
    """A fresh browser session on the same server as `other`."""
    async with httpx.AsyncClient(
        verify=tls_context(), base_url=other.http.base_url, follow_redirects=False, timeout=30.0
    ) as http:
        yield PageClient(http)


async def sign_in(client: PageClient, name: str, password: str) -> httpx.Response:
    """Sign in through the form; the client's token becomes the new session's."""
    form = await client.http.get("/signin")
    assert form.status_code == 200, form.text
    reply = await client.http.post(
        "/signin", data={CSRF_FIELD: csrf_of(form.text), "name": name, "password": password}
    )
    if reply.status_code == 303:
        await client.refresh_token()
    return reply


@contextlib.asynccontextmanager
async def signed_in(server: Server, name: str, password: str) -> AsyncIterator[PageClient]:
    async with browser_session(server) as client:
        reply = await sign_in(client, name, password)
        assert reply.status_code == 303, reply.text
        yield client


async def page_of(server: Server, passwords: dict[str, str], who: str, path: str) -> str:
    """The HTML of the page at `path` as `who` sees it, signed in through the form (200)."""
    async with signed_in(server, who, passwords[who]) as client:
        reply = await client.http.get(path)
        assert reply.status_code == 200, reply.text
        return reply.text


def forged_session(
    session: dict[str, Any], *, signed_at: float | None = None, secret: str = SECRET
) -> str:
    """A session cookie as the server signs it (Starlette's SessionMiddleware), at `signed_at`."""

    class At(TimestampSigner):
        def get_timestamp(self) -> int:
            return int(time.time() if signed_at is None else signed_at)

    data = base64.b64encode(json.dumps(session).encode())
    return At(secret).sign(data).decode()


def session_of(client: PageClient) -> dict[str, Any]:
    """What a client's session cookie holds (read, as anyone can: it is signed, not secret)."""
    value = client.http.cookies[SESSION_COOKIE]
    payload = value.rsplit(".", 2)[0]
    return dict(json.loads(base64.b64decode(payload)))


def text_of(page: str) -> str:
    """A page's words, tags dropped and spaces folded."""
    words = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())
    return re.sub(r" ([;:,.])", r"\1", words)
