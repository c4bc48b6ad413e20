"""Who is calling: Baton's bearer tokens, and with `BATON_AUTH=easyauth` the platform's sign-in.

**Bearer tokens** (`Authorization: Bearer bt_…`, made by `baton tokens create USER`) work in
both modes.

**easyauth** is for Baton behind Azure Container Apps (or App Service) authentication, which signs
people in with Microsoft Entra ID and hands the app who they are in request headers that "external
requests aren't allowed to set" (the platform's documentation): `X-MS-CLIENT-PRINCIPAL`, base64 of
`{"auth_typ", "name_typ", "role_typ", "claims": [{"typ", "val"}, …]}`, with
`X-MS-CLIENT-PRINCIPAL-NAME` and `-ID` beside it. Only in this mode are those headers read; with
`local` (the default) they are ignored entirely, so a forged header proves nothing. Never set
`easyauth` on a Baton that clients can reach without passing through that authentication.

In easyauth mode a request is authenticated by, in this order: a Baton bearer token (`bt_…`);
else `X-MS-CLIENT-PRINCIPAL`; else any other bearer token (refused as unknown). A principal that
does not decode, is not JSON of that shape, or names nobody is a 401 that says which. The person
is named by the first claim of `preferred_username`, `upn`, `email` (short or URI claim types),
then the claim `name_typ` names, then `X-MS-CLIENT-PRINCIPAL-NAME`; and is the Baton user of that
name, compared as given and then in lower case (Entra names are e-mail-like and case-insensitive).

Entra groups (the `groups` claims: object ids; the app registration must emit them) map to Baton
teams through `BATON_EASYAUTH_GROUPS` (`{"<group object id>": "<team>", …}`); members of
`BATON_EASYAUTH_ADMIN_GROUP` are admins. Someone signing in for the first time is added as a Baton
user (lower-cased name) with the teams their groups map to and the role admin (admin group),
responder (a mapped team) or viewer (none): no audit event, as for `baton users add`. On later
calls a mapped group they newly belong to adds its team, and with it responder (or admin) if the
stored role was less; teams and roles given by hand stay, and leaving an Entra group does not
remove a team already stored (use `baton users add NAME --team …`, which sets teams exactly). A
token carrying over 200 groups holds none (Entra's "overage"); that is logged and maps nothing.

**Sessions** are the pages' sign-in with a local account (a password set by `baton users add
--password-stdin` or `baton seed --demo`), and their CSRF tokens: the last part of this module.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import functools
import hashlib
import hmac
import json
import logging
import math
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal
from urllib.parse import urlsplit

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from fastapi import Request
from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.datastructures import FormData

from baton.errors import BadCredentials, CsrfRefused, TooManySignIns, Unauthenticated
from baton.settings import Settings
from human.people import TOKEN_PREFIX as TOKEN_PREFIX  # tokens are made there; re-exported
from human.people import new_token as new_token
from human.people import token_hash as token_hash
from human.records import User
from human.store.base import Store
from web.zones import cookie_zone

logger = logging.getLogger(__name__)

PRINCIPAL_HEADER: Final = "x-ms-client-principal"
PRINCIPAL_NAME_HEADER: Final = "x-ms-client-principal-name"
PRINCIPAL_ID_HEADER: Final = "x-ms-client-principal-id"

_NAME_CLAIMS: Final = (
    "preferred_username",
    "upn",
    "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/upn",
    "email",
    "emails",
    "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress",
)
_GROUP_CLAIMS: Final = ("groups", "http://schemas.microsoft.com/ws/2008/06/identity/claims/groups")
_RANK: Final = {"viewer": 0, "responder": 1, "admin": 2}


class Claim(BaseModel):
    """One claim of a client principal."""

    model_config = ConfigDict(extra="ignore", strict=True)

    typ: str
    val: str


class ClientPrincipal(BaseModel):
    """The decoded `X-MS-CLIENT-PRINCIPAL` header."""

    model_config = ConfigDict(extra="ignore", strict=True)

    auth_typ: str
    name_typ: str | None = None
    role_typ: str | None = None
    claims: list[Claim]

    def values(self, *types: str) -> list[str]:
        """The values of the claims of these types, in the principal's order."""
        wanted = {t.lower() for t in types}
        return [c.val for c in self.claims if c.typ.lower() in wanted]


