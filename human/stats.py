"""A team lead's figures, computed from the requests' recorded facts (`Store.request_facts`).

Per team: the open requests by age, how many are overdue and escalated, how long answers took
(p50 and p90 of created → answered, over the requests a person answered in the period) and how
many expired unanswered in it (an expiry fills `answered_at` too, with "system": it is no
answer, and neither is a cancellation). Per policy
rule: how its requests were decided (approve, edit, reject, ...) in the period. Nothing is
estimated: each figure counts requests as stored.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final

from human.records import OPEN_STATUSES
from human.store.base import RequestFact

ANSWERED: Final = ("answered", "resumed")
"""The statuses of a request a person answered (an expired or cancelled one is neither)."""

AGES: Final = (
    ("under 1 h", timedelta(hours=1)),
    ("1-4 h", timedelta(hours=4)),
    ("4-24 h", timedelta(days=1)),
    ("over 1 day", None),
)
"""The age bands of open requests, each up to its bound (the last without one)."""


@dataclass(frozen=True)
class TeamFigures:
    """One team's open work and its answer times in the period."""

    team: str
    open_by_age: tuple[int, ...]
    overdue: int
    escalated: int
    answered: int
    expired: int
    p50_s: float | None
    p90_s: float | None

    @property
    def open(self) -> int:
        """Open requests, of any age."""
        return sum(self.open_by_age)


@dataclass(frozen=True)
class RuleFigures:
    """How the requests of one policy rule were decided in the period."""

    rule: str
    decisions: dict[str, int] = field(default_factory=dict)
    expired: int = 0

    @property
    def total(self) -> int:
        """Requests of the rule that were decided or expired in the period."""
        return sum(self.decisions.values()) + self.expired


@dataclass(frozen=True)
class Dashboard:
    """The figures of some teams over the last `days` days, as of `now`."""

    now: datetime
    days: int
    teams: tuple[TeamFigures, ...]
    rules: tuple[RuleFigures, ...]
    unruled: int = 0
    """Requests answered in the period that no policy rule raised (a workflow's own asks):
    the teams' answers count them, the rules' decisions do not."""


def percentile(values: Sequence[float], share: float) -> float | None:
    """The nearest-rank percentile (`share` in 0 to 1) of `values`; None when there are none."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def dashboard(
    facts: Iterable[RequestFact], *, teams: Sequence[str], now: datetime, days: int
) -> Dashboard:
    """The figures of `teams` (each shown, even with nothing to count) from `facts`."""
    since = now - timedelta(days=days)
    by_team: dict[str, list[RequestFact]] = defaultdict(list)
    rules: dict[str, Counter[str]] = defaultdict(Counter)
    unruled = 0
    for fact in facts:
        by_team[fact.team].append(fact)
        settled = _settled_at(fact)
        if settled is None or settled < since:
            continue
        if fact.policy_rule:
            rules[fact.policy_rule][fact.decision or fact.status] += 1
        elif fact.status in ANSWERED:
            unruled += 1
    return Dashboard(
        now=now,
        days=days,
        teams=tuple(_team(team, by_team.get(team, []), now, since) for team in sorted(teams)),
        rules=tuple(
            RuleFigures(
                rule=rule,
                decisions={k: n for k, n in sorted(counts.items()) if k != "expired"},
                expired=counts.get("expired", 0),
            )
            for rule, counts in sorted(rules.items())
        ),
        unruled=unruled,
    )


def _team(team: str, facts: list[RequestFact], now: datetime, since: datetime) -> TeamFigures:
    waiting = [f for f in facts if f.status in OPEN_STATUSES]
    ages = [0] * len(AGES)
    for fact in waiting:
        age = now - fact.created_at
        ages[next(i for i, (_, bound) in enumerate(AGES) if bound is None or age < bound)] += 1
    took = [
        (f.answered_at - f.created_at).total_seconds()
        for f in facts
        if f.status in ANSWERED and f.answered_at is not None and f.answered_at >= since
    ]
    expired = [f for f in facts if f.status == "expired" and (_settled_at(f) or since) >= since]
    return TeamFigures(
        team=team,
        open_by_age=tuple(ages),
        overdue=sum(1 for f in waiting if f.expires_at is not None and f.expires_at < now),
        escalated=sum(1 for f in waiting if f.escalation_level > 0 or f.status == "escalated"),
        answered=len(took),
        expired=len(expired),
        p50_s=percentile(took, 0.5),
        p90_s=percentile(took, 0.9),
    )


def _settled_at(fact: RequestFact) -> datetime | None:
    """When an answer or an expiry closed the request; None while open or when cancelled."""
    if fact.status == "expired":
        return fact.answered_at or fact.expires_at
    return fact.answered_at if fact.status in ANSWERED else None
