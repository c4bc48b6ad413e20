"""Request adapters: one mechanism between what a workflow asks MAF and what Baton asks people.

A workflow pauses on `ctx.request_info(data, response_type)`. When `data` is one of Baton's kind
models (`human.kinds`) the pause is already a question for people (`Kinds`). Other request types
are MAF's own: a handoff agent waiting for the user (`HandoffAgentUserRequest`, answered with
`list[Message]`), a tool call MAF hands back to its host (a declaration-only tool: `Content` of
type `function_call`, answered with a `function_result`), or a call of an
`approval_mode="always_require"` tool (`Content` of type `function_approval_request`). An adapter
maps each to a Baton kind for people (`ask`) and maps the person's typed answer back to what MAF
expects (`deliver`).

Either step ends in one of three outcomes the runtime acts on:

- `Ask`: a person is asked (a HumanRequest with the adapter's `origin`, kept for `deliver`);
- `Reply`: MAF gets this response now (a policy decided, or a person answered);
- `Finish`: the run ends with this output (a case resolved by a person or closed by the agent).

An answer may also ask again (`Ask` from `deliver`): an edit into a stricter policy band becomes a
new approval for that band; a person taking a request over (`take_over`) turns it into a
`takeover` for them. Both stay bound to the same MAF request until someone answers for good.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from agent_framework import Content, WorkflowEvent
from agent_framework_orchestrations import HandoffAgentUserRequest
from pydantic import BaseModel

from executors.platform.services import RunServices
from executors.platform.tool_gate import GatedTool, Verdict, approval_request, judge, perform_call
from executors.platform.transcript import as_text, excerpt, run_state, tool_result
from human.kinds import (
    KINDS,
    ApprovalAnswer,
    QuestionAnswer,
    QuestionRequest,
    ReviewAnswer,
    ReviewRequest,
    Routing,
    TakeoverAnswer,
    TakeoverRequest,
    kind_of,
)
from human.policy import Decision
from human.records import HumanRequest, NewEvent

ORIGIN = "origin"
"""The key of a HumanRequest's payload that says which adapter asked, for which MAF request."""


@dataclass(frozen=True)
class Ask:
    """Ask a person: `request` is a Baton kind model; `origin` is what `deliver` needs later."""

    request: Routing
    origin: dict[str, Any] = field(default_factory=dict)
    assignee: str | None = None


@dataclass(frozen=True)
class Reply:
    """Give MAF this response to its request now."""

    response: Any


@dataclass(frozen=True)
class Finish:
    """End the run with this output; its pending MAF requests are dropped with its checkpoint."""

    output: Any


Outcome = Ask | Reply | Finish


@dataclass
class Scene:
    """What an adapter may read and note during one drive of a run."""

    services: RunServices
    events: list[NewEvent] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        """The run being driven."""
        return self.services.run_id

    def audit(self, event_type: str, **data: Any) -> None:
        """Note an audit event; it is written with the drive's progress."""
        self.events.append(NewEvent(type=event_type, run_id=self.run_id, data=data))

    def note(self, entry: dict[str, Any]) -> None:
        """Add an entry to the run's conversation."""
        self.services.transcript.add(entry)

    def state(self) -> dict[str, Any]:
        """The run state policies see (`state.*`): confidence, failed attempts, ..."""
        return run_state(self.services.transcript.everything())

    def conversation(self, limit: int = 30) -> list[str]:
        """The conversation so far, as readable lines."""
        return excerpt(self.services.transcript.everything(), limit)

    async def case(self) -> dict[str, Any]:
        """What a person sees of the case: the conversation, and what the workflow adds."""
        context: dict[str, Any] = {"conversation": self.conversation()}
        added = self.services.case_context
        return context | (await added(self.services) if added is not None else {})