def decode_principal(header: str) -> ClientPrincipal:
    """The principal in an `X-MS-CLIENT-PRINCIPAL` header; `Unauthenticated` says what is wrong."""
    try:
        raw = base64.b64decode(header.strip() + "=" * (-len(header.strip()) % 4), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise Unauthenticated("X-MS-CLIENT-PRINCIPAL is not base64") from exc
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise Unauthenticated("X-MS-CLIENT-PRINCIPAL is base64 but not of JSON") from exc
    if not isinstance(data, dict):
        raise Unauthenticated("X-MS-CLIENT-PRINCIPAL must be a JSON object")
    try:
        return ClientPrincipal.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        raise Unauthenticated(
            f"X-MS-CLIENT-PRINCIPAL does not have the platform's shape "
            f'({{"auth_typ", "name_typ", "role_typ", "claims": [{{"typ", "val"}}]}}): '
            f"{where}: {first['msg']}"
        ) from exc


def principal_name(principal: ClientPrincipal, name_header: str | None) -> str:
    """Who the principal is, or `Unauthenticated` if it names nobody."""
    types = (*_NAME_CLAIMS, *((principal.name_typ,) if principal.name_typ else ()))
    for typ in types:
        for value in principal.values(typ):
            if value.strip():
                return value.strip()
    if name_header and name_header.strip():
        return name_header.strip()
    raise Unauthenticated(
        "X-MS-CLIENT-PRINCIPAL has no identity claim: none of preferred_username, upn, email"
        + (f" or its name_typ {principal.name_typ!r}" if principal.name_typ else "")
        + ", and no X-MS-CLIENT-PRINCIPAL-NAME"
    )


@dataclass(frozen=True)
class Authenticator:
    """How this app tells who is calling (`BATON_AUTH` and the easyauth mappings)."""

    mode: Literal["local", "easyauth"] = "local"
    groups: Mapping[str, str] = field(default_factory=dict)
    admin_group: str | None = None
    session_max_age_s: float = 8 * 3600
    session_idle_s: float = 3600
    signin_max_failures: int = 5
    signin_lockout_s: int = 300

    @classmethod
    def from_settings(cls, settings: Settings) -> Authenticator:
        """The authenticator `settings` describe."""
        groups = {k.strip().lower(): v.strip() for k, v in settings.easyauth_groups.items()}
        admin = (settings.easyauth_admin_group or "").strip().lower() or None
        return cls(
            mode=settings.auth,
            groups=groups,
            admin_group=admin,
            session_max_age_s=settings.session_max_age_s,
            session_idle_s=settings.session_idle_s,
            signin_max_failures=settings.signin_max_failures,
            signin_lockout_s=settings.signin_lockout_seconds,
        )

    async def user_of(self, request: Request, store: Store) -> User:
        """The caller of `request`, or `Unauthenticated`."""
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        token = token.strip() if scheme.lower() == "bearer" else ""
        if self.mode == "local" or token.startswith(TOKEN_PREFIX):
            return await user_of_token(token, store)
        principal = request.headers.get(PRINCIPAL_HEADER)
        if principal is not None:
            if request.method not in SAFE_METHODS:
                refuse_cross_site(request)
            return await self._user_of_principal(request, principal, store)
        if token:
            return await user_of_token(token, store)
        if request.headers.get(PRINCIPAL_NAME_HEADER):
            raise Unauthenticated("X-MS-CLIENT-PRINCIPAL-NAME came without X-MS-CLIENT-PRINCIPAL")
        raise Unauthenticated(
            "not signed in: no X-MS-CLIENT-PRINCIPAL from the platform's authentication, "
            "and no 'Authorization: Bearer <token>'"
        )

    async def _user_of_principal(self, request: Request, header: str, store: Store) -> User:
        principal = decode_principal(header)
        name = principal_name(principal, request.headers.get(PRINCIPAL_NAME_HEADER))
        group_ids = {g.strip().lower() for g in principal.values(*_GROUP_CLAIMS)}
        if not group_ids and principal.values("_claim_names", "hasgroups"):
            logger.warning(
                "easyauth principal has too many groups to carry them; none mapped",
                extra={"user": name},
            )
        teams = sorted({self.groups[g] for g in group_ids if g in self.groups})
        role = (
            "admin"
            if self.admin_group is not None and self.admin_group in group_ids
            else "responder"
            if teams
            else "viewer"
        )
        user = await store.get_user(name)
        if user is None and name.lower() != name:
            user = await store.get_user(name.lower())
        if user is not None:
            user = await keep_browser_zone(request, store, user)
        if user is None:
            user = await keep_browser_zone(
                request, store, await store.add_user(name.lower(), role=role, teams=teams)
            )
            logger.info(
                "user added from easyauth",
                extra={
                    "user": user.name,
                    "role": user.role,
                    "teams": list(user.teams),
                    "principal_id": request.headers.get(PRINCIPAL_ID_HEADER),
                    "auth_typ": principal.auth_typ,
                },
            )
            return user
        if set(teams) <= set(user.teams) and _RANK[role] <= _RANK[user.role]:
            return user
        stronger = role if _RANK[role] > _RANK[user.role] else user.role
        updated = await store.add_user(
            user.name, role=stronger, teams=sorted(set(user.teams) | set(teams))
        )
        logger.info(
            "user updated from easyauth groups",
            extra={"user": updated.name, "role": updated.role, "teams": list(updated.teams)},
        )
        return updated


LOCAL: Final = Authenticator()


def refuse_cross_site(request: Request) -> None:
    """Raise `CsrfRefused` when a browser says this write comes from another site's page.

    Behind easyauth the platform's cookie rides along on every request the browser makes, a
    forged one from another site included, and the principal headers follow it. A browser tells
    where a request comes from (`Sec-Fetch-Site`, `Origin`); a write from anywhere but this origin
    is refused. Programs calling the API send neither header and are not affected.
    """
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        raise CsrfRefused(f"a write from another site's page is refused (Sec-Fetch-Site: {site})")
    origin = request.headers.get("origin")
    if origin is None:
        return
    hosts = {request.headers.get("host"), request.headers.get("x-forwarded-host")}
    if origin == "null" or urlsplit(origin).netloc not in hosts - {None}:
        raise CsrfRefused(f"a write from another site's page is refused (Origin: {origin})")


async def user_of_token(token: str, store: Store) -> User:
    """The owner of a Baton API token; `Unauthenticated` for none, an unknown or a revoked one."""
    if not token:
        raise Unauthenticated("missing bearer token: send 'Authorization: Bearer <token>'")
    user = await store.user_for_token(token_hash(token))
    if user is None:
        raise Unauthenticated("unknown or revoked token")
    return user


async def user_from_request(request: Request, store: Store, *, use: bool = True) -> User:
    """The caller, by the authenticator `create_app` put on the app (local when there is none).

    A call without an `Authorization` header from a browser signed in to the pages is that
    person's (SPEC §5: bearer token or session cookie); its writes must carry the session's CSRF
    token in `X-CSRF-Token`, which another site's page cannot read or send.
    """
    if not request.headers.get("authorization"):
        user = await user_of_session(request, store, use=use)
        if user is not None:
            if request.method not in SAFE_METHODS:
                check_csrf(request, request.headers.get(CSRF_HEADER))
            return user
    return await authenticator_of(request).user_of(request, store)


def authenticator_of(request: Request) -> Authenticator:
    """The authenticator `create_app` put on the app (local when there is none)."""
    authenticator: Any = getattr(request.app.state, "auth", LOCAL)
    assert isinstance(authenticator, Authenticator)
    return authenticator


# sessions: the pages' sign-in ---------------------------------------------------------------
#
# A signed-in browser holds one cookie, signed with BATON_SECRET_KEY by Starlette's
# SessionMiddleware (itsdangerous; HttpOnly, SameSite=Lax, Secure behind https): who it is, when
# they signed in (the session ends `session_max_age_s` later, however active), when they last
# used it (it ends `session_idle_s` after), a fingerprint of their password hash (a new password
# ends every session of the old one) and a CSRF token. Every form carries the token; a post
# without it, or with another session's, changes nothing.

SESSION_COOKIE: Final = "baton_session"
CSRF_FIELD: Final = "csrf_token"
CSRF_HEADER: Final = "x-csrf-token"
SAFE_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})
_SESSION_KEYS: Final = ("user", "since", "seen", "key", "sid")
LIVE_HEADER: Final = "x-baton-live"
"""Sent by a page's live refresh (htmx on a stream event): not a use of the session."""


