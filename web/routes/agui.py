"""`POST /agui/{workflow}`: a registered workflow as an AG-UI endpoint (`web.agui`).

The body is AG-UI's `RunAgentInput`. Its `threadId` names a conversation: a Baton run id
(`run_...`, any run of this workflow the caller may see), or the client's own thread id, which
starts a run the first time (through `Runtime.start_once`, as `POST /api/runs` with an
`Idempotency-Key` does; the input is the body's `state`, or, with none, the last user message's
text for a workflow whose input is one text field) and finds that run again after. A chat's new
message once the thread's latest run has ended starts the next turn: a run that continues that
one's conversation (`Run.continues`), for a workflow that starts on a conversation; the thread
follows its latest run. Its
`resume` answers interrupts: each `resolved` entry's `payload` is the body `POST
/api/requests/{id}/respond` takes, or what MAF's own AG-UI endpoint takes (`{"approved": true}`, a
handoff's reply: `executors.platform.maf_agui`, with its resume envelope and id-less messages:
`_canonical`), checked and recorded by the same `RequestService.respond`; all
entries are checked before any is recorded, so a refused one stores nothing. A `cancelled` entry
leaves its request open for someone else. Refusals are the API's (401, 403, 404, 409, 410, 422),
given before the stream starts; then the stream (`text/event-stream`) follows the run.

Not in /openapi.json: its body and its events are AG-UI's, documented at docs.ag-ui.com, and the
published contract's tests (schemathesis) would hold them to Baton's own shapes.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Final

from ag_ui.core import ResumeEntry, RunAgentInput
from ag_ui.encoder import EventEncoder
from fastapi import APIRouter, Body, Request
from fastapi.responses import StreamingResponse
from pydantic import ValidationError

from baton.errors import Invalid, RunNotEnded, RunNotFound, ThreadEnded
from executors.platform import maf_agui
from human.access import check_can_run
from human.records import TERMINAL_RUN, Run, User
from web.agui import Followers, follows, run_stream
from web.deps import PartsDep, UserDep
from web.errors import sent_in
from workflows.platform import registry

router = APIRouter(prefix="/agui", tags=["ag-ui"], include_in_schema=False)

_THREAD: Final = re.compile(r"^[\x21-\x7e]{1,200}$")
_SHOWN: Final = re.compile(r"^run_[\w-]+-\d+$")
"""The id Baton gives a message it shows (`web.agui.messages_of`): `<run id>-<n>`."""


@router.post("/{workflow}")
async def run_workflow(
    workflow: str,
    request: Request,
    parts: PartsDep,
    user: UserDep,
    body: Any = Body(...),  # noqa: B008
) -> StreamingResponse:
    """Start, resume or follow a run of `workflow` as AG-UI events (module docstring)."""
    spec = registry.get(workflow)  # 404 for a workflow that is not registered
    agui = _parsed(body)
    after = await parts.store.last_event_id()  # the stream shows everything from here on
    run = await _run_of_thread(parts, workflow, agui.thread_id, user)
    followers: Followers = request.app.state.agui_followers
    thread = (user.name, workflow, agui.thread_id)
    if agui.resume:
        if run is None:
            raise RunNotFound(f"no run of thread {agui.thread_id!r} to resume")
        answers = await _checked(parts, run, agui.resume, user)
        place = followers.take_over(thread)  # before the answer moves the run on
        for request_id, payload in answers:
            with sent_in("body"):
                await parts.requests.respond(request_id, payload, responder=user)
    elif run is None:
        run = await _start_turn(parts, spec, agui, user, after=None)
    else:
        said = _new_message(spec, agui, run)
        retried = said and await parts.runtime.started_with(
            _key(workflow, agui.thread_id, message=said), actor=user.name
        )
        if retried:
            run = retried  # that message's turn, sent again
        elif said:
            run = await _next_turn(parts, spec, agui, user, run, said)
    if not agui.resume:
        place = followers.take_over(thread)
    events = run_stream(
        request, parts, user, run.id, agui, after=after, follow=follows(agui), place=place
    )
    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    return StreamingResponse(events, media_type=EventEncoder().get_content_type(), headers=headers)


async def _start_turn(
    parts: PartsDep,
    spec: registry.WorkflowSpec,
    agui: RunAgentInput,
    user: User,
    *,
    after: Run | None,
    message: str | None = None,
) -> Run:
    """The run of the thread's first turn, or of the turn `message` starts after run `after`."""
    check_can_run(user)
    continues = None if after is None else after.id
    with sent_in("body"):
        try:
            run, _ = await parts.runtime.start_once(
                spec.name,
                _input_of(spec, agui),
                actor=user.name,
                key=_key(spec.name, agui.thread_id, message=message),
                continues=continues,
                viewer=user,
            )
        except Invalid as exc:
            raise _as_state(exc) from exc
    return run