class RequestAdapter(Protocol):
    """Maps one family of MAF request types to Baton kinds and back."""

    name: ClassVar[str]

    def accepts(self, event: WorkflowEvent[Any]) -> bool:
        """Whether this adapter speaks for this `request_info` event."""
        ...

    async def ask(self, event: WorkflowEvent[Any], scene: Scene) -> Outcome:
        """What to do about a new request: ask someone, answer it at once, or end the run."""
        ...

    async def deliver(self, request: HumanRequest, answer: BaseModel, scene: Scene) -> Outcome:
        """What MAF gets for a person's (or the system's) typed answer to `request`."""
        ...


def origin_of(request: HumanRequest) -> dict[str, Any]:
    """What the adapter that asked kept for delivery (`{}` for a workflow's own kind requests)."""
    found = request.payload.get(ORIGIN)
    return dict(found) if isinstance(found, dict) else {}


def maf_request_id(request: HumanRequest) -> str:
    """The MAF request a HumanRequest answers (re-asks and takeovers share their first's)."""
    return str(origin_of(request).get("maf_request_id") or request.maf_request_id)


def adapter_for(adapters: Sequence[RequestAdapter], request: HumanRequest) -> RequestAdapter:
    """The adapter that asked `request`."""
    name = origin_of(request).get("adapter", Kinds.name)
    for adapter in adapters:
        if adapter.name == name:
            return adapter
    raise LookupError(f"no request adapter {name!r} in this workflow for request {request.id}")


def resolved(request: HumanRequest, answer: TakeoverAnswer) -> Finish:
    """A person resolved the case: the run ends with their resolution as its output."""
    return Finish(
        {
            "resolution": answer.resolution,
            "outcome": answer.outcome or {},
            "resolved_by": request.answered_by,
            "resolver": "person",
        }
    )


def take_over(request: HumanRequest, person: str, scene: Scene) -> Ask:
    """A person took `request` over from its page: the case becomes a takeover for them.

    The takeover stays bound to the same MAF request and adapter; `return` gives the agent the
    person's guidance in place of the original answer, `resolve` ends the run.
    """
    origin = origin_of(request) | {
        "adapter": origin_of(request).get("adapter", Kinds.name),
        "maf_request_id": maf_request_id(request),
        "taken_over_from": request.kind,
        "taken_over_request": request.id,
    }
    conversation = scene.conversation(limit=200)
    return Ask(
        TakeoverRequest(
            title=f"Taken over by {person}: {request.title}",
            reason=(
                f"{person} took this {request.kind} over. Resolve the case (the run ends with "
                "your resolution) or return it to the agent with guidance."
            ),
            context={**request.context, "conversation": conversation},
            team=request.team,
            priority=request.priority,
            policy_rule=request.policy_rule,
            conversation=[{"line": line} for line in conversation],
        ),
        origin=origin,
        assignee=person,
    )


def returned_text(request: HumanRequest, answer: TakeoverAnswer) -> str:
    """What the agent is told when a person hands a case back."""
    return (
        f"A person ({request.answered_by}) took this over and handed it back with guidance: "
        f"{answer.guidance}"
    )


# a workflow's own kind requests -------------------------------------------------------------


class Kinds:
    """Requests that are already Baton kind models, answered with their answer models."""

    name: ClassVar[str] = "kinds"

    def accepts(self, event: WorkflowEvent[Any]) -> bool:
        """Any of Baton's request models."""
        return kind_of(event.data) is not None

    async def ask(self, event: WorkflowEvent[Any], scene: Scene) -> Outcome:
        """Ask people as the workflow wrote it."""
        data = event.data
        kind = kind_of(data)
        if kind is None or not isinstance(data, Routing):
            raise TypeError(f"not a Baton request model: {type(data).__name__}")
        if event.response_type is not kind.answer_model:
            raise TypeError(
                f"a {kind.name} request must expect {kind.answer_model.__name__}, "
                f"not {getattr(event.response_type, '__name__', event.response_type)}"
            )
        return Ask(data)

    async def deliver(self, request: HumanRequest, answer: BaseModel, scene: Scene) -> Outcome:
        """The typed answer as is; a taken-over request gets its own kind's answer."""
        origin = origin_of(request)
        first_kind = origin.get("taken_over_from")
        if not first_kind or not isinstance(answer, TakeoverAnswer):
            return Reply(answer)
        if answer.decision == "resolve":
            return resolved(request, answer)
        guidance = returned_text(request, answer)
        handed_back: dict[str, BaseModel] = {
            "approval": ApprovalAnswer(decision="reject", reason=guidance),
            "question": QuestionAnswer(decision="answer", answer=guidance),
            "review": ReviewAnswer(decision="reject", reason=guidance),
            "takeover": answer,
        }
        if answer.decision in ("expired", "cancelled"):
            return Reply(
                KINDS[first_kind].answer_model.model_validate({"decision": answer.decision})
            )
        return Reply(handed_back[first_kind])


