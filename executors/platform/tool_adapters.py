"""Request adapters for tool calls: host-owned (declaration-only) tools and MAF's approvals.

A declaration-only tool's call comes back to Baton as a `function_call` request (`HostCalls`),
handed to the `HostTool` of that name: a call decided by policy (`PolicyGate`), a question to a
team (`AskHuman`), a draft a person reviews before it is sent (`ReviewDraft`), or the agent ending
the run (`CloseCase`). A call of an `approval_mode="always_require"` tool comes as MAF's own
`function_approval_request` (`ToolApprovals`), routed by the policy.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Protocol

from agent_framework import (
    SKIP_PARSING,
    AgentSession,
    Content,
    ContextProvider,
    FunctionInvocationContext,
    FunctionMiddleware,
    FunctionTool,
    MiddlewareFailure,
    SessionContext,
    SupportsAgentRun,
    WorkflowEvent,
)
from pydantic import BaseModel

from baton.errors import RunEnded, StoreError
from executors.platform.adapters import (
    Ask,
    Finish,
    Outcome,
    Reply,
    Scene,
    resolved,
    returned_text,
    takeover_request,
)
from executors.platform.services import DRIVING_SERVICES, RunServices
from executors.platform.shown import maf_value
from executors.platform.tool_gate import (
    GatedTool,
    Verdict,
    any_arguments,
    approval_request,
    judge,
    perform_call,
    perform_keyed,
    stood_for,
)
from executors.platform.transcript import NOTED, as_text, tool_result
from human.effects import HandedOn, ToolFailed
from human.kinds import (
    ApprovalAnswer,
    InputAnswer,
    InputRequest,
    QuestionAnswer,
    QuestionRequest,
    ReviewAnswer,
    ReviewRequest,
    TakeoverAnswer,
)
from human.policy import Decision, Route
from human.records import HumanRequest
from human.requests import origin_of
from human.store.base import FAILED, failure_of
from human.typed import as_json, describe

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
            result = await perform_call(
                self._services, self._tool, typed, call.call_id, request.id, agent=call.agent
            )
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
            self._tool,
            arguments,
            self._services.policy,
            before=before,
            state=scene.state(),
            detailed=self._services.transcript.detailed_errors(call.agent),
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
        flagged: str | None = None,
    ) -> Outcome:
        """Act on the policy's decision: run the call, refuse it, or ask a person.

        A decision the policy took alone (not a re-check of a person's edit) is audited as
        `request.auto_decided` with its rule. `flagged`: what a security check found in the
        call (`security_check`): no standing approval decides it, and its request says it first.
        """
        alone = before is None and flagged is None
        if flagged:  # (nor does its approval offer to stand for later calls)
            decision = decision.model_copy(update={"standing": False})
        stood = stood_for(self._services, self.name, decision) if alone else {}
        if stood:  # a person's approval stands for this call (`stood_for`)
            decision = decision.model_copy(update={"action": "auto"})
        if decision.action in ("auto", "deny") and before is None:
            scene.audit(
                "request.auto_decided",
                tool=self.name,
                arguments=verdict.arguments,
                decision="approve" if decision.action == "auto" else "reject",
                rule=decision.rule_id,
                **stood,
            )
        if decision.action == "auto" and verdict.typed is not None:
            result = await perform_call(
                self._services, self._tool, verdict.typed, call.call_id, scope, agent=call.agent
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
        if flagged:
            reason = f"{flagged} {reason}"
        if decision.action == "takeover":
            return Ask(
                takeover_request(
                    f"Take over: {title}",
                    decision.handing_over(before=f"{call.agent} may call {self.name}"),
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
                title=f"Review {call.agent}'s draft before it goes to the {self._services.party}",
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
    reject Baton gives the tool's result itself: an edit re-checked against the policy and run by
    Baton with the person's arguments, a rejection with the person's reason. That result rides
    MAF's own approval response (`BATON_RESULT`), which `BatonCalls` hands MAF's tool loop in
    place of running the tool: MAF goes on with the whole batch of calls the model made in that
    turn (a call that needed no approval runs then, as MAF runs it), and middleware of the
    author's (MAF's `ToolApprovalMiddleware`) sees the approval it waits for.
    """

    name: ClassVar[str] = "tool_approvals"
    declared: ClassVar[bool] = True
    """Tools declared to Baton (`GatedTool`): a person decides even where the policy says auto."""

    def __init__(self, services: RunServices, tools: Sequence[GatedTool]) -> None:
        self._services = services
        self._tools = {t.name: t for t in tools}

    def accepts(self, event: WorkflowEvent[Any]) -> bool:
        """A `function_approval_request` of a tool this adapter takes (`takes`)."""
        data = event.data
        return (
            isinstance(data, Content)
            and data.type == "function_approval_request"
            and data.function_call is not None
            and self.takes(str(data.function_call.name or ""))
        )

    def takes(self, tool: str) -> bool:
        """A declared tool."""
        return tool in self._tools

    async def ask(self, event: WorkflowEvent[Any], scene: Scene) -> Outcome:
        """An approval routed by the policy (a deny refuses at once; a takeover takes over)."""
        data: Content = event.data
        in_loop = self._in_loop(data, event.source_executor_id)
        return await _replied(data, self._ask(data, event, scene, in_loop=in_loop), in_loop)

    def _in_loop(self, approval: Content, executor: object) -> bool:
        """Whether `BatonCalls` will see MAF's answer to `approval` (module's `_answered`).

        Only a local tool's call by an agent Baton put `BatonCalls` on: not a hosted tool's
        (the provider runs it), nor an approval an executor asks for itself.
        """
        call = approval.function_call
        hosted = call is None or getattr(call, "hosted", False)
        return not hosted and str(executor) in self._services.baton_calls

    def _tool(self, name: str, *, in_loop: bool) -> GatedTool:
        """The tool Baton runs for `name`; MAF (or the executor that asked) runs it otherwise."""
        found = self._tools.get(name)
        return found if found is not None and in_loop else _run_by_maf(name)

    async def _ask(
        self, data: Content, event: WorkflowEvent[Any], scene: Scene, *, in_loop: bool
    ) -> Outcome:
        assert data.function_call is not None
        call = ToolCall(
            call_id=str(data.function_call.call_id),
            name=str(data.function_call.name),
            arguments=data.function_call.parse_arguments() or {},
            agent=str(event.source_executor_id),
        )
        tool = self._tool(call.name, in_loop=in_loop)
        verdict = await judge(
            tool,
            call.arguments,
            self._services.policy,
            state=scene.state(),
            detailed=self._services.transcript.detailed_errors(call.agent),
        )
        if verdict.error is not None or verdict.decision is None:
            return result_reply(call, verdict.error, scene)
        decision = verdict.decision
        flagged = security_check(data)
        if decision.action == "auto" and (self.declared or flagged):  # a person decides anyway
            decision = Decision(
                action="approval",
                rule_id=f"{call.name}.{'security_check' if flagged else 'always_require'}",
                team=self._services.policy.default_team,
            )
        origin = _call_origin(call) | {"approval_request": data.to_dict()}
        return await PolicyGate(self._services, tool).route(
            call, verdict, decision, scene, origin=origin, flagged=flagged
        )

    async def deliver(self, request: HumanRequest, answer: BaseModel, scene: Scene) -> Outcome:
        """MAF's approval for approve; the tool's result, in MAF's approval, for the rest."""
        approval = Content.from_dict(origin_of(request)["approval_request"])
        in_loop = self._in_loop(approval, request.executor_id)
        return await _replied(
            approval, self._deliver(request, answer, scene, in_loop=in_loop), in_loop
        )

    async def _deliver(
        self, request: HumanRequest, answer: BaseModel, scene: Scene, *, in_loop: bool
    ) -> Outcome:
        origin = origin_of(request)
        call = _call_of(origin)
        if isinstance(answer, TakeoverAnswer):
            return handed_back(call, request, answer, scene)
        tool = self._tool(call.name, in_loop=in_loop)
        gate = PolicyGate(self._services, tool)
        if (
            self.declared
            and isinstance(answer, ApprovalAnswer)
            and answer.decision == "approve"
            and not origin.get("edited")
        ):
            approval = Content.from_dict(origin["approval_request"])
            return Reply(approval.to_function_approval_response(approved=True))
        # an edit (or the approval of an edit's re-ask) runs the person's arguments: Baton runs it
        return await gate.deliver(call, request, answer, scene)


def security_check(approval: Content) -> str | None:
    """What a security check said in asking for `approval`, or None where none asked.

    MAF's FIDES (`SecureAgentConfig(approval_on_violation=True)`) asks a host to approve a call
    that breaks its information-flow policy (an untrusted context, private data bound for a
    public tool), saying why (`policy_violation`, `reason`). No policy rule lets such a call
    run unasked, nor a standing approval: a person decides, told what the check found.

    The check's label of the context says where it came from (`context_label`: the tool whose
    result set it, which may be in an earlier run of the conversation, one the request does
    not show): said too, so that a person sees why the context is what it is.
    """
    extra = approval.additional_properties or {}
    if not extra.get("policy_violation"):
        return None
    said = extra.get("reason") or extra.get("violation_type")
    said = str(said) if said else "A security check of the agent's flagged this call."
    label = extra.get("context_label")
    if not isinstance(label, dict):
        return said
    levels = " and ".join(str(label[k]) for k in ("integrity", "confidentiality") if label.get(k))
    source = (label.get("metadata") or {}).get("function_name")
    if levels and source:
        return f"{said} The context is {levels}, from what {source} returned."
    return f"{said} The context is {levels}." if levels else said


class AgentToolApprovals(ToolApprovals):
    """MAF's approval requests of any agent's plain tools (`@tool(approval_mode=...)`).

    Every workflow has it: the tools are found on the agents of the workflow (sub-workflows
    included), their schemas are their own, and the policies file decides each call by the tool's
    name and arguments like any other (auto runs it, deny refuses it, approval and takeover ask).
    An approved or edited call runs in the agent's tool loop, inside the author's middleware, run
    by `BatonCalls` through the effect ledger (`BATON_RUN` in MAF's approval response); a
    rejection gives the model the person's reason. A tool none of the agents declares (one a
    context provider adds while the agent runs, such as a skill's script) has no schema Baton
    knows: the policy decides it by its name and arguments, and MAF runs it when allowed (with a
    person's changed arguments, `BATON_ARGUMENTS`), outside the effect ledger.
    """

    name: ClassVar[str] = "agent_tool_approvals"
    declared: ClassVar[bool] = False

    def __init__(self, services: RunServices, tools: Mapping[str, FunctionTool]) -> None:
        super().__init__(services, [GatedTool.of(t) for t in tools.values()])

    def takes(self, tool: str) -> bool:
        """Any tool (a provided one too)."""
        return bool(tool)

    def _tool(self, name: str, *, in_loop: bool) -> GatedTool:
        """A declared tool's call allowed in the agent's loop runs there (`_in_loop`)."""
        tool = super()._tool(name, in_loop=in_loop)
        return _in_loop(tool) if in_loop and name in self._tools else tool


BATON_RUN: Final = "baton_run"
"""The property of MAF's approval response that says Baton runs the allowed call in MAF's tool
loop, inside the agent's middleware (`BatonCalls`): its ledger `key` and typed `arguments`."""

BATON_RESULT: Final = "baton_result"
"""The property of MAF's approval response that holds the call's result as Baton gave it."""

BATON_ARGUMENTS: Final = "baton_arguments"
"""The property that holds the arguments MAF runs a provided tool with (a person's edit)."""


class _RunByMaf(HandedOn):
    """A call is allowed, and MAF runs it, not Baton.

    A provided tool's (Baton has no implementation of it), or one whose approval `BatonCalls`
    would not see (`ToolApprovals._in_loop`).
    """

    def __init__(self, arguments: dict[str, Any]) -> None:
        super().__init__("run by MAF")
        self.arguments = arguments


class _RunInLoop(HandedOn):
    """A call is allowed, and Baton runs it in the agent's tool loop (`BatonCalls`), not now.

    Raised by the ledger's call of an `_in_loop` tool: a call the ledger has a result of is not
    called, and that result is given as ever.
    """

    def __init__(self, key: str, arguments: dict[str, Any]) -> None:
        super().__init__("run in the agent's tool loop")
        self.key, self.arguments = key, arguments


def _in_loop(tool: GatedTool) -> GatedTool:
    """`tool`, whose allowed calls run in the agent's tool loop, not where they are decided.

    So they run as MAF runs a call: inside the author's function middleware (which may refuse
    it, or handle its failure), an exception of the tool's reaching the model as its result.
    """

    async def perform(key: str, typed: BaseModel) -> Any:
        raise _RunInLoop(key, typed.model_dump(mode="json"))

    # keyed: this perform acts on nothing (the loop runs the call, through the ledger again,
    # where a plain tool's start and record are kept around the run itself)
    return dataclasses.replace(tool, perform=perform, keyed=True)


def _run_by_maf(name: str) -> GatedTool:
    """A tool Baton does not run: MAF does, when the policy or a person allows the call."""

    async def perform(key: str, typed: BaseModel) -> Any:
        raise _RunByMaf(typed.model_dump(mode="json"))

    return GatedTool(name=name, description="", arguments=any_arguments(name), perform=perform)


async def _replied(approval: Content, deciding: Awaitable[Outcome], in_loop: bool) -> Outcome:
    """MAF's answer to `approval` for what Baton decided: a call MAF runs is approved."""
    try:
        outcome = await deciding
    except _RunByMaf as allowed:
        return Reply(_approved(approval, allowed.arguments, in_loop=in_loop))
    except _RunInLoop as allowed:
        response = approval.to_function_approval_response(approved=True)
        response.additional_properties[BATON_RUN] = {
            "key": allowed.key,
            "arguments": allowed.arguments,
        }
        return Reply(response)
    except ToolFailed as failed:  # it raised in the loop of an earlier drive: it says so again
        if not in_loop:
            raise
        response = approval.to_function_approval_response(approved=True)
        response.additional_properties[BATON_RESULT] = {FAILED: failed.recorded}
        return Reply(response)
    return _answered(approval, outcome, in_loop=in_loop)


def _approved(approval: Content, arguments: dict[str, Any], *, in_loop: bool) -> Content:
    """MAF's approval of `approval`'s call, run with `arguments` (a person's edit, in the loop).

    Changed arguments `BatonCalls` would not see are not approved: MAF would run the model's.
    """
    assert approval.function_call is not None
    edited = arguments != (approval.function_call.parse_arguments() or {})
    response = approval.to_function_approval_response(approved=in_loop or not edited)
    if edited and in_loop:
        response.additional_properties[BATON_ARGUMENTS] = arguments
    return response


def _answered(approval: Content, outcome: Outcome, *, in_loop: bool) -> Outcome:
    """A result Baton gave the call (it ran it, or refused it) as MAF's approval response.

    In the agent's loop (`in_loop`) the response approves the call and carries the result,
    which `BatonCalls` hands MAF in place of running the tool. Elsewhere Baton ran nothing
    (`_run_by_maf`), and the result is a refusal: MAF's own rejection, never an approval.
    """
    if not isinstance(outcome, Reply):
        return outcome
    result = outcome.response
    if not isinstance(result, Content) or result.type != "function_result":
        return outcome  # MAF's approval response already (an unedited approval MAF runs)
    response = approval.to_function_approval_response(approved=in_loop)
    if in_loop:
        response.additional_properties[BATON_RESULT] = result.result
    return Reply(response)


class BatonCalls(FunctionMiddleware):
    """Runs in MAF's tool loop the calls Baton decided (`ToolApprovals`), or gives their result.

    Installed on every agent of a workflow Baton drives (`install_calls`), innermost of its
    function middleware: an allowed call of the agent's own tools runs here, through the effect
    ledger (`BATON_RUN`), inside the author's middleware, as MAF would run it; a refused one gets
    Baton's result (`BATON_RESULT`, the person's reason). Any other call runs as MAF runs it.
    Only these agents' calls get such answers (`RunServices.baton_calls`).

    An agent's context providers may add function middleware of their own for each run (FIDES's
    policy checks, `SecureAgentConfig`), which MAF runs inside the agent's. On such an agent this
    one (`runs=False`) gives a refusal its result and passes an allowed call on; the one its last
    provider adds (`BatonRuns`) runs it, so those checks see the call first, as on MAF alone.
    """

    def __init__(self, *, runs: bool = True) -> None:
        self._runs = runs

    async def process(
        self, context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]
    ) -> None:
        """Run the allowed call; the result Baton gave it; a provided tool's edit; or on."""
        response = context.metadata.get("approval_response")
        decided = getattr(response, "additional_properties", None) or {}
        call = getattr(response, "function_call", None)
        if call is None or str(call.call_id) != str(context.metadata.get("call_id")):
            await call_next()
        elif (failure := failure_of(decided.get(BATON_RESULT))) is not None:
            raise ToolFailed(failure)  # (raised before it was kept: MAF's loop tells the model)
        elif BATON_RESULT in decided:  # noted in the conversation as Baton gave it
            context.result = as_text(decided[BATON_RESULT])
            context.metadata[NOTED] = True
        elif not self._runs:  # run inside the middleware the agent's providers add
            await call_next()
        elif BATON_RUN in decided:
            context.result = await _run_allowed(context, decided[BATON_RUN])
        elif BATON_ARGUMENTS in decided:  # a person's arguments: the run's kwargs and session
            edited = FunctionInvocationContext(
                function=context.function,
                arguments=decided[BATON_ARGUMENTS],
                session=context.session,
                kwargs=context.kwargs,
                tools=context.tools,  # the run's live tools: `ctx.add_tools` as on MAF alone
                parent_service_session_state_keys=context.parent_service_session_state_keys,
            )
            context.result = await context.function.invoke(
                arguments=decided[BATON_ARGUMENTS], context=edited
            )
        else:
            await call_next()


