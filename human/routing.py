"""Where a request is and who holds it: claims, reassignment, deadlines and escalation ladders.

Each rule is a pure function from a request's current state (and Baton's clock) to a
`RequestChange`: the columns to set, the audit events, the timers and outbox rows to write, and
whether the run must be resumed. Every store backend reads the request under its write lock, asks
these functions, and applies the change in the same transaction, so a rule is decided once, the
same way on every backend, and applies at most once however often a timer or a click repeats.

Timers are durable jobs (kind `timer`) due by Baton's clock: `expire` at the request's deadline,
`escalate` at each rung of its ladder (counted from the request's creation), and `lapse_claim`
when a claim runs out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from human.kinds import Escalation
from human.records import OPEN_STATUSES, HumanRequest, NewEvent, NotificationEvent
from human.store.base import NewNotification, NewTimer

ChangeOutcome = Literal["claimed", "renewed", "released", "reassigned", "expired", "escalated"]


@dataclass(frozen=True)
class RequestChange:
    """What to write for one change of a request, in one transaction."""

    outcome: ChangeOutcome
    columns: dict[str, Any]
    events: list[NewEvent]
    timers: list[NewTimer] = field(default_factory=list)
    notifications: list[NewNotification] = field(default_factory=list)
    resume: bool = False


def timers_for(request: HumanRequest) -> list[NewTimer]:
    """The timers a new request needs: its deadline and each rung of its escalation ladder."""
    timers = []
    if request.expires_at is not None:
        timers.append(_timer(request, "expire", request.expires_at))
    for step in range(len(request.escalation)):
        timers.append(_timer(request, "escalate", rung_due(request, step), step=step))
    return timers


def rung_due(request: HumanRequest, step: int) -> datetime:
    """When rung `step` of a request's escalation ladder applies: counted from its creation."""
    rung = Escalation.model_validate(request.escalation[step])
    return request.created_at + timedelta(seconds=rung.after_s)


@dataclass(frozen=True)
class NextEscalation:
    """The rung of a request's escalation ladder that applies next: when, to whom, how urgent."""

    at: datetime
    team: str | None
    priority: str | None


def next_escalation(request: HumanRequest, now: datetime) -> NextEscalation | None:
    """What happens to an open request next if nobody answers, when that is an escalation.

    The first rung not yet applied (`escalation_level`), due after `now` and before the request's
    deadline (else the deadline comes first: it expires); None when no rung is left.
    """
    if request.status not in OPEN_STATUSES or request.escalation_level >= len(request.escalation):
        return None
    rung = Escalation.model_validate(request.escalation[request.escalation_level])
    at = rung_due(request, request.escalation_level)
    if at <= now or (request.expires_at is not None and request.expires_at <= at):
        return None
    return NextEscalation(at=at, team=rung.team, priority=rung.priority)


def escalates_at(request: HumanRequest) -> datetime | None:
    """When an open request escalates next, where that comes before its deadline, else None.

    Its team's time runs out then: the inbox sorts the most urgent first by it, else by the
    deadline (the store keeps it, `human_requests.escalates_at`, and a new value at each rung).
    """
    step = next_escalation(request, request.created_at)
    return step.at if step is not None else None


def notifications_for(
    request: HumanRequest, channels: Sequence[str], event: NotificationEvent
) -> list[NewNotification]:
    """One outbox row per configured channel."""
    return [
        NewNotification(request_id=request.id, run_id=request.run_id, channel=c, event=event)
        for c in channels
    ]


def claim_is_live(request: HumanRequest, now: datetime) -> bool:
    """Whether someone holds the request now (a lapsed claim holds nothing)."""
    return (
        request.status == "claimed"
        and request.claimed_by is not None
        and request.claimed_until is not None
        and request.claimed_until > now
    )


def blocks(request: HumanRequest, actor: str, now: datetime) -> bool:
    """Whether someone other than `actor` holds a live claim on the request."""
    return claim_is_live(request, now) and request.claimed_by != actor


def unclaimed_status(escalation_level: int) -> str:
    """The status an open request has when nobody holds it: escalated once any rung applied."""
    return "escalated" if escalation_level > 0 else "pending"


def open_status(request: HumanRequest) -> str:
    """The status an open request has when nobody holds it."""
    return unclaimed_status(request.escalation_level)


_UNCLAIMED: dict[str, Any] = {"claimed_by": None, "claimed_until": None}


def plan_claim(
    request: HumanRequest, actor: str, *, until: datetime, now: datetime
) -> tuple[str, RequestChange | None]:
    """Claim for `actor` until `until`: `claimed`, `renewed`, `held` (by another), `not_open`."""
    if request.status not in OPEN_STATUSES:
        return "not_open", None
    if blocks(request, actor, now):
        return "held", None
    renewed = claim_is_live(request, now)
    outcome: ChangeOutcome = "renewed" if renewed else "claimed"
    change = RequestChange(
        outcome=outcome,
        columns={"status": "claimed", "claimed_by": actor, "claimed_until": until},
        events=[
            _event(request, "request.claimed", actor, until=until.isoformat(), renewed=renewed)
        ],
        timers=[_timer(request, "lapse_claim", until)],
    )
    return outcome, change


def plan_release(
    request: HumanRequest, actor: str, *, holder: str | None, now: datetime
) -> tuple[str, RequestChange | None]:
    """End a live claim (only `holder`'s unless None): `released`, `not_claimed`, `held`."""
    if request.status not in OPEN_STATUSES:
        return "not_open", None
    if not claim_is_live(request, now):
        return "not_claimed", None
    if holder is not None and request.claimed_by != holder:
        return "held", None
    change = RequestChange(
        outcome="released",
        columns={"status": open_status(request), **_UNCLAIMED},
        events=[
            _event(
                request, "request.released", actor, claimed_by=request.claimed_by, reason="released"
            )
        ],
    )
    return "released", change


