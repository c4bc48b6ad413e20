"""What each page shows, gathered through the services the API uses.

Routes parse a request and render; templates lay out; in between, these functions ask the same
`RequestService`, `Runtime` and audit trail the JSON API asks, and shape the answers for reading
(which filters apply, what a graph highlights, how a context splits into facts, records and
conversation). No rule of Baton's is decided here: who may answer is `human.access`'s, what an
answer means is `RequestService`'s.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal, TypeVar, get_args
from urllib.parse import urlencode

from pydantic import BaseModel, ConfigDict, field_validator

from baton.errors import NotPermitted, WorkflowNotFound
from baton.wiring import Parts
from human.access import (
    check_can_answer,
    check_can_cancel,
    check_can_run,
    check_four_eyes,
    release_scope,
)
from human.kinds import KINDS
from human.records import (
    OPEN_STATUSES,
    TERMINAL_RUN,
    HumanRequest,
    RequestStatus,
    Run,
    RunStatus,
    User,
)
from human.routing import claim_is_live
from human.store.base import RequestFilter
from web.forms import DecisionForm, FormValues, InputForm, answer_forms, input_form
from web.graph import GraphLayout, lay_out
from workflows.platform import registry

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


class InboxQuery(BaseModel):
    """The inbox's filters, from its query string (an empty field means no filter)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    status: RequestStatus | Literal["any"] = "pending"
    team: str = MY_TEAMS
    kind: str | None = None
    workflow: str | None = None
    assignee: str | None = None
    overdue: bool = False
    cursor: str | None = None

    @field_validator("kind", "workflow", "assignee", "cursor", mode="before")
    @classmethod
    def _blank(cls, value: Any) -> Any:
        return _blank_is_none(value)

    @field_validator("status", mode="before")
    @classmethod
    def _status(cls, value: Any) -> Any:
        return _blank_is_none(value) or "pending"

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, value: str | None) -> str | None:
        if value is not None and value not in KINDS:
            raise ValueError(f"must be one of {', '.join(KINDS)}")
        return value

    def request_filter(self, user: User, now: datetime) -> RequestFilter:
        """The store filter these choices mean for `user` (overdue: deadline before `now`)."""
        return RequestFilter(
            status=None if self.status == "any" else self.status,
            team=None if self.team in (MY_TEAMS, ALL_TEAMS) else self.team,
            teams=tuple(user.teams) if self.team == MY_TEAMS else None,
            kind=self.kind,
            workflow=self.workflow,
            assignee=user.name if self.assignee == "me" else self.assignee,
            overdue_at=now if self.overdue else None,
            cursor=self.cursor,
            limit=PAGE_SIZE,
        )

    def link(self, **changes: Any) -> str:
        """The inbox URL of these filters with `changes` (a new filter starts a new page)."""
        values = self.model_dump() | {"cursor": None} | changes
        query = {
            k: ("1" if v is True else v) for k, v in values.items() if v not in (None, "", False)
        }
        if query.get("status") == "pending":
            del query["status"]
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
)


# the inbox ----------------------------------------------------------------------------------


