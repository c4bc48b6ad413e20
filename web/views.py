"""What each page shows, gathered through the services the API uses.

Routes parse a request and render; templates lay out; in between, these functions ask the same
`RequestService`, `Runtime` and audit trail the JSON API asks, and shape the answers for reading
(which filters apply, what a graph highlights, how a context splits into facts, records and
conversation). No rule of Baton's is decided here: who may answer is `human.access`'s, what an
answer means is `RequestService`'s.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal, TypeVar, get_args
from urllib.parse import urlencode

from pydantic import BaseModel, ConfigDict, Field, field_validator

from baton.errors import NotPermitted, RunHeld, RunNotFound, WorkflowNotFound
from baton.wiring import Parts
from human import summary
from human.access import (
    View,
    actor_of,
    check_can_answer,
    check_can_cancel,
    check_can_run,
    check_four_eyes,
    four_eyes_words,
    held_from,
    release_scope,
    view_filter,
)
from human.attachments import attachment_text, content_words, in_brief
from human.forms import DecisionForm, FormValues, InputForm, answer_forms, input_form
from human.kinds import KINDS
from human.policy import DEFAULT_RULE
from human.records import (
    OPEN_STATUSES,
    TERMINAL_RUN,
    AuditEvent,
    HumanRequest,
    RequestStatus,
    Retrying,
    Run,
    RunStatus,
    User,
)
from human.routing import claim_is_live, next_escalation
from human.store.base import RequestFilter, RunBrief
from human.text import with_stop
from web.graph import GraphLayout, lay_out
from web.templating import day_or_hour_text, decided, hour_text, moment_text, second_text
from workflows.platform import registry
from workflows.platform.runtime import CANCEL_REASON_MAX

REQUEST_STATUSES: Final = (
    "pending",
    "claimed",
    "escalated",
    "answered",
    "resumed",
    "expired",
    "cancelled",
)
RUN_STATUSES: Final = get_args(RunStatus)
PAGE_SIZE: Final = 25
MY_TEAMS: Final = ""
ALL_TEAMS: Final = "*"

# Audit events that change what an inbox shows: the list refreshes when one arrives.
INBOX_EVENTS: Final = (
    "request.created",
    "request.answered",
    "request.cancelled",
    "request.expired",
    "request.escalated",
    "request.claimed",
    "request.released",
    "request.reassigned",
    "run.resumed",
)

logger = logging.getLogger(__name__)
T = TypeVar("T")


def shown(what: str, build: Callable[[], T], fallback: T, faults: list[str]) -> T:
    """`build()`, or `fallback` with the fault named in `faults`.

    One part that cannot be shown (a record an older version wrote, a schema this version does
    not draw) never fails its page: the rest is shown, and the fault is named at the top.
    """
    try:
        return build()
    except Exception as exc:
        logger.exception("a part of a page could not be shown", extra={"part": what})
        faults.append(f"{what}: {type(exc).__name__}: {str(exc)[:160]}")
        return fallback


def _blank_is_none(value: Any) -> Any:
    return None if isinstance(value, str) and not value.strip() else value


VIEWS: Final[tuple[tuple[View, str], ...]] = (
    ("mine", "My work"),
    ("unassigned", "Unassigned"),
    ("claimed", "Claimed by me"),
    ("overdue", "Overdue"),
    ("answered", "Answered by me"),
    ("all", "All requests"),
)
"""The inbox's saved views, in the order of its tabs; `mine` is the default."""

SHOWN_STATUSES: Final = ("pending", "claimed", "escalated", "answered", "expired", "cancelled")
"""The statuses a person is shown: `resumed` (answered and delivered) is shown as answered."""


class InboxQuery(BaseModel):
    """The inbox's view and filters, from its query string (an empty field means no filter).

    A view is a saved filter: `mine` (the default) is everything open that waits for me (my
    teams', assigned to me, claimed by me) that I may act on now, most urgent first: not what
    another person's claim holds, four-eyes keeps from me, or I approved already
    (`human.access.held_from`). Filters narrow any view; filters without a view are `all`.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    view: View | None = None
    status: RequestStatus | Literal["any"] | None = None
    team: str = MY_TEAMS
    kind: str | None = None
    workflow: str | None = None
    assignee: str | None = None
    overdue: bool = False
    q: str | None = Field(None, max_length=200)
    """Words to find in a request's title, reason or context, or its id or its run's."""
    cursor: str | None = None

    @field_validator("kind", "workflow", "assignee", "cursor", "status", "view", "q", mode="before")
    @classmethod
    def _blank(cls, value: Any) -> Any:
        return _blank_is_none(value)

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, value: str | None) -> str | None:
        if value is not None and value not in KINDS:
            raise ValueError(f"must be one of {', '.join(KINDS)}")
        return value

    @property
    def shown_view(self) -> View:
        """The view in effect: the one named; else `all` when a filter is set; else `mine`."""
        if self.view is not None:
            return self.view
        filtered = self.status or self.kind or self.workflow or self.assignee or self.overdue
        return "all" if filtered or self.q or self.team != MY_TEAMS else "mine"

    def request_filter(self, user: User, now: datetime, view: View | None = None) -> RequestFilter:
        """The store filter of `view` (else the view in effect) and these filters for `user`."""
        view = view or self.shown_view
        statuses: tuple[str, ...] | None = None
        if self.status == "answered":
            statuses = ("answered", "resumed")
        elif self.status not in (None, "any"):
            statuses = (str(self.status),)
        team_given = self.team not in (MY_TEAMS, ALL_TEAMS)
        flt = RequestFilter(
            statuses=statuses,
            team=self.team if team_given else None,
            teams=tuple(user.teams) if self.team == MY_TEAMS else None,
            kind=self.kind,
            workflow=self.workflow,
            assignee=user.name if self.assignee == "me" else self.assignee,
            overdue_at=now if self.overdue else None,
            search=self.q.strip() or None if self.q else None,
            cursor=self.cursor,
            limit=PAGE_SIZE,
        )
        return flt.model_copy(update=view_filter(view, user, now, statuses))

    def link(self, **changes: Any) -> str:
        """The inbox URL of these filters with `changes` (a new filter starts a new page)."""
        values = self.model_dump() | {"cursor": None} | changes
        query = {
            k: ("1" if v is True else v) for k, v in values.items() if v not in (None, "", False)
        }
        return "/" + (f"?{urlencode(query)}" if query else "")


class RunsQuery(BaseModel):
    """The runs list's filters."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    status: RunStatus | None = None
    workflow: str | None = None
    cursor: str | None = None

    @field_validator("status", "workflow", "cursor", mode="before")
    @classmethod
    def _blank(cls, value: Any) -> Any:
        return _blank_is_none(value)

    def link(self, **changes: Any) -> str:
        """The runs URL of these filters with `changes`."""
        values = self.model_dump() | {"cursor": None} | changes
        query = {k: v for k, v in values.items() if v not in (None, "")}
        return "/runs" + (f"?{urlencode(query)}" if query else "")


