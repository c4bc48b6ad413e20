"""The web inbox in a real Chromium against `baton serve`: each flow with JavaScript on and off.

Four-eyes: sam (support-agents) starts refunds, lee (support-leads) answers them.
"""

from __future__ import annotations

import re
from typing import Any

from playwright.async_api import Locator, Page, expect

from tests.browser.conftest import PageAs, laid_out, overflow, wide_boxes
from tests.harness import REFUND_120, Server, eventually, refunds

STATUS = "[role=status]"


async def shows(page: Page, locator: Locator, text: str, *, javascript: bool) -> None:
    """`locator` comes to hold `text`: live with JavaScript, by plain refreshes without."""
    if javascript:
        await expect(locator).to_have_text(text)
        return

    async def refreshed() -> bool:
        await page.reload()
        return (await locator.text_content() or "").strip() == text

    await eventually(refreshed, what=f"{text!r} after a refresh")


async def start_refund_in_the_browser(page: Page, amount: str) -> str:
    """Start a refund of `amount` on A-1005 from the start form; the new run's id."""
    await page.get_by_role("link", name="Start a run").click()
    await page.get_by_label("Workflow", exact=True).select_option("refund")
    await page.get_by_role("button", name="Next").click()
    await page.get_by_label("Order Id").fill("A-1005")
    await page.get_by_label("Amount", exact=True).fill(amount)
    await page.get_by_label("Reason", exact=True).fill("damaged in transit")
    await page.get_by_role("button", name="Start").click()
    await expect(page.locator(STATUS)).to_have_text("Started a refund run.")
    found = re.search(r"/runs/(run_[\w-]+)$", page.url)
    assert found, page.url
    return found.group(1)


async def open_request(page: Page, request_id: str) -> None:
    await page.goto(f"/requests/{request_id}")
    await expect(page.get_by_role("heading", name="Your answer")).to_be_visible()


async def pending_request(server: Server) -> tuple[dict[str, Any], dict[str, Any]]:
    run = await server.start_run(REFUND_120)
    return run, await server.wait_for_request(run["id"])


# the flows --------------------------------------------------------------------------------


async def test_sam_starts_a_refund_lee_approves_it_and_the_run_page_shows_it_completed(
    server: Server, page_as: PageAs, javascript: bool, db_url: str
) -> None:
    sam = await page_as("sam", javascript=javascript)
    run_id = await start_refund_in_the_browser(sam, "120")
    pending = await server.wait_for_request(run_id)

    lee = await page_as("lee", javascript=javascript)
    row = lee.locator(f"tr[data-request-id='{pending['id']}']")
    await expect(row).to_contain_text("Refund 120.00 on order A-1005")
    await row.get_by_role("link").click()
    await expect(lee.get_by_role("heading", name="Proposed action")).to_be_visible()
    await expect(lee.locator(".conversation")).to_contain_text("lookup_order")
    await lee.get_by_role("button", name="Approve").click()

    # nothing else waits for lee: the inbox, naming what was just done
    await expect(lee.locator(STATUS)).to_have_text(
        "Approved: “Refund 120.00 on order A-1005”. Nothing else waits for you."
    )
    await lee.goto(f"/requests/{pending['id']}")
    await expect(lee.locator(".outcome")).to_contain_text("Approved by lee")
    await lee.get_by_role("link", name=re.compile(r"^refund · ")).click()
    await shows(lee, lee.locator("#run-status"), "completed", javascript=javascript)
    await expect(lee.locator("#run-output")).to_contain_text("Refunded 120.00")
    await expect(lee.locator(".timeline")).to_contain_text("effect.executed")
    assert [r["amount"] for r in await refunds(db_url)] == [120.0]