# the handoff's user turns ---------------------------------------------------------------------


class UserTurns:
    """A handoff agent replied to the user and waits: a `question` to the user-facing team.

    The team relays the user's reply, which reaches the agent as the user's message
    (`HandoffAgentUserRequest.create_response`). If the policy's takeover rules hold for the
    run's state (low confidence, a user asking for a manager, repeated failures), the turn
    becomes a `takeover` instead: `resolve` ends the run, `return` gives the agent the person's
    guidance. `party` is what the workflow calls its user in the words people read ("customer").
    """

    name: ClassVar[str] = "user_turns"

    def __init__(self, services: RunServices, *, team: str, party: str = "user") -> None:
        self._services = services
        self._team = team
        self._party = party

    def accepts(self, event: WorkflowEvent[Any]) -> bool:
        """The handoff orchestration's user-input request."""
        return isinstance(event.data, HandoffAgentUserRequest)

    async def ask(self, event: WorkflowEvent[Any], scene: Scene) -> Outcome:
        """A question for the user-facing team, or a takeover when the policy says so."""
        data: HandoffAgentUserRequest = event.data
        agent = str(event.source_executor_id)
        said = data.agent_response.text.strip()
        origin = {"agent": agent}
        context = await scene.case()
        takeover = self._services.policy.takeover(scene.state())
        if takeover is not None:
            return Ask(
                takeover_request(
                    f"Take over the conversation from {agent}",
                    f"Policy rule {takeover.rule_id} hands this case to a person. "
                    f"{agent} last said: {said}",
                    takeover,
                    context,
                    scene,
                ),
                origin,
            )
        party = self._party
        return Ask(
            QuestionRequest(
                title=f"{agent} waits for the {party}'s reply",
                reason=(
                    f"The {agent} agent answered the {party} and waits for their reply. Relay "
                    f"what the {party} says; it reaches the agent as the {party}'s message."
                ),
                context=context,
                team=self._team,
                question=said or f"({agent} is waiting for the {party})",
            ),
            origin,
        )

    async def deliver(self, request: HumanRequest, answer: BaseModel, scene: Scene) -> Outcome:
        """The user's words (or a person's guidance) as the next user message."""
        if isinstance(answer, TakeoverAnswer):
            if answer.decision == "resolve":
                return resolved(request, answer)
            if answer.decision == "return":
                guidance = returned_text(request, answer)
                scene.note(
                    {"type": "message", "role": "user", "by": request.answered_by, "text": guidance}
                )
                return Reply(HandoffAgentUserRequest.create_response(guidance))
        if isinstance(answer, QuestionAnswer) and answer.decision == "answer":
            text = str(answer.answer)
            scene.note(
                {
                    "type": "message",
                    "role": "user",
                    "by": self._party,
                    "from_user": True,
                    "relayed_by": request.answered_by,
                    "text": text,
                }
            )
            return Reply(HandoffAgentUserRequest.create_response(text))
        return Finish(
            {
                "resolution": f"Closed without an answer: the {self._party}'s turn "
                f"{getattr(answer, 'decision', 'ended')} before anyone replied.",
                "outcome": {},
                "resolved_by": "system",
                "resolver": "system",
            }
        )