async def inbox_page(parts: Parts, user: User, query: InboxQuery) -> dict[str, Any]:
    """The inbox: one page of requests under `query`, counts per status, the filter choices."""
    now = parts.requests.now()
    flt = query.request_filter(user, now)
    page = await parts.requests.list(flt, viewer=user)
    counts = await parts.requests.count(flt, viewer=user)
    return {
        "query": query,
        "requests": page.items,
        "next_link": query.link(cursor=page.next_cursor) if page.next_cursor else None,
        "first_link": query.link() if query.cursor else None,
        "counts": [(s, counts.get(s, 0)) for s in REQUEST_STATUSES],
        "total": sum(counts.values()),
        "statuses": REQUEST_STATUSES,
        "kinds": tuple(KINDS),
        "workflows": [w.name for w in registry.all_workflows()],
        "teams": tuple(user.teams),
        "live_types": ",".join(INBOX_EVENTS),
        "section": "inbox",
        "approvals": {r.id: approvals_given(r) for r in page.items},
        "overdue": {r.id for r in page.items if is_overdue(r, now)},
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


def approvals_given(request: HumanRequest) -> int:
    """How many distinct people approved so far (for two-approver requests)."""
    return len({a.actor for a in request.answers if a.decision == "approve"})


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


def context_view(context: dict[str, Any], *, reason: str | None = None) -> ContextView:
    """Split a context: `conversation` (or `messages`), records (objects) and plain facts.

    A fact that is word for word the request's `reason` (a typed request's own question or
    prompt, which became its reason) is not shown twice.
    """
    rest = dict(context)
    said = next((k for k in ("conversation", "messages") if isinstance(rest.get(k), list)), None)
    conversation = rest.pop(said) if said else []
    echoes = [k for k, v in rest.items() if reason and isinstance(v, str) and v.strip() == reason]
    for key in echoes:
        del rest[key]
    return ContextView(
        echoed=bool(echoes),
        rest=[(k, v) for k, v in rest.items() if not isinstance(v, dict)],
        records=[(k, v) for k, v in rest.items() if isinstance(v, dict)],
        conversation=[_message(m) for m in conversation if m is not None],
    )


def _message(entry: Any) -> dict[str, Any]:
    """One conversation entry in one shape: who, and text, a tool call or a tool's result.

    Takes an agent's own entries (`role` with `text`, `tool_call` or `tool_result`), the
    recorded transcript's (`type`: message, tool_call, tool_result, handoff, request, answer) and
    plain lines of text.
    """
    if not isinstance(entry, dict):
        return {"role": "note", "text": str(entry)}
    kind = entry.get("type")
    who = entry.get("role") or entry.get("agent") or entry.get("by") or entry.get("author")
    if "tool_call" in entry or kind == "tool_call":
        return {
            "role": str(who or "assistant"),
            "tool_call": str(entry.get("tool_call") or entry.get("tool")),
            "arguments": entry.get("arguments") or {},
        }
    if "tool_result" in entry or kind == "tool_result":
        result = entry.get("tool_result", entry.get("result"))
        shown = result if isinstance(result, str) else json.dumps(result, default=str)
        return {
            "role": str(entry.get("role") or "tool"),
            "name": entry.get("tool"),
            "tool_result": shown,
        }
    if kind == "handoff":
        return {
            "role": "handoff",
            "text": f"{entry.get('from')} hands the case to {entry.get('to')}",
        }
    if kind == "request":
        text = f"asked {entry.get('team')} ({entry.get('kind')}): {entry.get('title')}"
        return {"role": "baton", "text": text}
    if kind == "answer":
        note = f": {entry['text']}" if entry.get("text") else ""
        text = f"{entry.get('by')} answered with {entry.get('decision')}{note}"
        return {"role": "person", "text": text}
    said = entry.get("text", entry.get("content"))
    message: dict[str, Any] = {
        "role": str(who or "message"),
        "text": said if isinstance(said, str) else ("" if said is None else str(said)),
    }
    if entry.get("name"):
        message["name"] = str(entry["name"])
    return message


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
            refusal = str(exc)
    faults = [f"the request's {f}" for f in request.faults]
    forms: tuple[DecisionForm, ...] = ()
    four_eyes = None
    approved_by_me = is_open and any(
        a.actor == user.name and a.decision == "approve" for a in request.answers
    )
    if is_open and refusal is None and not faults and not approved_by_me:
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
            four_eyes = (
                f"Four-eyes: you started this run, so you may not "
                f"{' or '.join(f.decision for f in forms if f not in allowed)} its "
                f"{request.kind} requests; another member of {request.team} must."
            )
        forms = tuple(allowed)
    return {
        "human_request": request,
        "run": run,
        "events": events,
        "context": shown(
            "the context",
            lambda: context_view(request.context, reason=request.reason.strip()),
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
        "approvals": approvals_given(request),
        "section": "inbox",
        "question": request.payload.get("question"),
        "options": request.payload.get("options") or [],
        "claim": claim,
        "may_release": claim is not None and _may_release(user, request.claimed_by),
        "takeover_request": await parts.requests.takeover_of(request, viewer=user),
        "approved_by_me": approved_by_me,
    }


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
    return {
        "query": query,
        "runs": page.items,
        "next_link": query.link(cursor=page.next_cursor) if page.next_cursor else None,
        "first_link": query.link() if query.cursor else None,
        "statuses": RUN_STATUSES,
        "workflows": [w.name for w in registry.all_workflows()],
        "section": "runs",
    }


async def run_page(
    parts: Parts, user: User, run_id: str, *, problem: str | None = None
) -> dict[str, Any]:
    """A run: its graph with where it waits, its requests, conversation and audit trail."""
    run = await parts.runtime.get(run_id, viewer=user)
    # as the API's run: who may see a run sees all of its requests
    requests = (await parts.requests.list(RequestFilter(run_id=run_id, limit=500))).items
    events = await parts.runtime.events(run_id, viewer=user)
    try:
        check_can_cancel(user)
        can_cancel = run.status not in TERMINAL_RUN
    except NotPermitted:
        can_cancel = False
    faults = [f"the run's {f}" for f in run.faults]
    faults += [f"request {r.id}'s {f}" for r in requests for f in r.faults]
    recorded = await parts.runtime.conversation(run_id)
    return {
        "run": run,
        "requests": requests,
        "events": events,
        "graph": shown("the graph", lambda: graph_of(parts, run, requests), None, faults),
        "conversation": shown(
            "the conversation",
            lambda: [_message(e) for e in recorded] or conversation_of(run, requests),
            list[dict[str, Any]](),
            faults,
        ),
        "faults": faults,
        "can_cancel": can_cancel,
        "problem": problem,
        "live_types": RUN_EVENTS,
        "section": "runs",
    }


def graph_of(parts: Parts, run: Run, requests: list[HumanRequest]) -> GraphLayout | None:
    """The run's workflow graph laid out, its current node and pending nodes marked.

    Pending: the executors with requests open. Current: where the run is: while it waits, the
    executor of its newest open request; while it runs, the executor that asked last (its answer
    is being delivered), or the start node before anything was asked; an ended run has none.
    """
    try:
        graph = parts.runtime.graph(run.workflow)
    except WorkflowNotFound:
        return None  # a workflow this process does not load (BATON_WORKFLOWS differs)
    open_requests = [r for r in requests if r.status in OPEN_STATUSES]
    pending = frozenset(r.executor_id for r in open_requests if r.executor_id)
    current: str | None = None
    if run.status == "waiting" and open_requests:
        current = max(open_requests, key=lambda r: r.created_at).executor_id
    elif run.status == "running":
        asked = [r for r in requests if r.executor_id]
        current = max(asked, key=lambda r: r.created_at).executor_id if asked else graph.start
    return lay_out(graph, pending=pending, current=current)


def conversation_of(run: Run, requests: list[HumanRequest]) -> list[dict[str, Any]]:
    """A run without a recorded transcript: the newest conversation one of its requests carried."""
    for request in sorted(requests, key=lambda r: r.created_at, reverse=True):
        view = context_view(request.context)
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
