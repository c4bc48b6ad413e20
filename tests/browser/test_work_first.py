"""Open work first, the decision in the first screen, live pages: in a real Chromium, at a laptop's
and a phone's size.

A manager's inbox opens on the escalated work; each kind of request shows what it decides on before
its decision (beside it on a laptop, both in the first screen; above it on a phone); a page open in
one tab learns of another person's answer; a run page shows its
pause as it happens. The clock moves through `BATON_CLOCK_FILE` (tests.harness.MovableClock).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.async_api import Page, expect

from tests.browser.conftest import LAPTOP, PHONE, PageAs, overflow
from tests.harness import (
    REFUND_120,
    REFUND_1500,
    MovableClock,
    Server,
    escalated_purchase,
    reviewed_purchase,
)
from tests.supportkit import MANAGER, UNCLEAR, pending_request

STATUS = "[role=status]"
# who answers for each team (none of them starts the runs here: four-eyes)
ANSWERS_FOR = {
    "support-agents": "sam",
    "support-leads": "lee",
    "finance": "fay",
    "legal": "lex",
    "managers": "max",
}


@pytest.fixture
def server(clocked_server: Server) -> Server:
    return clocked_server


@pytest.mark.parametrize("size", [LAPTOP, PHONE], ids=["laptop", "phone"])
async def test_a_manager_sees_escalated_work_first_by_default(
    server: Server, page_as: PageAs, clock: MovableClock, size: tuple[int, int]
) -> None:
    await server.start_run(REFUND_120)  # support-leads' work, not the managers'
    escalated = await escalated_purchase(server, clock)

    width, height = size
    max_ = await page_as("max", width=width, height=height)
    await expect(max_.locator("nav.views a[aria-current=page]")).to_contain_text("My work")
    await expect(max_.locator(".count[data-view='mine']")).to_have_text("2")
    rows = max_.locator("tr.request-row")
    await expect(rows).to_have_count(2)
    for request in escalated:
        row = max_.locator(f"tr[data-request-id='{request['id']}']")
        await expect(row.locator(".badge.status-escalated")).to_have_text("escalated")
        await expect(row.locator(".badge.priority-high")).to_be_visible()
        await expect(row).to_contain_text("amount 2400.00")  # what is decided on
        await expect(row).to_contain_text("sam")  # who started it
        await expect(row).to_contain_text("left")  # time left, open as it is
    await expect(max_.locator("#inbox-list")).not_to_contain_text("Nothing here")
    assert await overflow(max_) <= 0

    # claimed by me: still my work, and in Claimed by me; answered: in Answered by me
    first = escalated[0]["id"]
    await max_.goto(f"/requests/{first}")
    await max_.get_by_role("button", name="Claim").click()
    await max_.goto("/")
    await expect(max_.locator(f"tr[data-request-id='{first}']")).to_contain_text("claimed")
    await max_.get_by_role("link", name=re.compile("^Claimed by me")).click()
    await expect(max_.locator("tr.request-row")).to_have_count(1)
    await max_.get_by_role("link", name=re.compile("^Unassigned")).click()
    await expect(max_.locator("tr.request-row")).to_have_count(1)


async def requests_of_every_kind(server: Server) -> dict[str, dict[str, Any]]:
    """One open request of each kind: approval, question, review, takeover, input."""
    approval = await server.wait_for_request((await server.start_run(REFUND_120))["id"])
    question = await pending_request(
        server, (await server.start_run(UNCLEAR, user="sue"))["id"], kind="question"
    )
    takeover = await pending_request(
        server, (await server.start_run(MANAGER, user="sue"))["id"], kind="takeover"
    )
    review = await reviewed_purchase(server)
    typed = {"workflow": "typed_review", "input": {"title": "Spring launch post"}}
    typed_input = await server.wait_for_request((await server.start_run(typed))["id"])
    found = {
        "approval": approval,
        "question": question,
        "review": review,
        "takeover": takeover,
        "input": typed_input,
    }
    assert {k: r["kind"] for k, r in found.items()} == {k: k for k in found}
    return found


async def test_every_kind_opens_with_its_decision_in_the_first_screen(
    server: Server, page_as: PageAs
) -> None:
    found = await requests_of_every_kind(server)
    pages: dict[str, Page] = {}
    for kind, request in found.items():
        who = ANSWERS_FOR[request["team"]]
        if who not in pages:
            pages[who] = await page_as(who, width=LAPTOP[0], height=LAPTOP[1])
        page = pages[who]
        await page.goto(f"/requests/{request['id']}")
        decide = page.locator("#decision")
        await expect(decide.get_by_role("heading", name="Your answer")).to_be_visible()
        # the first choice and what it does, without a scroll, beside what it decides on (a
        # long form, a takeover's resolution say, may end below the first screen)
        first = decide.locator("details.decision[open] > summary").first
        said = await first.bounding_box()
        assert said is not None, kind
        assert said["y"] + said["height"] <= LAPTOP[1], f"{kind}: first choice ends at {said}"
        button = decide.locator("details.decision[open] form button[type=submit]").first
        box = await button.bounding_box()
        assert box is not None, kind
        if kind == "approval":  # an approval's Approve, a note and its button, without a scroll
            assert box["y"] + box["height"] <= LAPTOP[1], f"{kind}: button ends at {box}"
        # each choice says what it does, before the evidence
        summaries = decide.locator("details.decision > summary .does")
        assert await summaries.count() == len(request["allowed_decisions"]), kind
        evidence = await page.locator("#facts-title").bounding_box()
        assert evidence is not None, kind
        assert evidence["y"] > box["y"], kind

    approve = pages["lee"]
    await approve.goto(f"/requests/{found['approval']['id']}")
    await expect(approve.locator("#decision summary").first).to_contain_text(
        "issue_refund runs with order id A-1002, amount 120.00 EUR"
    )
    # on a phone what is decided on comes first; a link in the first screen skips to the decision
    await approve.set_viewport_size({"width": PHONE[0], "height": PHONE[1]})
    await approve.reload()
    skip = approve.get_by_role("link", name="Skip to your answer")
    link = await skip.bounding_box()
    assert link is not None
    assert link["y"] + link["height"] < PHONE[1]
    await skip.click()
    top = await approve.locator("#decision").bounding_box()
    assert top is not None
    assert 0 <= top["y"] < PHONE[1]
    # on a laptop my work is beside the request, the request marked
    await approve.set_viewport_size({"width": LAPTOP[0], "height": LAPTOP[1]})
    queue = approve.locator("aside.queue")
    side = await queue.bounding_box()
    main = await approve.locator("article.request").bounding_box()
    assert side is not None
    assert main is not None
    assert side["x"] + side["width"] <= main["x"]  # side by side
    await expect(queue.locator("a[aria-current=page]")).to_contain_text("Refund 120.00")


@pytest.mark.parametrize("size", [LAPTOP, PHONE], ids=["laptop", "phone"])
async def test_what_is_decided_on_comes_before_the_decision(
    server: Server, page_as: PageAs, size: tuple[int, int]
) -> None:
    found = await requests_of_every_kind(server)
    width, height = size
    pages: dict[str, Page] = {}
    # what each kind decides on: the proposed call, the draft, the data the workflow sent
    basis = {
        "approval": "#action-title",
        "review": "#draft-title",
        "input": "#context-title",
        "takeover": "#context-title",
    }
    for kind, heading in basis.items():
        request = found[kind]
        who = ANSWERS_FOR[request["team"]]
        if who not in pages:
            pages[who] = await page_as(who, width=width, height=height)
        page = pages[who]
        await page.goto(f"/requests/{request['id']}")
        evidence = await page.locator(heading).bounding_box()
        decide = await page.locator("#decision").bounding_box()
        assert evidence is not None, kind
        assert decide is not None, kind
        if size == LAPTOP:  # side by side: the evidence first, the decision beside it in view
            assert evidence["x"] + evidence["width"] <= decide["x"], kind
            assert decide["y"] < height, kind
        else:  # one column: the evidence above the decision
            assert evidence["y"] + evidence["height"] <= decide["y"], kind
        assert await overflow(page) <= 0, kind


async def test_after_an_answer_the_next_open_request_follows_with_a_notice(
    server: Server, page_as: PageAs, javascript: bool
) -> None:
    first = await server.wait_for_request((await server.start_run(REFUND_120))["id"])
    second = await server.wait_for_request((await server.start_run(REFUND_120))["id"])
    lee = await page_as("lee", javascript=javascript)
    await lee.goto(f"/requests/{first['id']}")
    await lee.locator("#form-approve").get_by_role("button", name="Approve").click()
    # the next request, at its top: not at the form the answer was sent from
    await expect(lee).to_have_url(re.compile(f"/requests/{second['id']}#top$"))
    await expect(lee.locator(STATUS)).to_have_text(
        "Approved: “Refund 120.00 on order A-1002”. Next, the most urgent of your work:"
    )
    await expect(lee.locator("#decision details.decision").first).to_be_visible()


@pytest.mark.parametrize("size", [LAPTOP, PHONE], ids=["laptop", "phone"])
async def test_the_next_request_opens_at_its_title_with_the_notice_focused(
    server: Server, page_as: PageAs, size: tuple[int, int]
) -> None:
    """A second tap on the spot of the first must not approve a request nobody has looked at.

    The answer is sent from deep in the page (on a phone its Approve button is a screen down);
    the next request opens at its top, the notice of what was done focused and read out, its
    title in sight, its own Approve button not under the pointer.
    """
    first = await server.wait_for_request((await server.start_run(REFUND_120))["id"])
    second = await server.wait_for_request((await server.start_run(REFUND_120))["id"])
    width, height = size
    lee = await page_as("lee", width=width, height=height)
    await lee.goto(f"/requests/{first['id']}")
    approve = lee.locator("#form-approve").get_by_role("button", name="Approve")
    await approve.focus()
    await lee.keyboard.press("Enter")
    await expect(lee).to_have_url(re.compile(f"/requests/{second['id']}"))
    await lee.wait_for_load_state("load")
    notice = lee.locator(STATUS)
    await expect(notice).to_contain_text("Approved: “Refund 120.00 on order A-1002”.")
    await expect(notice).to_be_in_viewport(ratio=1)
    await expect(lee.locator("#request-title")).to_be_in_viewport(ratio=1)
    assert await lee.evaluate("window.scrollY") == 0
    await expect(notice).to_be_focused()


async def test_a_second_tab_sees_another_persons_answer_live(
    server: Server, page_as: PageAs
) -> None:
    pending = await server.wait_for_request((await server.start_run(REFUND_120))["id"])
    lee = await page_as("lee")
    await lee.goto(f"/requests/{pending['id']}")
    await expect(lee.locator("#form-approve")).to_be_visible()
    await lee.locator("summary", has_text="Reject").click()
    await lee.locator("#a-reject-reason").fill("typed, not sent")  # a form half filled
    await lee.evaluate("window.notReloaded = true")

    answered = await server.respond(pending["id"], {"decision": "approve"}, user="ada")
    assert answered.status_code == 200, answered.text

    banner = lee.locator("#live-banner")
    await expect(banner).to_contain_text("ada approved at")
    await expect(banner).to_contain_text("This request is closed: your form was not sent.")
    await expect(lee.locator("#form-approve")).to_have_count(0)
    await expect(lee.locator("#form-reject")).to_have_count(0)
    await expect(lee.locator("#decision .outcome")).to_contain_text("Approved by ada at")
    assert await lee.evaluate("window.notReloaded") is True


async def test_two_approvers_see_who_approved_and_the_first_is_offered_nothing_more(
    server: Server, page_as: PageAs
) -> None:
    pending = await server.wait_for_request((await server.start_run(REFUND_1500))["id"])
    fay = await page_as("fay")
    await fay.goto(f"/requests/{pending['id']}")
    await expect(fay.locator("#approvals")).to_contain_text(
        "No approval yet; 2 more approvals by different people of finance are needed"
    )
    await fay.locator("#form-approve").get_by_role("button", name="Approve").click()
    await expect(fay.locator(STATUS)).to_contain_text(
        "Your approval of “Refund 1500.00 on order A-1003” is recorded; 1 more approval"
    )
    await fay.goto(f"/requests/{pending['id']}")
    await expect(fay.locator("#approvals")).to_contain_text(
        "Approved by fay; 1 more approval by a different person of finance is needed"
    )
    await expect(fay.locator("#approved-by-me")).to_contain_text("You approved this")
    await expect(fay.locator("#decision form")).to_have_count(0)  # no approve, no veto

    # fin's page, open before fay approved, learns of it live and still offers fin the choice
    fin = await page_as("fin")
    await fin.goto(f"/requests/{pending['id']}")
    await expect(fin.locator("#form-approve")).to_be_visible()
    async with server.client("ada") as ada:
        claimed = await ada.post(f"/api/requests/{pending['id']}/claim")
        assert claimed.status_code == 200, claimed.text
    await expect(fin.locator("#live-banner")).to_contain_text("ada claimed it at")
    await expect(fin.locator("#claimed")).to_contain_text("ada is working on this")
    await expect(fin.locator("#form-approve")).to_have_count(0)  # only ada may answer now


async def test_the_run_page_shows_the_pause_as_soon_as_it_happens(
    server: Server, page_as: PageAs
) -> None:
    sam = await page_as("sam")
    await sam.goto("/runs/new?workflow=refund")
    await sam.get_by_label(re.compile(r"^Order id", re.IGNORECASE)).fill("A-1005")
    await sam.get_by_label("Amount", exact=True).fill("120")
    await sam.get_by_label("Reason", exact=True).fill("damaged in transit")
    await sam.get_by_role("button", name="Start").click()
    await expect(sam).to_have_url(re.compile(r"/runs/run_[\w-]+$"))
    # no reload: the page drawn while the run was starting follows it to its pause
    await expect(sam.locator("#run-status")).to_have_text("waiting")
    await expect(sam.locator("#run-waits")).to_have_text("waits for support-leads")
    await expect(sam.locator("tr.request-row")).to_contain_text("Refund 120.00 on order A-1005")