# Audit events of a run that change its page.
RUN_EVENTS: Final = (
    "run.resumed",
    "run.completed",
    "run.failed",
    "run.cancelled",
    "request.created",
    "request.answered",
    "request.cancelled",
    "request.expired",
    "request.escalated",
    "request.auto_decided",
    "effect.executed",
    "effect.uncertain",
)


# the inbox ----------------------------------------------------------------------------------


async def inbox_page(parts: Parts, user: User, query: InboxQuery) -> dict[str, Any]:
    """The inbox: one page of the view's requests, each view's count, the filter choices."""
    after = await parts.store.last_event_id()  # first: what is written from now on goes live
    now = parts.requests.now()
    view = query.shown_view
    flt = query.request_filter(user, now)
    page = await parts.requests.list(flt, viewer=user)
    tabs = []
    for name, label in VIEWS:
        n = await count_of(parts, user, query.request_filter(user, now, name))
        tabs.append(
            {"view": name, "label": label, "count": n, "link": InboxQuery(view=name).link()}
        )
    runs = {r.run_id: await parts.store.get_run(r.run_id) for r in page.items}
    apart = summary.telling_apart(page.items)
    return {
        "query": query,
        "view": view,
        "tabs": tabs,
        "elsewhere": await elsewhere(parts, user, query, now) if view == "mine" else None,
        "view_label": dict(VIEWS)[view],
        "requests": page.items,
        "rows": {r.id: inbox_row(r, runs.get(r.run_id), now, apart.get(r.id)) for r in page.items},
        "next_link": query.link(cursor=page.next_cursor) if page.next_cursor else None,
        "first_link": query.link() if query.cursor else None,
        "statuses": SHOWN_STATUSES,
        "kinds": tuple(KINDS),
        "workflows": [w.name for w in registry.all_workflows()],
        "teams": tuple(user.teams),
        "live_types": ",".join(INBOX_EVENTS),
        "after": after,
        "section": "inbox",
    }


async def count_of(parts: Parts, user: User, flt: RequestFilter) -> int:
    """How many requests `flt` finds for `user` on all its pages (in its `statuses`, if any)."""
    counted = await parts.requests.count(flt.model_copy(update={"cursor": None}), viewer=user)
    return sum(v for k, v in counted.items() if flt.statuses is None or k in flt.statuses)


ELSEWHERE_SHOWN: Final = 5
"""How many of the open requests My work leaves out the inbox names, each with why."""


async def elsewhere(
    parts: Parts, user: User, query: InboxQuery, now: datetime
) -> dict[str, Any] | None:
    """The open requests of `user`'s teams My work leaves out, and why each, or None if none.

    The same requests as `mine` without `human.access.held_from`'s: each is named with its
    reason in words, from its record and its run's (`held_text`); a viewer's are only counted.
    """
    mine = query.request_filter(user, now, "mine")
    flt = mine.model_copy(
        update={
            "actionable_by": None,
            "held_from": actor_of(user, now),
            "limit": ELSEWHERE_SHOWN,
            "cursor": None,  # (My work's page, not this list's)
        }
    )
    total = await count_of(parts, user, flt)
    if not total:
        return None
    held = []
    for request in (await parts.requests.list(flt, viewer=user)).items:
        run = await parts.store.get_run(request.run_id)
        why = held_from(user, request, run, now) if run else None
        if why is not None:
            held.append({"request": request, "why": why, "text": held_text(why, request)})
    reader = bool(held) and all(h["why"] == "viewer" for h in held)  # who answers nothing
    return {
        "count": total,
        "held": [] if reader else held,
        "more": total - (0 if reader else len(held)),
        "reader": reader,
        "link": InboxQuery(view="all").link(),
    }


def held_text(why: str, request: HumanRequest) -> str:
    """Why a request of one's teams is not one's to act on now, in words from its record."""
    if why == "claimed":
        until = f" until {hour_text(request.claimed_until)}" if request.claimed_until else ""
        return f"{request.claimed_by} is working on it{until}"
    if why == "approved":
        left = max(request.approvals_required - len(summary.approvers(request)), 1)
        more = "approval" if left == 1 else "approvals"
        return f"you approved it; it needs {left} more {more} by another member of {request.team}"
    if why == "four_eyes":
        return f"you started its run, so another member of {request.team} approves it (four-eyes)"
    return "you may read it, not answer it"