@functools.cache
def _hasher() -> PasswordHasher:
    return PasswordHasher()


@functools.cache
def _no_one_hash() -> str:
    """A hash to verify against when the name is unknown, so both cost the same time."""
    return _hasher().hash(secrets.token_urlsafe(16))


def _fingerprint(user: User, password_hash: str) -> str:
    """What a session is bound to: the password, the role and the teams it was signed in with.

    A change to any of them ends every session of that person at its next request.
    """
    bound = "\x1f".join([password_hash, user.role, *sorted(user.teams)])
    return hashlib.sha256(bound.encode()).hexdigest()[:24]


def csrf_token(request: Request) -> str:
    """This browser session's CSRF token, made on first use; every form carries it."""
    token = request.session.get("csrf")
    if not isinstance(token, str) or not token:
        token = secrets.token_urlsafe(32)
        request.session["csrf"] = token
    return token


def check_csrf(request: Request, given: str | None) -> None:
    """Raise `CsrfRefused` unless `given` is this session's CSRF token."""
    expected = request.session.get("csrf")
    if not isinstance(expected, str) or not given or not hmac.compare_digest(expected, given):
        raise CsrfRefused(
            "the form's security token is missing or out of date (CSRF): reload the page and "
            "send it again"
        )


async def csrf_checked_form(request: Request) -> FormData:
    """The posted form, once its CSRF token proved it came from this session's page."""
    form = await request.form()
    given = form.get(CSRF_FIELD)
    check_csrf(request, given if isinstance(given, str) else None)
    return form


