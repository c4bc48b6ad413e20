"""People: API tokens (created, listed, revoked) and, for admins, teams and users; all audited.

A token is shown once, when it is created; only its SHA-256 is stored, with a public id to list
and revoke it by and its first characters as a hint. A user manages their own tokens, an admin
anyone's; a token that is not the caller's to see is reported as not found, never as forbidden,
while a non-admin naming another user's tokens is refused (403) whether or not that user exists.
Audit events of people (`token.created`, `token.revoked`, `team.added`, `user.added`,
`user.updated`) belong to no run or request and name the actor.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from baton.errors import AlreadyExists, Invalid, NotPermitted, TokenNotFound, UserNotFound
from human.access import check_can_manage_people, may_manage_tokens_of
from human.records import ApiToken, NewEvent, Role, Team, User
from human.store.base import PeopleStore
from human.zones import NAME_MAX, is_zone

TOKEN_PREFIX = "bt_"
_NAME = r"^[A-Za-z0-9][A-Za-z0-9._@+-]*$"
# Deliberately loose: internal domains (corp.local) are fine; the SMTP relay has the last word.
_EMAIL = r"^[^@\s]+@[^@\s]+$"
_SLACK_ID = r"^[UW][A-Z0-9]+$"
_ENTRA_ID = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
_CLEARABLE = ("email", "slack_id", "entra_id", "time_zone")


def _known_zone(name: str) -> str:
    if not is_zone(name):
        raise ValueError("not a time zone the zone database knows (an IANA name: Europe/Berlin)")
    return name


TimeZone = Annotated[
    str,
    Field(
        min_length=1,
        max_length=NAME_MAX,
        description="Their clock, an IANA time zone name (`Europe/Berlin`): messages to them "
        "give times on it.",
        examples=["Europe/Berlin"],
    ),
    AfterValidator(_known_zone),
]


def new_token() -> str:
    """A fresh API token (shown once; only its hash is stored)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    """The stored form of a token."""
    return hashlib.sha256(token.encode()).hexdigest()


def token_hint(token: str) -> str:
    """The first characters of a token, enough for its owner to tell it from their others."""
    return token[: len(TOKEN_PREFIX) + 4]


class NewToken(BaseModel):
    """Body of `POST /api/tokens`."""

    model_config = ConfigDict(extra="forbid")

    label: str = Field("", max_length=200)
    user: str | None = Field(None, description="Whose token (admins only; default: yours).")


class NewTeam(BaseModel):
    """Body of `POST /api/teams`."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=100, pattern=_NAME)
    description: str = Field("", max_length=500)


class NewUser(BaseModel):
    """Body of `POST /api/users`."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200, pattern=_NAME)
    role: Role = "responder"
    teams: list[str] = Field(default_factory=list)
    email: str | None = Field(None, max_length=254, pattern=_EMAIL)
    slack_id: str | None = Field(None, max_length=40, pattern=_SLACK_ID)
    entra_id: str | None = Field(
        None, pattern=_ENTRA_ID, description="Their Entra object id (Microsoft Teams answers)."
    )
    time_zone: TimeZone | None = None


class UserChange(BaseModel):
    """Body of `PATCH /api/users/{name}`: what to change; absent fields stay as they are."""

    model_config = ConfigDict(extra="forbid")

    role: Role | None = None
    teams: list[str] | None = None
    email: str | None = Field(None, max_length=254, pattern=_EMAIL)
    slack_id: str | None = Field(None, max_length=40, pattern=_SLACK_ID)
    entra_id: str | None = Field(
        None, pattern=_ENTRA_ID, description="Their Entra object id (Microsoft Teams answers)."
    )
    time_zone: TimeZone | None = None
    clear: list[str] = Field(
        default_factory=list,
        description="Fields to clear: 'email', 'slack_id', 'entra_id', 'time_zone'.",
    )


