"""An approval a person lets stand: the run's later calls its rule decides run without asking.

Only a rule that says `standing: true` offers it (in the request's answer schema, worded with the
tool and the rule), only an `approve` may ask it, and only for that run, that tool and that rule.
Each call it lets run is audited as `request.auto_decided` naming the approval it stood on and
who gave it. Both of Baton's paths: MAF's own approval requests (`standing_notes`) and Baton's
gate (`standing_desk`). A refused answer changes nothing stored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.cards import actions_of, cards_in, texts_of
from tests.e2e.test_notifications import SLACK_SECRET, _click, _link_slack, _slack_headers
from tests.e2e.test_pages_http import waiting_refund
from tests.e2e.test_teams import (
    ADA,
    APP_ID,
    _activity,
    _link_people,
    _posts,
    _send,
    _token,
    teams_env,
)
from tests.e2e.test_teams import _click as _execute
from tests.fixtures import standing_approvals
from tests.harness import Server, baton_server, eventually
from tests.pages import PAGE_ENV, signed_in, text_of
from tests.receivers import HttpReceiver, http_receiver
from workflows.shipped import POLICIES

RULE = """
  - id: notes.standing
    tool: send_note
    action: approval(support-leads)
    standing: true
"""
APPROVE = {"decision": "approve"}
STANDING = {"decision": "approve", "standing": True}  # the API's


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The shipped policy (its refund rules offer no standing) with a standing rule for notes."""
    mine = tmp_path / "policies.yaml"
    mine.write_text(POLICIES.read_text().rstrip() + "\n" + RULE)
    return PAGE_ENV | {
        "BATON_WORKFLOWS": "tests.fixtures.standing_approvals",
        "BATON_POLICIES": str(mine),
    }


async def pending_of(server: Server, run_id: str) -> dict[str, Any]:
    """The run's pending request, once there is one."""

    async def probe() -> dict[str, Any] | None:
        found = (await server.run(run_id))["requests"]
        return next((r for r in found if r["status"] == "pending"), None)

    return await eventually(probe, what=f"a pending request of run {run_id}")


@pytest.mark.parametrize("workflow", ["standing_notes", "standing_desk"])
async def test_an_approval_let_stand_runs_the_rest_of_the_run_s_calls_under_its_rule_audited(
    db_url: str,
    tokens: dict[str, str],
    passwords: dict[str, str],
    server_log: Path,
    env: dict[str, str],
    workflow: str,
) -> None:
    standing_approvals.SENT.clear()
    async with baton_server(db_url, tokens, server_log, env) as server:
        run = await server.start_run({"workflow": workflow, "input": {"text": "Send the notes."}})
        first = await pending_of(server, run["id"])
        offer = first["response_schema"]["properties"]["standing"]

        before = await server.snapshot(first["id"])
        rejected = await server.respond(
            first["id"], {"decision": "reject", "reason": "no", "standing": True}, user="ada"
        )
        assert await server.snapshot(first["id"]) == before

        # a plain approval decides its own call only: the next call asks again
        assert (await server.respond(first["id"], APPROVE, user="ada")).status_code == 200
        second = await pending_of(server, run["id"])
        async with signed_in(server, "lee", passwords["lee"]) as lee:  # on the page, as lee
            form = text_of((await lee.http.get(f"/requests/{second['id']}")).text)
            sent = await lee.post(
                f"/requests/{second['id']}", {"decision": "approve", "standing": "true"}
            )
        assert sent.status_code == 303, sent.text
        # a memo is another tool (another rule): it asks; the note after it, in a later drive,
        # runs on lee's standing approval
        memo = await pending_of(server, run["id"])
        assert (await server.respond(memo["id"], APPROVE, user="ada")).status_code == 200
        done = await server.wait_for_run(run["id"], status=("completed", "failed"))
        audit = await server.audit(run["id"])
        async with signed_in(server, "ada", passwords["ada"]) as ada:
            page = text_of((await ada.http.get(f"/runs/{run['id']}")).text)

    assert (offer["title"], offer["description"]) == (
        "Also approve this run's later send_note calls",
        "They run without asking again, while rule notes.standing is the one that decides them.",
    )
    assert rejected.status_code == 422, rejected.text
    assert rejected.json()["errors"] == [
        {"loc": ["body", "standing"], "msg": "not allowed when decision is 'reject'"}
    ]
    assert done["status"] == "completed", done
    assert sorted(r["id"] for r in done["requests"]) == sorted(
        [first["id"], second["id"], memo["id"]]
    )
    assert second["proposed_action"]["arguments"] == {"to": "person-2"}
    assert memo["proposed_action"]["tool"] == "post_memo"
    assert "standing" not in memo["response_schema"]["properties"]  # no rule offers it there
    assert standing_approvals.SENT == ["person-1", "person-2", "memo to all", "person-3"]
    assert (
        "Also approve this run's later send_note calls (optional) Yes No They run without asking "
        "again, while rule notes.standing is the one that decides them."
    ) in form
    # the run's page: in its conversation, and in its audit trail for the call it let run
    assert "lee approved, and this run's later send_note calls too" in page
    assert "lee's standing approval decided: approve, under policy rule notes.standing" in page
    stood = [e["data"] for e in audit if e["type"] == "request.auto_decided"]
    assert stood == [
        {
            "tool": "send_note",
            "arguments": {"to": "person-3"},
            "decision": "approve",
            "rule": "notes.standing",
            "standing_approval": second["id"],
            "approved_by": "lee",
        }
    ]


