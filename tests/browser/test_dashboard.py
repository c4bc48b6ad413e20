"""The team dashboard over a history made through the API on a moved clock, in Chromium."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import expect

from tests.browser.conftest import PageAs, overflow, wide_boxes
from tests.harness import MovableClock, Server, baton_server
from tests.pages import PAGE_ENV


def refund(order: str) -> dict[str, object]:
    return {"workflow": "refund", "input": {"order_id": order, "amount": 120, "reason": "broken"}}


@pytest.fixture
async def server(
    db_url: str,
    tokens: dict[str, str],
    passwords: dict[str, str],
    server_log: Path,
    tmp_path: Path,
) -> AsyncIterator[Server]:
    """A server whose history is known: two refunds answered in 10 and 30 min, one 2 h open."""
    clock = MovableClock(tmp_path / "clock")
    async with baton_server(db_url, tokens, server_log, PAGE_ENV | clock.env) as running:
        runs = [await running.start_run(refund(order)) for order in ("A-1001", "A-1002")]
        first, second = [await running.wait_for_request(run["id"]) for run in runs]
        clock.jump(minutes=10)
        assert (await running.respond(first["id"], {"decision": "approve"}, user="lee")).is_success
        clock.jump(minutes=20)
        rejected = await running.respond(
            second["id"], {"decision": "reject", "reason": "not ours"}, user="lee"
        )
        assert rejected.is_success
        waiting = await running.start_run(refund("A-1003"))
        await running.wait_for_request(waiting["id"])
        clock.jump(hours=2)
        yield running


@pytest.mark.parametrize("width", [1366, 390])
async def test_a_lead_sees_their_teams_open_work_answer_times_and_decisions(
    page_as: PageAs, width: int
) -> None:
    lee = await page_as("lee", width=width)
    await lee.get_by_role("link", name="Dashboard").click()

    await expect(lee.get_by_role("heading", name="Team dashboard")).to_be_visible()
    await expect(lee.get_by_text("The team support-leads")).to_be_visible()
    open_row = lee.get_by_role("row").filter(has_text="support-leads").first
    await expect(open_row.get_by_role("cell")).to_have_text(["0", "1", "0", "0", "0", "0"])
    times = lee.get_by_role("table").filter(has_text="From asked to answered")
    await expect(times.get_by_role("row").nth(1).get_by_role("cell")).to_have_text(
        ["2", "10 min", "30 min", "0"]
    )
    rules = lee.get_by_role("table").filter(has_text="How the requests each rule raised")
    await expect(rules.get_by_role("row").nth(1)).to_contain_text("refund.medium")
    await expect(rules.get_by_role("row").nth(1).get_by_role("cell")).to_have_text(
        ["1 (50 %)", "1 (50 %)", "0", "2"]
    )
    for chart in ("Open requests by team and age", "Time to answer per team, last 7 days"):
        await expect(lee.get_by_role("img", name=chart, exact=False)).to_be_visible()
    assert await overflow(lee) <= 0, "the dashboard is wider than the window"
    assert await wide_boxes(lee) == [], "a box reaches past the window, clipped or not"


async def test_an_admin_sees_every_team_and_a_viewer_only_their_own(page_as: PageAs) -> None:
    ada = await page_as("ada")
    await ada.goto("/dashboard?days=30")
    await expect(ada.get_by_text("last 30 days").first).to_be_visible()
    teams = ada.get_by_role("table").first.get_by_role("rowheader")
    await expect(teams).to_have_text(
        ["finance", "legal", "managers", "support-agents", "support-leads"]
    )
    val = await page_as("val")  # a viewer of support-leads and finance
    await val.goto("/dashboard")
    await expect(val.get_by_role("table").first.get_by_role("rowheader")).to_have_text(
        ["finance", "support-leads"]
    )
