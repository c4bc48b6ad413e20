"""Every page, in each state a person meets it, passes axe-core's WCAG 2.2 A/AA and best-practice
rules in Chromium, on a laptop and a phone.

axe-core (Deque's engine, the one browsers' own audits use) comes from npm through
tests/browser/axe/package-lock.json and runs in the page as a person left it: signed out, the
inbox and Find, an approval with its edit open and checked, an answer refused beside its fields,
Take over's confirmation, a question, a review, a takeover, a run, the runs list, Start a run and
its refusal, the dashboard, a viewer's page and a page that is not there. A violation names its
rule, what it asks and the elements that break it.
"""

from __future__ import annotations

import pytest
from playwright.async_api import Page, expect

from tests.browser.conftest import LAPTOP, PHONE, PageAs, audited
from tests.harness import REFUND_120, Server, reviewed_purchase
from tests.supportkit import MANAGER, UNCLEAR, pending_request


@pytest.mark.parametrize("size", [LAPTOP, PHONE], ids=["laptop", "phone"])
async def test_every_page_in_each_state_passes_axe(
    server: Server, page_as: PageAs, axe_source: str, size: tuple[int, int]
) -> None:
    width, height = size
    found: list[str] = []

    async def check(page: Page, where: str) -> None:
        found.extend(await audited(page, axe_source, where))

    refund = await server.start_run(REFUND_120)
    approval = await server.wait_for_request(refund["id"])
    question_run = await server.start_run(UNCLEAR, user="sue")
    question = await pending_request(server, question_run["id"], kind="question")
    takeover_run = await server.start_run(MANAGER, user="sue")
    takeover = await pending_request(server, takeover_run["id"], kind="takeover")
    review = await reviewed_purchase(server)

    signed_out = await page_as("lee", width=width, height=height)
    await signed_out.context.clear_cookies()
    await signed_out.goto("/signin")
    await check(signed_out, "sign in")
    await signed_out.get_by_label("Name").fill("lee")
    await signed_out.get_by_label("Password").fill("not the password")
    await signed_out.get_by_role("button", name="Sign in").click()
    await expect(signed_out.get_by_role("alert")).to_be_visible()
    await check(signed_out, "sign in refused")

    lee = await page_as("lee", width=width, height=height)
    await check(lee, "inbox")
    await lee.goto("/?q=nothing-like-this")
    await check(lee, "inbox, found nothing")
    await lee.goto(f"/requests/{approval['id']}")
    await check(lee, "approval")
    await lee.locator("summary", has_text="Edit").click()
    await lee.locator("#a-edit-arguments-amount").fill("80")
    await lee.get_by_role("button", name="Send edit").click()
    await expect(lee.get_by_role("button", name="Confirm edit")).to_be_visible()
    await check(lee, "approval, edit checked")
    order = lee.locator("#a-edit-arguments-order_id")  # fixed by the policy: the server refuses
    await order.evaluate("e => e.removeAttribute('readonly')")
    await order.fill("A-1005")
    await lee.get_by_role("button", name="Send edit").click()
    await expect(lee.locator("#a-edit-arguments-order_id-error")).to_be_visible()
    await check(lee, "approval, edit refused")
    await lee.goto(f"/requests/{approval['id']}")
    await lee.get_by_role("button", name="Take over…").click()
    # (the page that asks first, loaded: axe on the one still leaving finds no main landmark)
    await expect(lee.get_by_role("button", name="Yes, take it over")).to_be_visible()
    await check(lee, "take over, asked first")
    await lee.goto(f"/runs/{refund['id']}")
    await check(lee, "run, waiting")
    await lee.goto("/runs")
    await check(lee, "runs")
    await lee.goto("/runs/new?workflow=refund")
    await check(lee, "start a run")
    await lee.goto("/dashboard")
    await check(lee, "dashboard")
    await lee.goto("/requests/req_00000000000000000000zz")
    await check(lee, "no such request")

    sam = await page_as("sam", width=width, height=height)
    await sam.goto(f"/requests/{question['id']}")
    await check(sam, "question")
    await sam.goto(f"/requests/{takeover['id']}")
    await check(sam, "takeover")

    fin = await page_as("fin", width=width, height=height)
    await fin.goto(f"/requests/{review['id']}")
    await check(fin, "review")

    val = await page_as("val", width=width, height=height)
    await val.goto(f"/requests/{approval['id']}")
    await check(val, "a viewer's approval")

    assert found == [], "\n".join(found)
