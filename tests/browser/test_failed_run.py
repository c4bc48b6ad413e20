"""A failed run's page says first, in plain words, that it stopped and what it carried out."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import expect

from tests.browser.conftest import LAPTOP, PHONE, PageAs, overflow, wide_boxes
from tests.fixtures.failing_workflow import ERROR
from tests.harness import Server, baton_server
from tests.pages import PAGE_ENV


@pytest.fixture
async def server(
    db_url: str, tokens: dict[str, str], passwords: dict[str, str], server_log: Path
) -> AsyncIterator[Server]:
    env = PAGE_ENV | {"BATON_WORKFLOWS": "tests.fixtures.failing_workflow"}
    async with baton_server(db_url, tokens, server_log, env) as running:
        yield running


@pytest.mark.parametrize("size", [LAPTOP, PHONE], ids=["laptop", "phone"])
async def test_a_failed_run_says_it_stopped_and_that_nothing_was_carried_out_and_fits(
    server: Server, page_as: PageAs, size: tuple[int, int]
) -> None:
    run = await server.start_run(
        {"workflow": "failing_step", "input": {"order_id": "A-1011", "amount": 75}}
    )
    failed = await server.wait_for_run(run["id"], status="failed")
    assert ERROR in failed["error"]
    width, height = size
    sam = await page_as("sam", width=width, height=height)
    await sam.goto(f"/runs/{run['id']}")

    notice = sam.locator("#run-failed")
    await expect(notice).to_contain_text("This run stopped with an error at ")
    await expect(notice).to_contain_text("No tool call was carried out.")
    await expect(notice.get_by_role("link", name="start a new failing_step run")).to_be_visible()
    # the error as recorded, folded away: the sentence comes first
    technical = notice.locator("details.technical")
    await expect(technical.locator("pre")).to_be_hidden()
    await technical.locator("summary", has_text="Technical details").click()
    await expect(technical.locator("pre")).to_contain_text("OpenAIChatCompletionClient")
    # no line of it, here or in the audit trail, makes the page wider than the window
    assert await overflow(sam) <= 0, "the failed run's page is wider than the window"
    assert await wide_boxes(sam) == [], "a box reaches past the window"
    await expect(sam.get_by_text("Run failed — the run stopped with an error")).to_be_visible()