def _parsed(body: Any) -> RunAgentInput:
    try:
        agui = RunAgentInput.model_validate(_canonical(body))
    except ValidationError as exc:
        errors = [
            {"loc": ["body", *(str(p) for p in e["loc"])], "msg": e["msg"]}
            for e in exc.errors(include_url=False)
        ]
        raise Invalid(f"not an AG-UI RunAgentInput: {errors[0]['msg']}", errors) from exc
    if not _THREAD.match(agui.thread_id):
        msg = "1 to 200 visible ASCII characters"
        raise Invalid(f"threadId: {msg}", [{"loc": ["body", "threadId"], "msg": msg}])
    return agui


def _canonical(body: Any) -> Any:
    """The body as AG-UI 1.0 has it, from what MAF's AG-UI endpoint also takes.

    MAF's endpoint (`agent_framework_ag_ui`) takes a resume as `{"interrupts": [{"id", "value"}]}`
    too, and messages without ids; front ends written for it send them so.
    """
    if not isinstance(body, dict):
        return body
    canonical = dict(body)
    resume = body.get("resume")
    if isinstance(resume, dict):
        entries = resume.get("interrupts", resume.get("interrupt"))
        if isinstance(entries, list):
            canonical["resume"] = [_resume_entry(e) for e in entries]
    messages = body.get("messages")
    if isinstance(messages, list):
        lone = len(messages) == 1
        request = body.get("runId", body.get("run_id")) if lone else None
        canonical["messages"] = [
            {**m, "id": _unnamed(n, m, request)} if isinstance(m, dict) and "id" not in m else m
            for n, m in enumerate(messages)
        ]
    return canonical


def _unnamed(place: int, message: dict[str, Any], request: Any = None) -> str:
    """An id for a message sent without one: its place and what it says.

    The same when the message is sent again, so that it is known as such (`_key`). A front end
    that sends each turn's new message alone (MAF's AG-UI demos) sends every one at place 0: the
    same words twice ("continue", "yes") are two turns there. A lone message's id is then also
    that of the body's `runId`, which the client makes new for each turn it asks for and keeps
    when it sends the same request again (a retry).
    """
    said = json.dumps([message.get("role"), message.get("content")], sort_keys=True, default=str)
    if request is not None:
        said = json.dumps([str(request), said])
        return f"message-run-{hashlib.sha256(said.encode()).hexdigest()[:24]}"
    return f"message-{place}-{hashlib.sha256(said.encode()).hexdigest()[:16]}"


def _resume_entry(entry: Any) -> Any:
    """One entry of MAF's resume envelope as AG-UI's `ResumeEntry`."""
    if not isinstance(entry, dict):
        return entry
    found = (entry.get(key) for key in ("interruptId", "interrupt_id", "id"))
    return {
        "interruptId": next((k for k in found if k is not None), None),
        "status": entry.get("status", "resolved"),
        "payload": entry.get("payload", entry.get("value")),
    }


def _input_of(spec: registry.WorkflowSpec, agui: RunAgentInput) -> Any:
    """The input a thread's run starts on: the body's `state`; else the chat's last message.

    A chat front end sends what the person typed as a user message and often no state: for a
    workflow whose input is one text field (an agent registered as it is, say), the last user
    message with text is that field. Any other workflow takes its input from `state` alone.
    """
    if agui.state:
        return agui.state
    field = spec.text_field()
    said = next(
        (text for m in reversed(agui.messages) if m.role == "user" and (text := _text_of(m))), ""
    )
    return {field: said} if field and said else {}


