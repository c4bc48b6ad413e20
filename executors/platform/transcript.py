"""A run's agent conversation: what each agent said, which tools it called and what came back.

Middleware on every agent notes each model turn (text, tool calls, handoffs) and each tool MAF ran;
the request adapters note the results Baton delivered and the people's answers. The entries of one
drive are committed with that drive's progress, so the stored conversation always matches the
checkpoint. Entries are plain JSON; `excerpt` renders them as readable lines for a request's
context, and `run_state` reads the run's state the policy's `state.*` conditions see.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, Final, get_args

from agent_framework import (
    AgentContext,
    AgentMiddleware,
    AgentResponse,
    AgentResponseUpdate,
    ChatContext,
    ChatMiddleware,
    ChatResponse,
    Content,
    FunctionInvocationContext,
    FunctionMiddleware,
    Message,
    MiddlewareFailure,
    MiddlewareTermination,
    WorkflowEvent,
)
from agent_framework._middleware import categorize_middleware
from agent_framework._tools import _SECURITY_ARGUMENTS_SNAPSHOT_CONTEXT_KEY as SECURITY_SNAPSHOT
from agent_framework._tools import _FunctionArgumentsChangedAfterApproval as ArgumentsChanged
from agent_framework._tools import _FunctionArgumentValidationError as ArgumentsInvalid
from agent_framework._workflows._events import WorkflowEventType
from agent_framework.exceptions import UserInputRequiredException
from pydantic import ValidationError

from executors.platform.agents import REPLIES, said_of
from executors.platform.shown import maf_value
from human.attachments import Kept, found_in, merged
from human.records import Attachment, HumanRequest
from human.summary import humanize, shown_value, with_attachments
from human.typed import as_json

Entry = dict[str, Any]

HANDOFF_PREFIX = "handoff_to_"
CONFIDENCE_TOOL = "report_confidence"
_MANAGER = re.compile(r"\b(manager|supervisor|your boss)\b", re.IGNORECASE)


class Transcript:
    """The conversation of one run: what is stored (`history`) and what this drive adds.

    An agent's notes go to the transcript of the drive it runs in (`DRIVING`, set by the drive),
    else to the one that followed it: an agent a functional workflow's module holds serves every
    run at once, and each run's turns go to that run.
    """

    def __init__(self, history: Sequence[Entry] = ()) -> None:
        self.history: list[Entry] = list(history)
        self.entries: list[Entry] = []
        self.kept: dict[str, Kept] = {}  # the files this drive's entries hold, by id
        self._agents: dict[str, Any] = {}  # by name and by executor id (`follow`)

    def add(self, entry: Entry) -> None:
        """Note one entry of this drive (one whose contents hold files, `ITEMS`, with them)."""
        if ITEMS in entry:
            self.attach(entry, found_in(entry[ITEMS]))
        self.entries.append(entry)

    def attach(self, entry: Entry, files: Sequence[Kept]) -> None:
        """List the files an entry came with (`ATTACHED`: a user's photo, a tool's image).

        Their bytes are kept for the drive's commit, for its requests to show.
        """
        if files:
            source = _source_of(entry)
            entry[ATTACHED] = [f.about(source).model_dump(mode="json") for f in files]
            self.kept.update((f.id, f) for f in files)

    def attachments(self) -> list[Attachment]:
        """The files the run's conversation came with so far, once each, in order."""
        listed = [
            a for e in self.everything() if isinstance(e.get(ATTACHED), list) for a in e[ATTACHED]
        ]
        found = []
        for about in listed:
            with contextlib.suppress(ValidationError):  # (a hand-edited entry: left out)
                found.append(Attachment.model_validate(about))
        return merged(found)

    def everything(self) -> list[Entry]:
        """Stored entries, then this drive's."""
        return [*self.history, *self.entries]

    def middleware(
        self, agent: str, *, replies: bool = False, author: str | None = None
    ) -> list[AgentMiddleware | ChatMiddleware | FunctionMiddleware]:
        """The middleware that notes `agent`'s turns and tool calls here.

        `replies`: and the words of its replies no model turn said, for an agent with agent
        middleware of its own (`_ReplyNotes`; without any, every reply is a model turn's).
        `author`: the name MAF gives its replies, where it is not `agent` (an unnamed agent's,
        `UnnamedAgent`), noted with them (`AUTHOR`) for the model to be handed again.
        """
        said_by = {AUTHOR: author} if author and author != agent else {}
        notes: list[AgentMiddleware | ChatMiddleware | FunctionMiddleware] = [
            _TurnNotes(self, agent, said_by),
            _ToolNotes(self, agent),
        ]
        return [_ReplyNotes(self, agent, said_by), *notes] if replies else notes

    def follow(self, agents: Iterable[Any], names: Mapping[int, str] | None = None) -> None:
        """Note the turns of `agents` that do not note theirs already (any workflow's agents).

        Each under its name; one without a name under `names[id(agent)]` (its executor's id, the
        same at every build), else its type's name: MAF gives it a new random id at each build.
        """
        for agent in agents:
            held = (names or {}).get(id(agent))
            name = str(getattr(agent, "name", None) or held or type(agent).__name__)
            self._agents[name] = agent
            if held is not None:
                self._agents.setdefault(held, agent)
            present = list(getattr(agent, "middleware", None) or ())
            if any(isinstance(m, _TurnNotes) for m in present):
                continue
            # outermost: what is noted is what the author's middleware made of each turn and call
            replies = bool(categorize_middleware(present)["agent"])
            author = _author_of(agent)
            agent.middleware = [*self.middleware(name, replies=replies, author=author), *present]

    def detailed_errors(self, agent: str | None) -> bool:
        """Whether `agent`'s tool loop tells the model what a failed call raised.

        `agent`: its name or its executor's id. Its chat client's `include_detailed_errors`,
        read as the call fails (MAF's default: no).
        """
        found = self._agents.get(agent or "")
        configured = getattr(
            getattr(found, "client", None), "function_invocation_configuration", {}
        )
        return bool(isinstance(configured, Mapping) and configured.get("include_detailed_errors"))