async def sign_in(request: Request, store: Store, name: str, password: str) -> User:
    """Check a name and password (argon2) and start a session; `BadCredentials` if they fail.

    A name with `signin_max_failures` failures in a row is locked for `signin_lockout_s` after
    the last (`TooManySignIns`, even with the right password), whether or not anyone has it, so
    guessing is slow and the lockout tells nothing of who exists. The streak lives in the store:
    every web process counts the same failures. A success ends it.
    """
    rules = authenticator_of(request)
    streak = await store.sign_in_streak(name, window_s=rules.signin_lockout_s)
    if streak is not None and streak[0] >= rules.signin_max_failures:
        raise _locked(name, rules.signin_lockout_s - streak[1])
    found = await store.credentials(name)
    stored = found[1] if found is not None else None
    try:
        # argon2 takes tens of milliseconds of CPU by design: off the event loop.
        await asyncio.to_thread(_hasher().verify, stored or _no_one_hash(), password)
        if found is None or stored is None:
            raise VerificationError("no password")
    except (VerificationError, InvalidHashError) as exc:
        failures = await store.note_failed_sign_in(name, window_s=rules.signin_lockout_s)
        logger.warning("sign-in failed", extra={"user": name, "failures": failures})
        if failures >= rules.signin_max_failures:
            raise _locked(name, rules.signin_lockout_s) from exc
        raise BadCredentials("unknown name or wrong password") from exc
    if streak is not None:
        await store.clear_failed_sign_ins(name)
    user = found[0]
    request.session.clear()  # a new session: nothing of the signed-out one carries over
    request.session.update(
        {
            "user": user.name,
            "since": time.time(),
            "seen": time.time(),
            "key": _fingerprint(user, stored),
            "sid": secrets.token_urlsafe(16),
            "csrf": secrets.token_urlsafe(32),
        }
    )
    logger.info("signed in", extra={"user": user.name})
    return await keep_browser_zone(request, store, user)