def takeover_request(
    title: str, reason: str, decision: Decision, context: dict[str, Any], scene: Scene
) -> TakeoverRequest:
    """A takeover as a policy rule routes it, with the whole conversation."""
    return TakeoverRequest(
        title=title,
        reason=reason,
        context=context,
        team=decision.team or scene.services.policy.default_team,
        priority="high",
        policy_rule=decision.rule_id,
        expires_in_s=decision.expires_in_s,
        escalation=list(decision.escalation),
        conversation=[{"line": line} for line in scene.conversation(limit=200)],
    )


# tool calls handed to Baton -------------------------------------------------------------------


@dataclass(frozen=True)
class ToolCall:
    """A tool call a person may need to see."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    agent: str


class HostTool(Protocol):
    """What Baton does with a host-owned (declaration-only) tool's call."""

    name: str

    async def ask(self, call: ToolCall, scene: Scene) -> Outcome:
        """Decide, ask, or end."""
        ...

    async def deliver(
        self, call: ToolCall, request: HumanRequest, answer: BaseModel, scene: Scene
    ) -> Outcome:
        """The tool's result for a person's answer."""
        ...


def result_reply(call: ToolCall, result: Any, scene: Scene) -> Reply:
    """Give the model `result` as the call's result (and note it in the conversation)."""
    text = as_text(result)
    scene.note(tool_result(call.agent, call.name, call.call_id, text))
    return Reply(Content.from_function_result(call_id=call.call_id, result=text))


class HostCalls:
    """Calls of declaration-only tools, which MAF hands back to Baton; each tool has a handler."""

    name: ClassVar[str] = "host_calls"

    def __init__(self, tools: Sequence[HostTool]) -> None:
        self._tools = {t.name: t for t in tools}

    def accepts(self, event: WorkflowEvent[Any]) -> bool:
        """A `function_call` pause of a tool this adapter has a handler for."""
        data = event.data
        return (
            isinstance(data, Content) and data.type == "function_call" and data.name in self._tools
        )

    async def ask(self, event: WorkflowEvent[Any], scene: Scene) -> Outcome:
        """Hand the call to its tool's handler."""
        data: Content = event.data
        call = ToolCall(
            call_id=str(data.call_id),
            name=str(data.name),
            arguments=data.parse_arguments() or {},
            agent=str(event.source_executor_id),
        )
        outcome = await self._tools[call.name].ask(call, scene)
        if isinstance(outcome, Ask):
            return Ask(outcome.request, _call_origin(call) | outcome.origin, outcome.assignee)
        return outcome

    async def deliver(self, request: HumanRequest, answer: BaseModel, scene: Scene) -> Outcome:
        """The tool's result for the answer."""
        call = _call_of(origin_of(request))
        if isinstance(answer, TakeoverAnswer):
            return handed_back(call, request, answer, scene)
        return await self._tools[call.name].deliver(call, request, answer, scene)


def handed_back(
    call: ToolCall, request: HumanRequest, answer: TakeoverAnswer, scene: Scene
) -> Outcome:
    """A takeover of a tool call: resolved (the run ends) or handed back (the call did not run)."""
    if answer.decision == "resolve":
        return resolved(request, answer)
    text = (
        returned_text(request, answer)
        if answer.decision == "return"
        else f"Nobody took the case over in time ({answer.decision})."
    )
    return result_reply(call, f"{text} The call {call.name} did not run.", scene)


def _call_origin(call: ToolCall) -> dict[str, Any]:
    return {
        "call_id": call.call_id,
        "tool": call.name,
        "arguments": call.arguments,
        "agent": call.agent,
    }


def _call_of(origin: dict[str, Any]) -> ToolCall:
    return ToolCall(
        call_id=str(origin["call_id"]),
        name=str(origin["tool"]),
        arguments=dict(origin.get("arguments") or {}),
        agent=str(origin.get("agent") or ""),
    )