async def _run_allowed(context: FunctionInvocationContext, allowed: dict[str, Any]) -> Any:
    """Run the call a person or the policy allowed, once, through this drive's effect ledger.

    With the arguments allowed (a person's edit), under the key it was decided with, after MAF's
    own checks that the author's middleware left the approved arguments as approved (if it
    changed them MAF asks again, and nothing runs). The tool gets the run's kwargs and session as
    MAF gives them; its result is parsed as MAF's tool parses it, the ledger keeping it as JSON
    (a replayed call: that JSON). The store failing, or the run ending, under the call stops the
    drive (MAF's `MiddlewareFailure`) rather than reach the model as the tool's failure.
    """
    services = DRIVING_SERVICES.get()
    if services is None:
        raise RuntimeError(f"{context.function.name}: Baton runs this call only in a drive")
    function = context.function
    _approved_as_asked(function, context)
    ran: list[Any] = []

    async def call(key: str, typed: BaseModel) -> Any:
        own = FunctionInvocationContext(
            function=function,
            arguments=typed,
            session=context.session,
            kwargs=context.kwargs,
            # the run's live tools (MAF's progressive exposure, `ctx.add_tools`/`remove_tools`)
            # and what the parent agent owns of the session, as MAF's loop gives a call
            tools=context.tools,
            parent_service_session_state_keys=context.parent_service_session_state_keys,
        )
        value = await function.invoke(arguments=typed, context=own, skip_parsing=True)
        ran.append(value)
        return as_json(value, fallback=maf_value)

    tool = dataclasses.replace(GatedTool.of(function), perform=call)
    typed = tool.arguments.model_validate(allowed["arguments"])
    try:
        recorded = await perform_keyed(services, tool, typed, str(allowed["key"]))
    except (StoreError, RunEnded) as exc:  # noted for the runtime (`perform_keyed`)
        raise MiddlewareFailure(f"{function.name}: {type(exc).__name__}") from exc
    result = ran[0] if ran else recorded
    parser = getattr(function, "result_parser", None)
    if parser is SKIP_PARSING:
        return result
    parsed = parser(result) if callable(parser) else FunctionTool.parse_result(result)
    return [Content.from_text(parsed)] if isinstance(parsed, str) else parsed


