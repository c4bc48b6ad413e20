"""The pieces of notifications that need no server: SMTP URLs, signatures, messages, the clock."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import ssl
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import pytest

from baton.clock import Clock
from baton.errors import Unauthenticated
from human import typed
from human.attachments import decoded
from human.channels import Notice, http, key_context
from human.channels.email import SmtpRelay
from human.channels.slack import SlackActions, message_of
from human.channels.teams import answered_card
from human.channels.webhook import payload_of, sign
from human.kinds import KINDS
from human.records import HumanRequest
from tests.fixtures.foreign_workflow import Visa
from tests.fixtures.triage_workflow import Severity

NOW = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def a_request(kind: str = "approval") -> HumanRequest:
    return HumanRequest(
        id="req_1",
        run_id="run_1",
        maf_request_id="m1",
        kind=kind,
        title="Refund <120> & more",
        reason="Because *policy* says so",
        context={"customer": "c-01", "order": {"id": "A-1"}, "amount": 120.0},
        proposed_action=(
            {"tool": "issue_refund", "arguments": {"order_id": "A-1", "amount": 120.0}}
            if kind == "approval"
            else None
        ),
        allowed_decisions=list(KINDS[kind].decisions),
        response_schema={},
        team="support-leads",
        status="pending",
        created_at=NOW,
        expires_at=NOW + timedelta(hours=4),
    )


def test_smtp_urls() -> None:
    plain = SmtpRelay.parse("smtp://mail.example:2525")
    assert (plain.host, plain.port, plain.username, plain.start_tls, plain.use_tls) == (
        "mail.example",
        2525,
        None,
        None,
        False,
    )
    login = SmtpRelay.parse("smtp://me%40corp:p%3Ass@relay:587?starttls=true&cafile=/ca.pem")
    assert (login.username, login.password, login.start_tls, login.cafile) == (
        "me@corp",
        "p:ss",
        True,
        "/ca.pem",
    )
    assert SmtpRelay.parse("smtp://relay?starttls=false").start_tls is False
    tls = SmtpRelay.parse("smtps://relay")
    assert (tls.port, tls.use_tls, tls.start_tls) == (465, True, False)
    for bad, why in (
        ("http://relay", "must look like"),
        ("smtp://", "must look like"),
        ("smtp://relay?tls=1", "unknown parameter 'tls'"),
        ("smtps://relay?starttls=true", "TLS already"),
    ):
        with pytest.raises(ValueError, match=why):
            SmtpRelay.parse(bad)


def test_webhook_signature_is_hmac_of_timestamp_dot_body() -> None:
    body = b'{"a":1}'
    expected = hmac.new(b"k", b"1700000000." + body, hashlib.sha256).hexdigest()
    assert sign("k", "1700000000", body) == f"v1={expected}"
    assert sign("k", "1700000001", body) != sign("k", "1700000000", body)


def test_webhook_payload_names_the_event_delivery_and_page() -> None:
    notice = Notice(a_request(), "escalated", "ntf_1", "https://b.example/requests/req_1")
    payload = payload_of(notice)
    assert (payload["event"], payload["delivery_id"]) == ("request.escalated", "ntf_1")
    assert payload["request"]["url"] == "https://b.example/requests/req_1"
    assert payload["request"]["expires_at"] == "2026-03-01T13:00:00+00:00"


def test_key_context_prefers_the_proposed_arguments_and_skips_nested_values() -> None:
    """In the page's words: labels, money with two decimals (and the currency, where known)."""
    assert key_context(a_request()) == [
        ("Order ID", "A-1"),
        ("Amount", "120.00"),
        ("Customer", "c-01"),
    ]
    priced = a_request().model_copy(
        update={"context": {"currency": "EUR", "urgent": True, "note": "line one\nline two"}}
    )
    assert key_context(priced) == [
        ("Order ID", "A-1"),
        ("Amount", "120.00 EUR"),
        ("Currency", "EUR"),
        ("Urgent", "yes"),
        ("Note", "line one line two"),
    ]
    chart = a_request("input").model_copy(  # a Message asked about: its words are the reason
        update={
            "reason": "Here is the chart.",
            "context": {
                "role": "assistant",
                "text": "Here is the chart.",
                "attachments": ["an image (PNG, 198 KB)", "a document (PDF, 59 KB)"],
            },
        }
    )
    assert key_context(chart) == [
        ("Role", "assistant"),
        ("Attachments", "an image (PNG, 198 KB), a document (PDF, 59 KB)"),
    ]
    # a photo in the conversation (the request's context does not name it): named, once
    photo = decoded("data:image/png;base64," + base64.b64encode(bytes(2048)).decode())
    assert photo is not None
    receipt = a_request().model_copy(update={"attachments": [photo.about("the user's message")]})
    assert key_context(receipt)[-1] == ("Attached", "an image (PNG, 2 KB)")
    named = chart.model_copy(update={"attachments": receipt.attachments})
    assert key_context(named) == key_context(chart)


