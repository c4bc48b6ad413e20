"""Who may do what: roles and teams (four-eyes, claims and visibility rules come with teams)."""

from __future__ import annotations

from baton.errors import NotPermitted
from human.records import HumanRequest, User


def check_can_answer(user: User, request: HumanRequest) -> None:
    """Raise `NotPermitted` unless `user` may answer `request`."""
    if user.role == "viewer":
        raise NotPermitted(f"{user.name} is a viewer and cannot answer requests")
    if user.role != "admin" and request.team not in user.teams:
        raise NotPermitted(f"{user.name} is not in team {request.team}, which owns this request")


def check_can_run(user: User) -> None:
    """Raise `NotPermitted` unless `user` may start or cancel runs (viewers only look)."""
    if user.role == "viewer":
        raise NotPermitted(f"{user.name} is a viewer and cannot start or cancel runs")


def check_can_claim(user: User, request: HumanRequest) -> None:
    """Raise `NotPermitted` unless `user` may claim `request`: whoever may answer it."""
    check_can_answer(user, request)


def release_scope(user: User) -> str | None:
    """Whose claims `user` may release: their own (their name), or anyone's (None, an admin)."""
    if user.role == "viewer":
        raise NotPermitted(f"{user.name} is a viewer and cannot release claims")
    return None if user.role == "admin" else user.name


def check_can_reassign(user: User, request: HumanRequest) -> None:
    """Raise `NotPermitted` unless `user` may move `request`: an admin or one of its team."""
    if user.role == "viewer":
        raise NotPermitted(f"{user.name} is a viewer and cannot reassign requests")
    if user.role != "admin" and request.team not in user.teams:
        raise NotPermitted(f"{user.name} is not in team {request.team}, which owns this request")


def may_be_assigned(user: User, team: str) -> bool:
    """Whether a request of `team` may be assigned to `user`: someone who could answer it."""
    return user.role == "admin" or (user.role == "responder" and team in user.teams)


def check_can_manage_people(user: User) -> None:
    """Raise `NotPermitted` unless `user` may manage teams and users (admins only)."""
    if user.role != "admin":
        raise NotPermitted(f"{user.name} is not an admin; only admins manage teams and users")


def may_manage_tokens_of(user: User, owner: str) -> bool:
    """Whether `user` may see, create and revoke API tokens of `owner`: their own, or an admin."""
    return user.role == "admin" or user.name == owner