class PolicyGate:
    """A side-effecting tool decided by policy: auto, deny, approval or takeover.

    Approve runs the call with its arguments; edit runs it with the person's arguments (validated
    against the tool's schema by the answer's own check, then re-checked against the policy: an
    edit into a stricter band asks that band again); reject gives the model the person's reason.
    Every run of the tool goes through the effect ledger, keyed by the run, the deciding request
    and the call.
    """

    def __init__(self, services: RunServices, tool: GatedTool) -> None:
        self.name = tool.name
        self._services = services
        self._tool = tool

    async def ask(self, call: ToolCall, scene: Scene) -> Outcome:
        """Evaluate the policy on the typed arguments and the run's state."""
        return await self._decide(call, call.arguments, scene, before=None, scope="auto")

    async def deliver(
        self, call: ToolCall, request: HumanRequest, answer: BaseModel, scene: Scene
    ) -> Outcome:
        """Run, re-check, or refuse the call as the person answered."""
        assert isinstance(answer, ApprovalAnswer)
        origin = origin_of(request)
        arguments = dict(origin.get("arguments") or call.arguments)
        if answer.decision == "approve":
            typed = self._tool.arguments.model_validate(arguments)
            result = await perform_call(self._services, self._tool, typed, call.call_id, request.id)
            return result_reply(call, result, scene)
        if answer.decision == "edit":
            before = Decision.model_validate(origin["decision"])
            return await self._decide(
                call, dict(answer.arguments or {}), scene, before=before, scope=request.id
            )
        return result_reply(call, _refusal_text(request, answer), scene)

    async def _decide(
        self,
        call: ToolCall,
        arguments: dict[str, Any],
        scene: Scene,
        *,
        before: Decision | None,
        scope: str,
    ) -> Outcome:
        verdict = await judge(
            self._tool, arguments, self._services.policy, before=before, state=scene.state()
        )
        if verdict.error is not None or verdict.decision is None:
            return result_reply(call, verdict.error, scene)
        return await self.route(call, verdict, verdict.decision, scene, before=before, scope=scope)

    async def route(
        self,
        call: ToolCall,
        verdict: Verdict,
        decision: Decision,
        scene: Scene,
        *,
        before: Decision | None = None,
        scope: str = "auto",
        origin: dict[str, Any] | None = None,
    ) -> Outcome:
        """Act on the policy's decision: run the call, refuse it, or ask a person.

        A decision the policy took alone (not a re-check of a person's edit) is audited as
        `request.auto_decided` with its rule.
        """
        if decision.action in ("auto", "deny") and before is None:
            scene.audit(
                "request.auto_decided",
                tool=self.name,
                arguments=verdict.arguments,
                decision="approve" if decision.action == "auto" else "reject",
                rule=decision.rule_id,
            )
        if decision.action == "auto" and verdict.typed is not None:
            result = await perform_call(
                self._services, self._tool, verdict.typed, call.call_id, scope
            )
            return result_reply(call, result, scene)
        if decision.action == "deny":
            return result_reply(call, f"Refused by policy rule {decision.rule_id}.", scene)
        context = await scene.case()
        origin = {
            **(origin or {}),
            "arguments": verdict.arguments,
            "decision": decision.model_dump(mode="json"),
            "edited": before is not None,
        }
        title, reason = self._tool.wording(verdict.arguments, decision)
        if decision.action == "takeover":
            return Ask(
                takeover_request(
                    f"Take over: {title}",
                    f"Policy rule {decision.rule_id} hands this case to a person before "
                    f"{call.agent} may call {self.name}.",
                    decision,
                    context,
                    scene,
                ),
                origin,
            )
        approval = approval_request(
            self._tool,
            verdict.arguments,
            decision,
            title=title,
            reason=reason,
            context=context,
            default_team=self._services.policy.default_team,
            edited=before is not None,
        )
        return Ask(approval, origin)


