"""A request's page read by a business user who has never seen the docs, over real HTTP.

Each test makes a request through the API and reads its page: the edit form's fields say whose
words they are and what they change, the review editor says what is edited, what is kept and
what Send does, taking a request over says what happens to it and next, and a refusal speaks to
the reader. Every sentence checked is derived from the request's record.
"""

from __future__ import annotations

import html
import re

from tests.harness import REFUND_120, Server, reviewed_purchase
from tests.pages import signed_in, text_of
from tests.supportkit import DELETE_ACCOUNT, pending_request


def form_of(page: str, decision: str) -> str:
    """The HTML of one decision's form on a request's page."""
    found = re.search(rf'<form[^>]*id="form-{decision}".*?</form>', page, re.DOTALL)
    assert found, f"no {decision} form on the page"
    return found.group(0)


def labels_of(form: str) -> list[str]:
    """The words of each label and legend of a form, `(optional)` left out."""
    said = re.findall(r"<(?:label|legend)[^>]*>(.*?)</(?:label|legend)>", form, re.DOTALL)
    return [text_of(s).removesuffix("(optional)").strip() for s in said]


async def test_an_edit_tells_the_tools_reason_from_the_approvers_note(
    page_server: Server, passwords: dict[str, str]
) -> None:
    run = await page_server.start_run(DELETE_ACCOUNT, user="sue")
    asked = await pending_request(page_server, run["id"], kind="approval")
    assert "reason" in asked["proposed_action"]["arguments"]  # the tool's own argument

    async with signed_in(page_server, "lee", passwords["lee"]) as lee:
        page = (await lee.http.get(f"/requests/{asked['id']}")).text

    edit = form_of(page, "edit")
    labels = labels_of(edit)
    assert len(labels) == len(set(labels)), f"two fields share a label: {labels}"
    # the tool's argument sits in its fieldset, named for the tool; the approver's is theirs
    tool_args = re.search(r"<fieldset.*?</fieldset>", edit, re.DOTALL)
    assert tool_args is not None
    assert "Arguments of delete_account" in text_of(tool_args.group(0))
    assert 'name="arguments.reason"' in tool_args.group(0)
    assert 'name="reason"' not in tool_args.group(0)
    words = text_of(edit)
    # a note beside an edit goes nowhere but the answer's record; a reason for a rejection does
    assert "Your note (optional) Kept with your answer in the audit trail; " in words
    assert "delete_account does not receive it." in words
    reject = form_of(page, "reject")
    assert "Your reason for rejecting" in labels_of(reject)
    assert "Whoever asked is told it with your answer." in text_of(reject)


async def test_the_review_editor_says_what_is_edited_what_is_kept_and_what_send_does(
    page_server: Server, passwords: dict[str, str]
) -> None:
    review = await reviewed_purchase(page_server)
    draft = review["payload"]["draft"]
    assert isinstance(draft, str)

    async with signed_in(page_server, "fay", passwords["fay"]) as fay:
        page = (await fay.http.get(f"/requests/{review['id']}")).text
        edit = form_of(page, "edit")
        words = text_of(edit)
        assert "Your version of the draft" in labels_of(edit)
        assert (
            "It starts as the draft: change what should differ; whatever you leave is kept "
            "as it is. Your version replaces the draft as a whole." in words
        )
        assert "Send edit Nothing is sent yet: you first see each change, before → after" in words
        # the whole draft shows, a line a row
        rows = re.search(r'<textarea[^>]*name="content"[^>]*rows="(\d+)"', edit)
        assert rows is not None
        assert int(rows.group(1)) >= len(draft.splitlines())
        textarea = re.search(r'<textarea[^>]*name="content"[^>]*>(.*?)</textarea>', edit, re.S)
        assert textarea is not None
        assert html.unescape(textarea.group(1)) == draft

        # Send edit sends nothing: it shows the change and asks to confirm it
        changed = draft.replace("900.00", "850.00")
        checked = await fay.post(
            f"/requests/{review['id']}",
            {"decision": "edit", "content": changed},
        )
        assert checked.status_code == 200, checked.text
        said = text_of(checked.text)
        assert "Check your edit, then confirm it" in said
        assert "Confirm edit" in said
    assert (await page_server.request(review["id"]))["status"] == "pending"


