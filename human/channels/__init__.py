"""Notification channels: how a request reaches people outside Baton.

Each channel turns a `Notice` (a request, and whether it was created or escalated) into one
message: a signed webhook (`webhook.py`), a Slack Block Kit message (`slack.py`), an email
(`email.py`). A channel never runs in the request path: the dispatcher (`human/notify.py`)
delivers the outbox rows the pause or the escalation wrote, retrying failures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from baton.errors import BatonError
from human import summary
from human.answer_schema import label
from human.records import OPEN_STATUSES, HumanRequest, NotificationEvent
from human.routing import next_escalation
from human.zones import said_at


@dataclass(frozen=True)
class Notice:
    """What to tell: a request, on which occasion, under which delivery id, with its page's URL."""

    request: HumanRequest
    event: NotificationEvent
    delivery_id: str
    url: str
    parts_sent: set[str] = field(default_factory=set, compare=False)
    """The parts of this delivery handed over already. A channel that sends a notice as several
    messages (an email's, one a time zone) leaves these out and adds each part's key here as the
    other side takes it: an attempt that then fails or is cut at its deadline is retried with
    the others alone."""

    @property
    def headline(self) -> str:
        """One line: what happened to which request."""
        prefix = {
            "escalated": "Escalated to ",
            "reassigned": "Reassigned to ",
            "answered": "Answered in ",
        }.get(self.event, "For ")
        if self.event == "reassigned" and self.request.assignee:
            return f"{prefix}{self.request.assignee} ({self.request.team}): {self.request.title}"
        return f"{prefix}{self.request.team}: {self.request.title}"


class Channel(Protocol):
    """A way to deliver a notice; `send` raises `NotificationFailed` on a failure worth a retry.

    The dispatcher cancels a `send` still running at the delivery deadline, so one must let go
    of its connection at once when cancelled (not wait on the other side to say goodbye).
    """

    name: str
    follows_answers: bool
    """Whether it is also told when a request is answered (event `answered`): a channel whose
    posted message shows the request's state, and changes with it."""

    async def send(self, notice: Notice) -> str | None:
        """Deliver; None when sent, or why there was nothing to send (e.g. no recipients)."""
        ...


def key_context(request: HumanRequest, limit: int = 6) -> list[tuple[str, str]]:
    """The few facts a message shows: the proposed call's arguments, then plain context values.

    In the words the request's page uses: each named as its label ("Order ID"), each value as
    shown there (money with two decimals and the request's currency, "120.00 EUR"; yes or no; a
    short list joined). A context value that is the request's reason is left out: the message
    says it already. The files the request came with, where its context does not name them.
    """
    currency = summary.currency_of(request)
    found: dict[str, Any] = {}
    action = request.proposed_action or {}
    for name, value in (action.get("arguments") or {}).items():
        found.setdefault(name, value)
    for name, value in request.context.items():
        if name in found or value == request.reason:  # the reason is the message's own line
            continue
        if isinstance(value, str | int | float | bool) or _plain_list(value):
            found[name] = value
    if request.attachments and "attachments" not in found:  # a photo in the conversation, say
        found["attached"] = [a.name for a in request.attachments]
    return [
        (label(name), summary.snippet(summary.shown_value(name, value, currency), 80))
        for name, value in list(found.items())[:limit]
    ]


def _plain_list(value: Any) -> bool:
    """Whether `value` is a short list of plain values (a message's attachments, in words)."""
    return (
        isinstance(value, list)
        and 0 < len(value) <= 5
        and all(isinstance(v, str | int | float) and not isinstance(v, bool) for v in value)
    )


@dataclass(frozen=True)
class Due:
    """A time a message gives: a deadline or an escalation, when, and what happens then."""

    name: str
    """`deadline` or `escalates`."""
    at: datetime
    then: str = ""
    """Words after the time: ` unless answered: it goes to managers at high priority`."""

    def said(self, zone: str | None = None) -> str:
        """In words, on `zone`'s clock (an IANA name; UTC without one)."""
        return said_at(self.at, zone) + self.then


def timing(request: HumanRequest) -> list[Due]:
    """When a message says the request is due: its deadline, and an escalation before it.

    The ladder's next rung, where it comes before the deadline, as the request's page heads with
    it: its team's time is until then (`human.routing.next_escalation`, counted from the request's
    creation: a message says the times, not how long is left). Each channel says them on its
    reader's clock: an email on its recipients' zones (`User.time_zone`), Slack and Teams on
    each reader's own, by their clients' date tokens.
    """
    due: list[Due] = []
    if request.expires_at:
        due.append(Due("deadline", request.expires_at))
    step = next_escalation(request, request.created_at)
    if step is not None:
        due.append(
            Due("escalates", step.at, f" unless answered: it {summary.escalation_text(step)}")
        )
    return due


def standing_offer(request: HumanRequest) -> str | None:
    """What ticking a standing approval of `request` says, or None where it does not offer one.

    The request's own answer schema holds the offer (`human.requests`, worded with the tool and
    the rule: "Also approve this run's later send_note calls"), open and of one approver.
    """
    if request.status not in OPEN_STATUSES or request.approvals_required > 1:
        return None
    field = request.response_schema.get("properties", {}).get("standing")
    return str(field["title"]) if isinstance(field, dict) and field.get("title") else None


def approved_words(request: HumanRequest, answer: dict[str, Any]) -> str:
    """An approval in words, followed by who gave it: `Approved`, or one let stand.

    Let stand: `Approved, and this run's later send_note calls too,`.
    """
    if not answer.get("standing"):
        return "Approved"
    tool = (request.proposed_action or {}).get("tool") or "tool"
    return f"Approved, and this run's later {tool} calls too,"


def refused_text(verb: str, exc: BatonError) -> str:
    """A refusal as a chat channel tells the person who clicked it.

    The service's words to them (`to_reader`: "You cannot approve … because …"), else
    `Could not <verb>: <why>`.
    """
    return exc.to_reader or f"Could not {verb}: {exc}"
