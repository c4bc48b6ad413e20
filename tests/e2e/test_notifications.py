"""Notifications through the outbox, received by real servers: webhooks, Slack, email over SMTP."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit
from zoneinfo import ZoneInfo

import httpx
import pytest

from baton.wiring import open_parts
from human.channels.links import LinkSigner
from tests.harness import (
    REFUND_120,
    InProcessServer,
    Server,
    baton_server,
    eventually,
    refunds,
    types_of,
)
from tests.receivers import HttpReceiver, http_receiver, smtp_server, stalling_receiver

WEBHOOK_SECRET = "webhook-secret-for-tests"
SLACK_SECRET = "slack-signing-secret-for-tests"


VIEWER_TOLD = (
    "You cannot answer this request because you are a viewer: you can read requests, not answer "
    "them."
)
"""What a viewer's click is told (the service's `to_reader`)."""


def _webhook_signature_ok(headers: dict[str, str], body: bytes) -> bool:
    """What a receiver does, as the README shows: HMAC-SHA256 of `timestamp.body`."""
    timestamp = headers["x-baton-timestamp"]
    expected = hmac.new(
        WEBHOOK_SECRET.encode(), f"{timestamp}.".encode() + body, hashlib.sha256
    ).hexdigest()
    return hmac.compare_digest(headers["x-baton-signature"], f"v1={expected}")


async def _notified(server: Server, request_id: str, status: str) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        request = await server.request(request_id)
        notes = request["notifications"]
        return request if notes and all(n["status"] == status for n in notes) else None

    return await eventually(probe, what=f"notifications of {request_id} to be {status}")


async def test_webhooks_are_signed_retried_after_a_500_and_given_up_after_the_bound(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    with http_receiver(script=[500, 500, 500, 500]) as hooks:
        env = {
            "BATON_WEBHOOK_URL": f"{hooks.url}/baton",
            "BATON_WEBHOOK_SECRET": WEBHOOK_SECRET,
            "BATON_NOTIFY_MAX_ATTEMPTS": "3",
            "BATON_NOTIFY_BACKOFF_SECONDS": "0.2",
        }
        async with baton_server(db_url, tokens, server_log, env) as server:
            first = await server.start_run(REFUND_120)
            doomed = (await server.wait_for_request(first["id"]))["id"]
            failed = await _notified(server, doomed, "failed")
            second = await server.start_run(REFUND_120)
            lucky = (await server.wait_for_request(second["id"]))["id"]
            sent = await _notified(server, lucky, "sent")
            events = await server.audit(first["id"]) + await server.audit(second["id"])

    [gave_up] = failed["notifications"]
    assert (gave_up["channel"], gave_up["event"], gave_up["attempts"]) == ("webhook", "created", 3)
    assert gave_up["last_error"].startswith("webhook: HTTP 500")
    [delivered] = sent["notifications"]
    assert (delivered["status"], delivered["attempts"]) == ("sent", 2)

    received = hooks.at("/baton")
    assert [r.status for r in received] == [500, 500, 500, 500, 200]
    for r in received:
        assert _webhook_signature_ok(r.headers, r.body), r.headers
        assert r.headers["x-baton-event"] == "request.created"
        assert r.headers["content-type"] == "application/json"
    assert {r.headers["x-baton-delivery"] for r in received[:3]} == {gave_up["id"]}
    assert {r.headers["x-baton-delivery"] for r in received[3:]} == {delivered["id"]}
    payload = received[-1].json()
    assert payload["event"] == "request.created"
    assert payload["delivery_id"] == delivered["id"]
    assert payload["request"]["id"] == lucky
    assert payload["request"]["team"] == "support-leads"
    assert payload["request"]["proposed_action"]["arguments"] == {
        "order_id": "A-1002",
        "amount": 120.0,
    }
    notified = [
        (e["request_id"], e["data"]["outcome"], e["data"]["attempt"])
        for e in events
        if e["type"] == "request.notified"
    ]
    assert notified == [
        (doomed, "retrying", 1),
        (doomed, "retrying", 2),
        (doomed, "failed", 3),
        (lucky, "retrying", 1),
        (lucky, "sent", 2),
    ]
    # A wrong secret would not verify: the check above is not vacuous.
    tampered = dict(received[-1].headers) | {"x-baton-timestamp": "1"}
    assert not _webhook_signature_ok(tampered, received[-1].body)


# Slack --------------------------------------------------------------------------------------


def _slack_click(
    request_id: str, slack_user: str, action: str, response_url: str, *, trigger_id: str = ""
) -> bytes:
    payload = {
        "type": "block_actions",
        "trigger_id": trigger_id,
        "user": {"id": slack_user, "username": slack_user.lower()},
        "response_url": response_url,
        "actions": [{"action_id": action, "value": request_id, "type": "button"}],
    }
    return urlencode({"payload": json.dumps(payload)}).encode()


def _slack_headers(
    body: bytes, *, at: int | None = None, secret: str = SLACK_SECRET
) -> dict[str, str]:
    timestamp = str(at if at is not None else int(time.time()))
    digest = hmac.new(secret.encode(), f"v0:{timestamp}:".encode() + body, hashlib.sha256)
    return {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": timestamp,
        "X-Slack-Signature": f"v0={digest.hexdigest()}",
    }


async def _click(server: Server, body: bytes, headers: dict[str, str]) -> httpx.Response:
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30.0) as client:
        return await client.post("/integrations/slack/actions", content=body, headers=headers)


async def _link_slack(server: Server, **slack_ids: str) -> None:
    """Link Baton users to Slack ids, as an admin does through the users API."""
    async with server.client("ada") as admin:
        for name, slack_id in slack_ids.items():
            linked = await admin.patch(f"/api/users/{name}", json={"slack_id": slack_id})
            assert linked.status_code == 200, linked.text


async def _replies(slack: HttpReceiver, count: int) -> list[Any]:
    async def probe() -> list[Any] | None:
        found = [r.json() for r in slack.at("/response")]
        return found if len(found) >= count else None

    return await eventually(probe, what=f"{count} replies to response_url")


async def test_slack_message_buttons_and_signed_callbacks(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    with http_receiver() as slack:
        env = {
            "BATON_SLACK_WEBHOOK_URL": f"{slack.url}/incoming",
            "BATON_SLACK_SIGNING_SECRET": SLACK_SECRET,
        }
        async with baton_server(db_url, tokens, server_log, env) as server:
            await _link_slack(server, lee="U0LEE", val="U0VAL")
            run = await server.start_run(REFUND_120)
            asked = await server.wait_for_request(run["id"])
            rid = asked["id"]

            async def message() -> Any:
                found = slack.at("/incoming")
                return found[0].json() if found else None

            posted = await eventually(message, what="the Slack message")
            await _notified(server, rid, "sent")  # its delivery recorded: nothing else moves
            before = await server.snapshot(rid)
            reply_to = f"{slack.url}/response"
            approve = _slack_click(rid, "U0LEE", "baton.approve", reply_to)

            forged = await _click(server, approve, _slack_headers(approve, secret="not-it"))
            stale = await _click(
                server, approve, _slack_headers(approve, at=int(time.time()) - 6 * 60)
            )
            unsigned = await _click(server, approve, {"Content-Type": "text/plain"})
            assert [forged.status_code, stale.status_code, unsigned.status_code] == [401] * 3
            assert "five minutes" in stale.json()["detail"]
            assert await server.snapshot(rid) == before

            stranger = _slack_click(rid, "U0NOBODY", "baton.approve", reply_to)
            assert (await _click(server, stranger, _slack_headers(stranger))).status_code == 200
            viewer = _slack_click(rid, "U0VAL", "baton.approve", reply_to)
            assert (await _click(server, viewer, _slack_headers(viewer))).status_code == 200
            refusals = await _replies(slack, 2)
            assert await server.snapshot(rid) == before

            clicked = await _click(server, approve, _slack_headers(approve))
            assert clicked.status_code == 200, clicked.text
            again = await _click(server, approve, _slack_headers(approve))
            assert again.status_code == 200, again.text
            updates = (await _replies(slack, 4))[2:]
            done = await server.wait_for_run(run["id"], status="completed")

            second = await server.start_run(REFUND_120)
            other = (await server.wait_for_request(second["id"]))["id"]
            reject = _slack_click(other, "U0LEE", "baton.reject", reply_to)
            assert (await _click(server, reject, _slack_headers(reject))).status_code == 200
            rejected = await server.wait_for_run(second["id"], status="completed")
            events = await server.audit(run["id"])

    blocks = posted["blocks"]
    assert blocks[0]["type"] == "header"
    assert blocks[0]["text"]["text"] == "Refund 120.00 on order A-1002"
    assert "support-leads" in blocks[1]["text"]["text"]  # the reason
    fields = " ".join(f["text"] for f in blocks[2]["fields"])
    assert "*Amount*\n120.00 EUR" in fields  # as the request's page says it
    assert "*Order ID*\nA-1002" in fields
    # its times on each reader's clock: Slack's date token, in UTC where a client cannot say it
    deadline = datetime.fromisoformat(asked["expires_at"])
    escalates = datetime.fromisoformat(asked["created_at"]) + timedelta(hours=4)
    for name, moment, then in (
        ("deadline", deadline, ""),
        ("escalates", escalates, " unless answered: it goes to managers at high priority"),
    ):
        token = f"<!date^{int(moment.timestamp())}^{{date_short_pretty}} {{time}}"
        said = f"{token}|{moment.astimezone(UTC):%Y-%m-%d %H:%M} UTC>{then}"
        assert f"*{name.capitalize()}*\n{said}" in fields
    buttons = {e["action_id"]: e for e in blocks[-1]["elements"]}
    assert buttons["baton.approve"]["value"] == rid
    assert buttons["baton.reject"]["value"] == rid
    assert buttons["baton.open"]["url"].endswith(f"/requests/{rid}")

    assert [r["response_type"] for r in refusals] == ["ephemeral", "ephemeral"]
    # each refusal is posted to response_url as its click is handled: in either order
    stranger_said, viewer_said = sorted(
        (r["text"] for r in refusals), key=lambda text: "not linked" not in text
    )
    assert "not linked to a Baton user" in stranger_said
    assert VIEWER_TOLD in viewer_said  # said to them
    for update in updates:  # the click, and the same click again: the same outcome
        assert update["replace_original"] is True
        assert update["text"].startswith("Approved by lee")
        assert all(b["type"] != "actions" or len(b["elements"]) == 1 for b in update["blocks"])
    assert "Refunded 120.00" in done["output"]["text"]
    assert types_of(events).count("request.answered") == 1
    [answered] = [e for e in events if e["type"] == "request.answered"]
    assert answered["actor"] == "lee"
    [closed] = rejected["requests"]
    assert closed["answer"] == {"decision": "reject", "reason": "Rejected from Slack by lee"}


def _press(button: dict[str, Any], slack_user: str, response_url: str) -> bytes:
    """The `block_actions` Slack sends when `slack_user` presses `button` of a Baton message."""
    payload = {
        "type": "block_actions",
        "user": {"id": slack_user},
        "response_url": response_url,
        "actions": [{"action_id": button["action_id"], "value": button["value"], "type": "button"}],
    }
    return urlencode({"payload": json.dumps(payload)}).encode()


async def _buttons(slack: HttpReceiver, request_id: str) -> dict[str, dict[str, Any]] | None:
    """The buttons of the message posted for `request_id`, by their text (None: not yet)."""
    for received in slack.at("/incoming"):
        [*_, actions] = received.json()["blocks"]
        by_text = {e["text"]["text"]: e for e in actions["elements"]}
        if by_text["Open in Baton"]["url"].endswith(f"/requests/{request_id}"):
            return by_text
    return None


async def test_slack_answers_a_yes_or_no_and_a_choice_of_a_few_with_a_button_each(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    with http_receiver() as slack:
        env = {
            "BATON_SLACK_WEBHOOK_URL": f"{slack.url}/incoming",
            "BATON_SLACK_SIGNING_SECRET": SLACK_SECRET,
            "BATON_WORKFLOWS": "tests.samples.checkpointed,tests.samples.typed_review,"
            "tests.fixtures.triage_workflow",
        }
        async with baton_server(db_url, tokens, server_log, env) as server:
            await _link_slack(server, max="U0MAX", lee="U0LEE", val="U0VAL")
            reply_to = f"{slack.url}/response"

            release = await server.start_run(
                {"workflow": "checkpointed", "input": {"release": "2.0"}}
            )
            first = (await server.wait_for_request(release["id"]))["id"]
            step_one = await eventually(lambda: _buttons(slack, first), what="a message")
            assert list(step_one) == ["Yes", "No", "Open in Baton"]
            await _notified(server, first, "sent")
            before = await server.snapshot(first)

            yes = _press(step_one["Yes"], "U0MAX", reply_to)
            forged = await _click(server, yes, _slack_headers(yes, secret="not-it"))
            assert forged.status_code == 401
            viewer = _press(step_one["Yes"], "U0VAL", reply_to)
            assert (await _click(server, viewer, _slack_headers(viewer))).status_code == 200
            await _replies(slack, 1)
            assert await server.snapshot(first) == before

            assert (await _click(server, yes, _slack_headers(yes))).status_code == 200
            answered = await server.request(first)
            assert (answered["answered_by"], answered["answer"]) == (
                "max",
                {"decision": "answer", "answer": True},
            )
            second = (await server.wait_for_request(release["id"]))["id"]  # step 2 of 2
            step_two = await eventually(lambda: _buttons(slack, second), what="step 2")
            no = _press(step_two["No"], "U0MAX", reply_to)
            assert (await _click(server, no, _slack_headers(no))).status_code == 200
            stopped = await server.wait_for_run(release["id"], status="completed")

            triage = await server.start_run({"workflow": "triage", "input": {"service": "mail"}})
            incident = (await server.wait_for_request(triage["id"]))["id"]
            severities = await eventually(lambda: _buttons(slack, incident), what="triage")
            urgent = _press(severities["Urgent"], "U0LEE", reply_to)
            assert (await _click(server, urgent, _slack_headers(urgent))).status_code == 200
            triaged = await server.wait_for_run(triage["id"], status="completed")

            review = await server.start_run(
                {"workflow": "typed_review", "input": {"title": "Spring launch post"}}
            )
            draft = (await server.wait_for_request(review["id"]))["id"]
            only_open = await eventually(lambda: _buttons(slack, draft), what="review")
            replies = await _replies(slack, 4)

    # each reply is posted after its click is answered: in whatever order they arrive
    [refusal] = [r for r in replies if r.get("response_type") == "ephemeral"]
    updates = [r for r in replies if r is not refusal]
    assert refusal["text"] == f"Could not answer: no request {first}"  # not val's to see
    assert stopped["output"] == "2.0 stopped at step 2"
    assert list(severities) == ["Low", "Needs care", "Urgent", "Open in Baton"]
    assert triaged["output"] == "mail: URGENT"  # delivered as the Enum member
    assert list(only_open) == ["Open in Baton"]  # a form's worth of answer: on the page
    assert sorted(u["text"] for u in updates) == [
        "Answered No by max: Sign off 2.0 (step 2 of 2)",
        "Answered Urgent by lee: Incident from triage",
        "Answered Yes by max: Sign off 2.0 (step 1 of 2)",
    ]
    for update in updates:  # the message now says who answered what, with no answer buttons
        assert update["replace_original"] is True
        [*_, actions] = update["blocks"]
        assert [e["action_id"] for e in actions["elements"]] == ["baton.open"]


def _submitted(view: dict[str, Any], slack_user: str, values: dict[str, Any]) -> bytes:
    """The `view_submission` Slack sends when a modal it was asked to open (`view`) is sent,
    its inputs' state `values` (block id -> action id -> element)."""
    payload = {
        "type": "view_submission",
        "user": {"id": slack_user},
        "view": {
            "id": "V0MODAL",
            "callback_id": view["callback_id"],
            "private_metadata": view["private_metadata"],
            "state": {"values": values},
        },
    }
    return urlencode({"payload": json.dumps(payload)}).encode()