def _refusal_text(request: HumanRequest, answer: ApprovalAnswer | ReviewAnswer) -> str:
    if answer.decision == "reject":
        return f"Rejected by {request.answered_by}: {answer.reason}"
    if answer.decision == "expired":
        return "Not approved in time: the request expired, so nothing was done."
    return "The request was cancelled; nothing was done."


class AskHuman:
    """`ask_human(question, options)`: a `question` to a team; the answer is the tool's result."""

    name = "ask_human"

    def __init__(self, services: RunServices, *, team: str) -> None:
        self._services = services
        self._team = team

    async def ask(self, call: ToolCall, scene: Scene) -> Outcome:
        """Ask the team the agent's question, with its options."""
        question = str(call.arguments.get("question") or "").strip()
        options = [str(o) for o in call.arguments.get("options") or []]
        if not question:
            return result_reply(call, "Error: ask_human needs a question.", scene)
        return Ask(
            QuestionRequest(
                title=f"{call.agent} asks: {question[:120]}",
                reason=f"The {call.agent} agent needs an answer from a person to go on.",
                context=await scene.case(),
                team=self._team,
                question=question,
                options=options,
            )
        )

    async def deliver(
        self, call: ToolCall, request: HumanRequest, answer: BaseModel, scene: Scene
    ) -> Outcome:
        """The person's answer as the tool's result."""
        assert isinstance(answer, QuestionAnswer)
        if answer.decision == "answer":
            return result_reply(call, f"{request.answered_by} answered: {answer.answer}", scene)
        return result_reply(call, f"Nobody answered ({answer.decision}).", scene)


@dataclass(frozen=True)
class Draft:
    """A draft a person reviews before it goes out, and how to send it."""

    name: str
    description: str
    arguments: type[BaseModel]
    content_field: str
    send: GatedTool
    audience: str = "the user"


class ReviewDraft:
    """A tool whose argument is a draft (a reply to the user, say): a `review` first.

    Approve sends the draft; edit sends the person's content instead (the audit keeps the diff);
    reject sends nothing and gives the model the reason.
    """

    def __init__(self, services: RunServices, draft: Draft, *, team: str) -> None:
        self.name = draft.name
        self._services = services
        self._draft = draft
        self._team = team

    async def ask(self, call: ToolCall, scene: Scene) -> Outcome:
        """A review of the draft by the team."""
        try:
            typed = self._draft.arguments.model_validate(call.arguments)
        except ValueError as exc:
            return result_reply(call, f"Error: invalid arguments for {self.name}: {exc}", scene)
        arguments = typed.model_dump(mode="json")
        return Ask(
            ReviewRequest(
                title=f"Review {call.agent}'s draft before it goes to {self._draft.audience}",
                reason=f"The {call.agent} agent drafted this with {self.name}; nothing is sent "
                "until a person approves or edits it.",
                context=await scene.case(),
                team=self._team,
                draft=arguments[self._draft.content_field],
            ),
            {"arguments": arguments},
        )

    async def deliver(
        self, call: ToolCall, request: HumanRequest, answer: BaseModel, scene: Scene
    ) -> Outcome:
        """Send the draft as approved or edited, or tell the model why not."""
        assert isinstance(answer, ReviewAnswer)
        arguments = dict(origin_of(request).get("arguments") or call.arguments)
        if answer.decision == "edit":
            content = answer.content
            arguments[self._draft.content_field] = (
                content if isinstance(content, str) else json.dumps(content)
            )
        elif answer.decision != "approve":
            return result_reply(call, _refusal_text(request, answer) + " Nothing was sent.", scene)
        send = self._draft.send
        typed = send.arguments.model_validate(arguments)
        result = await perform_call(self._services, send, typed, call.call_id, request.id)
        if answer.decision == "edit":
            result = {"sent": result, "note": f"{request.answered_by} edited the draft first"}
        return result_reply(call, result, scene)