def _approved_as_asked(function: FunctionTool, context: FunctionInvocationContext) -> None:
    """MAF's checks, as its tool runs them, that a call's arguments are still those approved.

    Middleware that changed them gets what it gets on MAF alone: MAF asks for a new approval
    (or, where security middleware saw other arguments, fails closed).
    """
    mapping = function._arguments_as_mapping(context.arguments)
    function._ensure_security_arguments_unchanged(context, mapping)
    visible = function._approval_visible_arguments(context.arguments, context)
    function._ensure_approved_arguments_unchanged(context, visible)


BATON_CALLS: Final = BatonCalls()
BATON_PASSES: Final = BatonCalls(runs=False)


class BatonRuns(ContextProvider):
    """The last of an agent's context providers: adds the `BatonCalls` that runs allowed calls.

    Added last, its middleware is innermost: inside what the agent's other providers add. It
    keeps nothing in the session (MAF hands each provider a state of its own: left empty, it is
    dropped again, so a checkpoint and a continued run carry nothing of it).
    """

    SOURCE: ClassVar[str] = "baton_runs"

    def __init__(self) -> None:
        super().__init__(self.SOURCE)

    async def before_run(
        self,
        *,
        agent: SupportsAgentRun,
        session: AgentSession,
        context: SessionContext,
        state: dict[str, Any],
    ) -> None:
        """Add the `BatonCalls` that runs allowed calls, after every other provider's."""
        context.extend_middleware(self.source_id, BATON_CALLS)
        session.state.pop(self.source_id, None)

    async def after_run(
        self,
        *,
        agent: SupportsAgentRun,
        session: AgentSession,
        context: SessionContext,
        state: dict[str, Any],
    ) -> None:
        """Leave nothing of this provider in the session."""
        session.state.pop(self.source_id, None)


