"""Who is calling: bearer tokens on `/api` (sessions and easyauth come with the inbox and teams)."""

from __future__ import annotations

import hashlib
import secrets

from fastapi import Request

from baton.errors import Unauthenticated
from human.records import User
from human.store.base import Store

TOKEN_PREFIX = "bt_"


def new_token() -> str:
    """A fresh API token (shown once; only its hash is stored)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    """The stored form of a token."""
    return hashlib.sha256(token.encode()).hexdigest()


async def user_from_request(request: Request, store: Store) -> User:
    """The user whose bearer token the request carries, or `Unauthenticated`."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated("missing bearer token: send 'Authorization: Bearer <token>'")
    user = await store.user_for_token(token_hash(token.strip()))
    if user is None:
        raise Unauthenticated("unknown or revoked token")
    return user
