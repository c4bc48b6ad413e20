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
