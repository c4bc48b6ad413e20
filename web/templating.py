"""Jinja2 for the pages: the environment, its filters, and `render`, which every page goes through.

`render` adds what every page needs (the person, the CSRF token, a one-time notice) and the headers
every page gets: no caching of personal data, and a Content-Security-Policy allowing only this
origin's own scripts, styles and connections (the pages work on an isolated network: no CDN).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates
from markupsafe import Markup

from human import summary
from human.answer_schema import label
from human.attachments import SHOWN_INLINE, attachment_text
from human.records import AuditEvent, User
from human.store.base import failure_of, utcnow
from web.auth import CSRF_FIELD, csrf_token
from web.zones import local, zone_label

TEMPLATES_DIR: Final = Path(__file__).parent / "templates"
STATIC_DIR: Final = Path(__file__).parent / "static"

PAGE_HEADERS: Final = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; "
        "object-src 'none'"
    ),
    "Referrer-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
}

templates = Jinja2Templates(directory=str(TEMPLATES_DIR))


def render(
    request: Request,
    name: str,
    context: dict[str, Any],
    *,
    user: User | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    """A page (or, for htmx, a partial) from template `name`."""
    page = {
        "user": user,
        "csrf_field": CSRF_FIELD,
        "csrf_token": csrf_token(request) if "session" in request.scope else "",
        "notice": request.session.pop("notice", None) if "session" in request.scope else None,
        "now": _now(request),
        **context,
    }
    response = templates.TemplateResponse(request, name, page, status_code=status_code)
    response.headers.update(PAGE_HEADERS)
    response.headers["Vary"] = "Cookie, HX-Request"
    return response


def _now(request: Request) -> datetime:
    """Baton's clock (the app's, which tests move), or the system's before the app started."""
    parts = getattr(request.app.state, "parts", None)
    return parts.requests.now() if parts is not None else utcnow()


def notify(request: Request, message: str) -> None:
    """Show `message` once, on the next page this browser renders (after a 303)."""
    request.session["notice"] = {"message": message, "tone": "ok"}


# filters ------------------------------------------------------------------------------------


def _clock_text(moment: datetime, time: str, now: datetime | None = None) -> str:
    """`moment` on the reader's clock as `time` (a strftime format), and its zone.

    Its day first unless it is the reader's today (`now`; None: the day always), from isoformat,
    which pads the year (%Y writes year 1 as `1`).
    """
    seen = local(moment)
    today = now is not None and seen.date() == local(now).date()
    return ("" if today else f"{seen.date().isoformat()} ") + f"{seen:{time}} {zone_label(seen)}"


def moment_text(moment: datetime) -> str:
    """A time on the reader's clock, with its day and zone: `2026-12-07 09:06 CET`."""
    return _clock_text(moment, "%H:%M")


def hour_text(moment: datetime) -> str:
    """A time within the next hours as people say it: `02:30 CET` (a claim's end)."""
    return _clock_text(moment, "%H:%M", moment)


def day_or_hour_text(moment: datetime, now: datetime) -> str:
    """`hour_text` for a moment of the reader's today, else `moment_text`."""
    return _clock_text(moment, "%H:%M", now)


def second_text(moment: datetime, now: datetime) -> str:
    """A moment to the second on the reader's clock, its day too unless today: `10:15:02 CET`."""
    return _clock_text(moment, "%H:%M:%S", now)


def when(moment: datetime | None) -> Markup:
    """A time as `<time>`: readable text, the exact instant in its `datetime` attribute."""
    if moment is None:
        return Markup("")
    return Markup('<time datetime="{}">{}</time>').format(moment.isoformat(), moment_text(moment))


def hour(moment: datetime | None) -> Markup:
    """`hour_text` as `<time>`, the exact instant in its `datetime` attribute."""
    if moment is None:
        return Markup("")
    return Markup('<time datetime="{}">{}</time>').format(moment.isoformat(), hour_text(moment))


