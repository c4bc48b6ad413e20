"""Forms for people over real HTTP: what one approver may still do, a takeover's typed outcome.

Refusals change nothing stored (before/after snapshots).
"""

from __future__ import annotations

import html

from tests.e2e.test_pages_http import waiting_refund
from tests.harness import REFUND_1500, Server
from tests.pages import signed_in, text_of
from tests.supportkit import MANAGER, UNCLEAR
from tests.supportkit import pending_request as support_request


async def test_one_who_approved_a_two_approver_request_is_offered_and_allowed_nothing_more(
    page_server: Server, passwords: dict[str, str]
) -> None:
    server = page_server
    pending = await waiting_refund(server, REFUND_1500)
    url = f"/requests/{pending['id']}"
    async with signed_in(server, "fay", passwords["fay"]) as fay:
        approved = await fay.post(url, {"decision": "approve"})
        assert approved.status_code == 303, approved.text
        page = await fay.http.get(url)
        before = await server.snapshot(pending["id"])
        veto = await fay.post(url, {"decision": "reject", "reason": "changed my mind"})
        api = await server.respond(
            pending["id"], {"decision": "reject", "reason": "no"}, user="fay"
        )
        after = await server.snapshot(pending["id"])
    async with signed_in(server, "fin", passwords["fin"]) as fin:
        other = await fin.http.get(url)

    assert 'id="approved-by-me"' in page.text
    assert "Nothing more is asked of you: it waits for another person of finance." in page.text
    assert 'id="form-approve"' not in page.text
    assert 'id="form-reject"' not in page.text
    assert "/takeover" not in page.text
    assert veto.status_code == 409
    assert api.status_code == 409, api.text
    assert "fay already approved request" in api.json()["detail"]
    assert after == before
    assert 'id="form-approve"' in other.text  # the second approver is asked


async def test_a_takeover_of_a_workflow_with_an_outcome_model_is_resolved_with_its_fields(
    page_server: Server, passwords: dict[str, str]
) -> None:
    server = page_server
    run = await server.start_run(MANAGER, user="sue")
    takeover = await support_request(server, run["id"], kind="takeover")
    url = f"/requests/{takeover['id']}"
    async with signed_in(server, "sam", passwords["sam"]) as sam:
        page = await sam.http.get(url)
        before = await server.snapshot(takeover["id"])
        bad = await sam.post(
            url,
            {"decision": "resolve", "resolution": "Called them.", "outcome.amount": "-3"},
        )
        after = await server.snapshot(takeover["id"])
        good = await sam.post(
            url,
            {
                "decision": "resolve",
                "resolution": "Called them back and refunded.",
                "outcome.action": "refunded",
                "outcome.amount": "30",
                "outcome.follow_up": "false",
            },
        )
    done = await server.wait_for_run(run["id"], status="completed")

    shown = html.unescape(page.text)
    assert "What you did" in shown
    assert '<select id="a-resolve-outcome-action" name="outcome.action"' in page.text  # six
    assert "Amount refunded" in shown
    assert "as JSON" not in shown  # no JSON box where the workflow declares its outcome
    assert bad.status_code == 422
    assert after == before
    assert good.status_code == 303, good.text
    assert done["output"]["outcome"] == {"action": "refunded", "amount": 30, "follow_up": False}


async def test_a_relayed_turn_says_the_answer_is_the_users_words_not_a_reply_to_the_agent(
    page_server: Server, passwords: dict[str, str]
) -> None:
    server = page_server
    run = await server.start_run(UNCLEAR, user="sue")
    question = await support_request(server, run["id"], kind="question")
    assert question["payload"]["outcomes"] == {
        "answer": "The triage agent gets it as the customer's message and carries on."
    }
    async with signed_in(server, "sam", passwords["sam"]) as sam:
        page = text_of((await sam.http.get(f"/requests/{question['id']}")).text)
    assert "Answer — The triage agent gets it as the customer's message and carries on." in page
    assert "Relay what the customer says" in page
    # Baton's words for an answer to an agent's own question would contradict the relay
    assert "Reply to the agent's question." not in page
    assert "The agent receives your answer" not in page
