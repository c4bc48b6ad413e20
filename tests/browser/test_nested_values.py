"""A value that is itself a list of records (a review's messages, each a role and a text) reads
as words in a real Chromium, at a laptop's and a phone's size: its inner labels stack over their
values, where beside them, in the value's narrow column, each value was a letter wide."""

from __future__ import annotations

import pytest

from tests.browser.conftest import LAPTOP, PHONE, PageAs
from tests.harness import Server


@pytest.fixture
def server(samples_server: Server) -> Server:
    return samples_server


@pytest.mark.parametrize("size", [LAPTOP, PHONE], ids=["laptop", "phone"])
async def test_a_list_of_records_in_a_request_s_context_reads_as_words(
    server: Server, page_as: PageAs, size: tuple[int, int]
) -> None:
    # MAF's workflow_as_agent_human_in_the_loop.py: the agent request's user and agent messages
    run = await server.start_run({"workflow": "workflow_as_agent_hitl", "input": {}})
    asked = await server.wait_for_request(run["id"])
    page = await page_as("lee", width=size[0], height=size[1])
    await page.goto(f"/requests/{asked['id']}")

    inner = page.locator("dl.kv dd dl.kv dd")
    assert await inner.count() >= 2  # a message's role and its text, at least
    widths = [
        box["width"] for box in [await each.bounding_box() for each in await inner.all()] if box
    ]
    assert min(widths) >= 120, widths  # words, not a letter a line
    text = page.locator("dl.kv dd dl.kv dd", has_text="parallel reading")
    box = await text.first.bounding_box()
    assert box is not None
    assert box["height"] < 200, box  # a sentence of a few lines, not a column of letters