def duration(seconds: float) -> str:
    """A rough, readable length of time: `45 s`, `12 min`, `3 h 20 min`, `2 d 4 h`."""
    seconds = abs(seconds)
    if seconds < 60:
        return f"{math.floor(seconds)} s"
    minutes = math.floor(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"


def exact_duration(seconds: float) -> str:
    """A length of time to the second under ten minutes (`1 min 40 s`), else as `duration`."""
    whole = math.floor(abs(seconds))
    if 60 <= whole < 600 and whole % 60:
        return f"{whole // 60} min {whole % 60} s"
    return duration(whole)


def time_left(deadline: datetime | None, now: datetime | None = None) -> str:
    """What is left until a deadline: `2 h 5 min left`, `overdue by 3 min`, or `no deadline`."""
    if deadline is None:
        return "no deadline"
    left = (deadline - (now or utcnow())).total_seconds()
    return f"{duration(left)} left" if left >= 0 else f"overdue by {duration(left)}"


def ago(moment: datetime | None, now: datetime | None = None) -> str:
    """How long ago a moment was: `5 min ago`."""
    if moment is None:
        return ""
    return f"{duration(((now or utcnow()) - moment).total_seconds())} ago"


def pretty_json(value: Any) -> str:
    """A JSON value laid out for reading (for the rare value no other view fits)."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def humanize(key: str) -> str:
    """A field name as a label, as forms say it (`label`): `order_id` -> `Order ID`."""
    return label(str(key).replace(".", " ").strip())


_DECIDED: Final = {
    "approve": "approved",
    "edit": "approved with changes",
    "reject": "rejected",
    "answer": "answered",
    "takeover": "took the case over",
    "resolve": "resolved the case",
    "return": "handed the case back",
}


def decided(who: Any, decision: Any, standing: Any = None) -> str:
    """What a person did with a request, in words: `lee approved`, `sam took the case over`.

    `standing`: the answer let its approval stand for later calls (True), of this tool (a name).
    """
    said = _DECIDED.get(str(decision))
    text = f"{who} {said}" if said else f"{who} answered {decision or ''}".rstrip()
    if standing:
        calls = f"{standing} calls" if isinstance(standing, str) else "calls under its rule"
        text += f", and this run's later {calls} too"
    return text


def gist(event: AuditEvent) -> str:
    """A one-line gist of an audit event, for the timeline's heading."""
    data = event.data
    if event.type == "request.answered":
        said = decided(event.actor, data.get("decision"), data.get("standing"))
        count, needed = data.get("approvals"), data.get("approvals_required")
        if isinstance(count, int) and isinstance(needed, int):
            said += f" ({count} of the {needed} approvals it needs)"
        return said
    if event.type == "request.escalated" and isinstance(data.get("step"), int):
        return (
            f"{data.get('from_team')} to {data.get('to_team')}, rung {data['step'] + 1} of its "
            "escalation ladder"
        )
    if event.type == "request.created":
        return f"asked {data.get('team')}: {data.get('title')}"
    if event.type == "request.auto_decided" and data.get("standing_approval"):
        return (
            f"{data.get('approved_by')}'s standing approval decided: {data.get('decision')}, "
            f"under policy rule {data.get('rule')}"
        )
    if event.type == "request.auto_decided":
        return f"policy rule {data.get('rule')} decided: {data.get('decision')}"
    if event.type == "effect.executed":
        return f"{data.get('tool')} ran"
    if event.type == "effect.failed":
        return f"{data.get('tool')} failed: {failure_of(data.get('result'))}"
    if event.type == "effect.uncertain":
        return f"{data.get('tool')} may or may not have acted; it was not run again"
    if event.type == "run.resumed":
        return f"resumed with {data.get('decision')}"
    if event.type in ("run.cancelled", "request.cancelled") and data.get("reason"):
        return f"why: {data['reason']}"
    if event.type == "run.failed":
        return "the run stopped with an error"
    if event.type == "request.notified":
        return _delivery_gist(data)
    return ""


def _delivery_gist(data: Mapping[str, Any]) -> str:
    """A notification attempt in words: `email: attempt 1 failed; it is tried again`."""
    channel, outcome, attempt = data.get("channel"), data.get("outcome"), data.get("attempt")
    parts = data.get("parts_sent")
    said = {
        "sent": "sent",
        "retrying": f"attempt {attempt} failed; it is tried again",
        "failed": f"attempt {attempt} failed; it is not tried again",
        "skipped": "nothing to send",
    }.get(str(outcome), str(outcome))
    if isinstance(parts, list) and parts:
        said += f" (the messages for {', '.join(map(str, parts))} went out, and are not sent again)"
    return f"{channel}: {said}"


_EVENT_NAMES: Final = {
    "run.started": "Run started",
    "run.resumed": "Run resumed",
    "run.completed": "Run completed",
    "run.failed": "Run failed",
    "run.cancelled": "Run cancelled",
    "request.created": "Request created",
    "request.notified": "Notified",
    "request.viewed": "Opened",
    "request.claimed": "Claimed",
    "request.released": "Claim released",
    "request.reassigned": "Reassigned",
    "request.escalated": "Escalated",
    "request.answered": "Answered",
    "request.auto_decided": "Decided by a policy",
    "request.expired": "Expired",
    "request.cancelled": "Cancelled",
    "effect.executed": "Tool call carried out",
    "effect.uncertain": "Tool call cut off",
    "effect.failed": "Tool call failed",
}


def event_name(event_type: str) -> str:
    """An audit event's type as words (`request.claimed` -> `Claimed`); an unknown type as it is."""
    return _EVENT_NAMES.get(event_type, event_type)


def event_by(event: AuditEvent) -> str | None:
    """Whom the audit trail names beside an event's words.

    None for what Baton did itself (the `system` actor), nor for an answer, whose gist names who
    answered (`lee approved`).
    """
    return None if event.actor == "system" or event.type == "request.answered" else event.actor


_MOMENT: Final = re.compile(
    r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:\d{2})"
)