DRIVING: ContextVar[Transcript | None] = ContextVar("baton_driving_transcript", default=None)
"""The transcript of the drive this task runs in (`workflows.platform.drive`)."""


def _author_of(agent: Any) -> str | None:
    """The name MAF's `Agent` gives its replies in the session: its name, else `UnnamedAgent`."""
    named = getattr(agent, "_get_agent_name", None)  # MAF's own: `self.name or "UnnamedAgent"`
    return str(named()) if callable(named) else None


AUTHOR: Final = "author"
"""The name MAF gave an agent's reply (`Message.author_name`), where it is not the entry's
`agent` (an unnamed agent's, `UnnamedAgent`, noted under its step's id)."""


class _TurnNotes(ChatMiddleware):
    """Notes each model turn: its text, tool calls and handoffs."""

    def __init__(self, transcript: Transcript, agent: str, said_by: Entry | None = None) -> None:
        self._transcript = transcript
        self._agent = agent
        self._said_by = said_by or {}

    async def process(self, context: ChatContext, call_next: Callable[[], Awaitable[None]]) -> None:
        transcript = DRIVING.get() or self._transcript
        _note_given_results(transcript, context.messages)
        await call_next()
        result = context.result
        if not isinstance(result, ChatResponse):
            return  # Baton drives runs without streaming
        for message in result.messages:
            for content in message.contents:
                if content.type == "text" and content.text:
                    transcript.add(
                        {
                            "type": "message",
                            "role": "assistant",
                            "agent": self._agent,
                            "text": content.text,
                        }
                        | self._said_by
                    )
                elif content.type == "function_call" and content.name:
                    if content.name.startswith(HANDOFF_PREFIX):
                        transcript.add(
                            {
                                "type": "handoff",
                                "from": self._agent,
                                "to": content.name.removeprefix(HANDOFF_PREFIX),
                            }
                        )
                    else:
                        transcript.add(
                            {
                                "type": "tool_call",
                                "agent": self._agent,
                                "tool": content.name,
                                "call_id": content.call_id,
                            }
                            | _arguments_of(content.arguments)
                            | self._said_by
                        )


