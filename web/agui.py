"""A Baton run as an AG-UI event stream (https://docs.ag-ui.com), its requests as interrupts.

The stream is built from the run's audit feed (`web.watch`, the feed `/api/stream` serves), so it
shows what any process committed: a pause, an answer given in the inbox, Slack or the API, the
resume and the end. Each audit event goes out as a `CUSTOM` event named by its type. The run's
state decides the AG-UI lifecycle (`RunTracker`):

- while the run works, an AG-UI run is open (`RUN_STARTED`); whenever the run's recorded
  conversation grew (each agent's text, tool calls and results: `messages_of`), a
  `MESSAGES_SNAPSHOT` of all of it (a snapshot, so a client that reconnects doubles nothing);
- when it waits on people, that AG-UI run ends with `RUN_FINISHED` whose outcome is `interrupt`,
  one `Interrupt` per open request (`interrupt_of`): its id is the request's id, its `reason` the
  request's kind, its `message` the title, its `responseSchema` the request's `response_schema`,
  `metadata.baton` the rest (Baton's reason, context, proposed action, decisions, team...), and
  `metadata.agent_framework` and `toolCallId` what MAF's own AG-UI endpoint shows of it;
- when the run moves on (an answer from anywhere), a new AG-UI run opens in the same stream
  (`RUN_STARTED`, `parentRunId` the one that ended on the interrupt);
- when it ends: `RUN_FINISHED` with the run's output as `result`, `RUN_ERROR` if it failed,
  `RUN_FINISHED` with outcome `cancelled` if it was cancelled; then the stream ends.

A stream that `follow`s (the default) stays open across interrupts until the run ends; one that
does not ends at the first interrupt, as a plain AG-UI producer would. A newer call of the same
person's thread takes over from an older stream of it in this process (`Followers`): the AG-UI
client keeps the older stream open when it resumes, which would show the continuation twice.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ag_ui.core import (
    AssistantMessage,
    BaseEvent,
    CustomEvent,
    FunctionCall,
    Interrupt,
    Message,
    MessagesSnapshotEvent,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from ag_ui.encoder import EventEncoder
from fastapi import Request

from baton.wiring import Parts
from executors.platform import maf_agui
from executors.platform.transcript import RAW_ARGUMENTS
from human.records import OPEN_STATUSES, HumanRequest, Run, User
from web.views import chat_text
from web.watch import Ended, audit_feed

KEEP_ALIVE: Final = ": keep-alive\n\n"
"""An SSE comment: AG-UI clients read only `data:` lines, proxies see the stream is alive."""


@dataclass(frozen=True)
class View:
    """What the stream shows of a run at one moment: the run, open requests, conversation."""

    run: Run
    open: tuple[HumanRequest, ...]
    conversation: tuple[dict[str, Any], ...] = ()

    @property
    def asking(self) -> frozenset[str]:
        """The requests the run waits on (none while it works or after it ended)."""
        if self.run.status != "waiting":
            return frozenset()
        return frozenset(r.id for r in self.open)


async def view_of(parts: Parts, run_id: str) -> View:
    """The run, its open requests and its conversation, as stored now."""
    run = await parts.runtime.get(run_id)
    requests = await parts.requests.of_run(run_id)
    conversation = await parts.runtime.conversation(run_id)
    return View(run, tuple(r for r in requests if r.status in OPEN_STATUSES), tuple(conversation))


def messages_of(run_id: str, conversation: Sequence[dict[str, Any]]) -> list[Message]:
    """The run's recorded conversation as AG-UI messages: text, tool calls, tool results.

    Ids are the entry's place in the run (`<run id>-<n>`): the same message has the same id in
    every stream. An input of one text field is the user's message it started on. Hand-offs,
    asks and answers stay in the CUSTOM audit events.
    """
    messages: list[Message] = []
    calls: set[str] = set()
    for n, entry in enumerate(conversation):
        kind, id_ = entry.get("type"), f"{run_id}-{n}"
        if kind == "message" and entry.get("role") == "user":
            messages.append(UserMessage(id=id_, content=str(entry.get("text", ""))))
        elif kind == "input" and (text := chat_text(entry.get("input"))) is not None:
            messages.append(UserMessage(id=id_, content=text))
        elif kind == "message":
            name = entry.get("agent")
            text = str(entry.get("text", ""))
            messages.append(AssistantMessage(id=id_, content=text, name=name))
        elif kind == "tool_call":
            call_id = str(entry.get("call_id") or id_)
            calls.add(call_id)
            written = entry.get(RAW_ARGUMENTS)  # as the model wrote them, where kept
            arguments = (
                written
                if isinstance(written, str)
                else json.dumps(entry.get("arguments", {}), default=str)
            )
            function = FunctionCall(name=str(entry.get("tool")), arguments=arguments)
            call = ToolCall(id=call_id, function=function)
            messages.append(AssistantMessage(id=id_, name=entry.get("agent"), tool_calls=[call]))
        elif kind == "tool_result" and str(entry.get("call_id")) in calls:
            result, call_id = str(entry.get("result", "")), str(entry["call_id"])
            messages.append(ToolMessage(id=id_, tool_call_id=call_id, content=result))
    return messages


def interrupt_of(request: HumanRequest, base_url: str) -> Interrupt:
    """A request as an AG-UI interrupt; a resume entry answers it with the API's answer body.

    `metadata.agent_framework` and `toolCallId` are what MAF's own AG-UI endpoint shows of the
    request (`executors.platform.maf_agui`), so that a front end written for it reads it too.
    """
    baton = {
        "request_id": request.id,
        "run_id": request.run_id,
        "kind": request.kind,
        "title": request.title,
        "reason": request.reason,
        "context": request.context,
        "proposed_action": request.proposed_action,
        "allowed_decisions": request.allowed_decisions,
        "team": request.team,
        "assignee": request.assignee,
        "priority": request.priority,
        "status": request.status,
        "approvals_required": request.approvals_required,
        "approvals_given": len(request.answers),
        "executor_id": request.executor_id,
        "url": f"{base_url.rstrip('/')}/requests/{request.id}",
    }
    return Interrupt(
        id=request.id,
        reason=request.kind,
        message=request.title,
        tool_call_id=maf_agui.tool_call_id(request),
        response_schema=request.response_schema,
        expires_at=request.expires_at.isoformat() if request.expires_at else None,
        metadata={"baton": baton, "agent_framework": maf_agui.asked(request)},
    )


@dataclass
class RunTracker:
    """Turns successive `View`s of one Baton run into the AG-UI lifecycle (module docstring)."""

    thread_id: str
    run_id: str
    base_url: str
    open: bool = False
    finished: bool = False
    asked: frozenset[str] = field(default_factory=frozenset)
    started: int = 0
    shown: int = 0
    earlier: tuple[Message, ...] = ()
    """The messages of the runs whose conversation this run continues: every snapshot's start."""

    def step(self, view: View, event: BaseEvent | None = None) -> list[BaseEvent]:
        """The AG-UI events that take a client from what it was last shown to `view`.

        `event` (an audit event as a CUSTOM event) is sent only inside an open AG-UI run: between
        an interrupt and the run moving on, nothing else may be sent.
        """
        out: list[BaseEvent] = []
        if self.finished:
            return out
        ended = view.run.status in ("completed", "failed", "cancelled")
        if not self.open and (ended or view.asking != self.asked or self.started == 0):
            out.append(self._start())
        if event is not None and self.open:
            out.append(event)
        if self.open and len(view.conversation) != self.shown:
            self.shown = len(view.conversation)
            messages = [*self.earlier, *messages_of(view.run.id, view.conversation)]
            out.append(MessagesSnapshotEvent(messages=messages))
        if ended:
            out.append(self._end(view.run))
            self.open, self.finished = False, True
        elif view.asking and self.open:
            interrupts = [interrupt_of(r, self.base_url) for r in view.open if r.id in view.asking]
            out.append(
                RunFinishedEvent(
                    thread_id=self.thread_id,
                    run_id=self.run_id,
                    outcome=RunFinishedInterruptOutcome(interrupts=interrupts),
                )
            )
            self.open, self.asked = False, view.asking
        return out

    def _start(self) -> RunStartedEvent:
        parent = None
        if self.started:  # the run moved on without this client: a run of the server's own
            parent, self.run_id = self.run_id, f"{self.run_id}.{uuid.uuid4().hex[:8]}"
        self.started += 1
        self.open = True
        return RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id, parent_run_id=parent)

    def _end(self, run: Run) -> BaseEvent:
        if run.status == "failed":
            return RunErrorEvent(message=run.error or "the run failed", code="run_failed")
        if run.status == "cancelled":
            return RunFinishedEvent(
                thread_id=self.thread_id,
                run_id=self.run_id,
                outcome=RunFinishedCancelledOutcome(),
            )
        return RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, result=run.output)