def moments_read(value: Any) -> Any:
    """A JSON value with each text that is an exact instant (ISO 8601 with its offset) as a time.

    For the audit trail's data, whose instants (a claim's end, a new deadline) are written so:
    the pages then show them as every other time, on the reader's clock.
    """
    if isinstance(value, str) and _MOMENT.fullmatch(value):
        try:
            return datetime.fromisoformat(value)
        except ValueError:  # a month 13, an hour 25
            return value
    if isinstance(value, dict):
        return {k: moments_read(v) for k, v in value.items()}
    if isinstance(value, list):
        return [moments_read(v) for v in value]
    return value


def as_money(value: Any, key: Any, currency: Any) -> str | None:
    """A value under a money name as `300.00 EUR` where a currency is known, else None.

    Without a currency the number is left as it was given: two decimals alone would say no more.
    """
    return summary.money_text(key, value, currency) if isinstance(currency, str) else None


def shown_status(status: str) -> str:
    """A request's status as a person reads it: `resumed` (delivered to the run) is `answered`."""
    return "answered" if status == "resumed" else status


_PAGES: Final = (
    (re.compile(r"run_[A-Za-z0-9_-]{16}"), "/runs/"),
    (re.compile(r"req_[A-Za-z0-9_-]{22}"), "/requests/"),
)


def page_of(value: Any) -> str | None:
    """The page of a value that is a run's or a request's id (an event's `continues`), or None."""
    if isinstance(value, str):
        for pattern, path in _PAGES:
            if pattern.fullmatch(value):
                return path + value
    return None


def event_facts(event: AuditEvent) -> dict[str, Any]:
    """An audit event's data as its timeline lists it.

    Less an edit's diff (a table of its own) and an escalation's 0-based rung (`step`), which
    its gist says counted from 1, as the request's ladder does.
    """
    said = ("diff", "step") if event.type == "request.escalated" else ("diff",)
    return without(event.data, *said)


def without(mapping: Any, *keys: str) -> dict[str, Any]:
    """A mapping less some keys (a non-mapping: empty)."""
    if not isinstance(mapping, dict):
        return {}
    return {k: v for k, v in mapping.items() if k not in keys}


def sentence(text: Any) -> str:
    """Words begun with a capital, the rest as they are (`capitalize` lowers "PNG" and "KB")."""
    said = str(text)
    return said[:1].upper() + said[1:]


templates.env.filters.update(
    sentence=sentence,
    when=when,
    hour=hour,
    time_left=time_left,
    ago=ago,
    pretty_json=pretty_json,
    humanize=humanize,
    gist=gist,
    event_facts=event_facts,
    without=without,
    page_of=page_of,
    shown_status=shown_status,
    duration=duration,
    exact_duration=exact_duration,
    deed=summary.deed,
    decided_by=summary.decided_by,
    event_name=event_name,
    event_by=event_by,
    moments_read=moments_read,
    as_money=as_money,
    in_words=summary.humanize,
    escalation_text=summary.escalation_text,
    escalation_target=summary.escalation_target,
    attachment_text=attachment_text,
    without_data_uris=summary.without_data_uris,
)
templates.env.tests.update(moment=lambda value: isinstance(value, datetime))
templates.env.globals.update(
    duration=duration, reviewed=summary.reviewed, shown_inline=SHOWN_INLINE
)
