"""`ask`: the platform's workflow that asks a person for an agent outside any workflow.

An agent connected over MCP (`web/mcp.py`) asks for an approval, an answer or a review; each ask
is a run of this workflow (`executors.platform.asks`), so it is a durable HumanRequest in the
inbox, routed by the policies file, with deadlines, escalation, notifications, audit and a run
page, and it survives any restart. `AskService` is what the edge calls: start an ask as the
caller, read where an ask stands, and wait for its answer on the audit feed (`/api/stream`'s).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from agent_framework import Workflow, WorkflowBuilder
from pydantic import BaseModel, Field

from baton.errors import InvalidInput, NotFound, RequestNotFound, RunNotFound
from executors.platform.asks import AskDesk, AskInput, Asks
from executors.platform.services import RunServices
from human.access import check_can_run
from human.records import AuditEvent, HumanRequest, Run, User
from human.service import RequestService, close_feed
from human.store.base import RequestFilter
from workflows.platform import registry
from workflows.platform.registry import register
from workflows.platform.runtime import Runtime, typed_input

NAME = "ask"

ENDED = frozenset({"run.completed", "run.failed", "run.cancelled"})
PROGRESS_EVERY_S = 10.0
"""How often a waiting caller hears that the ask is still open, when nothing happens."""
SETTLE_S = 10.0
"""However short the caller's wait, how long it waits for the policy's decision and the request
(the run's first drive), so that even `wait_seconds=0` says who was asked or what was decided."""


@register(
    NAME,
    input_model=AskInput,
    adapters=lambda services: [Asks(services, workflow=NAME)],
    description="Ask a person for an agent: an approval of an action, an answer or a review",
    reuse=True,
)
def build_workflow(services: RunServices) -> Workflow:
    """One executor asks a person and ends the run with the typed answer."""
    return WorkflowBuilder(name=NAME, start_executor=AskDesk()).build()


AskStatus = Literal["waiting", "answered", "decided", "expired", "cancelled", "failed"]


class AskOutcome(BaseModel):
    """Where an ask stands, as the agent that asked reads it."""

    request_id: str = Field(
        description="The ask's id (its run): give it to get_answer to read or wait for the answer."
    )
    status: AskStatus = Field(
        description="waiting (nobody has answered yet), answered (a person did), decided (the "
        "policy did, no person asked), expired, cancelled or failed"
    )
    kind: str
    answer: dict[str, Any] | None = Field(
        None,
        description="The typed answer: {decision: approve|edit|reject, arguments?, reason?} for "
        "an approval, {decision: answer, answer} for a question, {decision: approve|edit|reject, "
        "content?, reason?} for a review; {decision: expired|cancelled} when nobody answered.",
    )
    answered_by: list[str] = Field(default_factory=list, description="Who answered, first to last.")
    policy_rule: str | None = None
    team: str | None = Field(None, description="The team asked.")
    human_request_id: str | None = Field(None, description="The request in Baton's inbox.")
    url: str | None = Field(None, description="The request's page (or the run's) in Baton.")
    message: str = Field(description="The outcome in words.")


Progress = Callable[[float, str], Awaitable[None]]


class AskService:
    """Asks people for agents, and tells the agents what came of it."""

    def __init__(self, runtime: Runtime, requests: RequestService, *, base_url: str) -> None:
        self._runtime = runtime
        self._requests = requests
        self._store = runtime.store
        self._base_url = base_url.rstrip("/")

    async def ask(self, fields: dict[str, Any], *, user: User, agent: str) -> tuple[Run, int]:
        """Start an ask as `user` (through `agent`); the run, and the feed position before it.

        Refused before anything is stored: a viewer (`NotPermitted`), fields that do not fit
        (`InvalidInput` naming each), a team that does not exist.
        """
        check_can_run(user)
        spec_input = typed_input(registry.get(NAME), {**fields, "agent": agent})
        assert isinstance(spec_input, AskInput)
        if spec_input.team is not None:
            teams = {t.name for t in await self._store.list_teams()}
            if spec_input.team not in teams:
                raise InvalidInput(
                    f"team: no team {spec_input.team!r}; teams: {', '.join(sorted(teams))}",
                    [{"loc": ["team"], "msg": f"no team {spec_input.team!r}"}],
                )
        after = await self._store.last_event_id()
        run = await self._runtime.start(NAME, spec_input.model_dump(mode="json"), actor=user.name)
        return run, after

    async def outcome(self, ask_id: str, *, viewer: User) -> AskOutcome:
        """Where the ask `ask_id` (its run's id, or one of its requests' ids) stands."""
        return await self._outcome(await self._run_of(ask_id, viewer))

    async def wait(
        self, ask_id: str, *, viewer: User, wait_s: float, progress: Progress, after: int
    ) -> AskOutcome:
        """The ask's outcome once it is answered, or after `wait_s` as it stands then.

        Whatever `wait_s`, the run's first drive is waited for (up to `SETTLE_S`): the outcome
        then names the request and team asked, or is the policy's decision.

        Follows the audit feed from `after` (the position before the ask started, or before its
        state was read), so no event in between is missed; `progress(elapsed_s, words)` tells the
        caller what happens and, every `PROGRESS_EVERY_S` without news, that it still waits.
        """
        run = await self._run_of(ask_id, viewer)
        feed = self._requests.watch(viewer, after_id=after, run_id=run.id)
        started = time.monotonic()
        deadline = started + wait_s
        settled = started + max(wait_s, SETTLE_S)
        step: asyncio.Future[AuditEvent] | None = None
        if wait_s > 0:  # the id first: a caller that dies while waiting can ask for it again
            await progress(0.0, f"request_id {run.id}: waiting up to {wait_s:g} s for the answer")
        try:
            while True:
                run = await self._runtime.get(run.id)
                outcome = await self._outcome(run)
                now = time.monotonic()
                if outcome.status != "waiting":
                    return outcome
                if now >= deadline and (run.status != "running" or now >= settled):
                    return outcome  # nobody answered in time (the policy and routing are done)
                until = deadline if run.status != "running" else max(deadline, settled)
                if step is None:
                    step = asyncio.ensure_future(anext(feed))
                done, _ = await asyncio.wait({step}, timeout=min(until - now, PROGRESS_EVERY_S))
                elapsed = time.monotonic() - started
                if step not in done:
                    if wait_s > 0:
                        await progress(elapsed, f"Still waiting: {outcome.message}")
                    continue
                event = step.result()
                step = None
                if event.type not in ENDED and wait_s > 0:
                    await progress(elapsed, _in_words(event))
        finally:
            await close_feed(feed, step)

    async def position(self) -> int:
        """The feed's position now: waiting from here misses nothing that happens next."""
        return await self._store.last_event_id()

    async def _run_of(self, ask_id: str, viewer: User) -> Run:
        try:
            if ask_id.startswith("run_"):
                run = await self._runtime.get(ask_id, viewer=viewer)
            else:
                request = await self._requests.get(ask_id, viewer=viewer)
                run = await self._runtime.get(request.run_id, viewer=viewer)
        except (RunNotFound, RequestNotFound) as exc:
            raise RequestNotFound(f"no ask {ask_id}") from exc
        if run.workflow != NAME:
            raise NotFound(f"{ask_id} is a request of the {run.workflow} workflow, not an ask")
        return run

    async def _outcome(self, run: Run) -> AskOutcome:
        asked = run.input
        kind = str(asked.get("kind", ""))
        found = await self._store.list_requests(RequestFilter(run_id=run.id, limit=20))
        requests: list[HumanRequest] = list(found.items)
        latest = max(requests, key=lambda r: r.created_at) if requests else None
        people = [a.actor for r in sorted(requests, key=lambda r: r.created_at) for a in r.answers]
        rule = latest.policy_rule if latest is not None else await self._auto_rule(run.id)
        output = run.output if isinstance(run.output, dict) else None
        answer = {k: v for k, v in (output or {}).items() if k != "kind"} or None
        url = (
            f"{self._base_url}/requests/{latest.id}"
            if latest is not None
            else f"{self._base_url}/runs/{run.id}"
        )
        status: AskStatus
        decision = (answer or {}).get("decision")
        if run.status == "completed" and decision in ("expired", "cancelled"):
            status = decision
        elif run.status == "completed":
            status = "answered" if latest is not None else "decided"
        elif run.status in ("failed", "cancelled"):
            status = run.status
        else:
            status = "waiting"
        outcome = AskOutcome(
            request_id=run.id,
            status=status,
            kind=kind,
            answer=answer,
            answered_by=[p for p in people if p != "system"],
            policy_rule=rule,
            team=latest.team if latest is not None else None,
            human_request_id=latest.id if latest is not None else None,
            url=url,
            message="",
        )
        return outcome.model_copy(update={"message": _message(outcome, run)})

    async def _auto_rule(self, run_id: str) -> str | None:
        events = await self._store.list_events(run_id=run_id)
        decided = [e for e in events if e.type == "request.auto_decided"]
        return str(decided[-1].data.get("rule")) if decided else None


def _message(outcome: AskOutcome, run: Run) -> str:
    """The outcome in one or two sentences, for the agent (and its model) to read."""
    answer = outcome.answer or {}
    decision = answer.get("decision")
    who = " and ".join(outcome.answered_by) or "a person"
    if outcome.status == "waiting":
        where = f" ({outcome.human_request_id}, team {outcome.team})" if outcome.team else ""
        return (
            f"Nobody has answered yet{where}. Call get_answer with request_id {outcome.request_id} "
            "to wait for the answer or read it later; do not go ahead meanwhile."
        )
    if outcome.status == "decided":
        verb = "allowed" if decision == "approve" else "refused"
        return f"The policy {verb} it (rule {outcome.policy_rule}); no person was asked."
    if outcome.status in ("expired", "cancelled"):
        return f"Nobody answered: the request {outcome.status}. Treat it as not approved."
    if outcome.status == "failed":
        return f"The ask failed: {run.error}. Treat it as not approved."
    reason = f" Reason: {answer['reason']}" if answer.get("reason") else ""
    if decision == "approve":
        return f"Approved by {who}: go ahead as asked.{reason}"
    if decision == "edit":
        changed = "arguments" if "arguments" in answer else "content"
        return f"Approved by {who} with changes: use the {changed} given here.{reason}"
    if decision == "reject":
        return f"Rejected by {who}: do not go ahead.{reason}"
    return f"Answered by {who}: {answer.get('answer')}"


_PHRASES = {
    "run.started": "asked",
    "request.created": "a request is in the inbox of {team}",
    "request.notified": "{team} was notified",
    "request.viewed": "{actor} opened the request",
    "request.claimed": "{actor} is looking at it",
    "request.released": "{actor} let it go",
    "request.reassigned": "moved to {to}",
    "request.escalated": "escalated to {to}",
    "request.answered": "{actor} answered",
}


def _in_words(event: AuditEvent) -> str:
    """An event of the ask, as a progress message."""
    phrase = _PHRASES.get(event.type, event.type)
    data = event.data
    words = {
        "actor": event.actor,
        "team": data.get("team") or "the team",
        "to": data.get("to_team") or data.get("team") or data.get("assignee") or "another team",
    }
    return phrase.format(**words)