async def test_a_new_request_arrives_live_and_an_answered_one_leaves_without_a_reload(
    server: Server, page_as: PageAs
) -> None:
    lee = await page_as("lee")
    await expect(lee.locator("#inbox-list")).to_contain_text("Nothing here")
    await lee.evaluate("window.notReloaded = true")
    pending_count = lee.locator(".count[data-view='mine']")

    run, pending = await pending_request(server)
    row = lee.locator(f"tr[data-request-id='{pending['id']}']")
    await expect(row).to_be_visible()
    await expect(pending_count).to_have_text("1")

    reply = await server.respond(pending["id"], {"decision": "approve"}, user="lee")
    assert reply.status_code == 200, reply.text
    await expect(row).to_have_count(0)
    await expect(pending_count).to_have_text("0")
    assert await lee.evaluate("window.notReloaded") is True  # the same page, updated in place
    await server.wait_for_run(run["id"], status="completed")


async def test_without_javascript_a_refresh_shows_what_the_live_update_would(
    server: Server, page_as: PageAs
) -> None:
    lee = await page_as("lee", javascript=False)
    await expect(lee.locator("#inbox-list")).to_contain_text("Nothing here")
    run, pending = await pending_request(server)
    row = lee.locator(f"tr[data-request-id='{pending['id']}']")

    await lee.reload()
    await expect(row).to_be_visible()
    answered = await server.respond(pending["id"], {"decision": "approve"}, user="lee")
    assert answered.status_code == 200, answered.text
    await lee.reload()
    await expect(row).to_have_count(0)
    await server.wait_for_run(run["id"], status="completed")


async def test_an_open_run_page_follows_the_run_to_its_end_without_a_reload(
    server: Server, page_as: PageAs
) -> None:
    run, pending = await pending_request(server)
    sam = await page_as("sam")
    await sam.goto(f"/runs/{run['id']}")
    await expect(sam.locator("#run-status")).to_have_text("waiting")
    await sam.evaluate("window.notReloaded = true")

    reply = await server.respond(pending["id"], {"decision": "approve"}, user="lee")
    assert reply.status_code == 200, reply.text
    await expect(sam.locator("#run-status")).to_have_text("completed")
    await expect(sam.locator("#run-output")).to_contain_text("Refunded 120.00")
    await expect(sam.locator("g.node[data-node='refund_agent']")).to_have_attribute(
        "data-state", "idle"
    )
    assert await sam.evaluate("window.notReloaded") is True


async def test_an_invalid_edit_shows_its_error_and_stores_nothing_then_a_valid_one_refunds_30(
    server: Server, page_as: PageAs, javascript: bool, db_url: str
) -> None:
    run, pending = await pending_request(server)
    lee = await page_as("lee", javascript=javascript)
    await open_request(lee, pending["id"])
    before = await server.snapshot(pending["id"])

    await lee.locator("summary", has_text="Edit").click()
    amount = lee.locator("#a-edit-arguments-amount")
    await expect(amount).to_have_value("120.00")
    await amount.fill("0")
    await lee.get_by_role("button", name="Send edit").click()
    # the browser refuses 0 as the server does (more than 0: min 0.01, money's step) ...
    await expect(lee.locator("#a-edit-arguments-amount:invalid")).to_have_count(1)
    assert await server.snapshot(pending["id"]) == before
    # ... and a browser that does not meets the server's check
    await lee.locator("#form-edit").evaluate("f => f.setAttribute('novalidate', '')")
    await lee.get_by_role("button", name="Send edit").click()

    error = lee.locator("#a-edit-arguments-amount-error")
    await expect(error).to_contain_text("less than or equal to the minimum of 0")
    await expect(amount).to_have_value("0")  # what was typed stays
    await expect(amount).to_have_attribute("aria-invalid", "true")
    assert await server.snapshot(pending["id"]) == before

    await laid_out(lee)  # the refused edit's new page, htmx taken up (see the held-click test)
    await amount.fill("30")
    if javascript:  # the diff shows as it is typed ...
        await expect(lee.locator("#edit-preview table.diff")).to_contain_text("30")
        await expect(lee.locator("#edit-preview del")).to_have_text("120.00 EUR")
    # ... and either way Send edit shows the check in place, inside the edit form, to confirm
    await lee.get_by_role("button", name="Send edit").click()
    check = lee.locator("#form-edit").get_by_role("region", name="Check your edit, then confirm it")
    await expect(check.locator("del")).to_have_text("120.00 EUR")
    await expect(check.locator("ins")).to_have_text("30.00 EUR")
    await expect(check).to_contain_text("Rule refund.small applies to the changed call")
    await expect(check).to_be_in_viewport()
    assert await server.snapshot(pending["id"]) == before  # nothing sent before confirming
    await lee.get_by_role("button", name="Confirm edit").click()

    await expect(lee.locator(STATUS)).to_contain_text("Approved with your edit: “Refund 120.00")
    done = await server.wait_for_run(run["id"], status="completed")
    assert "Refunded 30.00" in done["output"]["text"]
    assert [r["amount"] for r in await refunds(db_url)] == [30.0]


