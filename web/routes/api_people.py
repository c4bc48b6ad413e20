"""`/api/tokens` (everyone: their own; admins: anyone's), `/api/teams` and `/api/users` (admins)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from human.people import NewTeam, NewToken, NewUser, UserChange
from web.deps import PartsDep, UserDep
from web.errors import sent_in

router = APIRouter(prefix="/api", tags=["people"])


@router.post("/tokens", status_code=201)
async def create_token(body: NewToken, parts: PartsDep, user: UserDep) -> dict[str, Any]:
    """A new API token, shown this once as `token`; only its hash is kept."""
    with sent_in("body"):
        record, token = await parts.people.create_token(user, body)
    return record.model_dump(mode="json") | {"token": token}


@router.get("/tokens")
async def list_tokens(
    parts: PartsDep, user: UserDep, owner: str | None = None
) -> list[dict[str, Any]]:
    """Your tokens (an admin: everyone's, or `?owner=NAME`'s), never the tokens themselves."""
    with sent_in("query"):
        tokens = await parts.people.list_tokens(user, user=owner)
    return [t.model_dump(mode="json") for t in tokens]


@router.delete("/tokens/{token_id}")
async def revoke_token(token_id: str, parts: PartsDep, user: UserDep) -> dict[str, Any]:
    """Revoke a token (yours, or anyone's for an admin); 404 for one you may not see."""
    return (await parts.people.revoke_token(user, token_id)).model_dump(mode="json")


@router.get("/teams")
async def list_teams(parts: PartsDep, user: UserDep) -> list[dict[str, Any]]:
    """Every team with its members (admins)."""
    return [t.model_dump(mode="json") for t in await parts.people.list_teams(user)]


@router.post("/teams", status_code=201)
async def add_team(
    body: NewTeam, parts: PartsDep, user: UserDep, response: Response
) -> dict[str, Any]:
    """Create a team (admins); 409 if it exists."""
    team = await parts.people.add_team(user, body)
    response.headers["Location"] = f"/api/teams/{team.name}"
    return team.model_dump(mode="json")


@router.get("/users")
async def list_users(parts: PartsDep, user: UserDep) -> list[dict[str, Any]]:
    """Every user with role, teams, email and Slack id (admins)."""
    return [u.model_dump(mode="json") for u in await parts.people.list_users(user)]


@router.post("/users", status_code=201)
async def add_user(
    body: NewUser, parts: PartsDep, user: UserDep, response: Response
) -> dict[str, Any]:
    """Create a user in existing teams (admins); 409 if the name is taken."""
    with sent_in("body"):
        added = await parts.people.add_user(user, body)
    response.headers["Location"] = f"/api/users/{added.name}"
    return added.model_dump(mode="json")


@router.patch("/users/{name}")
async def update_user(
    name: str, body: UserChange, parts: PartsDep, user: UserDep
) -> dict[str, Any]:
    """Set a user's role, teams (exactly these), email or Slack id (admins)."""
    with sent_in("body"):
        updated = await parts.people.update_user(user, name, body)
    return updated.model_dump(mode="json")
