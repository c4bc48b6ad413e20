"""The dashboard counts requests as recorded: ages, overdue, escalated, answer times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from human.stats import dashboard, percentile
from human.store.base import RequestFact

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


def fact(
    team: str = "finance",
    *,
    status: str = "pending",
    asked: timedelta = timedelta(minutes=10),
    took: timedelta | None = None,
    due_in: timedelta | None = None,
    rule: str | None = "refund.large",
    decision: str | None = None,
    escalation_level: int = 0,
) -> RequestFact:
    created = NOW - asked
    return RequestFact(
        team=team,
        status=status,
        policy_rule=rule,
        created_at=created,
        answered_at=created + took if took is not None else None,
        expires_at=NOW + due_in if due_in is not None else None,
        escalation_level=escalation_level,
        decision=decision,
    )


def test_percentiles_are_nearest_rank_and_none_of_nothing() -> None:
    assert percentile([], 0.5) is None
    assert percentile([30.0], 0.9) == 30.0
    assert percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.5) == 5
    assert percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.9) == 9
    assert percentile([10, 1, 5], 0.5) == 5  # order does not matter


def test_open_requests_are_counted_by_age_and_overdue_and_escalated_ones_apart() -> None:
    facts = [
        fact(asked=timedelta(minutes=5)),
        fact(asked=timedelta(hours=2), status="claimed"),
        fact(asked=timedelta(hours=5), due_in=-timedelta(minutes=1)),  # overdue
        fact(asked=timedelta(days=3), status="escalated", escalation_level=1),
        fact(asked=timedelta(days=3), status="resumed", took=timedelta(hours=1)),  # not open
    ]
    [finance, legal] = dashboard(facts, teams=["legal", "finance"], now=NOW, days=7).teams

    assert finance.team == "finance"
    assert finance.open_by_age == (1, 1, 1, 1)
    assert (finance.open, finance.overdue, finance.escalated) == (4, 1, 1)
    assert (legal.team, legal.open, legal.answered, legal.p50_s) == ("legal", 0, 0, None)


def test_answer_times_count_the_requests_answered_in_the_period_only() -> None:
    facts = [
        fact(status="resumed", asked=timedelta(hours=3), took=timedelta(minutes=m))
        for m in (10, 20, 30, 40, 50, 60, 70, 80, 90, 100)
    ] + [fact(status="resumed", asked=timedelta(days=9), took=timedelta(hours=2))]  # before

    [team] = dashboard(facts, teams=["finance"], now=NOW, days=7).teams

    assert team.answered == 10
    assert (team.p50_s, team.p90_s) == (50 * 60, 90 * 60)
    assert dashboard(facts, teams=["finance"], now=NOW, days=30).teams[0].answered == 11


def test_decisions_are_counted_per_rule_with_expiries_apart() -> None:
    facts = [
        fact(status="resumed", took=timedelta(minutes=1), decision="approve"),
        fact(status="resumed", took=timedelta(minutes=1), decision="approve"),
        fact(status="resumed", took=timedelta(minutes=1), decision="reject"),
        fact(status="expired", due_in=-timedelta(minutes=1)),
        fact(status="resumed", took=timedelta(minutes=1), decision="edit", rule="refund.medium"),
        fact(status="resumed", took=timedelta(minutes=1), decision="approve", rule=None),
        fact(status="pending"),  # not decided yet
    ]
    figures = dashboard(facts, teams=["finance"], now=NOW, days=7)
    large, medium = figures.rules
    # the one answered request no rule raised is counted apart: 5 answers, 4 rules' decisions
    assert (figures.teams[0].answered, figures.unruled) == (5, 1)

    assert (large.rule, large.decisions, large.expired, large.total) == (
        "refund.large",
        {"approve": 2, "reject": 1},
        1,
        4,
    )
    assert (medium.rule, medium.decisions, medium.total) == ("refund.medium", {"edit": 1}, 1)


def test_expired_and_cancelled_requests_are_not_answered_and_not_timed() -> None:
    facts = [
        fact(status="resumed", asked=timedelta(hours=2), took=timedelta(seconds=18)),
        fact(status="answered", asked=timedelta(hours=2), took=timedelta(minutes=5)),
        # An expiry fills `answered_at` (with "system"): nobody answered it.
        fact(status="expired", asked=timedelta(hours=2), took=timedelta(minutes=76)),
        fact(status="cancelled", asked=timedelta(hours=2), took=timedelta(minutes=90)),
    ]

    [team] = dashboard(facts, teams=["finance"], now=NOW, days=7).teams

    assert (team.answered, team.expired) == (2, 1)
    assert (team.p50_s, team.p90_s) == (18, 5 * 60)


def test_an_expiry_counts_when_it_expired_in_the_period() -> None:
    # An expiry whose `answered_at` is missing (as a cancelled run's may be) counts by its deadline.
    facts = [
        fact(status="expired", asked=timedelta(days=3), due_in=-timedelta(days=2)),
        fact(status="expired", asked=timedelta(days=12), due_in=-timedelta(days=10)),  # before
    ]

    [team] = dashboard(facts, teams=["finance"], now=NOW, days=7).teams

    assert (team.answered, team.expired, team.p50_s) == (0, 1, None)