async def test_a_click_held_while_the_check_refreshes_still_sends_the_edit_and_a_change_asks_again(
    server: Server, page_as: PageAs
) -> None:
    """With JavaScript only: without it the check is drawn only when Send edit is clicked."""
    _run, pending = await pending_request(server)
    lee = await page_as("lee", javascript=True)
    await open_request(lee, pending["id"])
    await lee.locator("summary", has_text="Edit").click()
    refreshes: list[str] = []
    lee.on("request", lambda r: refreshes.append(r.url) if r.url.endswith("/preview") else None)

    await lee.locator("#a-edit-arguments-amount").fill("30")
    # pressed at once and held for longer than the refresh's 300 ms delay: the refresh lands
    # while the button is down, moves nothing under the pointer, and the click still counts
    send = lee.get_by_role("button", name="Send edit")
    await send.scroll_into_view_if_needed()
    box = await send.bounding_box()
    assert box is not None
    await lee.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    await lee.mouse.down()
    await expect(lee.locator("#edit-preview del")).to_have_text("120.00 EUR")
    await lee.mouse.up()
    check = lee.locator("#form-edit").get_by_role("region", name="Check your edit, then confirm it")
    await expect(check.locator("ins")).to_have_text("30.00 EUR")
    assert len(refreshes) == 1  # the refresh did land while the button was held

    # a change at the Confirm step asks to check again: the stale confirmation goes. Send edit
    # loaded a new page; its check shows before htmx (a deferred script, revalidated at every
    # load) has taken up the form, and a change made in between would go unheard. A person
    # cannot type that fast; the test can, on a busy machine: it waits for the page's load.
    await laid_out(lee)
    await lee.locator("#a-edit-arguments-amount").fill("40")
    await expect(lee.locator("#edit-preview ins")).to_have_text("40.00 EUR")
    await expect(lee.get_by_role("button", name="Confirm edit")).to_have_count(0)
    await expect(lee.locator("#form-edit input[name=confirm]")).to_have_count(0)
    await lee.get_by_role("button", name="Send edit").click()
    await expect(check.locator("ins")).to_have_text("40.00 EUR")
    await expect(lee.get_by_role("button", name="Confirm edit")).to_be_visible()


async def test_a_rejection_with_a_reason_reaches_the_agent(
    server: Server, page_as: PageAs, javascript: bool, db_url: str
) -> None:
    _run, pending = await pending_request(server)
    lee = await page_as("lee", javascript=javascript)
    await open_request(lee, pending["id"])

    await lee.locator("summary", has_text="Reject").click()
    reason = lee.locator("#a-reject-reason")
    await expect(reason).to_have_attribute("required", "")
    await reason.fill("a replacement parcel is already on its way")
    await lee.locator("#form-reject").get_by_role("button", name="Reject").click()

    await expect(lee.locator(STATUS)).to_contain_text("Rejected: “Refund 120.00")
    await lee.goto(f"/requests/{pending['id']}")
    await lee.get_by_role("link", name=re.compile(r"^refund · ")).click()
    await shows(lee, lee.locator("#run-status"), "completed", javascript=javascript)
    await expect(lee.locator("#run-output")).to_contain_text("a replacement parcel")
    assert await refunds(db_url) == []


