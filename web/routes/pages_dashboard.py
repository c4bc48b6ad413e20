"""The team dashboard: open work by age, answer times and decisions per rule, as charts and tables.

Everyone signed in sees the figures of their own teams (an admin, of every team); the charts
are SVG drawn here (`web/charts.py`) from `human.stats`, with the same figures in tables.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from human.records import User
from human.stats import AGES, Dashboard, dashboard
from human.store.base import Store
from web.charts import Bar, Segment, bars
from web.deps import PageUserDep, PartsDep
from web.templating import duration, render

router = APIRouter(include_in_schema=False)

_AGE_STYLES = ("age0", "age1", "age2", "age3")
_DECISION_STYLES = {"approve": "ok", "edit": "edit", "reject": "no", "expired": "late"}


@router.get("/dashboard", name="dashboard_page")
async def dashboard_page(
    request: Request,
    parts: PartsDep,
    user: PageUserDep,
    days: Annotated[int, Query(ge=1, le=366, description="The period, in days.")] = 7,
) -> HTMLResponse:
    """Open requests by team and age, answer times (p50, p90), and decisions per policy rule."""
    teams = await _teams_of(parts.store, user)
    now = parts.requests.now()
    facts = await parts.store.request_facts(since=now - timedelta(days=days), teams=teams)
    figures = dashboard(facts, teams=teams, now=now, days=days)
    return render(request, "dashboard.html", _page(figures), user=user)


async def _teams_of(store: Store, user: User) -> list[str]:
    if user.role == "admin":
        return [team.name for team in await store.list_teams()]
    return list(user.teams)


def _page(figures: Dashboard) -> dict[str, Any]:
    open_chart = bars(
        [
            Bar(
                label=t.team,
                segments=[
                    Segment(n, name, style)
                    for n, (name, _), style in zip(t.open_by_age, AGES, _AGE_STYLES, strict=True)
                ],
                text=f"{t.open} open",
            )
            for t in figures.teams
        ],
        title="Open requests by team and age",
    )
    timed = [t for t in figures.teams if t.p90_s is not None]
    slowest = max((t.p90_s or 0 for t in timed), default=0)
    answer_chart = bars(
        [
            Bar(
                label=t.team,
                segments=[
                    Segment(t.p50_s or 0, "half answered within (p50, s)", "p50"),
                    Segment((t.p90_s or 0) - (t.p50_s or 0), "nine in ten within (p90, s)", "p90"),
                ],
                text=f"{duration(t.p50_s or 0)} / {duration(t.p90_s or 0)}",
            )
            for t in timed
        ],
        title=f"Time to answer per team, last {figures.days} days (p50 / p90)",
        scale=slowest or None,
    )
    decision_chart = bars(
        [
            Bar(
                label=r.rule,
                segments=[
                    *(
                        Segment(n, d, _DECISION_STYLES.get(d, "other"))
                        for d, n in r.decisions.items()
                    ),
                    Segment(r.expired, "expired", "late"),
                ],
                text=f"{r.total}",
            )
            for r in figures.rules
        ],
        title=f"Decisions per policy rule, last {figures.days} days",
    )
    return {
        "section": "dashboard",
        "figures": figures,
        "ages": [name for name, _ in AGES],
        "open_chart": open_chart,
        "answer_chart": answer_chart if timed else None,
        "decision_chart": decision_chart if figures.rules else None,
        "decisions": sorted({d for r in figures.rules for d in r.decisions}),
        "decision_styles": _DECISION_STYLES,
    }