class PeopleService:
    """Tokens for everyone; teams and users for admins."""

    def __init__(self, store: PeopleStore) -> None:
        self._store = store

    # tokens ---------------------------------------------------------------------------------

    async def create_token(self, actor: User, body: NewToken) -> tuple[ApiToken, str]:
        """A new token for the caller (or, for an admin, anyone): the record and the token."""
        owner = await self._owner(actor, body.user or actor.name)
        token = new_token()
        token_id = await self._store.add_token(
            owner.id,
            token_hash(token),
            body.label,
            hint=token_hint(token),
            events=[
                NewEvent(
                    type="token.created",
                    actor=actor.name,
                    data={"user": owner.name, "label": body.label},
                )
            ],
        )
        created = await self._store.get_token(token_id)
        assert created is not None
        return created, token

    async def list_tokens(self, actor: User, *, user: str | None = None) -> list[ApiToken]:
        """The caller's tokens; an admin's view of one user's (`user`), or of everyone's."""
        if user is None:
            if actor.role == "admin":
                return await self._store.list_tokens()
            user = actor.name
        owner = await self._owner(actor, user)
        return await self._store.list_tokens(owner.id)

    async def revoke_token(self, actor: User, token_id: str) -> ApiToken:
        """Revoke a token: the caller's own, or anyone's for an admin. Revoking twice is a no-op."""
        token = await self._store.get_token(token_id)
        if token is None or not may_manage_tokens_of(actor, token.user):
            raise TokenNotFound(f"no token {token_id}")
        revoked = await self._store.revoke_token(
            token_id,
            events=[
                NewEvent(
                    type="token.revoked",
                    actor=actor.name,
                    data={"token_id": token_id, "user": token.user},
                )
            ],
        )
        assert revoked is not None
        return revoked

    async def _owner(self, actor: User, name: str) -> User:
        """The owner `actor` names as `user`, if `actor` may manage their tokens.

        `NotPermitted` unless they may (whether or not such a user exists); then `Invalid` if
        there is no such user.
        """
        if not may_manage_tokens_of(actor, name):
            raise NotPermitted(
                f"{actor.name} may manage only their own tokens; only an admin names another user"
            )
        owner = await self._store.get_user(name)
        if owner is None:
            raise Invalid(
                f"no user named {name!r}", [{"loc": ["user"], "msg": f"no user {name!r}"}]
            )
        return owner

    # teams and users ------------------------------------------------------------------------

    async def list_teams(self, actor: User) -> list[Team]:
        """Every team with its members."""
        check_can_manage_people(actor)
        return await self._store.list_teams()

    async def add_team(self, actor: User, body: NewTeam) -> Team:
        """Create a team; 409 if it exists."""
        check_can_manage_people(actor)
        event = NewEvent(
            type="team.added",
            actor=actor.name,
            data={"team": body.name, "description": body.description},
        )
        if not await self._store.add_team(body.name, body.description, events=[event]):
            raise AlreadyExists(f"team {body.name} exists already")
        return next(t for t in await self._store.list_teams() if t.name == body.name)

    async def list_users(self, actor: User) -> list[User]:
        """Every user, with role, teams, email and Slack id."""
        check_can_manage_people(actor)
        return await self._store.list_users()

    async def add_user(self, actor: User, body: NewUser) -> User:
        """Create a user in existing teams; 409 if the name is taken, 422 for an unknown team."""
        check_can_manage_people(actor)
        if await self._store.get_user(body.name) is not None:
            raise AlreadyExists(f"user {body.name} exists already")
        await self._check_teams(body.teams)
        await self._check_slack_id(body.slack_id, body.name)
        await self._check_entra_id(body.entra_id, body.name)
        data = body.model_dump(exclude_none=True)
        return await self._store.add_user(
            body.name,
            role=body.role,
            teams=body.teams,
            email=body.email,
            slack_id=body.slack_id,
            entra_id=body.entra_id,
            time_zone=body.time_zone,
            events=[
                NewEvent(type="user.added", actor=actor.name, data={"user": body.name, **data})
            ],
        )

    async def update_user(self, actor: User, name: str, body: UserChange) -> User:
        """Change a user's role, teams (exactly these), email, Slack or Entra id, zone; audited."""
        check_can_manage_people(actor)
        user = await self._store.get_user(name)
        if user is None:
            raise UserNotFound(f"no user {name}")
        unknown = [f for f in body.clear if f not in _CLEARABLE]
        if unknown:
            raise Invalid(
                f"cannot clear {unknown[0]!r}",
                [
                    {
                        "loc": ["clear"],
                        "msg": "only 'email', 'slack_id', 'entra_id' and 'time_zone' can be "
                        "cleared",
                    }
                ],
            )
        if body.teams is not None:
            await self._check_teams(body.teams)
        await self._check_slack_id(body.slack_id, name)
        await self._check_entra_id(body.entra_id, name)
        changes: dict[str, Any] = body.model_dump(exclude_none=True, exclude={"clear"})
        changes |= {f: None for f in body.clear}
        return await self._store.add_user(
            name,
            role=body.role or user.role,
            teams=user.teams if body.teams is None else body.teams,
            email="" if "email" in body.clear else body.email,
            slack_id="" if "slack_id" in body.clear else body.slack_id,
            entra_id="" if "entra_id" in body.clear else body.entra_id,
            time_zone="" if "time_zone" in body.clear else body.time_zone,
            events=[
                NewEvent(
                    type="user.updated", actor=actor.name, data={"user": name, "changes": changes}
                )
            ],
        )

    async def _check_teams(self, teams: Sequence[str]) -> None:
        known = {t.name for t in await self._store.list_teams()}
        for index, team in enumerate(teams):
            if team not in known:
                raise Invalid(
                    f"no team named {team!r}",
                    [{"loc": ["teams", index], "msg": f"no team named {team!r}"}],
                )

    async def _check_slack_id(self, slack_id: str | None, name: str) -> None:
        if slack_id is None:
            return
        holder = await self._store.user_for_slack_id(slack_id)
        if holder is not None and holder.name != name:
            raise AlreadyExists(f"Slack id {slack_id} belongs to {holder.name} already")

    async def _check_entra_id(self, entra_id: str | None, name: str) -> None:
        if entra_id is None:
            return
        holder = await self._store.user_for_entra_id(entra_id)
        if holder is not None and holder.name != name:
            raise AlreadyExists(f"Entra object id {entra_id} belongs to {holder.name} already")