def _reason_sent(view: dict[str, Any], slack_user: str, reason: str | None) -> bytes:
    """The reason modal sent with `reason` typed."""
    value = {"type": "plain_text_input", "value": reason}
    return _submitted(view, slack_user, {"reason": {"reason": value}})


def _with_bot(slack: HttpReceiver) -> dict[str, str]:
    """Slack with a bot token: its Web API (`views.open`) is the receiver's `/api/`."""
    return {
        "BATON_SLACK_WEBHOOK_URL": f"{slack.url}/incoming",
        "BATON_SLACK_SIGNING_SECRET": SLACK_SECRET,
        "BATON_SLACK_BOT_TOKEN": "xoxb-test-token",
        "BATON_SLACK_API_URL": f"{slack.url}/api/",
    }


async def test_slack_reject_asks_for_the_reason_in_a_modal_when_baton_has_a_bot_token(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    opened = {"ok": True, "view": {"id": "V0REASON"}}
    with http_receiver(answers={"/api/views.open": opened}) as slack:
        env = _with_bot(slack)
        async with baton_server(db_url, tokens, server_log, env) as server:
            await _link_slack(server, lee="U0LEE", val="U0VAL")
            run = await server.start_run(REFUND_120)
            rid = (await server.wait_for_request(run["id"]))["id"]
            await _notified(server, rid, "sent")  # the message went out: nothing else moves
            before = await server.snapshot(rid)
            reply_to = f"{slack.url}/response"
            # a viewer is told at once, without a form to fill in first
            looker = _slack_click(rid, "U0VAL", "baton.reject", reply_to, trigger_id="T0VAL")
            assert (await _click(server, looker, _slack_headers(looker))).status_code == 200
            [told] = await _replies(slack, 1)
            assert slack.at("/api/views.open") == []
            body = _slack_click(rid, "U0LEE", "baton.reject", reply_to, trigger_id="T0TRIGGER")
            clicked = await _click(server, body, _slack_headers(body))
            assert (clicked.status_code, clicked.content) == (200, b"")
            [asked] = slack.at("/api/views.open")
            view = asked.json()["view"]
            assert await server.snapshot(rid) == before  # a click that asks answers nothing

            refusals = {}
            for why, who, reason in (
                ("no reason", "U0LEE", "   "),
                ("not linked", "U0NOBODY", "because"),
            ):
                sent = _reason_sent(view, who, reason)
                reply = await _click(server, sent, _slack_headers(sent))
                assert reply.status_code == 200, reply.text
                refusals[why] = reply.json()
            assert await server.snapshot(rid) == before

            because = "The customer was already refunded by bank transfer."
            sent = _reason_sent(view, "U0LEE", because)
            forged = await _click(server, sent, _slack_headers(sent, secret="not-it"))
            assert forged.status_code == 401
            assert await server.snapshot(rid) == before
            closed = await _click(server, sent, _slack_headers(sent))
            assert (closed.status_code, closed.content) == (200, b"")  # the modal closes
            done = await server.wait_for_run(run["id"], status="completed")
            [_, update] = await _replies(slack, 2)

    assert asked.headers["authorization"] == "Bearer xoxb-test-token"
    assert asked.json()["trigger_id"] == "T0TRIGGER"
    assert view["callback_id"] == "baton.reject_reason"
    assert json.loads(view["private_metadata"]) == {"request_id": rid, "response_url": reply_to}
    assert "Refund 120.00 on order A-1002" in view["blocks"][0]["text"]["text"]
    assert view["blocks"][1]["element"]["action_id"] == "reason"
    assert refusals["no reason"] == {
        "response_action": "errors",
        "errors": {"reason": "A reason is required: the agent is told why."},
    }
    assert "not linked to a Baton user" in refusals["not linked"]["errors"]["reason"]
    [request] = done["requests"]
    assert request["answer"] == {"decision": "reject", "reason": because}
    assert request["answered_by"] == "lee"
    assert because in done["output"]["text"]
    assert update["text"].startswith("Rejected by lee")
    assert told["response_type"] == "ephemeral"
    assert told["text"] == VIEWER_TOLD


def _form_sent(view: dict[str, Any], slack_user: str, values: dict[str, Any]) -> bytes:
    """The modal of a decision's form sent: each input block's value as Slack sends it.

    `values` maps a block id (a field's path) to text, or to `("radio", value)` for a choice.
    """
    state = {}
    for block_id, value in values.items():
        if isinstance(value, tuple):
            element = {"type": "radio_buttons", "selected_option": {"value": value[1]}}
        else:
            element = {"type": "plain_text_input", "value": value}
        state[block_id] = {"value": element}
    return _submitted(view, slack_user, state)


async def _sent(server: Server, body: bytes) -> httpx.Response:
    reply = await _click(server, body, _slack_headers(body))
    assert reply.status_code == 200, reply.text
    return reply


async def test_slack_opens_an_edit_or_a_typed_answer_as_the_page_s_form_in_a_modal(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    opened = {"ok": True, "view": {"id": "V0FORM"}}
    with http_receiver(answers={"/api/views.open": opened}) as slack:
        env = _with_bot(slack) | {"BATON_WORKFLOWS": "tests.samples.typed_review"}
        async with baton_server(db_url, tokens, server_log, env) as server:
            await _link_slack(server, lee="U0LEE", val="U0VAL")
            reply_to = f"{slack.url}/response"
            run = await server.start_run(REFUND_120)
            rid = (await server.wait_for_request(run["id"]))["id"]
            refund_buttons = await eventually(lambda: _buttons(slack, rid), what="a message")
            await _notified(server, rid, "sent")  # the message went out: nothing else moves
            before = await server.snapshot(rid)
            # a viewer is told at once; lee's click opens the edit's modal
            looked = _slack_click(rid, "U0VAL", "baton.form.edit", reply_to, trigger_id="T0VAL")
            await _sent(server, looked)
            [told] = await _replies(slack, 1)
            click = _slack_click(rid, "U0LEE", "baton.form.edit", reply_to, trigger_id="T0EDIT")
            await _sent(server, click)
            [asked] = slack.at("/api/views.open")
            edit = asked.json()["view"]
            below_zero = (
                await _sent(server, _form_sent(edit, "U0LEE", {"arguments.amount": "-5"}))
            ).json()
            assert await server.snapshot(rid) == before
            typed = {"arguments.amount": "80", "reason": "half was found"}
            # checked first, as on the page: the modal shows what it changes, then Confirm edit
            checked = (await _sent(server, _form_sent(edit, "U0LEE", typed))).json()
            assert await server.snapshot(rid) == before
            confirm = checked["view"]
            closed = await _sent(server, _form_sent(confirm, "U0LEE", typed))
            done = await server.wait_for_run(run["id"], status="completed")
            [_, edited] = await _replies(slack, 2)

            review = await server.start_run(
                {"workflow": "typed_review", "input": {"title": "Spring launch post"}}
            )
            draft = (await server.wait_for_request(review["id"]))["id"]
            review_buttons = await eventually(lambda: _buttons(slack, draft), what="review")
            click = _slack_click(draft, "U0LEE", "baton.form.answer", reply_to, trigger_id="T0ANS")
            await _sent(server, click)
            answer = slack.at("/api/views.open")[-1].json()["view"]
            values: dict[str, Any] = {
                "answer.verdict": ("radio", "publish"),
                "answer.score": "9",
                "answer.tags": "launch\nspring",
                "answer.followup.owner": "kim",
                "answer.followup.due_in_days": "7",
            }
            too_high = (await _sent(server, _form_sent(answer, "U0LEE", values))).json()
            values["answer.score"] = "4"
            await _sent(server, _form_sent(answer, "U0LEE", values))
            reviewed = await server.wait_for_run(review["id"], status="completed")
            the_refunds = await refunds(db_url)

    assert list(refund_buttons) == ["Approve", "Reject", "Edit…", "Open in Baton"]
    assert told["text"] == VIEWER_TOLD
    assert asked.json()["trigger_id"] == "T0EDIT"
    assert edit["callback_id"] == "baton.form"
    assert json.loads(edit["private_metadata"]) == {
        "request_id": rid,
        "decision": "edit",
        "response_url": reply_to,
        "kept": {"arguments.order_id": "A-1002"},
    }
    by_block = {b.get("block_id"): b for b in edit["blocks"]}
    amount = by_block["arguments.amount"]["element"]
    assert (amount["type"], amount["initial_value"], amount["is_decimal_allowed"]) == (
        "number_input",
        "120.00",  # money, as the page shows it
        True,
    )
    assert any("Order ID:* A-1002" in str(b.get("text")) for b in edit["blocks"])
    # the approver's note is theirs, apart from the tool's arguments (as on the page)
    assert any("*Arguments of issue_refund*" in str(b.get("text")) for b in edit["blocks"])
    assert by_block["reason"]["label"]["text"] == "Your note"
    assert "issue_refund does not receive it" in by_block["reason"]["hint"]["text"]
    assert below_zero == {
        "response_action": "errors",
        "errors": {"arguments.amount": "-5 is less than or equal to the minimum of 0"},
    }
    assert checked["response_action"] == "update"
    assert confirm["submit"]["text"] == "Confirm edit"
    assert "Amount: 120 → 80" in confirm["blocks"][0]["text"]["text"]
    assert "your approval is enough" in confirm["blocks"][0]["text"]["text"]
    confirm_fields = {b.get("block_id"): b for b in confirm["blocks"]}
    assert confirm_fields["arguments.amount"]["element"]["initial_value"] == "80"  # as typed
    assert closed.content == b""  # the modal closes
    [request] = done["requests"]
    assert request["answer"]["arguments"] == {"order_id": "A-1002", "amount": 80}
    assert request["answer"]["reason"] == "half was found"
    assert [r["amount"] for r in the_refunds] == [80.0]
    assert edited["text"].startswith("Approved with changes by lee")

    assert list(review_buttons) == ["Answer…", "Open in Baton"]
    fields = {b.get("block_id"): b for b in answer["blocks"]}
    assert fields["answer.verdict"]["element"]["type"] == "radio_buttons"
    assert fields["answer.score"]["element"]["min_value"] == "1"
    assert fields["answer.tags"]["element"]["multiline"] is True
    assert fields["answer.followup.owner"]["optional"] is True  # only once its group is begun
    assert "answer.score" in too_high["errors"]
    assert reviewed["output"]["score"] == 4
    assert reviewed["output"]["tags"] == ["launch", "spring"]
    assert reviewed["output"]["followup"] == "kim"


async def test_slack_actions_without_a_signing_secret_is_not_there(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        body = _slack_click("req_x", "U0LEE", "baton.approve", "http://127.0.0.1:9/x")
        reply = await _click(server, body, _slack_headers(body))
    assert (reply.status_code, reply.json()["error"]) == (404, "not_configured")


# email --------------------------------------------------------------------------------------


async def test_email_to_the_team_over_starttls_with_a_signed_deep_link(
    db_url: str, tokens: dict[str, str], server_log: Path, tmp_path: Path
) -> None:
    with smtp_server(tmp_path) as smtp:
        env = {
            "BATON_SMTP_URL": smtp.url(starttls="true"),
            "BATON_SMTP_FROM": "baton@baton.example",
            "BATON_BASE_URL": "https://baton.example",
            "BATON_SECRET_KEY": "email-link-secret",
        }
        async with baton_server(db_url, tokens, server_log, env) as server:
            run = await server.start_run(REFUND_120)
            asked = await server.wait_for_request(run["id"])
            rid = asked["id"]
            notified = await _notified(server, rid, "sent")

            async def mail() -> Any:
                return smtp.mails[0] if smtp.mails else None

            received = await eventually(mail, what="the email")
            link = received.message.get_body(("plain",)).get_content().splitlines()[-1]
            async with server.anonymous() as anonymous:
                parts = urlsplit(link)
                peek = await anonymous.get(f"/api/requests/{rid}", params=parts.query)

    assert (received.tls, received.login) == (True, "baton")
    assert received.sender == "baton@baton.example"
    # support-leads: lee, val (a viewer, who still sees), and ada (admin, in every team)
    assert sorted(received.recipients) == [
        "ada@example.com",
        "lee@example.com",
        "val@example.com",
    ]
    message = received.message
    assert message["Subject"] == "[Baton] For support-leads: Refund 120.00 on order A-1002"
    text = message.get_body(("plain",)).get_content()
    html = message.get_body(("html",)).get_content()
    assert "Refunds of this size need approval by support-leads" in text
    assert "An approval request waits for support-leads." in text
    # refund.medium: a deadline a day away, and the managers' turn after 4 h, which comes first
    created = datetime.fromisoformat(asked["created_at"])
    deadline = datetime.fromisoformat(asked["expires_at"])
    assert f"  Deadline: {deadline:%Y-%m-%d %H:%M} UTC\r\n" in text
    escalates = created + timedelta(hours=4)
    assert (
        f"  Escalates: {escalates:%Y-%m-%d %H:%M} UTC unless answered: it goes to managers at "
        "high priority\r\n"
    ) in text
    assert link.startswith(f"https://baton.example/requests/{rid}?sig=")
    assert f'href="{link}"' in html.replace("&amp;", "&")
    [note] = notified["notifications"]
    assert message["X-Baton-Delivery"] == note["id"]
    signer = LinkSigner("email-link-secret", "https://baton.example")
    sig = link.split("sig=", 1)[1]
    assert signer.verify(rid, sig) == note["id"]
    assert signer.verify("req_other", sig) is None
    assert LinkSigner("another-secret", "https://baton.example").verify(rid, sig) is None
    assert peek.status_code == 401  # the link is no credential
    assert smtp.refusals == []


async def test_email_gives_each_recipient_the_times_on_their_own_clock(
    db_url: str, tokens: dict[str, str], server_log: Path, tmp_path: Path
) -> None:
    """One message a time zone among the team (in one connection), its times on that clock."""
    with smtp_server(tmp_path) as smtp:
        env = {"BATON_SMTP_URL": smtp.url(starttls="true"), "BATON_SMTP_FROM": "baton@b.example"}
        async with baton_server(db_url, tokens, server_log, env) as server:
            async with server.client("ada") as ada:
                for name, zone in (("lee", "America/Los_Angeles"), ("val", "America/Los_Angeles")):
                    set_zone = await ada.patch(f"/api/users/{name}", json={"time_zone": zone})
                    assert set_zone.status_code == 200, set_zone.text
            run = await server.start_run(REFUND_120)
            asked = await server.wait_for_request(run["id"])
            notified = await _notified(server, asked["id"], "sent")

            async def mails() -> Any:
                return smtp.mails if len(smtp.mails) >= 2 else None

            received = await eventually(mails, what="two emails")

    by_recipients = {tuple(sorted(mail.recipients)): mail.message for mail in received}
    assert sorted(by_recipients) == [("ada@example.com",), ("lee@example.com", "val@example.com")]
    deadline = datetime.fromisoformat(asked["expires_at"])
    escalates = datetime.fromisoformat(asked["created_at"]) + timedelta(hours=4)
    pacific = ZoneInfo("America/Los_Angeles")
    for recipients, zone in (
        (("ada@example.com",), UTC),
        (("lee@example.com", "val@example.com"), pacific),
    ):
        message = by_recipients[recipients]
        text = message.get_body(("plain",)).get_content()
        html = message.get_body(("html",)).get_content()
        for said in (
            f"Deadline: {_on(deadline, zone)}",
            f"Escalates: {_on(escalates, zone)} unless answered: it goes to managers",
        ):
            assert said in text, text
            assert said.split(": ", 1)[1] in html, html
    assert (
        " UTC"
        not in by_recipients[("lee@example.com", "val@example.com")]
        .get_body(("plain",))
        .get_content()
    )
    ids = {message["Message-ID"] for message in by_recipients.values()}
    assert len(ids) == 2  # each its own id; one delivery
    [note] = notified["notifications"]
    assert [message["X-Baton-Delivery"] for message in by_recipients.values()] == [note["id"]] * 2
    assert [mail.connection for mail in received] == [0, 0]  # both sent in one connection


async def test_a_retry_sends_only_the_zones_messages_the_relay_had_not_taken(
    db_url: str, tokens: dict[str, str], server_log: Path, tmp_path: Path
) -> None:
    """The relay takes one zone's message and refuses the next: the retry sends that one alone."""
    with smtp_server(tmp_path, refuse_data={1}) as smtp:
        env = {
            "BATON_SMTP_URL": smtp.url(starttls="true"),
            "BATON_NOTIFY_BACKOFF_SECONDS": "0.1",
        }
        async with baton_server(db_url, tokens, server_log, env) as server:
            async with server.client("ada") as ada:
                for name in ("lee", "val"):
                    set_zone = await ada.patch(
                        f"/api/users/{name}", json={"time_zone": "America/Los_Angeles"}
                    )
                    assert set_zone.status_code == 200, set_zone.text
            run = await server.start_run(REFUND_120)
            rid = (await server.wait_for_request(run["id"]))["id"]
            sent = await _notified(server, rid, "sent")
            events = await server.audit(run["id"])

    assert smtp.data_commands == 3  # two in the first attempt (the second refused), one after
    assert sorted(sorted(mail.recipients) for mail in smtp.mails) == [
        ["ada@example.com"],
        ["lee@example.com", "val@example.com"],
    ]
    [note] = sent["notifications"]
    assert (note["attempts"], note["parts_sent"]) == (2, ["America/Los_Angeles"])
    assert "451" in note["last_error"]
    tried = [e["data"] for e in events if e["type"] == "request.notified"]
    assert [(t["outcome"], t.get("parts_sent")) for t in tried] == [
        ("retrying", ["America/Los_Angeles"]),
        ("sent", None),
    ]


def _on(moment: datetime, zone: Any) -> str:
    """As a person on `zone`'s clock reads `moment`: day, time and the zone's abbreviation."""
    seen = moment.astimezone(zone)
    label = "UTC" if zone is UTC else seen.tzname()
    return f"{seen:%Y-%m-%d %H:%M} {label}"


async def test_email_that_cannot_be_sent_is_retried_then_shown_as_failed(
    db_url: str, tokens: dict[str, str], server_log: Path, tmp_path: Path
) -> None:
    with smtp_server(tmp_path) as smtp:
        env = {
            "BATON_SMTP_URL": smtp.url(starttls="false"),  # the server insists on STARTTLS
            "BATON_NOTIFY_MAX_ATTEMPTS": "2",
            "BATON_NOTIFY_BACKOFF_SECONDS": "0.1",
        }
        async with baton_server(db_url, tokens, server_log, env) as server:
            run = await server.start_run(REFUND_120)
            rid = (await server.wait_for_request(run["id"]))["id"]
            failed = await _notified(server, rid, "failed")
            events = await server.audit(run["id"])

    [note] = failed["notifications"]
    assert (note["channel"], note["attempts"]) == ("email", 2)
    assert note["last_error"].startswith("email: ")
    assert smtp.mails == []
    outcomes = [e["data"]["outcome"] for e in events if e["type"] == "request.notified"]
    assert outcomes == ["retrying", "failed"]


# reassignment -------------------------------------------------------------------------------


async def test_a_reassigned_request_is_announced_to_whoever_now_holds_it(
    db_url: str, tokens: dict[str, str], server_log: Path, tmp_path: Path
) -> None:
    with http_receiver() as hooks, smtp_server(tmp_path) as smtp:
        env = {
            "BATON_WEBHOOK_URL": f"{hooks.url}/baton",
            "BATON_WEBHOOK_SECRET": WEBHOOK_SECRET,
            "BATON_SMTP_URL": smtp.url(starttls="true"),
        }
        async with baton_server(db_url, tokens, server_log, env) as server:
            run = await server.start_run(REFUND_120)
            rid = (await server.wait_for_request(run["id"]))["id"]
            await _notified(server, rid, "sent")
            async with server.client("lee") as lee:
                moved = await lee.post(
                    f"/api/requests/{rid}/reassign", json={"team": "finance", "assignee": "fin"}
                )
            assert moved.status_code == 200, moved.text
            async with server.client("fin") as fin:
                # the same place again hands nothing on, so it tells nobody
                again = await fin.post(
                    f"/api/requests/{rid}/reassign", json={"team": "finance", "assignee": "fin"}
                )
            assert again.status_code == 200, again.text

            async def four_sent() -> dict[str, Any] | None:
                request = await server.request(rid)
                notes = request["notifications"]
                done = len(notes) == 4 and all(n["status"] == "sent" for n in notes)
                return request if done else None

            request = await eventually(four_sent, what="the reassignment's notifications")
            events = await server.audit(run["id"])

    notes = sorted((n["event"], n["channel"]) for n in request["notifications"])
    assert notes == [
        ("created", "email"),
        ("created", "webhook"),
        ("reassigned", "email"),
        ("reassigned", "webhook"),
    ]
    hook = [r for r in hooks.at("/baton") if r.headers["x-baton-event"] == "request.reassigned"]
    assert len(hook) == 1
    assert _webhook_signature_ok(hook[0].headers, hook[0].body)
    assert (hook[0].json()["request"]["team"], hook[0].json()["request"]["assignee"]) == (
        "finance",
        "fin",
    )
    [_, handed] = smtp.mails
    assert handed.recipients == ["fin@example.com"]  # the person it was handed to, not the team
    assert handed.message["Subject"] == (
        "[Baton] Reassigned to fin (finance): Refund 120.00 on order A-1002"
    )
    text = handed.message.get_body(("plain",)).get_content()
    assert "This approval request was reassigned to fin (finance)." in text
    assert types_of(events).count("request.reassigned") == 2
    assert types_of(events).count("request.notified") == 4


# slow receivers -----------------------------------------------------------------------------

DEADLINE_S = 1.5
SHORT_DELIVERY = {
    "BATON_NOTIFY_TIMEOUT_SECONDS": str(DEADLINE_S),
    "BATON_NOTIFY_MAX_ATTEMPTS": "2",
    "BATON_NOTIFY_BACKOFF_SECONDS": "0.2",
}


async def test_a_delivery_that_drips_or_never_answers_ends_at_its_deadline_and_is_retried(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    # The dripping webhook never lets a read wait long enough to time out: only a deadline on
    # the whole attempt ends it (a per-read timeout waited out all 600 bytes, 600 s).
    with stalling_receiver("drip") as hooks, stalling_receiver("silent") as slack:
        env = {
            "BATON_WEBHOOK_URL": f"{hooks.url}/baton",
            "BATON_SLACK_WEBHOOK_URL": f"{slack.url}/incoming",
            **SHORT_DELIVERY,
        }
        async with baton_server(db_url, tokens, server_log, env) as server:
            run = await server.start_run(REFUND_120)
            rid = (await server.wait_for_request(run["id"]))["id"]
            failed = await _notified(server, rid, "failed")
            await eventually(
                lambda: _now(hooks.in_flight == 0 == slack.in_flight), what="hang-ups seen"
            )

    for note in failed["notifications"]:
        assert note["attempts"] == 2, note
        assert note["last_error"] == (
            f"{note['channel']}: no complete answer within {DEADLINE_S} s "
            "(BATON_NOTIFY_TIMEOUT_SECONDS)"
        )
    for receiver in (hooks, slack):
        assert len(receiver.arrived) == 2  # the attempt, and its retry
        held = [gone - came for came, gone in zip(receiver.arrived, receiver.hung_up, strict=True)]
        assert all(DEADLINE_S - 1 < s < DEADLINE_S + 3 for s in held), held


async def test_a_reply_to_a_slack_response_url_that_drips_is_given_up_at_the_deadline(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    with http_receiver() as slack, stalling_receiver("drip") as replies:
        env = {
            "BATON_SLACK_WEBHOOK_URL": f"{slack.url}/incoming",
            "BATON_SLACK_SIGNING_SECRET": SLACK_SECRET,
            "BATON_NOTIFY_TIMEOUT_SECONDS": str(DEADLINE_S),
        }
        async with baton_server(db_url, tokens, server_log, env) as server:
            await _link_slack(server, lee="U0LEE")
            run = await server.start_run(REFUND_120)
            rid = (await server.wait_for_request(run["id"]))["id"]
            approve = _slack_click(rid, "U0LEE", "baton.approve", f"{replies.url}/response")
            clicked = await _click(server, approve, _slack_headers(approve))
            await server.wait_for_run(run["id"], status="completed")
            await eventually(lambda: _now(len(replies.hung_up) == 1), what="the reply given up")

    assert clicked.status_code == 200, clicked.text
    [came], [gone] = replies.arrived, replies.hung_up
    assert gone - came < DEADLINE_S + 3, gone - came  # a per-read timeout waited out 600 s


async def test_a_relay_slow_to_answer_each_command_is_cut_off_at_the_deadline_of_the_whole_attempt(
    db_url: str, tokens: dict[str, str], server_log: Path, tmp_path: Path
) -> None:
    # Each answer comes within the per-command timeout; together they take longer than the
    # deadline (MAIL, then a RCPT per member of the team: a second each).
    with smtp_server(tmp_path, pause_s=1.0) as smtp:
        env = {"BATON_SMTP_URL": smtp.url(starttls="true"), **SHORT_DELIVERY}
        async with baton_server(db_url, tokens, server_log, env) as server:
            run = await server.start_run(REFUND_120)
            rid = (await server.wait_for_request(run["id"]))["id"]
            began = time.monotonic()
            failed = await _notified(server, rid, "failed")
            took = time.monotonic() - began

    [note] = failed["notifications"]
    assert (note["channel"], note["attempts"]) == ("email", 2)
    assert "no complete answer within 1.5 s" in note["last_error"]
    assert took < 2 * DEADLINE_S + 3, took
    assert smtp.mails == []


@pytest.mark.parametrize("worker", ["embedded", "beside"])
async def test_slow_deliveries_in_flight_do_not_delay_a_resume(
    db_url: str, tokens: dict[str, str], server_log: Path, worker: str
) -> None:
    # Five paused runs, a notification each, every one dripping for a minute: the four delivery
    # slots are full. The answer's resume runs in slots of its own and completes meanwhile:
    # handed straight to `serve`'s own worker, or leased by a `baton worker` beside a
    # `serve --no-worker` (where the due deliveries must not take the resume's place either).
    with stalling_receiver("drip") as hooks:
        env = {"BATON_WEBHOOK_URL": f"{hooks.url}/baton", "BATON_NOTIFY_TIMEOUT_SECONDS": "60"}
        args = ["--no-worker"] if worker == "beside" else []
        async with (
            baton_server(db_url, tokens, server_log, env, args=args) as server,
            _worker_beside(server) if worker == "beside" else contextlib.nullcontext(),
        ):
            runs = [await server.start_run(REFUND_120) for _ in range(5)]
            pending = [await server.wait_for_request(run["id"]) for run in runs]
            await eventually(lambda: _now(hooks.in_flight >= 4), what="four deliveries dripping")
            began = time.monotonic()
            answered = await server.respond(pending[0]["id"], {"decision": "approve"}, user="lee")
            done = await server.wait_for_run(runs[0]["id"], status="completed")
            took = time.monotonic() - began
            dripping = hooks.in_flight

    assert answered.status_code == 200, answered.text
    assert "Refunded 120.00" in done["output"]["text"]
    assert took < 10, took  # the deliveries have 60 s each to go; a shared slot waited them out
    assert dripping >= 4


@contextlib.asynccontextmanager
async def _worker_beside(server: Server) -> AsyncIterator[None]:
    """What `baton worker` runs (the parts, and the worker's loop), in this process."""
    assert isinstance(server, InProcessServer)
    async with open_parts(server.settings(), local_worker=False) as parts:
        loop = asyncio.create_task(parts.worker.run_forever())
        try:
            yield
        finally:
            loop.cancel()
            await asyncio.gather(loop, return_exceptions=True)


async def _now(value: bool) -> bool:
    return value