def _new_message(spec: registry.WorkflowSpec, agui: RunAgentInput, latest: Run) -> str | None:
    """The id of the chat's last user message if it may start the thread's next turn, else None.

    Not a message Baton showed (a snapshot's, `<run id>-<n>`: the chat reloaded or resent), nor,
    when it is the chat's only user message, the one the thread's first run started on while it
    is the thread's latest (a first message sent again; on a later turn the same words alone are
    a new message, from a front end that sends each turn's message alone); only for a workflow
    whose input is one text field, with no `state`.
    """
    field = spec.text_field()
    if field is None or agui.state:
        return None
    sent = [m for m in agui.messages if m.role == "user" and _text_of(m)]
    if not sent or _SHOWN.match(sent[-1].id):
        return None
    first = latest.continues is None
    if first and len(sent) == 1 and _text_of(sent[-1]) == latest.input.get(field):
        return None
    return str(sent[-1].id)


async def _next_turn(
    parts: PartsDep,
    spec: registry.WorkflowSpec,
    agui: RunAgentInput,
    user: User,
    latest: Run,
    said: str,
) -> Run:
    """The run of the turn message `said` starts, continuing the thread's `latest` run."""
    if latest.status not in TERMINAL_RUN:
        raise RunNotEnded(
            f"thread {agui.thread_id!r} is in run {latest.id}, which is {latest.status}: a new "
            "message waits for its end (answer its interrupts with resume)"
        )
    if not parts.runtime.converses(spec.name):
        raise ThreadEnded(
            f"thread {agui.thread_id!r} ran as run {latest.id}, which has {latest.status}, and "
            f"workflow {spec.name} starts on its typed input, not on a conversation: a new "
            "message starts no new turn on it; start a new thread for a new conversation"
        )
    return await _start_turn(parts, spec, agui, user, after=latest, message=said)


def _text_of(message: Any) -> str:
    """A user message's text: its content, or the text parts of it."""
    content = message.content
    if isinstance(content, str):
        return content
    return "\n".join(part.text for part in content if getattr(part, "type", None) == "text")


def _key(workflow: str, thread_id: str, *, message: str | None = None) -> str:
    """The idempotency key a person's thread starts a turn's run with.

    Its first run's; a later turn's, that of the chat message that started it (one run each: a
    message sent again starts no second run).
    """
    first = f"agui:{workflow}:{thread_id}"
    if message is None:
        return first
    if not _THREAD.match(message):  # (any id a client sends: kept as a digest if not plain)
        digest = hashlib.sha256(message.encode("utf-8", "surrogatepass")).hexdigest()
        message = f"sha256-{digest}"
    return f"{first}:message:{message}"


async def _run_of_thread(parts: PartsDep, workflow: str, thread_id: str, user: User) -> Run | None:
    """The thread's latest run (None: it has started none yet).

    Its first run is the one it names (a Baton run id) or the one its id started; each later
    turn's continues the one before (`Run.continues`), started by the same person.
    """
    if thread_id.startswith("run_"):
        run: Run | None = await parts.runtime.get(thread_id, viewer=user)
    else:
        run = await parts.runtime.started_with(_key(workflow, thread_id), actor=user.name)
    if run is not None and run.workflow != workflow:
        raise RunNotFound(f"no run {thread_id} of workflow {workflow}")
    while run is not None:
        later = None
        for later_id in reversed(await parts.store.runs_continuing(run.id)):  # the newest first
            found = await parts.store.get_run(later_id)
            if found is not None and (found.created_by, found.workflow) == (user.name, workflow):
                later = found
                break
        if later is None:
            return run
        run = later
    return run


async def _checked(
    parts: PartsDep, run: Run, resume: list[ResumeEntry], user: User
) -> list[tuple[str, dict[str, Any]]]:
    """Every resolved entry, checked as `respond` checks it: all pass, or the first refusal."""
    checked: list[tuple[str, dict[str, Any]]] = []
    with sent_in("body"):
        for index, entry in enumerate(resume):
            if entry.status != "resolved":
                continue
            request = await parts.requests.get(entry.interrupt_id, viewer=user)
            payload: Any = maf_agui.answer_body(request, entry.payload)
            asked = await parts.requests.check_answer(request.id, payload, responder=user)
            if asked.run_id != run.id:
                msg = f"request {asked.id} is not of this thread's run {run.id}"
                raise Invalid(msg, [{"loc": ["resume", index, "interruptId"], "msg": msg}])
            checked.append((asked.id, payload))  # an object: it passed as an answer
    return checked


def _as_state(exc: Invalid) -> Invalid:
    """A run input's errors located where AG-UI carries the input: `state`, not `input`."""
    moved = exc.at()
    moved.errors = [
        {**e, "loc": ["state", *e["loc"][1:]]} if e["loc"][:1] == ["input"] else e
        for e in exc.errors
    ]
    return moved