def plan_reassign(
    request: HumanRequest,
    actor: str,
    *,
    team: str | None,
    assignee: str | None,
    now: datetime,
    channels: Sequence[str] = (),
) -> tuple[str, RequestChange | None]:
    """Move an open request to `team` and/or `assignee`; a live claim ends with it.

    When the move hands the request to another team or person, `channels` tell them.
    """
    if request.status not in OPEN_STATUSES:
        return "not_open", None
    to_team = team or request.team
    # A new team starts unassigned unless a person is named; naming only a person keeps the team.
    to_assignee = (
        assignee
        if assignee is not None
        else (request.assignee if to_team == request.team else None)
    )
    data: dict[str, Any] = {
        "from_team": request.team,
        "to_team": to_team,
        "from_assignee": request.assignee,
        "to_assignee": to_assignee,
    }
    if claim_is_live(request, now):
        data["claim_ended"] = request.claimed_by
    handed_on = (to_team, to_assignee) != (request.team, request.assignee)
    change = RequestChange(
        outcome="reassigned",
        columns={
            "status": open_status(request),
            "team": to_team,
            "assignee": to_assignee,
            **_UNCLAIMED,
        },
        events=[_event(request, "request.reassigned", actor, **data)],
        notifications=notifications_for(request, channels, "reassigned") if handed_on else [],
    )
    return "reassigned", change


def plan_timer(
    request: HumanRequest,
    payload: dict[str, Any],
    *,
    now: datetime,
    channels: Sequence[str],
    answer_channels: Sequence[str] = (),
) -> RequestChange | None:
    """What a fired timer does now, or None when nothing is left for it to do.

    `channels` are told of an escalation; `answer_channels` (those that follow a request to its
    end, and replace what they posted) of an expiry.
    """
    if request.status not in OPEN_STATUSES:
        return None
    action = payload.get("action")
    if action == "expire":
        return _expire(request, now, answer_channels)
    if action == "escalate":
        return _escalate(request, int(payload.get("step", -1)), now, channels)
    if action == "lapse_claim":
        return _lapse_claim(request, now)
    return None


def _expire(
    request: HumanRequest, now: datetime, answer_channels: Sequence[str]
) -> RequestChange | None:
    # An escalation may have moved the deadline later: then a newer timer carries it.
    if request.expires_at is None or request.expires_at > now:
        return None
    return RequestChange(
        outcome="expired",
        columns={
            "status": "expired",
            "answer": {"decision": "expired"},
            "answered_by": "system",
            "answered_at": now,
            **_UNCLAIMED,
        },
        events=[
            _event(
                request,
                "request.expired",
                "system",
                expires_at=request.expires_at.isoformat(),
                team=request.team,
            )
        ],
        notifications=notifications_for(request, answer_channels, "answered"),
        resume=True,
    )


def _escalate(
    request: HumanRequest, step: int, now: datetime, channels: Sequence[str]
) -> RequestChange | None:
    # Rungs apply once each and in order; a later rung that fired first makes earlier ones moot.
    if step < request.escalation_level or step >= len(request.escalation):
        return None
    rung = Escalation.model_validate(request.escalation[step])
    if rung_due(request, step) > now:
        return None
    to_team = rung.team or request.team
    priority = rung.priority or request.priority
    expires_at = (
        now + timedelta(seconds=rung.expires_in_s) if rung.expires_in_s else request.expires_at
    )
    return RequestChange(
        outcome="escalated",
        columns={
            "status": "escalated",
            "team": to_team,
            "priority": priority,
            "expires_at": expires_at,
            "escalation_level": step + 1,
            "escalates_at": escalates_at(
                request.model_copy(
                    update={
                        "escalation_level": step + 1,
                        "expires_at": expires_at,
                        "status": "escalated",
                    }
                )
            ),
            "assignee": request.assignee if to_team == request.team else None,
            **_UNCLAIMED,
        },
        events=[
            _event(
                request,
                "request.escalated",
                "system",
                from_team=request.team,
                to_team=to_team,
                priority=priority,
                expires_at=expires_at.isoformat() if expires_at else None,
                step=step,
            )
        ],
        timers=(
            [_timer(request, "expire", expires_at)]
            if rung.expires_in_s and expires_at is not None
            else []
        ),
        notifications=notifications_for(request, channels, "escalated"),
    )


def _lapse_claim(request: HumanRequest, now: datetime) -> RequestChange | None:
    if request.status != "claimed" or claim_is_live(request, now):
        return None
    return RequestChange(
        outcome="released",
        columns={"status": open_status(request), **_UNCLAIMED},
        events=[
            _event(
                request,
                "request.released",
                "system",
                claimed_by=request.claimed_by,
                reason="lapsed",
            )
        ],
    )


def _timer(
    request: HumanRequest,
    action: Literal["expire", "escalate", "lapse_claim"],
    due_at: datetime,
    *,
    step: int | None = None,
) -> NewTimer:
    return NewTimer(
        request_id=request.id, run_id=request.run_id, action=action, due_at=due_at, step=step
    )


def _event(request: HumanRequest, kind: str, actor: str, **data: Any) -> NewEvent:
    return NewEvent(type=kind, run_id=request.run_id, request_id=request.id, actor=actor, data=data)