def inbox_row(
    request: HumanRequest, run: Run | None, now: datetime, apart: summary.Apart | None = None
) -> dict[str, Any]:
    """What a row tells about a request: what is decided on, who started it, how urgent it is.

    A request whose title others in the list share shows what tells it apart (`apart`): its
    facts that differ first, the step that asked (its executor's name in words) when the steps
    differ, and its run (id, and when it started, to the second) when nothing else does.
    """
    is_open = request.status in OPEN_STATUSES
    apart = apart or summary.Apart()
    started = run.created_at if run and apart.twin else None
    return {
        "arguments": summary.key_arguments(request, most=3, first=apart.facts),
        "step": apart.step,
        "own_run": started and {"run_id": request.run_id, "at": second_text(started, now)},
        "started_by": run.created_by if run else None,
        "workflow": run.workflow if run else None,
        "snippet": summary.snippet(request.reason),
        "attached": in_brief(request.attachments),
        "open": is_open,
        "overdue": is_overdue(request, now),
        "deadline": request.expires_at if is_open else None,
        "escalates": next_escalation(request, now),
        "approvals": len(summary.approvers(request)),
        "decided": summary.decided_by(request),
    }


def is_overdue(request: HumanRequest, now: datetime) -> bool:
    """Whether `request` is still open past its deadline."""
    return (
        request.status in OPEN_STATUSES
        and request.expires_at is not None
        and request.expires_at < now
    )


def _four_eyes_allow(user: User, request: HumanRequest, run: Run, decision: str) -> bool:
    try:
        check_four_eyes(user, request, run, decision)
    except NotPermitted:
        return False
    return True


# one request --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ContextView:
    """A request's context split for reading: facts, records (each a titled card), conversation.

    `echoed` is set when a fact was left out because the page already says it (the reason).
    """

    rest: list[tuple[str, Any]] = field(default_factory=list)
    records: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    conversation: list[dict[str, Any]] = field(default_factory=list)
    echoed: bool = False


def context_view(
    context: dict[str, Any],
    *,
    reason: str | None = None,
    files: Collection[str] = (),
    party: str = "user",
) -> ContextView:
    """Split a context: `conversation` (or `messages`), records (objects) and plain facts.

    A fact that is word for word the request's `reason` (a typed request's own question or
    prompt, which became its reason) is not shown twice; nor a list of the names of `files`,
    the request's attachments, which the page shows themselves.
    """
    rest = dict(context)
    said = next((k for k in ("conversation", "messages") if isinstance(rest.get(k), list)), None)
    conversation = rest.pop(said) if said else []
    for key, value in list(rest.items()):
        if (
            files
            and isinstance(value, list)
            and value
            and all(isinstance(v, str) and v in files for v in value)
        ):
            del rest[key]
    echoes = [k for k, v in rest.items() if reason and isinstance(v, str) and v.strip() == reason]
    for key in echoes:
        del rest[key]
    return ContextView(
        echoed=bool(echoes),
        rest=[(k, v) for k, v in rest.items() if not isinstance(v, dict)],
        records=[(k, v) for k, v in rest.items() if isinstance(v, dict)],
        conversation=messages_of([m for m in conversation if m is not None], party),
    )


EXPIRED_SAID: Final = "Nobody answered before the deadline; the run was told it expired."
"""An expiry as the conversation tells it: the run heard `expired`, and no person said it."""
_SPEAKERS: Final = {"user": "User", "assistant": "Agent", "tool": "Tool", "system": "System"}
_SAID_BY: Final = re.compile(r"^(?P<who>[\w.-]{1,30}): (?P<text>.+)$", re.DOTALL)
_TRAILING_JSON: Final = re.compile(r"^(?P<lead>[^{}\[\]]*?):?\s*(?P<json>\{.*\})\s*$", re.DOTALL)


def _speaker_named(name: str) -> str:
    """A speaker by their name, as a page heads their words, its own capitals kept.

    `memory_assistant` is "Memory assistant", as the page's title says the step; `WeatherBot`
    stays "WeatherBot" (Python's `capitalize` made it "Weatherbot").
    """
    said = name.replace("_", " ").strip() or name
    return said[:1].upper() + said[1:]


def _structured(value: Any) -> Any:
    """A tool's result or arguments as data: JSON text parsed, anything else as it is."""
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _raw(value: Any) -> str:
    """The JSON behind a disclosure, each data URI in it in words (its bytes are no reading)."""
    if isinstance(value, str):
        return attachment_text(value) or value
    return json.dumps(summary.without_data_uris(value), indent=2, default=str)


def chat_text(run_input: Any) -> str | None:
    """A run's input as the chat message it started on: the value of its one text field."""
    if isinstance(run_input, dict) and len(run_input) == 1:
        [value] = run_input.values()
        if isinstance(value, str):
            return value
    return None