class CloseCase:
    """`close_case(resolution)`: the agent resolved the case; the run ends with its resolution."""

    name = "close_case"

    async def ask(self, call: ToolCall, scene: Scene) -> Outcome:
        """End the run with the agent's resolution."""
        resolution = str(call.arguments.get("resolution") or "").strip()
        if not resolution:
            return result_reply(call, "Error: close_case needs a resolution.", scene)
        scene.note(tool_result(call.agent, self.name, call.call_id, "closed"))
        return Finish(
            {
                "resolution": resolution,
                "outcome": {},
                "resolved_by": call.agent,
                "resolver": "agent",
            }
        )

    async def deliver(
        self, call: ToolCall, request: HumanRequest, answer: BaseModel, scene: Scene
    ) -> Outcome:
        """Never asked about: a close is not a question for anyone."""
        raise AssertionError(f"close_case asks nobody, yet request {request.id} was answered")


# calls of `approval_mode="always_require"` tools ----------------------------------------------


class ToolApprovals:
    """MAF's own approval requests, for tools declared `approval_mode="always_require"`.

    The policy routes the approval (team, approvals, deadline, rule); a declared tool needs a
    person even where the policy would let it run. Approve answers MAF with its own approval
    response (MAF runs the tool, which runs through the effect ledger). MAF ignores arguments
    edited in an approval response, and its rejection tells the model no reason, so for edit and
    reject Baton answers with the tool's result itself: an edit re-checked against the policy and
    run by Baton with the person's arguments, a rejection with the person's reason.
    """

    name: ClassVar[str] = "tool_approvals"

    def __init__(self, services: RunServices, tools: Sequence[GatedTool]) -> None:
        self._services = services
        self._tools = {t.name: t for t in tools}

    def accepts(self, event: WorkflowEvent[Any]) -> bool:
        """A `function_approval_request` of a declared tool."""
        data = event.data
        return (
            isinstance(data, Content)
            and data.type == "function_approval_request"
            and data.function_call is not None
            and data.function_call.name in self._tools
        )

    async def ask(self, event: WorkflowEvent[Any], scene: Scene) -> Outcome:
        """An approval routed by the policy (a deny refuses at once; a takeover takes over)."""
        data: Content = event.data
        assert data.function_call is not None
        call = ToolCall(
            call_id=str(data.function_call.call_id),
            name=str(data.function_call.name),
            arguments=data.function_call.parse_arguments() or {},
            agent=str(event.source_executor_id),
        )
        tool = self._tools[call.name]
        verdict = await judge(tool, call.arguments, self._services.policy, state=scene.state())
        if verdict.error is not None or verdict.decision is None:
            return result_reply(call, verdict.error, scene)
        decision = verdict.decision
        if decision.action == "auto":  # declared always_require: a person decides regardless
            decision = Decision(
                action="approval",
                rule_id=f"{call.name}.always_require",
                team=self._services.policy.default_team,
            )
        origin = _call_origin(call) | {"approval_request": data.to_dict()}
        return await PolicyGate(self._services, tool).route(
            call, verdict, decision, scene, origin=origin
        )

    async def deliver(self, request: HumanRequest, answer: BaseModel, scene: Scene) -> Outcome:
        """MAF's approval for approve; the tool's result for everything else."""
        origin = origin_of(request)
        call = _call_of(origin)
        if isinstance(answer, TakeoverAnswer):
            return handed_back(call, request, answer, scene)
        tool = self._tools[call.name]
        gate = PolicyGate(self._services, tool)
        if (
            isinstance(answer, ApprovalAnswer)
            and answer.decision == "approve"
            and not origin.get("edited")
        ):
            approval = Content.from_dict(origin["approval_request"])
            return Reply(approval.to_function_approval_response(approved=True))
        # an edit (or the approval of an edit's re-ask) runs the person's arguments: Baton runs it
        return await gate.deliver(call, request, answer, scene)
