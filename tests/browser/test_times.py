"""A browser's own time zone is the one its pages speak, from the first page after signing in.

The pages' script hands the server the browser's zone (`baton_tz`); a browser in New York reads a
request's times in New York's, a browser without JavaScript in UTC, each `<time>` keeping the
same instant.
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from playwright.async_api import expect

from tests.browser.conftest import PageAs
from tests.harness import REFUND_120, Server


def said(moment: str, zone: str) -> str:
    at = datetime.fromisoformat(moment).astimezone(ZoneInfo(zone))
    return f"{at:%Y-%m-%d %H:%M} {at:%Z}"


async def test_a_browser_reads_times_on_its_own_clock_and_one_without_script_in_utc(
    server: Server, page_as: PageAs
) -> None:
    run = await server.start_run(REFUND_120)
    request = await server.wait_for_request(run["id"])
    deadline = "dt:text-is('Deadline') + dd time"

    lee = await page_as("lee", zone="America/New_York")
    await lee.goto(f"/requests/{request['id']}")
    await expect(lee.locator(deadline)).to_have_text(
        said(request["expires_at"], "America/New_York")
    )
    created = lee.locator("ol.timeline time").first
    await expect(created).to_have_text(said(request["created_at"], "America/New_York"))

    ada = await page_as("ada", javascript=False, zone="Asia/Tokyo")
    await ada.goto(f"/requests/{request['id']}")
    await expect(ada.locator(deadline)).to_have_text(said(request["expires_at"], "UTC"))