async def test_a_run_is_cancelled_from_its_page_and_its_request_closes(
    server: Server, page_as: PageAs, javascript: bool
) -> None:
    run, pending = await pending_request(server)
    sam = await page_as("sam", javascript=javascript)
    await sam.goto(f"/runs/{run['id']}")
    await expect(sam.locator("g.node[data-node='refund_agent']")).to_have_attribute(
        "data-state", "current-pending"
    )
    await sam.get_by_role("button", name="Cancel this run…").click()
    # it asks first, in place, and why; nothing is cancelled yet
    check = sam.get_by_role("region", name="Cancel this run?")
    await expect(check).to_contain_text("This cannot be undone.")
    assert (await server.request(pending["id"]))["status"] == "pending"
    why = check.get_by_label("Why?")
    await expect(why).to_have_attribute("required", "")
    await why.fill("The customer withdrew the request")
    await check.get_by_role("button", name="Yes, cancel the run").click()

    await expect(sam.locator(STATUS)).to_have_text("Run cancelled; its open requests are closed.")
    await expect(sam.locator("#run-cancelled")).to_contain_text("by sam at", use_inner_text=True)
    await expect(sam.locator("#run-cancelled")).to_contain_text(
        ": The customer withdrew the request"
    )
    await expect(sam.locator("#run-status")).to_have_text("cancelled")
    await expect(sam.locator("g.node[data-node='refund_agent']")).to_have_attribute(
        "data-state", "idle"
    )
    assert (await server.request(pending["id"]))["status"] == "cancelled"
    await sam.goto(f"/requests/{pending['id']}")
    await expect(
        sam.get_by_text(
            re.compile(
                r"Cancelled by sam at .*: The customer withdrew the request\. "
                r"The run has ended: cancelled\."
            )
        )
    ).to_be_visible()


async def test_lee_signs_in_and_approves_with_the_keyboard_alone(
    server: Server, page_as: PageAs
) -> None:
    run, pending = await pending_request(server)
    lee = await page_as("lee")
    await open_request(lee, pending["id"])

    approve = lee.get_by_role("button", name="Approve")
    for _ in range(60):
        if await approve.evaluate("b => b === document.activeElement"):
            break
        await lee.keyboard.press("Tab")
    else:
        raise AssertionError("Tab never reached the Approve button")
    outline = await approve.evaluate("b => getComputedStyle(b).outlineStyle")
    assert outline not in ("", "none"), "focus is not visible"
    await lee.keyboard.press("Enter")

    await expect(lee.locator(STATUS)).to_contain_text("Approved: “Refund 120.00")
    await server.wait_for_run(run["id"], status="completed")


async def test_every_control_has_a_label_and_pages_fit_a_phone(
    server: Server, page_as: PageAs
) -> None:
    run, pending = await pending_request(server)
    lee = await page_as("lee", width=375)
    unlabelled = """() => [...document.querySelectorAll('input, select, textarea')]
        .filter(e => e.type !== 'hidden' && e.labels.length === 0)
        .map(e => e.outerHTML)"""
    for path in (
        "/",
        f"/requests/{pending['id']}",
        "/runs",
        f"/runs/{run['id']}",
        "/runs/new?workflow=refund",
    ):
        await lee.goto(path)
        assert await lee.evaluate(unlabelled) == [], path
        assert await overflow(lee) <= 0, f"{path} is wider than a phone"
        assert await wide_boxes(lee) == [], f"{path} has a box wider than a phone"
    await lee.context.clear_cookies()
    await lee.goto("/signin")
    assert await lee.evaluate(unlabelled) == []
