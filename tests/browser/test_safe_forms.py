"""Safe edits and forms for people, in Chromium with JavaScript on and off.

An edit of an argument the policy keeps is refused beside it and changes nothing; an edit into
two finance approvers says so before it is confirmed; a question's options are radios; taking a
request over is confirmed first and links the takeover request it became.
"""

from __future__ import annotations

import re

from playwright.async_api import expect

from tests.browser.conftest import PageAs
from tests.browser.test_inbox import STATUS, open_request, pending_request
from tests.harness import Server, refunds
from tests.supportkit import REFUND_NO_ORDER
from tests.supportkit import pending_request as support_request

MOVED = "order_id may not be changed: rule refund.medium lets an approver change only amount"


async def test_moving_a_refund_to_another_order_is_refused_beside_the_order_and_changes_nothing(
    server: Server, page_as: PageAs, javascript: bool, db_url: str
) -> None:
    run, pending = await pending_request(server)  # A-1002, customer-02's
    lee = await page_as("lee", javascript=javascript)
    await open_request(lee, pending["id"])
    before = await server.snapshot(pending["id"])

    await lee.locator("summary", has_text="Edit").click()
    order = lee.locator("#a-edit-arguments-order_id")
    await expect(order).not_to_be_editable()  # the form says so before anyone tries
    await expect(lee.locator("#a-edit-arguments-order_id-help")).to_have_text(
        "Fixed: rule refund.medium lets an approver change only amount."
    )
    await order.evaluate("e => e.removeAttribute('readonly')")  # a tampered page: the server says
    await order.fill("A-1005")
    if javascript:  # told while typing, before anything is sent
        await expect(lee.locator("#edit-preview [role=alert]")).to_contain_text(MOVED)
    await lee.get_by_role("button", name="Send edit").click()

    await expect(lee.locator("#a-edit-arguments-order_id-error")).to_have_text(MOVED)
    await expect(
        lee.get_by_role("alert").filter(has_text="Your answer was not sent")
    ).to_contain_text("Order ID")
    await expect(lee.locator("#a-edit-arguments-order_id")).to_have_value("A-1005")
    await expect(lee.get_by_role("button", name="Confirm edit")).to_have_count(0)
    assert await server.snapshot(pending["id"]) == before
    assert (await server.run(run["id"]))["status"] == "waiting"
    assert await refunds(db_url) == []


async def test_an_edit_that_needs_two_finance_approvers_says_so_in_its_check(
    server: Server, page_as: PageAs, javascript: bool
) -> None:
    run, pending = await pending_request(server)
    lee = await page_as("lee", javascript=javascript, width=1366)
    await open_request(lee, pending["id"])
    before = await server.snapshot(pending["id"])

    await lee.locator("summary", has_text="Edit").click()
    await lee.locator("#a-edit-arguments-amount").fill("1500")
    await lee.get_by_role("button", name="Send edit").click()

    check = lee.locator("#form-edit").get_by_role("region", name="Check your edit, then confirm it")
    await expect(check).to_be_in_viewport()
    await expect(check.locator("ins")).to_have_text("1500.00 EUR")
    told = check.get_by_role("list", name="What the edit leads to")
    await expect(told).to_contain_text("it now needs 2 different approvers from finance")
    await expect(told).to_contain_text("it goes to finance as a new request")
    assert await server.snapshot(pending["id"]) == before
    await lee.get_by_role("button", name="Confirm edit").click()

    await expect(lee.locator(STATUS)).to_contain_text("Approved with your edit: “Refund 120.00")
    finance = await server.wait_for_request(run["id"])
    assert (finance["team"], finance["approvals_required"]) == ("finance", 2)


async def test_a_questions_options_are_radios_and_the_choice_is_the_answer(
    server: Server, page_as: PageAs, javascript: bool
) -> None:
    run = await server.start_run(REFUND_NO_ORDER, user="sue")
    question = await support_request(server, run["id"], kind="question")
    [option] = question["payload"]["options"][:1]
    sam = await page_as("sam", javascript=javascript)
    await open_request(sam, question["id"])

    form = sam.locator("#form-answer")
    radio = form.get_by_role("radio", name=option, exact=True)
    await expect(radio).to_be_visible()
    await expect(form.get_by_role("radio", name="Something else:")).to_be_visible()
    await expect(form.locator("datalist")).to_have_count(0)
    await radio.check()
    await form.get_by_role("button", name="Send answer").click()

    await expect(sam.locator(STATUS)).to_contain_text("Answered: “billing asks:")
    answered = await server.request(question["id"])
    assert answered["answer"] == {"decision": "answer", "answer": option}


async def test_taking_over_is_confirmed_first_and_links_the_takeover_request(
    server: Server, page_as: PageAs, javascript: bool
) -> None:
    run, pending = await pending_request(server)
    lee = await page_as("lee", javascript=javascript)
    await open_request(lee, pending["id"])
    before = await server.snapshot(pending["id"])

    await lee.get_by_role("button", name="Take over…").click()
    asked = lee.get_by_role("region", name="Take this case over?")
    await expect(asked).to_be_in_viewport()
    assert await server.snapshot(pending["id"]) == before  # one click takes nothing over
    await asked.get_by_role("button", name="Yes, take it over").click()

    await expect(lee.locator(STATUS)).to_contain_text("You took this over")
    takeover = await server.wait_for_request(run["id"])
    assert (takeover["kind"], takeover["assignee"]) == ("takeover", "lee")
    await lee.reload()
    await lee.get_by_role("link", name="Open the takeover request").click()
    await expect(lee).to_have_url(re.compile(f"/requests/{takeover['id']}$"))
    resolve = lee.locator("#form-resolve")
    await expect(resolve.get_by_label("Resolution")).to_be_visible()
    # the refund workflow declares no outcome model: free-form JSON, folded away
    await expect(resolve.locator("details.json-field")).not_to_have_attribute("open", "")
