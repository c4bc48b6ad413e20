"""Who may see and do what: roles, teams, four-eyes. Pure rules; the services apply them.

Seeing. An admin sees every run. Anyone else sees a run they started, and a run in which one of
their teams owns a request (as it is routed now: an escalation or reassignment moves it); seeing a
run means seeing its requests and its audit trail. What a person may not see does not exist for
them: it is a 404, never a 403 that would confirm an id.

Acting. A viewer reads and never answers, starts or cancels. A responder answers requests of their
own teams; an admin answers any team's, and is audited like anyone. Four-eyes holds for everyone:
the person who started a run may not approve (or approve by editing) its approvals and reviews;
they may still reject them, which withdraws the action. Cancelling a run takes a responder or an
admin who can see it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import datetime
from typing import Any, Final, Literal

from baton.errors import NotPermitted
from human.records import OPEN_STATUSES, AuditEvent, HumanRequest, Run, User
from human.routing import blocks
from human.store.base import Actor, Viewer

FOUR_EYES_KINDS = ("approval", "review")
FOUR_EYES_DECISIONS = ("approve", "edit")

Held = Literal["viewer", "claimed", "approved", "four_eyes"]
"""Why an open request of one's teams is not one's to act on now (`held_from`)."""


def viewer_of(user: User) -> Viewer | None:
    """The visibility filter of `user`'s lists; None for an admin, who sees everything."""
    return None if user.role == "admin" else Viewer(name=user.name, teams=user.teams)


def can_see_run(user: User, run: Run, teams: Collection[str]) -> bool:
    """Whether `user` may see `run`, whose requests are owned by `teams`."""
    return (
        user.role == "admin"
        or (run.created_by is not None and run.created_by == user.name)
        or any(team in user.teams for team in teams)
    )


def check_can_answer(user: User, request: HumanRequest) -> None:
    """Raise `NotPermitted` unless `user` may answer `request` at all (four-eyes aside)."""
    if user.role == "viewer":
        raise NotPermitted(
            f"{user.name} is a viewer and cannot answer requests",
            to_reader="You cannot answer this request because you are a viewer: you can read "
            "requests, not answer them.",
        )
    if user.role != "admin" and request.team not in user.teams:
        raise NotPermitted(
            f"{user.name} is not in team {request.team}, which owns this request",
            to_reader=f"You cannot answer this request because it belongs to {request.team}, "
            "and you are not in that team.",
        )


def four_eyes_words(request: HumanRequest, refused: Iterable[str], allowed: Iterable[str]) -> str:
    """Four-eyes, said to the person who started the run: what they cannot do, why, who can.

    `refused`: the decisions four-eyes takes from them; `allowed`: those they still may take.
    """
    still = list(allowed)
    return (
        f"You cannot {' or '.join(refused)} this request because you started its run "
        f"(four-eyes): another person of {request.team} must."
        + (f" You can still {' or '.join(still)} it." if still else "")
    )


def check_four_eyes(user: User, request: HumanRequest, run: Run, decision: str) -> None:
    """Raise `NotPermitted` if `user` started `run` and would approve one of its requests."""
    if (
        run.created_by == user.name
        and request.kind in FOUR_EYES_KINDS
        and decision in FOUR_EYES_DECISIONS
    ):
        raise NotPermitted(
            f"four-eyes: {user.name} started run {run.id} and cannot {decision} its "
            f"{request.kind} requests; another member of {request.team} must",
            to_reader=four_eyes_words(request, [decision], []),
        )


def held_from(user: User, request: HumanRequest, run: Run, now: datetime) -> Held | None:
    """Why `user` may not act on the open `request` now, or None when they may.

    A viewer answers nothing; another person's live claim holds it; one who approved a request
    that needs another approver has decided; the person who started the run may not approve its
    approvals and reviews (four-eyes: what is left to them, rejecting, withdraws the action, and
    the decision waits for another member of the team). The store's
    `RequestFilter.actionable_by` (a person's My work) leaves out the same requests.
    """
    if user.role == "viewer":
        return "viewer"
    if blocks(request, user.name, now):
        return "claimed"
    if any(a.actor == user.name and a.decision == "approve" for a in request.answers):
        return "approved"
    if run.created_by == user.name and request.kind in FOUR_EYES_KINDS:
        return "four_eyes"
    return None


def actor_of(user: User, now: datetime) -> Actor:
    """`user` as the store's filters of what they may act on at `now` take them."""
    return Actor(name=user.name, answers=user.role != "viewer", at=now)


def check_can_run(user: User) -> None:
    """Raise `NotPermitted` unless `user` may start runs (viewers only look)."""
    if user.role == "viewer":
        raise NotPermitted(
            f"{user.name} is a viewer and cannot start or cancel runs",
            to_reader="You cannot start or cancel a run because you are a viewer: you can look "
            "at runs and requests only.",
        )


def check_can_cancel(user: User) -> None:
    """Raise `NotPermitted` unless `user` may cancel a run they can see."""
    check_can_run(user)


def check_can_claim(user: User, request: HumanRequest) -> None:
    """Raise `NotPermitted` unless `user` may claim `request`: whoever may answer it."""
    check_can_answer(user, request)


def release_scope(user: User) -> str | None:
    """Whose claims `user` may release: their own (their name), or anyone's (None, an admin)."""
    if user.role == "viewer":
        raise NotPermitted(
            f"{user.name} is a viewer and cannot release claims",
            to_reader="You cannot release a claim because you are a viewer.",
        )
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


MOVES: Final = ("request.escalated", "request.reassigned")


def moved_away(events: Iterable[AuditEvent], teams: Collection[str]) -> AuditEvent | None:
    """The last move (escalation or reassignment) of a request from one of `teams` to another.

    Its audit trail says whether the reader's team once owned a request they can no longer see:
    they may be told where it went. None for anyone whose team never owned it, who must not
    learn that it exists.
    """
    moves = [
        e
        for e in events
        if e.type in MOVES
        and e.data.get("from_team") in teams
        and e.data.get("to_team") not in teams
    ]
    return moves[-1] if moves else None


View = Literal["mine", "unassigned", "claimed", "overdue", "answered", "all"]
"""A saved view of requests: an inbox tab, `GET /api/requests?view=`, `requests list --view`."""


def view_filter(
    view: View, user: User, now: datetime, statuses: tuple[str, ...] | None = None
) -> dict[str, Any]:
    """What a saved view (an inbox tab, `GET /api/requests?view=`) sets in a request filter.

    `mine`: open requests of `user`'s teams, assigned to them or claimed by them, that they may
    act on now (`actionable_by`: none `held_from` them), most urgent first; `unassigned`: open,
    nobody assigned or claiming; `claimed`: by them; `overdue`: as `mine`, past their deadline,
    whoever may act; `answered`: by them; `all`: no change.

    `statuses`: the statuses a filter asked for, which the views of open requests keep (else
    every open status). The same for the pages and the API, so both list the same work.
    """
    waiting = {
        "waiting_for": Viewer(name=user.name, teams=tuple(user.teams)),
        "teams": None,
        "sort": "urgent",
    }
    opened = {"statuses": statuses or OPEN_STATUSES}
    changes: dict[View, dict[str, Any]] = {
        "mine": waiting | opened | {"actionable_by": actor_of(user, now)},
        "unassigned": opened | {"unassigned": True, "sort": "urgent"},
        "claimed": {"claimed_by": user.name, "statuses": ("claimed",), "sort": "urgent"},
        "overdue": waiting | opened | {"overdue_at": now},
        "answered": {"answered_by": user.name, "teams": None},
        "all": {},
    }
    return changes[view]
