"""An `input` request answered in Chromium from the form its answer type makes, with and without JS.

The subject is `tests.samples.typed_review`, a plain MAF workflow that asks for a nested dataclass:
an enum, a bounded number, a list of text, an optional nested dataclass with a default. Sam starts
the run (four-eyes), lee answers it.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.async_api import Page, expect

from tests.browser.conftest import LAPTOP, PHONE, PageAs, audited, overflow
from tests.harness import Server

STATUS = "[role=status]"
REVIEW = {"workflow": "typed_review", "input": {"title": "Spring launch post"}}


@pytest.fixture
def server(samples_server: Server) -> Server:
    return samples_server


async def waiting_review(server: Server) -> tuple[dict[str, Any], dict[str, Any]]:
    run = await server.start_run(REVIEW)
    return run, await server.wait_for_request(run["id"])


async def open_request(page: Page, request_id: str) -> None:
    await page.goto(f"/requests/{request_id}")
    await expect(page.get_by_role("heading", name="Your answer")).to_be_visible()


async def test_a_typed_answer_is_refused_beside_its_field_then_given_and_the_run_completes(
    server: Server, page_as: PageAs, javascript: bool
) -> None:
    run, pending = await waiting_review(server)
    assert pending["kind"] == "input"
    lee = await page_as("lee", javascript=javascript)
    await open_request(lee, pending["id"])

    # the request data, field by field; its nested author as a titled section
    await expect(lee.locator(".why")).to_contain_text("Why you are asked:")
    context = lee.locator("section[aria-labelledby=context-title]")
    await expect(context.locator("dl.kv").first).to_contain_text("Spring launch post")
    await expect(context.get_by_role("heading", name="Author")).to_be_visible()
    await expect(context).to_contain_text("writers")

    form = lee.locator("#form-answer")
    score = form.get_by_label("Score")
    tags = form.get_by_label("Tags")
    owner = form.get_by_label("Owner")
    due = form.get_by_label("Due in days")
    await expect(form.get_by_role("radio", name="Revise")).not_to_be_checked()
    await expect(due).to_have_value("7")  # the default, shown
    await expect(score).to_have_attribute("max", "5")
    await expect(owner).not_to_have_attribute("required", "")  # the follow-up may be left out

    await form.get_by_role("radio", name="Revise").check()
    await score.fill("9")
    await tags.fill("tone\nlength")
    await owner.fill("ann")
    await due.fill("10")
    before = await server.snapshot(pending["id"])

    # the browser holds an out-of-bounds score back on its own ...
    await form.get_by_role("button", name="Send answer").click()
    await expect(form.locator("#a-answer-answer-score:invalid")).to_have_count(1)
    assert lee.url.endswith(f"/requests/{pending['id']}")
    # ... and a browser that does not (or a tampered page) meets the server's check
    await form.evaluate("f => f.setAttribute('novalidate', '')")
    await form.get_by_role("button", name="Send answer").click()

    summary = lee.get_by_role("alert").filter(has_text="Your answer was not sent")
    await expect(summary).to_contain_text("Score")
    error = lee.locator("#a-answer-answer-score-error")
    await expect(error).to_have_text("Input should be less than or equal to 5")
    await expect(score).to_have_attribute("aria-invalid", "true")
    await expect(score).to_have_value("9")  # what was typed stays, every field of it
    await expect(form.get_by_role("radio", name="Revise")).to_be_checked()
    await expect(tags).to_have_value("tone\nlength")
    await expect(owner).to_have_value("ann")
    await expect(due).to_have_value("10")
    assert await server.snapshot(pending["id"]) == before  # nothing stored
    assert (await server.run(run["id"]))["status"] == "waiting"

    await score.fill("4")
    await form.get_by_role("button", name="Send answer").click()

    await expect(lee.locator(STATUS)).to_contain_text("Answered: “")
    done = await server.wait_for_run(run["id"], status="completed")
    assert done["output"] == {
        "title": "Spring launch post",
        "verdict": "revise",
        "score": 4,
        "tags": ["tone", "length"],
        "followup": "ann",
        "due_in_days": 10,
    }
    [answered] = done["requests"]
    assert answered["answered_by"] == "lee"


async def test_a_follow_up_left_as_shown_is_none_and_half_of_one_is_refused_by_name(
    server: Server, page_as: PageAs, javascript: bool
) -> None:
    run, pending = await waiting_review(server)
    lee = await page_as("lee", javascript=javascript)
    await open_request(lee, pending["id"])
    form = lee.locator("#form-answer")

    await form.get_by_role("radio", name="Publish").check()
    await form.get_by_label("Score").fill("5")
    await form.get_by_label("Due in days").fill("3")  # a follow-up begun, its owner missing
    await form.get_by_role("button", name="Send answer").click()
    await expect(lee.locator("#a-answer-answer-followup-owner-error")).to_have_text(
        "Field required"
    )
    assert (await server.request(pending["id"]))["status"] == "pending"

    await form.get_by_label("Due in days").fill("7")  # back as it was shown: no follow-up
    await form.get_by_role("button", name="Send answer").click()

    await expect(lee.locator(STATUS)).to_contain_text("Answered: “")
    done = await server.wait_for_run(run["id"], status="completed")
    assert (done["output"]["verdict"], done["output"]["followup"]) == ("publish", None)
    assert done["requests"][0]["answer"]["answer"]["followup"] is None


async def test_an_input_request_page_labels_every_control_and_fits_a_phone(
    server: Server, page_as: PageAs
) -> None:
    _run, pending = await waiting_review(server)
    lee = await page_as("lee", width=390)
    await open_request(lee, pending["id"])
    unlabelled = """() => [...document.querySelectorAll('input, select, textarea')]
        .filter(e => e.type !== 'hidden' && e.labels.length === 0)
        .map(e => e.outerHTML)"""
    assert await lee.evaluate(unlabelled) == []
    assert await overflow(lee) <= 0


@pytest.mark.parametrize("size", [LAPTOP, PHONE], ids=["laptop", "phone"])
async def test_a_typed_answers_form_passes_axe_open_and_refused(
    server: Server, page_as: PageAs, axe_source: str, size: tuple[int, int]
) -> None:
    """An `input` request's form made from the workflow's answer type (`typed_review`: choices,
    bounds, lines, a nested optional group), as it opens and with the server's refusal beside a
    field."""
    _, request = await waiting_review(server)
    width, height = size
    lee = await page_as("lee", width=width, height=height)
    await lee.goto(f"/requests/{request['id']}")
    found = await audited(lee, axe_source, "typed answer")
    form = lee.locator("#form-answer")
    await form.get_by_role("radio", name="Revise").check()
    await form.get_by_label("Score").fill("9")
    await form.evaluate(
        "f => f.setAttribute('novalidate', '')"
    )  # the server's check, not the browser's
    await form.get_by_role("button", name="Send answer").click()
    await expect(lee.locator("#a-answer-answer-score-error")).to_be_visible()
    found += await audited(lee, axe_source, "typed answer, refused")
    assert found == [], "\n".join(found)
