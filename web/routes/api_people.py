"""`/api/tokens` (everyone: their own; admins: anyone's), `/api/teams` and `/api/users` (admins)."""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse

from human.people import NewTeam, NewToken, NewUser, UserChange
from human.records import ApiToken, Team, User
from web.deps import AdminDep, PartsDep, UserDep
from web.errors import sent_in
from web.openapi import created, refusals
from web.replies import NewApiToken

router = APIRouter(prefix="/api", tags=["people"], default_response_class=JSONResponse)


@router.post("/tokens", status_code=201, responses=refusals(403))
async def create_token(body: NewToken, parts: PartsDep, user: UserDep) -> NewApiToken:
    """A new API token, shown this once as `token`; only its hash is kept.

    403 for another user's token, unless an admin asks; 422 for a user that does not exist.
    """
    with sent_in("body"):
        record, token = await parts.people.create_token(user, body)
    return NewApiToken(**dict(record), token=token)


@router.get("/tokens", responses=refusals(403))
async def list_tokens(parts: PartsDep, user: UserDep, owner: str | None = None) -> list[ApiToken]:
    """Your tokens (an admin: everyone's, or `?owner=NAME`'s), never the tokens themselves."""
    with sent_in("query"):
        return await parts.people.list_tokens(user, user=owner)


@router.delete("/tokens/{token_id}", responses=refusals(404))
async def revoke_token(token_id: str, parts: PartsDep, user: UserDep) -> ApiToken:
    """Revoke a token (yours, or anyone's for an admin); 404 for one you may not see."""
    return await parts.people.revoke_token(user, token_id)


@router.get("/teams", responses=refusals(403))
async def list_teams(parts: PartsDep, user: AdminDep) -> list[Team]:
    """Every team with its members (admins)."""
    return await parts.people.list_teams(user)


@router.post("/teams", status_code=201, responses=created("team") | refusals(403, 409))
async def add_team(body: NewTeam, parts: PartsDep, user: AdminDep, response: Response) -> Team:
    """Create a team (admins); 409 if it exists."""
    team = await parts.people.add_team(user, body)
    response.headers["Location"] = f"/api/teams/{team.name}"
    return team


@router.get("/users", responses=refusals(403))
async def list_users(parts: PartsDep, user: AdminDep) -> list[User]:
    """Every user with role, teams, email, Slack and Entra ids and time zone (admins)."""
    return await parts.people.list_users(user)


@router.post("/users", status_code=201, responses=created("user") | refusals(403, 409))
async def add_user(body: NewUser, parts: PartsDep, user: AdminDep, response: Response) -> User:
    """Create a user in existing teams (admins); 409 if the name is taken."""
    with sent_in("body"):
        added = await parts.people.add_user(user, body)
    response.headers["Location"] = f"/api/users/{added.name}"
    return added


@router.patch("/users/{name}", responses=refusals(403, 404, 409))
async def update_user(name: str, body: UserChange, parts: PartsDep, user: AdminDep) -> User:
    """Set a user's role, teams (exactly these), email, Slack or Entra id, time zone (admins).

    `clear` names what to clear; an unknown team, an id in use or a time zone the zone database
    does not hold is refused (422, 409), nothing changed.
    """
    with sent_in("body"):
        return await parts.people.update_user(user, name, body)