class _ReplyNotes(AgentMiddleware):
    """Notes the words of an agent's reply that none of its model turns said.

    Those the author's agent middleware gave: a refusal before any model call, a response it
    replaced. Outermost of the agent's middleware, so it sees the reply as the workflow gets it.
    """

    def __init__(self, transcript: Transcript, agent: str, said_by: Entry | None = None) -> None:
        self._transcript = transcript
        self._agent = agent
        self._said_by = said_by or {}

    async def process(
        self, context: AgentContext, call_next: Callable[[], Awaitable[None]]
    ) -> None:
        transcript = DRIVING.get() or self._transcript
        start = len(transcript.entries)
        try:
            await call_next()
        except MiddlewareTermination as stop:  # MAF answers with its result, or the context's
            self._note(transcript, start, context.result or stop.result)
            raise
        self._note(transcript, start, context.result)

    def _note(self, transcript: Transcript, start: int, reply: Any) -> None:
        if not isinstance(reply, AgentResponse):
            return  # (none: MAF fails the run; a stream: Baton drives runs without one)
        said = {
            e.get("text")
            for e in transcript.entries[start:]
            if e.get("type") == "message" and e.get("role") == "assistant"
        }
        for message in reply.messages:
            if message.role != "assistant":
                continue
            for content in message.contents:
                if content.type == "text" and content.text and content.text not in said:
                    said.add(content.text)
                    transcript.add(
                        {
                            "type": "message",
                            "role": "assistant",
                            "agent": self._agent,
                            "text": content.text,
                        }
                        | self._said_by
                    )


NOTED: Final = "baton_noted"
"""A call's metadata flag: its result is noted already (Baton ran the call and noted it then)."""


TOOL_FAILED: Final = "Error: Function failed."
"""What MAF's tool loop tells the model of a tool that raised (no `include_detailed_errors`)."""
ARGUMENTS_FAILED: Final = "Error: Argument parsing failed."
"""What it tells the model of a call whose arguments the tool's schema refuses (the same)."""


def tool_failed(cause: object, *, detailed: bool, said: str = TOOL_FAILED) -> str:
    """What MAF's tool loop tells the model of a failed call, in MAF's words.

    `said`, and the `cause` (what it raised) where the client's `include_detailed_errors` is set
    (`detailed`).
    """
    return f"{said} Exception: {cause}" if detailed else said


class _ToolNotes(FunctionMiddleware):
    """Notes the result of each tool MAF itself ran (handoff tools are noted as handoffs)."""

    def __init__(self, transcript: Transcript, agent: str) -> None:
        self._transcript = transcript
        self._agent = agent

    async def process(
        self, context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]
    ) -> None:
        try:
            await call_next()
        except MiddlewareTermination:  # the author's middleware ended the loop, maybe with a say
            if context.result is not None and not _asks_approval(context.result):
                self._note(context, context.result)
            raise  # (an approval request is no result: security middleware asks, MAF asks on)
        except (MiddlewareFailure, UserInputRequiredException, ArgumentsChanged):
            raise  # (not a result: the run stops, or asks; MAF asks for a new approval)
        except ArgumentsInvalid as exc:  # MAF's error texts
            shown = exc.redacted_message if SECURITY_SNAPSHOT in context.metadata else str(exc)
            said = tool_failed(shown, detailed=self._detailed(), said=ARGUMENTS_FAILED)
            self._note(context, said, error=type(exc).__name__)
            raise
        except Exception as exc:
            self._note(
                context, tool_failed(exc, detailed=self._detailed()), error=type(exc).__name__
            )
            raise
        self._note(context, context.result)

    def _detailed(self) -> bool:
        return (DRIVING.get() or self._transcript).detailed_errors(self._agent)

    def _note(self, context: FunctionInvocationContext, result: Any, **more: Any) -> None:
        name = context.function.name
        if name.startswith(HANDOFF_PREFIX) or context.metadata.get(NOTED):
            return
        entry = tool_result(self._agent, name, context.metadata.get("call_id"), result)
        (DRIVING.get() or self._transcript).add(entry | more)