class Followers:
    """This process's open streams, one per (person, workflow, thread): the newest wins.

    An older stream that is taken over ends at its next interrupt (or at once, between runs) rather
    than showing the continuation the newer one shows.
    """

    def __init__(self) -> None:
        self._latest: dict[tuple[str, str, str], asyncio.Event] = {}

    def take_over(self, key: tuple[str, str, str]) -> Follow:
        """Mark the stream of `key` taken over; the new stream's own place."""
        previous = self._latest.get(key)
        if previous is not None:
            previous.set()
        self._latest[key] = mine = asyncio.Event()
        return Follow(self, key, mine)

    def release(self, key: tuple[str, str, str], mine: asyncio.Event) -> None:
        """Forget the stream of `key` that ended, unless a newer one took its place."""
        if self._latest.get(key) is mine:
            del self._latest[key]


@dataclass(frozen=True)
class Follow:
    """One stream's place among `Followers`."""

    followers: Followers
    key: tuple[str, str, str]
    mark: asyncio.Event

    def taken_over(self) -> bool:
        """Whether a newer call of the same thread took over."""
        return self.mark.is_set()

    def end(self) -> None:
        """The stream ended."""
        self.followers.release(self.key, self.mark)


async def run_stream(
    request: Request,
    parts: Parts,
    user: User,
    run_id: str,
    agui: RunAgentInput,
    *,
    after: int,
    follow: bool,
    place: Follow,
) -> AsyncIterator[str]:
    """The AG-UI events of Baton run `run_id` as SSE text, from audit event `after` on.

    Ends when the run ended, at an interrupt unless it `follow`s, and between runs once its
    `place` was taken over.
    """
    encoder = EventEncoder()
    tracker = RunTracker(agui.thread_id, agui.run_id, parts.settings.base_url)

    def over() -> bool:
        return tracker.finished or (not tracker.open and (not follow or place.taken_over()))

    feed = audit_feed(request, parts, user, after=after, run_id=run_id)
    try:
        first = await view_of(parts, run_id)
        earlier = await parts.runtime.conversations_before(first.run, viewer=user)
        tracker.earlier = tuple(m for each, entries in earlier for m in messages_of(each, entries))
        for event in tracker.step(first):
            yield encoder.encode(event)
        if over():
            return
        async for item in feed:
            if over():
                return
            if item is None:
                yield KEEP_ALIVE
                continue
            if isinstance(item, Ended):
                yield encoder.encode(RunErrorEvent(message=item.reason, code="credential_ended"))
                return
            audit = CustomEvent(name=item.type, value=item.model_dump(mode="json"))
            for event in tracker.step(await view_of(parts, run_id), audit):
                yield encoder.encode(event)
            if over():
                return
    finally:
        await feed.aclose()
        place.end()


def follows(agui: RunAgentInput) -> bool:
    """Whether to stay open past interrupts: `forwardedProps.baton.follow`, default true."""
    props: Any = agui.forwarded_props
    baton = props.get("baton") if isinstance(props, dict) else None
    return not (isinstance(baton, dict) and baton.get("follow") is False)
