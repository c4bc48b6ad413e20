"""The scripted model's plays: what a capable model would do, decided from the conversation.

Every play reads only the messages it is given, so a run plays the same way in any process and
after any restart. The support plays pick their path from the customer's words:

| the customer writes                      | path                                               |
|------------------------------------------|----------------------------------------------------|
| refund 20 on order A-1001                | billing refunds at once (policy: auto), closes     |
| refund 120 on order A-1002               | billing asks support-leads to approve the refund   |
| refund 30, no order named                | billing asks the team which order (`ask_human`)    |
| the app crashes when I upload photos     | technical checks the known issue, drafts an email  |
|                                          | that support-agents review before it is sent       |
| my sync is broken                        | technical restarts sync three times, fails: the    |
|                                          | third failed attempt hands the case to a person    |
| delete my account                        | accounts asks support-leads to approve deletion    |
| ... a manager ...                        | triage: a person takes over                        |
| something strange / weird                | triage reports low confidence: a person takes over |
| anything else                            | triage asks the customer what it is about          |
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from agent_framework import Content, Message

from executors.platform.chat_clients import scripted_plays


def _first_json(messages: Sequence[Message]) -> dict[str, Any]:
    for message in messages:
        if message.role == "user" and message.text and "{" in message.text:
            try:
                return dict(json.loads(message.text[message.text.index("{") :]))
            except ValueError:
                continue
    return {}


def _results(messages: Sequence[Message]) -> dict[str, Any]:
    """Function results by the name of the call they answer (the last one wins)."""
    names = {c.call_id: c.name for m in messages for c in m.contents if c.type == "function_call"}
    found: dict[str, Any] = {}
    for m in messages:
        for c in m.contents:
            if c.type == "function_result" and c.call_id in names:
                found[str(names[c.call_id])] = _parsed(c.result)
    return found


def _parsed(result: Any) -> Any:
    if isinstance(result, str):
        try:
            return json.loads(result)
        except ValueError:
            return result
    return result


def _call(
    messages: Sequence[Message], name: str, *, persona: str = "", **arguments: Any
) -> list[Content]:
    turn = sum(1 for m in messages if m.role == "assistant") + 1
    prefix = f"{persona}_" if persona else ""
    return [
        Content.from_function_call(
            call_id=f"call_{prefix}{name}_{turn}", name=name, arguments=json.dumps(arguments)
        )
    ]


def _say(text: str) -> list[Content]:
    return [Content.from_text(text)]


def refund_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """Look the order up, propose the refund, then report what happened to it."""
    ask = _first_json(messages)
    order_id, amount = str(ask.get("order_id", "")), float(ask.get("amount", 0))
    seen = _results(messages)
    if "lookup_order" not in seen:
        return _call(messages, "lookup_order", order_id=order_id)
    order = seen["lookup_order"]
    if not isinstance(order, dict) or "error" in order:
        return _say(f"No refund was issued: order {order_id} was not found.")
    if amount > float(order["total"]):
        return _say(
            f"No refund was issued: {amount:.2f} is more than order {order_id}'s total "
            f"of {float(order['total']):.2f}."
        )
    if "issue_refund" not in seen:
        return _call(messages, "issue_refund", order_id=order_id, amount=amount)
    outcome = seen["issue_refund"]
    if isinstance(outcome, dict) and "refund_id" in outcome:
        return _say(
            f"Refunded {float(outcome['amount']):.2f} {order.get('currency', '')} on order "
            f"{outcome['order_id']} (refund {outcome['refund_id']})."
        )
    return _say(f"No refund was issued for order {order_id}: {outcome}")


# support ------------------------------------------------------------------------------------

_ORDER = re.compile(r"\bA-\d{4}\b")
_AMOUNT = re.compile(r"(?<![\w-])(\d+(?:\.\d+)?)(?![\w-])")
_CUSTOMER = re.compile(r"Customer (\S+) writes:")
_TOPICS = (
    ("billing", ("refund", "charge", "charged", "invoice", "payment", "money back")),
    ("technical", ("crash", "error", "sync", "upload", "app ", "bug", "photo")),
    ("accounts", ("delete my account", "close my account", "account")),
)


def _user_texts(messages: Sequence[Message]) -> list[str]:
    """What the customer (or a person guiding the agent) said, newest first."""
    return [m.text for m in reversed(messages) if m.role == "user" and m.text]


def _customer_id(messages: Sequence[Message]) -> str:
    for text in reversed(_user_texts(messages)):
        found = _CUSTOMER.search(text)
        if found:
            return found[1]
    return "unknown"


def _topic(text: str) -> str | None:
    lowered = f"{text.lower()} "
    return next((t for t, words in _TOPICS if any(w in lowered for w in words)), None)


def _own_calls(messages: Sequence[Message], name: str) -> int:
    return sum(
        1 for m in messages for c in m.contents if c.type == "function_call" and c.name == name
    )


def _since_last_user(messages: Sequence[Message]) -> list[Message]:
    last = max((i for i, m in enumerate(messages) if m.role == "user" and m.text), default=-1)
    return list(messages[last + 1 :])


def triage_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """Route the ticket; ask the customer when unclear; step aside for a person when needed."""
    latest = (_user_texts(messages) or [""])[0]
    lowered = latest.lower()
    recent = _since_last_user(messages)
    if re.search(r"\b(manager|supervisor)\b", lowered):
        return _say("I understand. A person from our team will take over your case now.")
    if any(w in lowered for w in ("strange", "weird")):
        if not _own_calls(recent, "report_confidence"):
            return _call(
                messages,
                "report_confidence",
                persona="triage",
                confidence=0.4,
                reason="I cannot tell what the customer needs",
            )
        return _say("I am not sure I understand what is happening; let me get help.")
    topic = _topic(latest)
    if topic is not None:
        return _call(messages, f"handoff_to_{topic}", persona="triage")
    return _say(
        "Thanks for writing. Is this about a payment or refund, a technical problem with the "
        "app, or your account?"
    )


def billing_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """Find the order (asking the team if the customer named none), refund, close the case."""
    texts = _user_texts(messages)
    seen = _results(messages)
    answered = str(seen.get("ask_human", ""))
    order = next((m[0] for t in [answered, *texts] if (m := _ORDER.search(t))), None)
    asked = next((t for t in texts if "refund" in t.lower() and _AMOUNT.search(t)), "")
    amounts = [float(a) for a in _AMOUNT.findall(asked.replace(order or "", ""))]
    amount = amounts[0] if amounts else 0.0
    customer = _customer_id(messages)
    if order is None:
        if "lookup_customer" not in seen:
            return _call(messages, "lookup_customer", persona="billing", customer_id=customer)
        found = seen["lookup_customer"]
        orders = found.get("orders", []) if isinstance(found, dict) else []
        return _call(
            messages,
            "ask_human",
            persona="billing",
            question=f"Which order of {customer} should the refund of {amount:.2f} go to?",
            options=orders,
        )
    if "lookup_order" not in seen:
        return _call(messages, "lookup_order", persona="billing", order_id=order)
    if "issue_refund" not in seen:
        return _call(messages, "issue_refund", persona="billing", order_id=order, amount=amount)
    outcome = seen["issue_refund"]
    if isinstance(outcome, dict) and "refund_id" in outcome:
        resolution = (
            f"Refunded {float(outcome['amount']):.2f} on order {outcome['order_id']} "
            f"(refund {outcome['refund_id']})."
        )
    else:
        resolution = f"No refund was issued on order {order}: {outcome}"
    return _call(messages, "close_case", persona="billing", resolution=resolution)


def technical_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """Sync: restart (it fails). Uploads: check the known issue, email the customer, close."""
    texts = _user_texts(messages)
    latest = " ".join(texts).lower()
    seen = _results(messages)
    customer = _customer_id(messages)
    if "sync" in latest:
        tries = _own_calls(messages, "restart_sync")
        if tries < 3:
            return _call(messages, "restart_sync", persona="technical", customer_id=customer)
        return _say("I tried to restart your sync three times and it failed every time.")
    if "check_service_status" not in seen:
        return _call(messages, "check_service_status", persona="technical", service="photos")
    if "email_customer" not in seen:
        status = seen["check_service_status"]
        issue = status.get("known_issue", "") if isinstance(status, dict) else ""
        workaround = status.get("workaround", "") if isinstance(status, dict) else ""
        return _call(
            messages,
            "email_customer",
            persona="technical",
            customer_id=customer,
            subject="About the app closing when you upload photos",
            body=f"Hello, thanks for telling us. {issue} Until then: {workaround}",
        )
    sent = seen["email_customer"]
    if isinstance(sent, dict) and ("message_id" in sent or "sent" in sent):
        return _call(
            messages,
            "close_case",
            persona="technical",
            resolution="Known photo upload issue; the customer was emailed the workaround.",
        )
    return _call(
        messages,
        "close_case",
        persona="technical",
        resolution=f"No email was sent: {sent}",
    )


def accounts_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """Look the customer up, delete the account (a person approves), close the case."""
    seen = _results(messages)
    customer = _customer_id(messages)
    if "lookup_customer" not in seen:
        return _call(messages, "lookup_customer", persona="accounts", customer_id=customer)
    if "delete_account" not in seen:
        return _call(
            messages,
            "delete_account",
            persona="accounts",
            customer_id=customer,
            reason="the customer asked for it",
        )
    outcome = seen["delete_account"]
    if isinstance(outcome, dict) and "closure_id" in outcome:
        resolution = f"Deleted the account of {customer} (closure {outcome['closure_id']})."
    else:
        resolution = f"The account of {customer} was not deleted: {outcome}"
    return _call(messages, "close_case", persona="accounts", resolution=resolution)


scripted_plays(
    {
        "refund": refund_play,
        "triage": triage_play,
        "billing": billing_play,
        "technical": technical_play,
        "accounts": accounts_play,
    }
)