async def test_a_request_whose_rule_offers_no_standing_refuses_one_and_changes_nothing(
    db_url: str, tokens: dict[str, str], server_log: Path, env: dict[str, str]
) -> None:
    async with baton_server(db_url, tokens, server_log, env) as server:
        pending = await waiting_refund(server)
        before = await server.snapshot(pending["id"])
        refused = await server.respond(pending["id"], STANDING, user="lee")
        after = await server.snapshot(pending["id"])

    assert "standing" not in pending["response_schema"]["properties"]
    assert refused.status_code == 422, refused.text
    assert refused.json()["errors"] == [
        {
            "loc": ["body", "standing"],
            "msg": "rule refund.medium does not let an approval stand for the run's later calls",
        }
    ]
    assert after == before


# Slack and Teams: the offer beside Approve --------------------------------------------------------

OFFER = "Also approve this run's later send_note calls"
__all__ = ["teams_env"]  # the Teams bot's stand-ins, a fixture of these tests too


def _pressed(request_id: str, slack_user: str, response_url: str, *, ticked: bool) -> bytes:
    """Approve pressed on a request's Slack message, its standing checkbox ticked or not."""
    selected = [{"value": "yes"}] if ticked else []
    payload = {
        "type": "block_actions",
        "user": {"id": slack_user},
        "response_url": response_url,
        "actions": [{"action_id": "baton.approve", "value": request_id, "type": "button"}],
        "state": {
            "values": {
                "baton.standing": {
                    "baton.standing": {"type": "checkboxes", "selected_options": selected}
                }
            }
        },
    }
    return urlencode({"payload": json.dumps(payload)}).encode()


async def _slack_message(slack: HttpReceiver, request_id: str) -> list[dict[str, Any]]:
    """The blocks of the Slack message posted for `request_id`, once it is there."""

    async def probe() -> list[dict[str, Any]] | None:
        for received in slack.at("/incoming"):
            blocks = received.json()["blocks"]
            if any(e.get("value") == request_id for e in blocks[-1]["elements"]):
                return list(blocks)
        return None

    return await eventually(probe, what=f"the Slack message of {request_id}")


def _checkbox(blocks: list[dict[str, Any]]) -> list[str]:
    """The texts of a message's standing checkbox (none: no such checkbox)."""
    return [
        option["text"]["text"]
        for block in blocks
        if block.get("block_id") == "baton.standing"
        for element in block["elements"]
        for option in element["options"]
    ]


