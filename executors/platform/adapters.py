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

This module is the protocol and what every adapter shares; the adapters themselves are in
`builtin_adapters` (kind models, a handoff's user turns) and `tool_adapters` (tool calls).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from agent_framework import WorkflowEvent
from pydantic import BaseModel

from executors.platform.services import RunServices
from executors.platform.transcript import excerpt, run_state
from human.kinds import (
    Routing,
    TakeoverAnswer,
    TakeoverRequest,
)
from human.policy import Decision
from human.records import HumanRequest, NewEvent
from human.requests import origin_of

KINDS_ADAPTER = "kinds"
"""The adapter of requests a workflow asks as Baton's own kind models (`Kinds`)."""


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


def maf_request_id(request: HumanRequest) -> str:
    """The MAF request a HumanRequest answers (re-asks and takeovers share their first's)."""
    return str(origin_of(request).get("maf_request_id") or request.maf_request_id)


def adapter_for(adapters: Sequence[RequestAdapter], request: HumanRequest) -> RequestAdapter:
    """The adapter that asked `request`."""
    name = origin_of(request).get("adapter", KINDS_ADAPTER)
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
        "adapter": origin_of(request).get("adapter", KINDS_ADAPTER),
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
            outcome_schema=scene.services.outcome_schema,
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
        outcome_schema=scene.services.outcome_schema,
    )