def test_slack_message_escapes_text_and_offers_buttons_only_where_they_fit() -> None:
    notice = Notice(a_request(), "created", "ntf_1", "https://b.example/requests/req_1")
    message = message_of(notice)
    assert message["text"] == "For support-leads: Refund <120> & more"
    assert message["blocks"][1]["text"]["text"] == "Because *policy* says so"
    actions = [e["action_id"] for e in message["blocks"][-1]["elements"]]
    assert actions == ["baton.approve", "baton.reject", "baton.open"]
    question = message_of(Notice(a_request("question"), "escalated", "n", "https://b/r"))
    assert [e["action_id"] for e in question["blocks"][-1]["elements"]] == ["baton.open"]
    assert "Escalated to *support-leads*" in question["blocks"][-2]["elements"][0]["text"]


@pytest.mark.parametrize(
    ("answer_type", "buttons"),
    [
        (bool, [("Yes", True), ("No", False)]),
        (Severity, [("Low", "low"), ("Needs care", "needs_care"), ("Urgent", "urgent")]),
        (Literal["go", "wait"], [("Go", "go"), ("Wait", "wait")]),
        (Literal["a", "b", "c", "d", "e", "f"], []),  # too many to offer one button each
        (str, []),
        (int, []),
        (list[bool], []),
        (Visa, []),
    ],
)
def test_an_input_gets_a_button_per_answer_only_when_there_are_few(
    answer_type: Any, buttons: list[tuple[str, Any]]
) -> None:
    request = a_request("input").model_copy(
        update={
            "response_schema": KINDS["input"].response_schema(
                {"answer": typed.schema_of_type(answer_type)}
            )
        }
    )
    message = message_of(Notice(request, "created", "ntf_1", "https://b.example/requests/req_1"))
    elements = message["blocks"][-1]["elements"]
    assert elements[-1]["action_id"] == "baton.open"  # the page is always offered
    assert elements[-1]["text"]["text"] == "Open in Baton"
    offered = [(e["text"]["text"], json.loads(e["value"])) for e in elements[:-1]]
    assert offered == [(label, {"request_id": "req_1", "answer": v}) for label, v in buttons]
    assert [e["action_id"] for e in elements[:-1]] == [
        f"baton.answer.{i}" for i in range(len(buttons))
    ]
    closed = message_of(
        Notice(request.model_copy(update={"status": "answered"}), "created", "n", "u")
    )
    assert [e["action_id"] for e in closed["blocks"][-1]["elements"]] == ["baton.open"]


def test_slack_verification_names_what_is_wrong() -> None:
    actions = SlackActions(None, None, None, signing_secret="s")  # type: ignore[arg-type]
    for headers, why in (
        ({}, "are required"),
        ({"x-slack-request-timestamp": "soon", "x-slack-signature": "v0=1"}, "not a Unix time"),
        ({"x-slack-request-timestamp": "100", "x-slack-signature": "v0=1"}, "five minutes"),
    ):
        with pytest.raises(Unauthenticated, match=why):
            actions.verify(b"payload=%7B%7D", headers)


def test_the_clock_adds_the_offset_its_file_holds(tmp_path: Path) -> None:
    offset = tmp_path / "clock"
    clock = Clock(offset)
    assert abs(clock() - datetime.now(UTC)) < timedelta(seconds=5)  # no file yet: no offset
    offset.write_text("7200")
    assert timedelta(hours=2) - clock.offset() == timedelta(0)
    assert clock() - datetime.now(UTC) > timedelta(hours=1, minutes=59)
    offset.write_text("-60.5")
    assert clock.offset() == timedelta(seconds=-60.5)
    offset.write_text("tomorrow")
    with pytest.raises(ValueError, match="offset in seconds"):
        clock()
    assert Clock(None).offset() == timedelta(0)


async def test_outbound_clients_share_one_tls_context_that_still_verifies_certificates() -> None:
    context = http.tls_context()
    async with http.client(3.5) as first, http.client(7.0) as second:
        assert http.tls_context() is context  # built once per process, not per delivery
        assert (first.timeout.connect, second.timeout.read) == (3.5, 7.0)
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
    assert context.get_ca_certs() or context.cert_store_stats()["x509_ca"] > 0


@pytest.mark.parametrize(
    ("status", "says", "style"),
    [
        ("expired", "Expired: nobody answered before its deadline", "attention"),
        ("cancelled", "Cancelled: its run no longer waits for an answer", "default"),
    ],
)
def test_a_teams_card_of_a_request_closed_unanswered_says_how_with_no_buttons_left(
    status: str, says: str, style: str
) -> None:
    closed = a_request().model_copy(
        update={"status": status, "answer": {"decision": status}, "answered_by": "system"}
    )

    card = answered_card(closed, "https://b.example/requests/req_1")

    [note] = [part for part in card["body"] if part.get("type") == "Container"]
    assert (note["style"], note["items"][0]["text"]) == (style, says)
    assert "system" not in json.dumps(card)
    assert [a["title"] for a in card["actions"]] == ["Open in Baton"]