def _message(entry: Any, party: str = "user") -> dict[str, Any] | None:
    """One conversation entry in one shape, or None for an entry that says nothing.

    `party`: what the run's workflow calls the person it serves (`register(..., party=...)`),
    the speaker of its `user` messages ("Customer", as the requests' conversations say).

    The shape: `speaker` (who, in words), `role` (for styling), and one of `text` (with `data`
    when the text ends in a JSON object), `tool_call` with `arguments`, or `tool_result` (data
    when it is JSON); `raw` keeps the JSON of a call or result for a disclosure. Takes an agent's
    own entries (`role` with `text`, `tool_call` or `tool_result`), the recorded transcript's
    (`type`: message, tool_call, tool_result, handoff, request, answer) and plain lines of text.
    """
    if isinstance(entry, dict) and set(entry) == {"line"}:
        entry = entry["line"]
    if not isinstance(entry, dict):
        text = str(entry).strip()
        said = _SAID_BY.match(text)
        if said:  # "customer: the words" is the customer speaking
            who = said.group("who")
            line = {"role": who.lower(), "speaker": _speaker_named(who), "text": said.group("text")}
            return _with_data(line)
        return {"role": "note", "speaker": "Note", "text": text} if text else None
    kind = entry.get("type")
    if kind == "input":  # an input of one text field is the user's message (an agent's run)
        typed = chat_text(entry.get("input"))
        return (
            None
            if typed is None
            else _message({"type": "message", "role": "user", "text": typed}, party)
        )
    who = entry.get("role") or entry.get("agent") or entry.get("by") or entry.get("author")
    name = entry.get("name") or entry.get("agent")
    if "tool_call" in entry or kind == "tool_call":
        arguments = _structured(entry.get("arguments")) or {}
        who = entry.get("role") or "assistant"  # an agent's call: "Agent · <its name>", as it says
        speaker = _SPEAKERS.get(str(who), str(who))
        return {
            "role": "assistant",
            "speaker": speaker if not name or name == who else f"{speaker} · {name}",
            "tool_call": str(entry.get("tool_call") or entry.get("tool")),
            "arguments": arguments,
            "raw": _raw(arguments),
        }
    if "tool_result" in entry or kind == "tool_result":
        result = _structured(entry.get("tool_result", entry.get("result")))
        attached = [  # what it returned beside its text (an image, a link to one), in words
            words
            for item in entry.get("items") or ()
            if isinstance(item, dict) and (words := content_words(item))
        ]
        if attached and isinstance(result, str):
            result = summary.with_attachments(result, attached)
        tool = entry.get("tool") or entry.get("name")
        return {
            "role": "tool",
            "speaker": f"Tool · {tool}" if tool else "Tool",
            "tool_result": result,
            "raw": _raw(result),
        }
    if kind == "event":  # the workflow's own report (a custom event, an intermediate output)
        data = entry.get("data")
        event = str(entry.get("event"))
        speaker = (
            "Output along the way" if event == "output" else f"Event · {summary.humanize(event)}"
        )
        shown = {"role": "note", "speaker": speaker}
        step = entry.get("executor")
        by = f"from the {summary.humanize(str(step))} step" if step else "from the workflow"
        if isinstance(data, dict | list):
            return shown | {"text": by, "data": data, "raw": _raw(data)}
        return shown | {"text": f"{data} ({by})"}
    if kind == "handoff":
        text = f"{entry.get('from')} hands the case to {entry.get('to')}"
        return {"role": "handoff", "speaker": "Handoff", "text": text}
    if kind == "request":
        text = f"asked {entry.get('team')} ({entry.get('kind')}): {entry.get('title')}"
        return {"role": "baton", "speaker": "Baton", "text": text}
    if kind == "answer" and entry.get("decision") == "expired":  # (recorded as by `system`)
        return {"role": "baton", "speaker": "Baton", "text": EXPIRED_SAID}
    if kind == "answer":
        said = entry.get("text")
        person = {"role": "person", "speaker": str(entry.get("by") or "Person")}
        stands = entry.get("tool") if entry.get("standing") is True else None
        text = decided(entry.get("by"), entry.get("decision"), stands)
        if isinstance(said, dict | list):  # a typed answer: its fields, as the audit shows them
            return person | {"text": text, "data": said, "raw": _raw(said)}
        return person | {"text": f"{text}: {said}" if said else text}
    said = entry.get("text", entry.get("content"))
    text = said if isinstance(said, str) else ("" if said is None else str(said))
    noted = entry.get("attachments")  # a message's attachments, in words (`maf_value`)
    if isinstance(noted, list) and noted:
        text = summary.with_attachments(text, [str(words) for words in noted])
    if not text.strip():
        return None
    role = str(who or "message")
    named = _speaker_named(party) if role == "user" else _SPEAKERS.get(role)
    speaker = named or _speaker_named(role)
    message: dict[str, Any] = {
        "role": role,
        "speaker": f"{speaker} · {name}" if name and name != who else speaker,
        "text": text,
    }
    return _with_data(message)


def _with_data(message: dict[str, Any]) -> dict[str, Any]:
    """`message` with the JSON object its text ends in as `data` (shown field by field)."""
    trailing = _TRAILING_JSON.match(message["text"])
    if trailing:
        data = _structured(trailing.group("json"))
        if isinstance(data, dict):
            message |= {"text": trailing.group("lead").strip(), "data": data, "raw": _raw(data)}
    return message


def messages_of(entries: list[Any], party: str = "user") -> list[dict[str, Any]]:
    """A conversation's entries in one shape (`_message`), those that say nothing left out."""
    return [m for m in (_message(e, party) for e in entries) if m is not None]


def party_of(workflow: str) -> str:
    """What `workflow` calls the person it serves (`user` for one this process does not load)."""
    try:
        return registry.get(workflow).party
    except WorkflowNotFound:
        return "user"