MAF_EVENTS: Final = frozenset(get_args(WorkflowEventType)) - {"intermediate", "data"}
"""MAF's own event types: a run's life, its outputs and requests, supersteps, orchestrations.
What is left is the workflow's own report: a custom event (`ctx.add_event`) or an
intermediate output (`intermediate_output_from`)."""

SAID_MAX: Final = 2_000
"""Characters of an event's data a transcript keeps (the rest is cut, said so)."""


def reported(event: WorkflowEvent[Any], own: frozenset[str] = frozenset()) -> Entry | None:
    """A workflow's own report (`MAF_EVENTS`) as an entry; None for MAF's and Baton's (`own`).

    An agent's intermediate reply is left out: its turn is noted already, as its model said it.
    """
    kind = str(event.type)
    if kind in MAF_EVENTS or kind in own:
        return None
    data = event.data
    if isinstance(data, AgentResponse | AgentResponseUpdate) or data is None:
        return None
    value = as_json(data, fallback=maf_value)
    said = value if isinstance(value, str) else json.dumps(value, default=str)
    if len(said) > SAID_MAX:
        value = said[:SAID_MAX] + f"… ({len(said) - SAID_MAX} more characters)"
    return {
        "type": "event",
        "event": "output" if kind in ("intermediate", "data") else kind,
        "executor": event.executor_id,
        "data": value,
    }


def _note_given_results(transcript: Transcript, messages: Sequence[Message]) -> None:
    """Note the results of noted calls that no tool gave, as the model is handed them.

    MAF's own: a call of a tool the agent does not have gets "Error: Requested function … not
    found." without any function middleware running. Each is noted once, under its call's agent.
    Only the results since the model's last turn are new: earlier ones were looked at then.
    """
    given: dict[Any, Any] = {}
    for message in reversed(messages):
        if message.role == "assistant":
            break
        for c in message.contents:
            if c.type == "function_result" and c.call_id:
                given[c.call_id] = c.result
    if not given:
        return
    entries = transcript.everything()
    noted = {e.get("call_id") for e in entries if e.get("type") == "tool_result"}
    for entry in entries:
        call_id = entry.get("call_id")
        if entry.get("type") == "tool_call" and call_id in given and call_id not in noted:
            noted.add(call_id)
            transcript.add(tool_result(entry.get("agent"), entry["tool"], call_id, given[call_id]))


def _asks_approval(result: Any) -> bool:
    """Whether a call's result is an approval request (FIDES's, for a policy violation)."""
    return getattr(result, "type", None) == "function_approval_request"


def tool_result(agent: str | None, tool: str, call_id: Any, result: Any) -> Entry:
    """The entry of a tool's result, as the model sees it (text).

    A result holding more than text (an image a tool returns, `Content.from_data`) keeps its
    contents too (`items`, as MAF writes them): a run continuing this one hands the model the
    result as MAF's session would, the image with it, not its text alone.
    """
    entry: Entry = {
        "type": "tool_result",
        "agent": agent,
        "tool": tool,
        "call_id": call_id,
        "result": as_text(result),
    }
    if isinstance(result, list) and any(
        isinstance(c, Content) and c.type != "text" for c in result
    ):
        entry[ITEMS] = [c.to_dict() for c in result if isinstance(c, Content)]
    return entry


ITEMS: Final = "items"
"""A tool result entry's contents, where they hold more than text (MAF's `to_dict` of each)."""

