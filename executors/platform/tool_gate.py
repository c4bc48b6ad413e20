"""An agent whose risky tools are decided by policy at the tool boundary, by Baton, not the prompt.

Gated tools are declared to the model without an implementation (MAF's host-owned calls): MAF's
tool loop runs every other tool and hands each gated call back. The gate evaluates the policy on
the typed arguments and then runs the call (auto), refuses it (deny), or asks a person through
`ctx.request_info(ApprovalRequest, ApprovalAnswer)`. An approved or edited call runs through the
effect ledger with the final arguments (MAF itself ignores edited arguments), and its result goes
back to the model as the tool's result, as does a rejection's reason.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Final, Never

from agent_framework import (
    Agent,
    AgentResponse,
    AgentSession,
    Content,
    Executor,
    FunctionInvocationContext,
    FunctionTool,
    Message,
    WorkflowContext,
    WorkflowEvent,
    response_handler,
)
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from baton.errors import RunEnded, StoreError
from executors.platform.services import RunServices
from executors.platform.shown import maf_value
from executors.platform.transcript import standing_grant, tool_failed, tool_result
from human.effects import HandedOn, idempotency_key
from human.kinds import ApprovalAnswer, ApprovalRequest, ProposedAction, schema_of
from human.policy import DEFAULT_RULE, Decision, Policy
from human.text import where
from human.typed import as_json, checkable, schema_problems

AUDIT_EVENT = "baton_audit"

logger = logging.getLogger(__name__)


@functools.lru_cache(maxsize=1024)
def any_arguments(name: str) -> type[BaseModel]:
    """The arguments model of a tool declared by a JSON schema alone: any object (extra fields).

    One class per tool name for the process: a pydantic model is slow to create, and the
    workflow, its agents and tools are built for every drive.
    """
    return create_model(f"{name}_input", __config__=ConfigDict(extra="allow"))


@dataclass(frozen=True)
class GatedTool:
    """A side-effecting tool: typed arguments, and `perform(key, arguments)` to call the system.

    `refuse(arguments)`, if given, names what makes a call impossible (an unknown order, an
    amount over its total) before any policy or person is asked; edits go through it too.
    `schema` is the arguments' JSON Schema of a tool declared by one alone (`arguments` then
    takes any object): the gate checks calls against it, and people edit by it. `keyed`: the
    called system gets the call's idempotency key and dedupes on it; a tool that takes none (a
    plain MAF tool) has its call's start and record committed around it (`EffectLedger`).
    """

    name: str
    description: str
    arguments: type[BaseModel]
    perform: Callable[[str, BaseModel], Awaitable[Any]]
    refuse: Callable[[BaseModel], Awaitable[str | None]] | None = None
    describe: Callable[[dict[str, Any], Decision], tuple[str, str]] | None = None
    schema: dict[str, Any] | None = field(default=None, hash=False)
    keyed: bool = True

    @property
    def arguments_schema(self) -> dict[str, Any]:
        """The arguments' JSON Schema: the one the tool was declared by, else its model's.

        A declared one jsonschema cannot apply (`checkable`) is not shown: its model's is.
        """
        if self.schema is not None and checkable(self.schema):
            return self.schema
        return schema_of(self.arguments)

    def declaration(self) -> FunctionTool:
        """The tool as the model sees it: a schema, no implementation (one per gated tool)."""
        return self._declared

    @functools.cached_property
    def _declared(self) -> FunctionTool:
        return FunctionTool(
            name=self.name,
            description=self.description,
            func=None,
            input_model=self.arguments_schema,
        )

    def always_require(self, services: RunServices) -> FunctionTool:
        """The tool as MAF's `approval_mode="always_require"` tool: MAF asks before every call.

        When a person approves, MAF runs it; it runs through the effect ledger, keyed by the call.
        """

        async def invoke(context: FunctionInvocationContext, **arguments: Any) -> Any:
            typed = self.arguments.model_validate(arguments)
            call_id = str(context.metadata.get("call_id") or "")
            return await perform_call(
                services, self, typed, call_id, scope="approved", in_maf_loop=True
            )

        return FunctionTool(
            name=self.name,
            description=self.description,
            func=invoke,
            input_model=self.arguments_schema,
            approval_mode="always_require",
        )

    @classmethod
    def of(cls, tool: FunctionTool) -> GatedTool:
        """A plain MAF tool (`@tool`) as a gated one: its own schema, run by Baton when allowed.

        A tool declared by a JSON Schema alone (`FunctionTool.from_dict`, `input_model=<a dict>`)
        keeps that schema (MAF's `parameters()`): what the model is told is what a call and a
        person's edit are checked against (one jsonschema cannot apply, with an unknown type or a
        `$ref` to nowhere, is left to MAF's own check, which lets such a schema pass). The call
        runs through the effect ledger like any gated call; the tool takes no key
        (`keyed=False`), so the ledger commits the call's start before it runs and its record as
        soon as it returns: a call cut off between them is never run again (at most once).
        """
        arguments = tool.input_model or any_arguments(tool.name)
        schema = None if tool.input_model is not None else tool.parameters() or None

        async def perform(key: str, typed: BaseModel) -> Any:
            context = FunctionInvocationContext(
                function=tool, arguments=typed, kwargs=CALL_KWARGS.get()
            )
            return as_json(
                await tool.invoke(arguments=typed, context=context, skip_parsing=True),
                fallback=maf_value,
            )

        return cls(
            name=tool.name,
            description=tool.description or "",
            arguments=arguments,
            perform=perform,
            schema=schema,
            keyed=False,
        )

    def wording(self, arguments: dict[str, Any], decision: Decision) -> tuple[str, str]:
        """Title and reason of an approval request for a call of this tool."""
        if self.describe is not None:
            return self.describe(arguments, decision)
        return f"Approve {self.name}", approval_reason(self.name, decision)


@dataclass(frozen=True)
class Verdict:
    """What the gate found for one call before anything ran.

    Either `error` (the model gets it as the tool's result: invalid arguments, an impossible
    call) or the typed arguments with the policy's `decision` on them.
    """

    arguments: dict[str, Any]
    typed: BaseModel | None = None
    decision: Decision | None = None
    error: str | None = None


def approval_reason(tool: str, decision: Decision) -> str:
    """Why a call waits for approval, in words: the rule that asks, or that none covers it.

    `Policy rule refund.large needs approval by 2 approvers from finance.`, or the rule's `why`
    first where its file says it (`Large refunds are checked twice. It needs approval by …`);
    under no rule of the policies file (`default.approval`): `No policy rule covers send_email:
    each call needs approval by support-leads.`
    """
    who = (
        f"{decision.approvals_required} approvers from " if decision.approvals_required > 1 else ""
    )
    if decision.rule_id == DEFAULT_RULE:
        return f"No policy rule covers {tool}: each call needs approval by {who}{decision.team}."
    said = decision.said_why()
    if said is not None:
        return f"{said} It needs approval by {who}{decision.team}."
    return f"Policy rule {decision.rule_id} needs approval by {who}{decision.team}."


ARGUMENTS_UNPARSED: Final = "Error: Argument parsing failed."
"""MAF's words to the model for a call whose arguments do not fit its tool (`_tools.py`)."""


def _unparsed(tool: str, said: str, detailed: bool) -> str:
    return (
        f"{ARGUMENTS_UNPARSED} Exception: invalid arguments for {tool}: {said}"
        if detailed
        else ARGUMENTS_UNPARSED
    )


async def judge(
    tool: GatedTool,
    raw: dict[str, Any],
    policy: Policy,
    *,
    before: Decision | None = None,
    state: dict[str, Any] | None = None,
    detailed: bool = True,
) -> Verdict:
    """Validate a call's arguments, ask the tool whether it is possible, then the policy.

    With `before` (the decision a person answered), the arguments are a person's edit and the
    policy re-checks them: the edit stands if it needs no more than that person could give.
    Arguments that do not fit get MAF's words for them, with what is wrong only where the
    calling agent's client sets `include_detailed_errors` (`detailed`), as MAF's loop says it.
    """
    problems = schema_problems(tool.schema, raw) if tool.schema is not None else []
    if problems:
        said = "; ".join(f"{where(loc)}: {msg}" for loc, msg in problems)
        return Verdict(arguments=raw, error=_unparsed(tool.name, said, detailed))
    try:
        typed = tool.arguments.model_validate(raw)
    except ValidationError as exc:
        return Verdict(arguments=raw, error=_unparsed(tool.name, str(exc), detailed))
    args = typed.model_dump(mode="json")
    refusal = await tool.refuse(typed) if tool.refuse else None
    if refusal:
        return Verdict(arguments=args, error=f"Error: {refusal}")
    decision = (
        policy.evaluate(tool.name, args, state)
        if before is None
        else policy.recheck_edit(before, tool.name, args, state)
    )
    return Verdict(arguments=args, typed=typed, decision=decision)


def stood_for(services: RunServices, tool: str, decision: Decision) -> dict[str, Any]:
    """What audits a call a person's standing approval lets run: empty if none decides it.

    A standing approval decides a call its rule asks a person about (one approver), in the run
    where a person let an approval under that rule, of that tool, stand (`standing_grant`), and
    only while the policy's rule still lets it stand.
    """
    if decision.action != "approval" or not decision.standing or decision.approvals_required > 1:
        return {}
    team = decision.team or services.policy.default_team  # as the request is routed
    grant = standing_grant(services.transcript.everything(), decision.rule_id, tool, team)
    if grant is None:
        return {}
    return {"standing_approval": grant.get("request_id"), "approved_by": grant.get("by")}


def approval_request(
    tool: GatedTool,
    arguments: dict[str, Any],
    decision: Decision,
    *,
    title: str,
    reason: str,
    context: dict[str, Any],
    default_team: str,
    edited: bool = False,
) -> ApprovalRequest:
    """An approval as the policy routes it: the tool, arguments and their schema, the rule.

    `edited`: the arguments are a person's edit that needs more than that person could give.
    """
    if edited:
        reason = f"An edit changed the call, and the new arguments need approval. {reason}"
    action = ProposedAction(
        tool=tool.name, arguments=arguments, arguments_schema=tool.arguments_schema
    )
    return routed_approval(
        action, decision, title=title, reason=reason, context=context, default_team=default_team
    )


def routed_approval(
    action: ProposedAction,
    decision: Decision,
    *,
    title: str,
    reason: str,
    context: dict[str, Any],
    default_team: str,
) -> ApprovalRequest:
    """An approval of `action` as the policy's `decision` routes it: team, approvers, deadline."""
    return ApprovalRequest(
        title=title,
        reason=reason,
        context=context,
        team=decision.team or default_team,
        approvals_required=decision.approvals_required,
        priority="high" if decision.approvals_required > 1 else "normal",
        policy_rule=decision.rule_id,
        expires_in_s=decision.expires_in_s,
        escalation=list(decision.escalation),
        proposed_action=action,
        standing=decision.standing and decision.approvals_required == 1,
    )


CALL_KWARGS: ContextVar[dict[str, Any]] = ContextVar("baton_call_kwargs", default={})  # noqa: B039
"""The `function_invocation_kwargs` of the call Baton is running (`perform_call`): a plain
tool (`GatedTool.of`) gets them in its `FunctionInvocationContext`, as MAF's loop gives them."""


async def perform_call(
    services: RunServices,
    tool: GatedTool,
    typed: BaseModel,
    call_id: str,
    scope: str,
    *,
    agent: str = "",
    in_maf_loop: bool = False,
) -> Any:
    """Run an allowed call once: through the effect ledger, keyed by run, `scope` and call.

    `agent` (the calling agent's name) picks the run's kwargs the tool gets (`kwargs_for`).

    A keyless tool (a plain MAF tool) that raises gives the model MAF's own words for it, as
    MAF's tool loop would (`tool_failed`: what it raised too, where the agent's client sets
    `include_detailed_errors`), and the ledger keeps its failure (`effect.failed`): it may have
    acted before it raised, so it is never called again, and a replay gives the same. `in_maf_loop`:
    MAF's loop runs the call (an `always_require` tool) and says so itself. A keyed tool's
    failure fails the drive, as before: its system dedupes on the key.
    """
    key = idempotency_key(services.run_id, scope, call_id)
    with call_kwargs(services.kwargs_for(agent)):
        try:
            return await perform_keyed(services, tool, typed, key)
        except (StoreError, RunEnded, HandedOn):
            raise  # (not the tool's failure: the drive's, or a call that runs elsewhere)
        except Exception as exc:
            if tool.keyed or in_maf_loop:
                raise
            logger.warning(
                "tool failed: the model is told",
                extra={"tool": tool.name, "error": f"{type(exc).__name__}: {exc}"},
            )
            return tool_failed(exc, detailed=services.transcript.detailed_errors(agent))


@contextlib.contextmanager
def call_kwargs(kwargs: dict[str, Any]) -> Iterator[None]:
    """The run's kwargs the tools Baton runs get (`GatedTool.of`'s context) in the block."""
    token = CALL_KWARGS.set(kwargs)
    try:
        yield
    finally:
        CALL_KWARGS.reset(token)


async def perform_keyed(services: RunServices, tool: GatedTool, typed: BaseModel, key: str) -> Any:
    """Run an allowed call once through the effect ledger, under its idempotency `key`.

    The store's failures and a run that ended under the drive are noted for the runtime (a tool's
    exception reaches the model as its result, where the drive must not commit).
    """
    try:
        return await services.ledger.perform(
            key=key,
            run_id=services.run_id,
            tool=tool.name,
            arguments=typed.model_dump(mode="json"),
            call=lambda k: tool.perform(k, typed),
            performed=services.effects,
            record_now=not tool.keyed,
        )
    except StoreError as exc:  # the ledger could not be read or written: not the tool's failure
        services.store_failures.append(exc)
        raise
    except RunEnded as exc:  # cancelled under this drive: the runtime drops what it came to
        services.run_ended.append(exc)
        raise


def audit(ctx: WorkflowContext[Any, Any], event_type: str, **data: Any) -> Awaitable[None]:
    """Note an audit event; the runtime writes it with the progress it belongs to."""
    return ctx.add_event(WorkflowEvent(AUDIT_EVENT, data={"type": event_type, "data": data}))  # type: ignore[arg-type]


class ToolGateAgent(Executor):
    """Runs an agent turn by turn, gating its side-effecting tools; subclasses add the input.

    A subclass declares `@handler async def on_<input>(self, message, ctx)` that calls
    `await self.begin(prompt, context, ctx)`.
    """

    def __init__(
        self,
        *,
        id: str,
        agent: Agent,
        tools: Sequence[GatedTool],
        services: RunServices,
    ) -> None:
        super().__init__(id=id)
        self._agent = agent
        self._gated = {t.name: t for t in tools}
        self._services = services
        self._session: AgentSession = agent.create_session()
        self._context: dict[str, Any] = {}
        self._batch: list[str] = []
        self._calls: dict[str, dict[str, Any]] = {}
        self._results: dict[str, Any] = {}
        self._open: dict[str, dict[str, Any]] = {}

    # the turn loop --------------------------------------------------------------------------

    async def begin(
        self, prompt: str, context: dict[str, Any], ctx: WorkflowContext[Never, dict[str, Any]]
    ) -> None:
        """Start the agent on `prompt`; `context` is shown to every person asked."""
        self._context = context
        response = await self._agent.run(prompt, session=self._session)
        await self._advance(response, ctx)

    async def _advance(
        self, response: AgentResponse, ctx: WorkflowContext[Never, dict[str, Any]]
    ) -> None:
        while True:
            calls = [c for c in response.user_input_requests if c.type == "function_call"]
            if not calls:
                await ctx.yield_output({"text": response.text, "agent": self.id})
                return
            self._batch = [str(c.call_id) for c in calls]
            self._calls = {
                str(c.call_id): {"name": c.name, "arguments": c.parse_arguments() or {}}
                for c in calls
            }
            self._results = {}
            for call_id in self._batch:
                await self._gate(call_id, ctx)
            if self._open:
                return
            response = await self._agent.run(self._results_message(), session=self._session)

    async def _gate(
        self,
        call_id: str,
        ctx: WorkflowContext[Never, dict[str, Any]],
        *,
        arguments: dict[str, Any] | None = None,
        before: Decision | None = None,
        scope: str = "auto",
    ) -> None:
        call = self._calls[call_id]
        tool = self._gated.get(call["name"])
        if tool is None:
            self._results[call_id] = f"Error: no tool named {call['name']}."
            return
        verdict = await judge(
            tool, arguments or call["arguments"], self._services.policy, before=before
        )
        if verdict.error is not None or verdict.typed is None or verdict.decision is None:
            self._results[call_id] = verdict.error
            return
        typed, args, decision = verdict.typed, verdict.arguments, verdict.decision
        stood = stood_for(self._services, tool.name, decision) if before is None else {}
        if decision.action == "auto" or stood:
            if before is None:
                await audit(
                    ctx,
                    "request.auto_decided",
                    tool=tool.name,
                    arguments=args,
                    decision="approve",
                    rule=decision.rule_id,
                    **stood,
                )
            self._results[call_id] = await self._perform(tool, typed, call_id, scope)
        elif decision.action == "deny":
            await audit(
                ctx,
                "request.auto_decided",
                tool=tool.name,
                arguments=args,
                decision="reject",
                rule=decision.rule_id,
            )
            self._results[call_id] = f"Refused by policy rule {decision.rule_id}."
        else:
            await self._ask(call_id, tool, args, decision, ctx, edited=before is not None)

    async def _ask(
        self,
        call_id: str,
        tool: GatedTool,
        args: dict[str, Any],
        decision: Decision,
        ctx: WorkflowContext[Never, dict[str, Any]],
        *,
        edited: bool,
    ) -> None:
        call = self._calls[call_id]
        call["asks"] = call.get("asks", 0) + 1
        maf_request_id = f"{call_id}.{call['asks']}"
        title, reason = self.describe(tool.name, args, decision)
        if decision.action == "takeover":
            # a rule may hand the case to a person; at this gate that person approves the call
            decision = decision.model_copy(update={"action": "approval"})
        self._open[maf_request_id] = {
            "call_id": call_id,
            "arguments": args,
            "decision": decision.model_dump(mode="json"),
        }
        await ctx.request_info(
            approval_request(
                tool,
                args,
                decision,
                title=title,
                reason=reason,
                context={**self._context, "conversation": self.conversation()},
                default_team=self._services.policy.default_team,
                edited=edited,
            ),
            ApprovalAnswer,
            request_id=maf_request_id,
        )

    @response_handler
    async def on_approval_answer(
        self,
        request: ApprovalRequest,
        answer: ApprovalAnswer,
        ctx: WorkflowContext[Never, dict[str, Any]],
    ) -> None:
        """Apply a person's (or the system's) decision on a gated call, then carry on."""
        maf_request_id = str(ctx.request_id)
        entry = self._open.pop(maf_request_id)
        call_id = entry["call_id"]
        tool = self._gated[self._calls[call_id]["name"]]
        if answer.decision == "approve":
            typed = tool.arguments.model_validate(entry["arguments"])
            self._results[call_id] = await self._perform(tool, typed, call_id, maf_request_id)
        elif answer.decision == "edit":
            before = Decision.model_validate(entry["decision"])
            await self._gate(
                call_id, ctx, arguments=answer.arguments, before=before, scope=maf_request_id
            )
        elif answer.decision == "reject":
            self._results[call_id] = f"Rejected by a person: {answer.reason}"
        elif answer.decision == "expired":
            self._results[call_id] = "Not approved in time: the approval request expired."
        else:
            self._results[call_id] = "The approval was cancelled; the call did not run."
        if self._open:
            return
        response = await self._agent.run(self._results_message(), session=self._session)
        await self._advance(response, ctx)

    async def _perform(self, tool: GatedTool, typed: BaseModel, call_id: str, scope: str) -> Any:
        agent = str(self._agent.name or self.id)
        return await perform_call(self._services, tool, typed, call_id, scope, agent=agent)

    def _results_message(self) -> Message:
        for cid in self._batch:
            name = str(self._calls[cid]["name"])
            self._services.transcript.add(
                tool_result(self._agent.name, name, cid, self._results[cid])
            )
        return Message(
            "tool",
            [
                Content.from_function_result(call_id=cid, result=_as_text(self._results[cid]))
                for cid in self._batch
            ],
        )

    # what people see ------------------------------------------------------------------------

    def describe(self, tool: str, arguments: dict[str, Any], decision: Decision) -> tuple[str, str]:
        """Title and reason of an approval request; subclasses word them for their domain."""
        return f"Approve {tool}", approval_reason(tool, decision)

    def conversation(self) -> list[dict[str, Any]]:
        """The agent's conversation so far, readable: role, text, tool calls and results."""
        state = self._session.state.get("in_memory", {})
        excerpt: list[dict[str, Any]] = []
        for raw in state.get("messages", []):
            message = raw if isinstance(raw, Message) else Message.from_dict(raw)
            for c in message.contents:
                if c.type == "text" and c.text:
                    excerpt.append({"role": message.role, "text": c.text})
                elif c.type == "function_call":
                    excerpt.append(
                        {
                            "role": message.role,
                            "tool_call": c.name,
                            "arguments": c.parse_arguments(),
                        }
                    )
                elif c.type == "function_result":
                    excerpt.append({"role": message.role, "tool_result": _as_text(c.result)})
        return excerpt

    # checkpoints ----------------------------------------------------------------------------

    async def on_checkpoint_save(self) -> dict[str, Any]:
        """Everything needed to carry on in another process, as plain JSON."""
        return {
            "session": self._session.to_dict(),
            "context": self._context,
            "batch": self._batch,
            "calls": self._calls,
            "results": self._results,
            "open": self._open,
        }

    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        """Restore what `on_checkpoint_save` kept."""
        self._session = AgentSession.from_dict(state["session"])
        self._context = state["context"]
        self._batch = list(state["batch"])
        self._calls = dict(state["calls"])
        self._results = dict(state["results"])
        self._open = dict(state["open"])


def _as_text(result: Any) -> str:
    return result if isinstance(result, str) else json.dumps(result, default=str)