async def request_page(
    parts: Parts,
    user: User,
    request_id: str,
    *,
    submitted: str | None = None,
    raw: FormValues | None = None,
    errors: list[dict[str, Any]] | None = None,
    problem: str | None = None,
    confirm: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A request with its run, audit trail and, while it is open, a form per decision.

    Args:
        parts: The app's parts.
        user: Who looks.
        request_id: The request.
        submitted: The decision of a post shown again (after a refusal, or to confirm it).
        raw: That post, shown again as typed.
        errors: Why it was refused, by field.
        problem: A refusal naming no field (answered by someone else, closed).
        confirm: An edit to confirm: its `diff`, `consequences` and `digest`.

    Returns:
        The page's context.
    """
    after = await parts.store.last_event_id()  # first: what is written from now on goes live
    request = await parts.requests.get(request_id, viewer=user)
    run = await parts.runtime.get(request.run_id, viewer=user)
    events = await parts.requests.events(request.id, viewer=user)
    is_open = request.status in OPEN_STATUSES
    now = parts.requests.now()
    claim = (
        {
            "by": request.claimed_by,
            "until": request.claimed_until,
            "mine": request.claimed_by == user.name,
        }
        if claim_is_live(request, now)
        else None
    )
    refusal = None
    if is_open:
        try:
            check_can_answer(user, request)
        except NotPermitted as exc:
            refusal = exc.to_reader or str(exc)
    faults = [f"the request's {f}" for f in request.faults]
    forms: tuple[DecisionForm, ...] = ()
    four_eyes = None
    # An approver of a two-approver request has nothing more to decide.
    approved_by_me = next(
        (a.at for a in request.answers if a.actor == user.name and a.decision == "approve"), None
    )
    held = claim is not None and not claim["mine"]  # (the service refuses answers over it)
    if is_open and refusal is None and not faults and approved_by_me is None and not held:
        forms = shown(
            "the answer forms",
            lambda: answer_forms(
                request,
                submitted=submitted,
                raw=raw,
                errors=errors or [],
                fixed=parts.requests.fixed_arguments(request),
            ),
            (),
            faults,
        )
        allowed = [f for f in forms if _four_eyes_allow(user, request, run, f.decision)]
        if len(allowed) < len(forms):
            four_eyes = four_eyes_words(
                request,
                [f.decision for f in forms if f not in allowed],
                [f.decision for f in allowed],
            )
        forms = tuple(allowed)
    approvers = summary.approvers(request)
    run_events = await parts.runtime.events(run.id, viewer=user)
    run_effects = summary.effects_of(run_events)
    run_requests = await parts.requests.of_run(run.id)
    outcome = summary.outcome_of(run, run_requests, *run_effects)
    # the run's other open requests: an answer here may be one of several it waits on
    also_open = sorted(
        (r for r in run_requests if r.status in OPEN_STATUSES and r.id != request.id),
        key=lambda r: r.created_at,
    )
    queue = (await parts.requests.list(_my_work(user, now, 12), viewer=user)).items
    queue_count = await count_of(parts, user, _my_work(user, now, 12))
    return {
        "after": after,
        "live_types": ",".join(REQUEST_EVENTS),
        "approvers": approvers,
        "approvals_left": max(request.approvals_required - len(approvers), 0),
        "approved_by_me": approved_by_me if is_open else None,
        "choices": summary.choices(request),
        "taking_over": summary.taking_over(request),
        "outcome_text": outcome_text(request, run, events, outcome),
        "unsure": [unsure_text(request, e) for e in summary.unsure_after(request, run_events)],
        "closed_at": _closed_at(request, events),
        "escalations": escalations_of(request, events),
        "escalates": next_escalation(request, now),
        "run_outcome": outcome,
        "run_outcome_tone": summary.outcome_tone(outcome),
        "queue": queue if len(queue) > 1 or (queue and queue[0].id != request.id) else [],
        "queue_count": queue_count,
        "queue_apart": {q.id: a.told(q) for q, a in _apart(queue)},
        "also_open": also_open,
        "also_apart": {
            r.id: a.told(r) for r, a in _apart([request, *also_open]) if r.id != request.id
        },
        "queue_overdue": {q.id for q in queue if is_overdue(q, now)},
        "queue_escalates": {q.id: next_escalation(q, now) for q in queue},
        "claim_for": parts.requests.claim_seconds,
        "human_request": request,
        "under_no_rule": request.policy_rule == DEFAULT_RULE,  # no rule of the policies file
        "page_currency": summary.currency_of(request),
        "run": run,
        "events": events,
        "context": shown(
            "the context",
            lambda: context_view(
                request.context,
                reason=request.reason.strip(),
                files={a.name for a in request.attachments},
                party=party_of(run.workflow),
            ),
            ContextView(),
            faults,
        ),
        "faults": faults,
        "is_open": is_open,
        "overdue": is_overdue(request, now),
        "refusal": refusal,
        "four_eyes": four_eyes,
        "forms": forms,
        "problem": problem,
        "confirm": confirm,
        "section": "inbox",
        "question": request.payload.get("question"),
        "options": request.payload.get("options") or [],
        "claim": claim,
        "may_release": claim is not None and _may_release(user, request.claimed_by),
        "takeover_request": await parts.requests.takeover_of(request, viewer=user),
    }


# Audit events that may change an open request's page while someone looks at it.
REQUEST_EVENTS: Final = (
    "request.answered",
    "request.expired",
    "request.cancelled",
    "request.escalated",
    "request.claimed",
    "request.released",
    "request.reassigned",
)


def _my_work(user: User, now: datetime, limit: int) -> RequestFilter:
    """The `mine` view's filter: what waits for `user`, most urgent first."""
    flt = InboxQuery(view="mine").request_filter(user, now)
    return flt.model_copy(update={"limit": limit})


async def next_request(parts: Parts, user: User, after: str) -> HumanRequest | None:
    """The most urgent open request that waits for `user`, other than `after`."""
    found = await parts.requests.list(_my_work(user, parts.requests.now(), 2), viewer=user)
    return next((r for r in found.items if r.id != after), None)


def _closed_at(request: HumanRequest, events: list[AuditEvent]) -> datetime | None:
    """When a closed request closed: its answer, or the event that expired or cancelled it."""
    if request.status in OPEN_STATUSES:
        return None
    if request.answered_at:
        return request.answered_at
    ended = [e.at for e in events if e.type in ("request.expired", "request.cancelled")]
    return ended[-1] if ended else None


def escalations_of(request: HumanRequest, events: list[AuditEvent]) -> list[dict[str, Any]]:
    """Each escalation as it happened (from its audit event): when, to whom, how long after."""
    return [
        {
            "team": e.data.get("to_team"),
            "from": e.data.get("from_team"),
            "at": e.at,
            "after": (e.at - request.created_at).total_seconds(),
            "priority": e.data.get("priority"),
        }
        for e in events
        if e.type == "request.escalated"
    ]


def outcome_text(
    request: HumanRequest, run: Run, events: list[AuditEvent], outcome: str | None
) -> str:
    """What became of a closed request, and of its run after it, in words from the records."""
    if request.status in OPEN_STATUSES:
        return ""
    when = _closed_at(request, events)
    at = f" at {moment_text(when)}" if when else ""
    by = summary.decided_by(request, at)
    if by is not None:
        said = f"{by}."
    elif request.status == "expired":
        said = f"Expired{at}: nobody answered before the deadline."
    elif request.status == "cancelled":
        said = cancelled_text(events, at)
    else:
        said = f"{request.status.capitalize()}{at}."
    if run.status in TERMINAL_RUN:
        ended = f" ({outcome})" if outcome else ""
        return f"{said} The run has ended: {run.status}{ended}."
    if request.status == "resumed":
        return f"{said} The run carried on with it."
    if request.status == "answered":
        return f"{said} The run resumes with it shortly."
    return said


def cancelled_text(events: list[AuditEvent], at: str) -> str:
    """Who cancelled a request and why, from its `request.cancelled` event (`at`: when)."""
    cancel = next((e for e in reversed(events) if e.type == "request.cancelled"), None)
    if cancel is None or cancel.actor == "system":  # its run ended with it open
        return f"Cancelled{at}: it takes no answer."
    reason = str(cancel.data.get("reason") or "").strip()
    if not reason:
        return f"Cancelled by {cancel.actor}{at}; no reason was given. It takes no answer."
    return f"Cancelled by {cancel.actor}{at}: {with_stop(reason)}"


def moved_text(event: AuditEvent, now: datetime) -> str:
    """Where a request went from the reader's team, and when, from the event that moved it."""
    how = "escalated" if event.type == "request.escalated" else "reassigned"
    at = day_or_hour_text(event.at, now)
    return (
        f"This request was {how} to {event.data.get('to_team')} at {at}; you can no longer open it."
    )


def unsure_text(request: HumanRequest, event: AuditEvent) -> str:
    """An `effect.uncertain` event as the page of the request that approved the call says it.

    Which call, with what, that it may or may not have acted, and what to check before it is
    called again: the approver is the one most likely to be asked whether it went out.
    """
    currency = summary.currency_of(request)
    arguments = event.data.get("arguments") or {}
    called = ", ".join(  # a text in quotes: the words it would have sent
        f"{summary.humanize(k)} "
        + (f"“{v}”" if isinstance(v, str) else summary.shown_value(k, v, currency))
        for k, v in arguments.items()
    )
    return (
        f"{event.data.get('tool')} may or may not have acted: it was cut off while it ran "
        f"({moment_text(event.at)})"
        + (f", called with {called}," if called else "")
        + " and was not run again. Check whether it acted before calling it again."
    )


async def request_live(parts: Parts, user: User, request_id: str, after: int) -> dict[str, Any]:
    """A request's page after `after`: what others did to it since, and its decision now."""
    page = await request_page(parts, user, request_id)
    since = [e for e in page["events"] if e.id > after and e.type in REQUEST_EVENTS]
    return page | {"changes": [change_text(e) for e in since]}


def change_text(event: AuditEvent) -> str:
    """One thing that happened to a request, for the banner of a page drawn before it."""
    data, at = event.data, hour_text(event.at)
    if event.type == "request.answered":
        return f"{decided(event.actor, data.get('decision'), data.get('standing'))} at {at}"
    if event.type == "request.expired":
        return f"it expired at {at}, nobody having answered"
    if event.type == "request.cancelled":
        why = f": {data['reason']}" if data.get("reason") else ""
        who = "" if event.actor == "system" else f" by {event.actor}"
        return f"it was cancelled{who} at {at}{why}"
    if event.type == "request.escalated":
        return f"it was escalated to {data.get('to_team')} at {at}"
    if event.type == "request.claimed":
        return f"{event.actor} claimed it at {at}"
    if event.type == "request.released":
        return f"the claim on it was released at {at}"
    return f"it was reassigned at {at}"


def _may_release(user: User, holder: str | None) -> bool:
    """Whether `user` may release `holder`'s claim (as the service decides: `release_scope`)."""
    try:
        scope = release_scope(user)
    except NotPermitted:
        return False
    return scope is None or scope == holder


# runs ---------------------------------------------------------------------------------------


async def runs_page(parts: Parts, user: User, query: RunsQuery) -> dict[str, Any]:
    """One page of the runs `user` may see, newest first."""
    page = await parts.runtime.list_runs(
        status=query.status,
        workflow=query.workflow,
        cursor=query.cursor,
        limit=PAGE_SIZE,
        viewer=user,
    )
    retrying = await parts.store.runs_retrying([r.id for r in page.items])
    briefs = await parts.store.run_briefs([r.id for r in page.items])
    return {
        "query": query,
        "runs": [_run_row(run, briefs[run.id]) for run in page.items],
        "held": {run_id: bool(held_for(found.error)) for run_id, found in retrying.items()},
        "next_link": query.link(cursor=page.next_cursor) if page.next_cursor else None,
        "first_link": query.link() if query.cursor else None,
        "statuses": RUN_STATUSES,
        "workflows": [w.name for w in registry.all_workflows()],
        "section": "runs",
    }


def _run_row(run: Run, brief: RunBrief) -> dict[str, Any]:
    """A run as the runs list shows it: what it is about, and what it did (as its page says)."""
    outcome = summary.outcome_of(run, brief.requests, *summary.effects_of(brief.effect_events))
    return {
        "run": run,
        "about": summary.run_about(run, brief.requests[0] if brief.requests else None),
        "outcome": outcome,
        "outcome_tone": summary.outcome_tone(outcome),
    }


async def run_page(
    parts: Parts, user: User, run_id: str, *, problem: str | None = None, said: str = ""
) -> dict[str, Any]:
    """A run: its graph with where it waits, its requests, conversation and audit trail."""
    after = await parts.store.last_event_id()  # first: what is written from now on goes live
    run = await parts.runtime.get(run_id, viewer=user)
    # as the API's run: who may see a run sees all of its requests
    requests = await parts.requests.of_run(run_id)
    events = await parts.runtime.events(run_id, viewer=user)
    try:
        check_can_cancel(user)
        can_cancel = run.status not in TERMINAL_RUN
    except NotPermitted:
        can_cancel = False
    faults = [f"the run's {f}" for f in run.faults]
    faults += [f"request {r.id}'s {f}" for r in requests for f in r.faults]
    recorded = await parts.runtime.conversation(run_id)
    executed, uncertain, failed = summary.effects_of(events)
    outcome = summary.outcome_of(run, requests, executed, uncertain, failed)
    retrying = await parts.store.run_retrying(run_id)
    now = parts.requests.now()
    graph = shown("the graph", lambda: graph_of(parts, run, requests), None, faults)
    continues = None
    if run.continues is not None:
        with contextlib.suppress(RunNotFound):  # (not theirs to see: no link to it)
            continues = turn_of(await parts.runtime.get(run.continues, viewer=user))
    return {
        "continues": continues,
        "continued_by": [turn_of(r) for r in await parts.runtime.continued_by(run_id, viewer=user)],
        "can_continue": run.status in TERMINAL_RUN and _may_continue(parts, user, run),
        "said": said,
        "retrying": retrying,
        "held": retrying and held_for(retrying.error),
        # a time gone by: the try is under way, or waits for a worker to take it
        "retry_at": retrying and retrying.next_attempt_at > now and retrying.next_attempt_at,
        # the kind of failure, not its text: that is the API's and the log's (`retrying`)
        "retry_failure": retrying and retrying.error.partition(":")[0],
        "after": after,
        "outcome": outcome,
        "outcome_tone": summary.outcome_tone(outcome),
        "output_said": summary.output_said(run),
        "unsure": summary.uncertain_calls(events),
        "about": summary.run_about(run, requests[0] if requests else None),
        "run": run,
        "requests": requests,
        "page_currency": summary.one_currency(requests),
        "told_apart": {r.id: a.told(r) for r, a in _apart(requests)},
        "events": events,
        "graph": graph,
        "where": where_text(run, requests, graph, retrying),
        "conversation": shown(
            "the conversation",
            lambda: messages_of(recorded, party_of(run.workflow)) or conversation_of(run, requests),
            list[dict[str, Any]](),
            faults,
        ),
        "faults": faults,
        "can_cancel": can_cancel,
        "cancelled": next((e for e in events if e.type == "run.cancelled"), None),
        "cancel_reason_max": CANCEL_REASON_MAX,
        "effects_said": summary.effects_said(executed, uncertain, failed),
        "may_start": _may_start(user),
        "problem": problem,
        "live_types": RUN_EVENTS,
        "section": "runs",
    }


def _apart(requests: list[HumanRequest]) -> list[tuple[HumanRequest, summary.Apart]]:
    """The requests of a list that share their title with another, each with what differs."""
    apart = summary.telling_apart(requests)
    return [(r, apart[r.id]) for r in requests if r.id in apart]


def turn_of(run: Run) -> dict[str, Any]:
    """A run of a conversation, as its page names it: id, what it started on, who and when."""
    return {
        "id": run.id,
        "said": chat_text(run.input),
        "by": run.created_by,
        "at": run.created_at,
    }


def _may_start(user: User) -> bool:
    """Whether `user` may start runs (a failed run's page points them to starting one again)."""
    try:
        check_can_run(user)
    except NotPermitted:
        return False
    return True


def _may_continue(parts: Parts, user: User, run: Run) -> bool:
    """Whether `user` may send `run`'s conversation a next message from its page."""
    try:
        check_can_run(user)
        spec = registry.get(run.workflow)
    except (NotPermitted, WorkflowNotFound):
        return False
    try:
        return spec.text_field() is not None and parts.runtime.converses(run.workflow)
    except Exception:  # a builder that fails here: the page says so of its graph
        logger.exception("could not build %s to see if it takes a conversation", run.workflow)
        return False


def held_for(error: str) -> str | None:
    """Why a run is held for the code that paused it, from its drive's recorded error, else None.

    The worker records a held drive's error as `RunHeld: <why>` (`baton.errors.RunHeld`).
    """
    prefix = f"{RunHeld.__name__}: "
    if not error.startswith(prefix):
        return None
    why = error.removeprefix(prefix)
    return why[:1].upper() + why[1:]


def graph_of(parts: Parts, run: Run, requests: list[HumanRequest]) -> GraphLayout | None:
    """The run's workflow graph laid out, its current node and pending nodes marked.

    Pending: the executors with requests open. Current: where the run is: while it waits at one
    executor, that one (waiting at several at once, it is at each of them alike, and the drawing
    marks them all as waiting and none apart); while it runs, the executor that asked last (its
    answer is being delivered), or the start node before anything was asked; an ended run has
    none.
    """
    try:
        graph = parts.runtime.graph(run.workflow)
    except WorkflowNotFound:
        return None  # a workflow this process does not load (BATON_WORKFLOWS differs)
    open_requests = [r for r in requests if r.status in OPEN_STATUSES]
    pending = frozenset(r.executor_id for r in open_requests if r.executor_id)
    current: str | None = None
    if run.status == "waiting" and len(pending) == 1:
        [current] = pending
    elif run.status == "running":
        asked = [r for r in requests if r.executor_id]
        current = max(asked, key=lambda r: r.created_at).executor_id if asked else graph.start
    return lay_out(graph, pending=pending, current=current)


def where_text(
    run: Run,
    requests: list[HumanRequest],
    graph: GraphLayout | None,
    retrying: Retrying | None = None,
) -> str:
    """Where the run is, as a person says it: from its status and its requests' records.

    A waiting run waits for answers to its open requests, each named by its title, its team and
    the step that asked (its executor's label in the graph, in words: `legal_approval` is the
    legal approval step); an answer not yet delivered is about to carry it on, unless a drive
    of the run failed and waits to be tried again (`retrying`): then it carries on once a try
    succeeds, and a held run's once the version of its workflow that paused it runs again; a
    running run carries on after the step that asked last, or starts at its first step.
    """
    labels = {n.id: n.label for n in graph.nodes} if graph else {}

    def step(executor_id: str) -> str:
        return f"its {summary.humanize(labels.get(executor_id, executor_id))} step"

    if run.status in TERMINAL_RUN:
        return "The run has ended."
    waiting = sorted((r for r in requests if r.status in OPEN_STATUSES), key=lambda r: r.created_at)
    if waiting:
        asked = [
            f"“{r.title}” from {r.team}" + (f" ({step(r.executor_id)})" if r.executor_id else "")
            for r in waiting
        ]
        return f"The run waits for {'an answer' if len(asked) == 1 else 'answers'} to " + (
            f"{summary.words(asked)}."
        )
    given = [r for r in requests if r.status == "answered"]  # recorded, not yet delivered
    if given:
        last = max(given, key=lambda r: r.answered_at or r.created_at)
        said = f"“{last.title}”: {summary.decided_by(last)}."
        if retrying is None:
            return f"{said} The run carries on with it shortly."
        if held_for(retrying.error):
            return (
                f"{said} The run carries on with it once the version of its workflow that paused "
                "it runs again."
            )
        return f"{said} The run carries on with it once Baton's next try succeeds."
    if run.status == "running":
        ask = max((r for r in requests if r.executor_id), key=lambda r: r.created_at, default=None)
        if ask is not None and ask.executor_id:
            return f"The run is carrying on after {step(ask.executor_id)}."
        start = next((n.id for n in graph.nodes if n.start), None) if graph else None
        return f"The run is starting at {step(start)}." if start else "The run is starting."
    return "The run waits for nothing now."


def conversation_of(run: Run, requests: list[HumanRequest]) -> list[dict[str, Any]]:
    """A run without a recorded transcript: the newest conversation one of its requests carried."""
    for request in sorted(requests, key=lambda r: r.created_at, reverse=True):
        view = context_view(request.context, party=party_of(run.workflow))
        if view.conversation:
            return view.conversation
    return []


# starting a run -----------------------------------------------------------------------------


def start_page(
    user: User,
    chosen: str | None,
    *,
    raw: FormValues | None = None,
    errors: list[dict[str, Any]] | None = None,
    workflow_error: str | None = None,
) -> dict[str, Any]:
    """The workflows to pick from and, once one is picked, the form built from its input schema.

    `workflow_error` is told on the workflow picker (a start posted without one).
    """
    form: InputForm | None = None
    problem = None
    try:
        check_can_run(user)
    except NotPermitted as exc:
        problem = str(exc)
    if chosen and problem is None:
        spec = registry.get(chosen)
        form = input_form(
            spec.name,
            spec.description,
            spec.input_schema(),
            raw=raw,
            errors=errors or [],
        )
    return {
        "workflows": [(w.name, w.description) for w in registry.all_workflows()],
        "chosen": chosen,
        "form": form,
        "problem": problem,
        "workflow_error": workflow_error,
        "section": "start",
    }