ATTACHED: Final = "attached"
"""The files an entry's contents hold (`records.Attachment` as JSON), for the requests to list."""


def _source_of(entry: Entry) -> str:
    """Where in the conversation an entry's files came: `the user's message`, `X's result`."""
    if entry.get("type") == "tool_result":
        return f"{entry.get('tool')}'s result"
    if entry.get("role") == "user":
        return "the user's message"
    return f"{entry.get('agent') or entry.get('role') or 'a'}'s message"


def _result_of(entry: Entry) -> Any:
    """What a tool result entry hands the model again: its contents, else its text."""
    items = entry.get(ITEMS)
    if isinstance(items, list) and items and all(isinstance(i, dict) for i in items):
        return [Content.from_dict(i) for i in items]
    return str(entry.get("result", ""))


def as_text(result: Any) -> str:
    """A tool result as text: strings as they are, contents by their text, the rest as JSON.

    Several contents are one text as MAF makes them the result the model reads
    (`Content.from_function_result`): a line each, the empty ones left out.
    """
    if isinstance(result, str):
        return result
    if isinstance(result, list) and all(hasattr(c, "type") for c in result):
        return "\n".join(text for text in map(_content_text, result) if text)
    return json.dumps(result, default=str)


def _content_text(content: Any) -> str:
    """One content of a tool's result as the model reads it: a text content's text, even empty.

    MAF makes a tool's `None` (or `""`) the text content `""` (`FunctionTool.parse_result`),
    which is what the model is handed, not the content's `result` (None, which reads "None").
    """
    text = getattr(content, "text", None)
    if text or getattr(content, "type", None) == "text":
        return str(text or "")
    result = getattr(content, "result", None)
    return "" if result is None else str(result)


RAW_ARGUMENTS: Final = "raw_arguments"
"""A tool call entry's arguments as the model wrote them, where MAF would write them otherwise."""


def _arguments_of(raw: Any) -> Entry:
    """A call's arguments as a tool call entry keeps them: parsed, and as the model wrote them.

    A continued run hands the model its earlier calls again: MAF's clients write parsed
    arguments as `json.dumps` does (`{"city": "London"}`), and a model's own text may differ
    (`{"city":"London"}`), which would change the bytes of the history a provider's prompt
    cache matches, from the first call on. The text is kept only where it differs.
    """
    parsed = _arguments(raw)
    written = (
        isinstance(raw, str)
        and raw
        and not (isinstance(parsed, dict) and json.dumps(parsed) == raw)
    )
    return {"arguments": parsed} | ({RAW_ARGUMENTS: raw} if written else {})


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw) if raw else {}
        except ValueError:
            return raw
    return raw if raw is not None else {}


# reading a conversation ---------------------------------------------------------------------


def standing_of(request: HumanRequest) -> Entry:
    """What an answer's entry keeps of an approval a person let stand: its rule, tool, team."""
    return {
        "standing": True,
        "rule": request.policy_rule,
        "tool": (request.proposed_action or {}).get("tool"),
        "team": request.team,
    }


def standing_grant(
    entries: Iterable[Entry], rule: str, tool: str, team: str | None
) -> Entry | None:
    """The first answer of the run that let its approval stand for `rule`'s calls of `tool`.

    Only one its `team` answered: a rule the policies file has since sent to another team is
    that team's to decide again.
    """
    return next(
        (
            e
            for e in entries
            if e.get("type") == "answer"
            and e.get("standing") is True
            and (e.get("rule"), e.get("tool"), e.get("team")) == (rule, tool, team)
        ),
        None,
    )