async def test_slack_offers_the_standing_as_a_checkbox_that_approve_reads(
    db_url: str, tokens: dict[str, str], server_log: Path, env: dict[str, str]
) -> None:
    standing_approvals.SENT.clear()
    with http_receiver() as slack:
        env |= {
            "BATON_SLACK_WEBHOOK_URL": f"{slack.url}/incoming",
            "BATON_SLACK_SIGNING_SECRET": SLACK_SECRET,
        }
        reply_to = f"{slack.url}/response"
        async with baton_server(db_url, tokens, server_log, env) as server:
            await _link_slack(server, lee="U0LEE")
            run = await server.start_run(
                {"workflow": "standing_notes", "input": {"text": "Send the notes."}}
            )
            first = await pending_of(server, run["id"])
            first_message = await _slack_message(slack, first["id"])
            unticked = _pressed(first["id"], "U0LEE", reply_to, ticked=False)
            assert (await _click(server, unticked, _slack_headers(unticked))).status_code == 200
            second = await pending_of(server, run["id"])  # a plain approval: the next call asks
            ticked = _pressed(second["id"], "U0LEE", reply_to, ticked=True)
            assert (await _click(server, ticked, _slack_headers(ticked))).status_code == 200
            memo = await pending_of(server, run["id"])
            memo_message = await _slack_message(slack, memo["id"])
            assert (await server.respond(memo["id"], APPROVE, user="ada")).status_code == 200
            done = await server.wait_for_run(run["id"], status=("completed", "failed"))

            async def replies() -> list[str] | None:
                found = [r.json()["text"] for r in slack.at("/response")]
                return found if len(found) >= 2 else None

            said = await eventually(replies, what="the two clicks' replies")
            audit = await server.audit(run["id"])

    assert _checkbox(first_message) == [OFFER]
    assert _checkbox(memo_message) == []  # post_memo's rule offers no standing
    assert done["status"] == "completed", done
    assert standing_approvals.SENT == ["person-1", "person-2", "memo to all", "person-3"]
    assert sorted(said) == sorted(  # each click's reply, as it comes
        [
            f"Approved by lee: {first['title']}",
            f"Approved, and this run's later send_note calls too, by lee: {second['title']}",
        ]
    )
    answers = {e["request_id"]: e["data"] for e in audit if e["type"] == "request.answered"}
    assert "standing" not in answers[first["id"]]
    assert answers[second["id"]]["standing"] is True
    stood = [e["data"] for e in audit if e["type"] == "request.auto_decided"]
    assert [(d["arguments"], d["standing_approval"], d["approved_by"]) for d in stood] == [
        ({"to": "person-3"}, second["id"], "lee")
    ]


async def _card_of_request(connector: Any, request_id: str) -> dict[str, Any]:
    """The card the bot posted for `request_id`, once it is there (checked against the schema)."""

    async def probe() -> dict[str, Any] | None:
        for posted in connector.posts():
            for card in cards_in(posted.json()) if posted.json().get("attachments") else []:
                approve = actions_of(card).get("Approve")
                if approve and approve["data"]["request_id"] == request_id:
                    return card
        return None

    return await eventually(probe, what=f"the Teams card of {request_id}")


def _toggles(card: dict[str, Any]) -> list[str]:
    return [item["title"] for item in card["body"] if item["type"] == "Input.Toggle"]


async def test_a_teams_card_offers_the_standing_as_a_toggle_sent_with_approve(
    db_url: str, tokens: dict[str, str], server_log: Path, env: dict[str, str], teams_env: Any
) -> None:
    standing_approvals.SENT.clear()
    connector, teams = teams_env
    async with baton_server(db_url, tokens, server_log, env | teams) as server:
        await _link_people(server)  # ada by her Entra object id
        added = _activity(
            connector, "ada", ADA, type="conversationUpdate", membersAdded=[{"id": f"28:{APP_ID}"}]
        )
        assert (await _send(server, added, _token(connector))).status_code == 200
        await _posts(connector, 1)
        link = _activity(
            connector, "ada", ADA, type="message", text="<at>Baton</at> link support-leads"
        )
        assert (await _send(server, link, _token(connector))).status_code == 200
        await _posts(connector, 2)

        run = await server.start_run(
            {"workflow": "standing_notes", "input": {"text": "Send the notes."}}
        )
        first = await pending_of(server, run["id"])
        card = await _card_of_request(connector, first["id"])
        approve = actions_of(card)["Approve"]
        pressed = _execute(connector, "ada", ADA, approve, standing="true")
        approved = await _send(server, pressed, _token(connector))
        memo = await pending_of(server, run["id"])
        memo_card = await _card_of_request(connector, memo["id"])
        assert (await server.respond(memo["id"], APPROVE, user="ada")).status_code == 200
        done = await server.wait_for_run(run["id"], status=("completed", "failed"))
        audit = await server.audit(run["id"])

    assert _toggles(card) == [OFFER]
    assert _toggles(memo_card) == []  # post_memo's rule offers no standing
    assert approved.status_code == 200, approved.text
    shown = texts_of(approved.json()["value"])
    assert "Approved, and this run's later send_note calls too, by ada" in shown, shown
    assert done["status"] == "completed", done
    assert standing_approvals.SENT == ["person-1", "person-2", "memo to all", "person-3"]
    stood = [e["data"] for e in audit if e["type"] == "request.auto_decided"]
    assert [(d["arguments"], d["standing_approval"], d["approved_by"]) for d in stood] == [
        ({"to": "person-2"}, first["id"], "ada"),
        ({"to": "person-3"}, first["id"], "ada"),
    ]