def install_calls(agents: Sequence[Any]) -> None:
    """Put `BatonCalls` on each agent (once: a kept instance keeps it).

    Innermost of the agent's function middleware; on an agent with context providers, innermost
    of theirs too (`BatonRuns`), which MAF runs inside the agent's own.
    """
    for agent in agents:
        middleware = list(getattr(agent, "middleware", None) or ())
        if any(isinstance(m, BatonCalls) for m in middleware):
            continue
        providers = getattr(agent, "context_providers", None)
        if isinstance(providers, list) and providers:
            agent.middleware = [*middleware, BATON_PASSES]
            providers.append(BatonRuns())
        else:
            agent.middleware = [*middleware, BATON_CALLS]


class HostCallInputs:
    """A call of any agent's declaration-only tool (`FunctionTool(func=None)`): a person runs it.

    MAF hands such a call back to its host; on Baton the host is a person, asked with an `input`
    request (the tool, its description and arguments shown; the answer is the call's result as
    text) routed like any typed request, and the model gets their answer as the tool's result.
    Tools with a handler of the workflow's own (`HostCalls`) are not asked here.
    """

    name: ClassVar[str] = "host_call_inputs"

    def __init__(
        self, services: RunServices, tools: Mapping[str, FunctionTool], *, route: Route
    ) -> None:
        self._services = services
        self._tools = tools
        self._route = route

    def accepts(self, event: WorkflowEvent[Any]) -> bool:
        """A `function_call` handed back to the host."""
        data = event.data
        return isinstance(data, Content) and data.type == "function_call" and bool(data.name)

    async def ask(self, event: WorkflowEvent[Any], scene: Scene) -> Outcome:
        """Ask for the call's result."""
        data: Content = event.data
        call = ToolCall(
            call_id=str(data.call_id),
            name=str(data.name),
            arguments=data.parse_arguments() or {},
            agent=str(event.source_executor_id),
        )
        found = self._tools.get(call.name)
        described = (found.description if found is not None else "") or ""
        route = self._route
        request = InputRequest(
            title=f"{call.agent} needs the result of {call.name}",
            reason=f"The {call.agent} agent called {call.name}, which people carry out here: "
            "do it and give its result; the agent goes on with what you write.",
            context={
                "tool": call.name,
                **({"what it does": described} if described else {}),
                "arguments": call.arguments,
                **await scene.case(),
            },
            team=route.team or self._services.policy.default_team,
            priority=route.priority or "normal",
            expires_in_s=route.deadline_s,
            escalation=list(route.escalation),
            data=call.arguments,
            request_type=f"tool:{call.name}",
            answer_schema={"type": "string", "title": "Result"},
            answer_type=describe(str),
        )
        return Ask(request, _call_origin(call))

    async def deliver(self, request: HumanRequest, answer: BaseModel, scene: Scene) -> Outcome:
        """The person's answer as the call's result."""
        call = _call_of(origin_of(request))
        if isinstance(answer, TakeoverAnswer):
            return handed_back(call, request, answer, scene)
        if isinstance(answer, InputAnswer) and answer.decision == "answer":
            return result_reply(call, str(answer.answer), scene)
        ended = getattr(answer, "decision", "ended")
        return result_reply(call, f"Nobody carried out {call.name} ({ended}).", scene)