def history_of(entries: Sequence[Entry], *, turns: bool) -> list[Message]:
    """The messages a run continuing this one (its `entries`) starts on.

    `turns` (an agent registered as it is: `agents.turns_carry_on`): every turn it recorded
    (`messages_of`). Else the user's messages and the workflow's replies (each drive's `replies`
    entry), as MAF's `WorkflowAgent` keeps a session; a run recorded before Baton noted
    replies gives its turns.
    """
    if turns or not any(e.get("type") == REPLIES for e in entries):
        return messages_of(entries)
    messages: list[Message] = []
    for entry in entries:
        if (said := _user_said(entry)) is not None:
            messages.append(said)
        elif entry.get("type") == REPLIES:
            messages += [
                Message(role="assistant", contents=[str(r["text"])], author_name=r.get("agent"))
                for r in entry.get("replies") or ()
                if isinstance(r, dict) and r.get("text")
            ]
    return messages


def messages_of(entries: Iterable[Entry]) -> list[Message]:
    """A run's conversation as the messages a model reads when a later run continues it.

    The user's input and messages (a person's replies relayed to an agent among them), each
    agent's text, and its tool calls with their results: one assistant message a model turn
    (its text and calls), then at once one tool message holding its calls' results, in the
    order of the calls, as MAF's tool loop answers a turn's calls and its session keeps them
    (MAF's Bedrock client pairs one tool message with the calls before it and drops a second
    one's results: Bedrock then refuses the call left unanswered). A call whose result is not
    on record (the run ended before it came) is left out, as are handoffs, requests and
    answers: a model is not shown a call it never saw answered.
    """
    entries = list(entries)
    partner = _paired(entries)
    messages: list[Message] = []
    results: dict[int, Message] = {}  # by the assistant message (its place) that called
    turn: Message | None = None  # the assistant message the entries of one model turn go into
    for at, entry in enumerate(entries):
        kind = entry.get("type")
        content: Content | None = None
        if kind == "message" and entry.get("role") == "assistant" and entry.get("text"):
            content = Content.from_text(str(entry["text"]))
        elif kind == "tool_call" and at in partner:
            written = entry.get(RAW_ARGUMENTS)
            content = Content.from_function_call(
                call_id=str(entry["call_id"]),
                name=str(entry.get("tool")),
                arguments=written if isinstance(written, str) else entry.get("arguments") or {},
            )
        if content is not None:
            agent = entry.get(AUTHOR) or entry.get("agent")  # as MAF named the reply
            if turn is None or turn.author_name != agent:
                turn = Message(role="assistant", contents=[], author_name=agent)
                messages.append(turn)
            turn.contents.append(content)
            if kind == "tool_call":
                result = entries[partner[at]]
                done = Content.from_function_result(
                    call_id=str(result["call_id"]), result=_result_of(result)
                )
                answers = results.setdefault(  # named as MAF names its loop's tool message
                    len(messages) - 1, Message(role="tool", contents=[], author_name=agent)
                )
                answers.contents.append(done)
            continue
        if (said := _user_said(entry)) is not None:
            messages.append(said)
        elif kind == "tool_result":
            pass  # placed after its call's message
        else:
            continue
        turn = None
    return [
        m
        for at, message in enumerate(messages)
        for m in (message, *([results[at]] if at in results else ()))
    ]


def _user_said(entry: Entry) -> Message | None:
    """The user's message an entry is (their words, a person's relayed ones, a run's input)."""
    kind = entry.get("type")
    if kind == "message" and entry.get("role") == "user" and entry.get("text"):
        return Message(role="user", contents=[str(entry["text"])])
    if kind == "input" and isinstance(entry.get("input"), dict):
        return Message(role="user", contents=[said_of(entry["input"])])
    return None


def _paired(entries: Sequence[Entry]) -> dict[int, int]:
    """Tool calls and the results that answer them, each by the other's place.

    Each result answers the earliest call before it of its id that no other result answered.
    """
    waiting: dict[str, list[int]] = {}
    partner: dict[int, int] = {}
    for at, entry in enumerate(entries):
        call_id = entry.get("call_id")
        if call_id is None:
            continue
        if entry.get("type") == "tool_call":
            waiting.setdefault(str(call_id), []).append(at)
        elif entry.get("type") == "tool_result" and waiting.get(str(call_id)):
            call = waiting[str(call_id)].pop(0)
            partner[call], partner[at] = at, call
    return partner


