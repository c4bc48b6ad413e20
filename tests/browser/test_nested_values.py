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


async def test_a_request_s_long_conversation_opens_at_its_end(
    server: Server, page_as: PageAs
) -> None:
    """What is asked about is the conversation's end (the reply under review): the box opens
    there, the earlier turns a scroll up, in their order."""
    run = await server.start_run(
        {"workflow": "group_chat_steering", "input": {"topic": "Discuss AI tools."}}
    )
    asked = await server.wait_for_request(run["id"])
    page = await page_as("lee", width=LAPTOP[0], height=LAPTOP[1])
    await page.goto(f"/requests/{asked['id']}")

    box = page.get_by_role("region", name="Conversation")
    sizes = await box.evaluate("b => [b.scrollHeight, b.clientHeight]")
    assert sizes[0] > sizes[1], sizes  # long enough to scroll
    seen = await box.bounding_box()
    speakers = box.locator(".speaker")
    first, last = await speakers.first.bounding_box(), await speakers.last.bounding_box()
    assert seen is not None
    assert first is not None
    assert last is not None
    assert seen["y"] <= last["y"] <= seen["y"] + seen["height"], (seen, last)  # its end shown
    assert first["y"] < seen["y"], (seen, first)  # its start a scroll up
    said = await speakers.all_inner_texts()
    assert said[0].lower() == "user", said  # the first turn first: in their order


async def test_a_nested_value_with_room_keeps_its_labels_beside_its_values(
    server: Server, page_as: PageAs
) -> None:
    """Where a value has room (a run's input of records, on a laptop), its inner labels stay
    beside their values: stacking is for a narrow column only."""
    run = await server.start_run({"workflow": "parallel_requests", "input": {}})
    await server.wait_for_request(run["id"])
    page = await page_as("lee", width=LAPTOP[0], height=LAPTOP[1])
    await page.goto(f"/runs/{run['id']}")

    rows = page.locator("dl.kv dd dl.kv > div")
    assert await rows.count() > 0
    label, value = rows.first.locator("dt"), rows.first.locator("dd")
    at, of = await label.bounding_box(), await value.bounding_box()
    assert at is not None
    assert of is not None
    assert abs(at["y"] - of["y"]) < 4, (at, of)  # side by side
    assert of["x"] > at["x"] + at["width"] - 1