async def test_taking_over_says_what_happens_to_the_request_now_and_next(
    page_server: Server, passwords: dict[str, str]
) -> None:
    run = await page_server.start_run(REFUND_120)
    asked = await page_server.wait_for_request(run["id"])
    path = f"/requests/{asked['id']}"

    async with signed_in(page_server, "lee", passwords["lee"]) as lee:
        page = text_of((await lee.http.get(path)).text)
        assert (
            "Take over… Deal with the case yourself instead of answering here: issue_refund is "
            "not run for it, and it comes back to you alone, with the conversation so far."
        ) in page
        check = await lee.post(f"{path}/takeover", {})
        assert check.status_code == 200, check.text
        steps = re.search(r'<ol class="steps" id="take-over-steps">(.*?)</ol>', check.text, re.S)
        assert steps is not None
        assert re.findall(r"<li>(.*?)</li>", html.unescape(steps.group(1))) == [
            "This request closes now: nobody of support-leads can answer it any more, and "
            "issue_refund is not run for it.",
            "A new request comes to you alone, with the conversation so far.",
            "There you either resolve it, saying what you did (your resolution and outcome are "
            "recorded and the agent stops working on it), or return it to the agent with "
            "guidance, which it is told; issue_refund still does not run.",
        ]
        taken = await lee.post(f"{path}/takeover", {"confirm": "yes"})
        assert taken.status_code == 303, taken.text

    # as it said: closed, and a takeover for lee alone whose choices are the ones named
    assert (await page_server.request(asked["id"]))["status"] in ("answered", "resumed")
    takeover = await pending_request(page_server, run["id"], kind="takeover")
    assert takeover["assignee"] == "lee"
    assert takeover["allowed_decisions"] == ["resolve", "return"]


async def test_refusals_on_the_page_speak_to_the_reader_and_the_api_keeps_its_words(
    page_server: Server, passwords: dict[str, str]
) -> None:
    run = await page_server.start_run(REFUND_120, user="ada")  # ada: an admin, who may answer
    asked = await page_server.wait_for_request(run["id"])
    path = f"/requests/{asked['id']}"

    async with signed_in(page_server, "val", passwords["val"]) as val:
        looked = text_of((await val.http.get(path)).text)
        posted = await val.post(path, {"decision": "approve"})
    assert (
        "You cannot answer this request because you are a viewer: you can read requests, not "
        "answer them." in looked
    )
    assert posted.status_code == 403
    assert "You cannot answer this request because you are a viewer" in text_of(posted.text)

    async with signed_in(page_server, "ada", passwords["ada"]) as ada:
        own = text_of((await ada.http.get(path)).text)
        assert (
            "You cannot approve or edit this request because you started its run (four-eyes): "
            "another person of support-leads must. You can still reject it." in own
        )
        approved = await page_server.respond(asked["id"], {"decision": "approve"}, user="lee")
        assert approved.status_code == 200, approved.text
        late = await ada.post(path, {"decision": "reject", "reason": "too late"})
    assert late.status_code == 409
    assert "You cannot answer this request because lee already answered it: approved." in text_of(
        late.text
    )

    # the API's refusals name ids for programs, as they did; the reader's words are not in them
    refused = await page_server.respond(
        asked["id"], {"decision": "reject", "reason": "no"}, user="ada"
    )
    assert refused.status_code == 409
    assert refused.json()["detail"] == (
        f"request {asked['id']} was already answered by lee with decision 'approve'"
    )
    assert "to_reader" not in refused.json()
    viewer = await page_server.respond(asked["id"], {"decision": "approve"}, user="val")
    assert viewer.status_code == 403
    assert viewer.json()["detail"] == "val is a viewer and cannot answer requests"


async def test_an_open_request_shows_what_is_decided_on_first_and_a_closed_one_its_outcome(
    page_server: Server, passwords: dict[str, str]
) -> None:
    """On a phone the page is one column in its HTML's order: before the decision, what it is
    about; once closed, what became of it first (the laptop's two columns place both anyway)."""
    run = await page_server.start_run(REFUND_120)
    asked = await page_server.wait_for_request(run["id"])
    async with signed_in(page_server, "lee", passwords["lee"]) as lee:
        url = f"/requests/{asked['id']}"
        before = (await lee.http.get(url)).text
        assert (await lee.post(url, {"decision": "approve"})).status_code == 303
        await page_server.wait_for_run(run["id"], status="completed")
        after = (await lee.http.get(url)).text

    assert before.index('id="action-title"') < before.index('id="decision"')
    assert after.index('id="decision"') < after.index('id="action-title"')
    outcome = after[after.index('id="decision"') : after.index('id="action-title"')]
    assert "Approved by lee at" in text_of(outcome)