def excerpt(entries: Iterable[Entry], limit: int = 30) -> list[str]:
    """The last `limit` entries as readable lines ("billing calls issue_refund(...)")."""
    lines = [line for e in entries if (line := readable(e))]
    return lines[-limit:]


def readable(entry: Entry) -> str:
    """One entry as a line a person reads."""
    kind = entry.get("type")
    if kind == "message":
        who = entry.get("agent") or entry.get("by") or entry.get("role", "")
        attached = entry.get("attachments")  # named in words (`maf_value`)
        text = str(entry.get("text", ""))
        if isinstance(attached, list) and attached:
            text = with_attachments(text, [str(a) for a in attached])
        return f"{who}: {text}"
    if kind == "tool_call":  # in words, as a decision's line says a call: "with amount 42.50"
        arguments = entry.get("arguments")
        shown = (
            ", ".join(f"{humanize(k)} {shown_value(k, v)}" for k, v in arguments.items())
            if isinstance(arguments, dict)
            else str(arguments or "")
        )
        called = f"{entry.get('agent')} calls {entry.get('tool')}"
        return f"{called} with {shown}" if shown else called
    if kind == "tool_result":
        text = str(entry.get("result", ""))
        return f"{entry.get('tool')} returned: {text[:300]}"
    if kind == "handoff":
        return f"{entry.get('from')} hands the case to {entry.get('to')}"
    if kind == "request":
        return f"asked {entry.get('team')} ({entry.get('kind')}): {entry.get('title')}"
    if kind == "answer":
        said = f": {entry['text']}" if entry.get("text") else ""
        stands = (
            f", standing for the run's later {entry.get('tool')} calls under rule "
            f"{entry.get('rule')}"
            if entry.get("standing") is True
            else ""
        )
        return (
            f"{entry.get('by')} answered the {entry.get('kind')} with {entry.get('decision')}"
            f"{stands}{said}"
        )
    if kind == "event":
        data = entry.get("data")
        said = data if isinstance(data, str) else json.dumps(data, default=str)
        return f"{entry.get('executor') or 'the workflow'} reports {entry.get('event')}: {said}"
    if kind == "input":  # an input of one text field is what the user said (an agent's run)
        values = entry.get("input")
        if isinstance(values, dict) and len(values) == 1:
            [value] = values.values()
            if isinstance(value, str):
                return f"user: {value}"
        return f"input: {json.dumps(values, default=str)}"
    return ""


def run_state(entries: Sequence[Entry]) -> dict[str, Any]:
    """The run state policies read (`state.<name>`), counted since a person last took over.

    `confidence` (only once an agent reported one with `report_confidence`), `failed_attempts`
    (tool results that say the call failed) and `asked_for_manager`.
    """
    start = max(
        (
            i + 1
            for i, e in enumerate(entries)
            if e.get("type") == "answer" and e.get("kind") == "takeover"
        ),
        default=0,
    )
    state: dict[str, Any] = {"failed_attempts": 0, "asked_for_manager": False}
    for entry in entries[start:]:
        kind = entry.get("type")
        if kind == "message" and entry.get("from_user") and _MANAGER.search(str(entry.get("text"))):
            state["asked_for_manager"] = True
        elif kind == "tool_call" and entry.get("tool") == CONFIDENCE_TOOL:
            arguments = entry.get("arguments") or {}
            try:
                state["confidence"] = float(arguments["confidence"])
            except (TypeError, ValueError, KeyError):
                continue
        elif kind == "tool_result" and failed(entry.get("result")):
            state["failed_attempts"] += 1
    return state


def failed(result: Any) -> bool:
    """Whether a tool result says the call failed (`Error: ...` or `{"ok": false}`)."""
    text = str(result or "")
    if text.startswith("Error"):
        return True
    try:
        parsed = json.loads(text)
    except ValueError:
        return False
    return isinstance(parsed, dict) and parsed.get("ok") is False