async def keep_browser_zone(request: Request, store: Store, user: User) -> User:
    """`user`, given their browser's time zone if they have none.

    The zone is the pages' `baton_tz` cookie's: then messages sent to them give times on the
    clock they read the pages by.
    """
    if user.time_zone is not None:
        return user
    zone = cookie_zone(request.scope["headers"])
    if zone is None or not await store.keep_time_zone(user.name, zone):
        return user
    logger.info("time zone kept from the browser", extra={"user": user.name, "time_zone": zone})
    return user.model_copy(update={"time_zone": zone})


def _locked(name: str, wait_s: float) -> TooManySignIns:
    wait = max(1, math.ceil(wait_s))
    return TooManySignIns(
        f"too many failed sign-ins for {name!r}; try again in "
        + (f"{math.ceil(wait / 60)} minutes" if wait > 90 else f"{wait} seconds"),
        retry_after_s=wait,
    )


async def sign_out(request: Request, store: Store) -> None:
    """End the session, and every copy of its cookie.

    The cookie is cleared in the response, and the session is noted as ended, so a copy of it
    taken before is refused from now on.
    """
    sid = request.session.get("sid")
    if isinstance(sid, str) and sid:
        await store.end_session(sid, keep_s=authenticator_of(request).session_max_age_s)
    request.session.clear()


async def user_of_session(request: Request, store: Store, *, use: bool = True) -> User | None:
    """The person this browser's session is signed in as, or None (never signed in, expired).

    A session ends `session_max_age_s` after sign-in however active, and after `session_idle_s`
    without use. Each request with it is a use (`use=False`, or the `X-Baton-Live` header of a
    page's live refresh, looks without using it), noted in the cookie sent back; a copy of the
    cookie taken earlier goes idle from when it was taken.
    """
    if "session" not in request.scope:
        return None
    name = request.session.get("user")
    if not isinstance(name, str):
        return None
    since, seen = request.session.get("since"), request.session.get("seen")
    rules = authenticator_of(request)
    now = time.time()
    found = await store.credentials(name)
    sid = request.session.get("sid")
    if (
        not isinstance(since, int | float)
        or now - since > rules.session_max_age_s
        or not isinstance(seen, int | float)
        or now - seen > rules.session_idle_s
        or found is None
        or found[1] is None
        or _fingerprint(found[0], found[1]) != request.session.get("key")
        or not isinstance(sid, str)
        or await store.session_ended(sid)
    ):
        for key in _SESSION_KEYS:
            request.session.pop(key, None)
        return None
    if use and request.headers.get(LIVE_HEADER) != "1":
        request.session["seen"] = now
    return found[0]


async def page_user_of(request: Request, store: Store) -> User | None:
    """The person a page is for: their session, else (easyauth) the platform's principal."""
    user = await user_of_session(request, store)
    if user is not None:
        return user
    authenticator = authenticator_of(request)
    if authenticator.mode == "easyauth" and request.headers.get(PRINCIPAL_HEADER):
        return await authenticator.user_of(request, store)
    return None
