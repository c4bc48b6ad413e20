"""The request adapters every workflow has: Baton's kind models, typed inputs, a handoff's turns.

`Kinds` takes requests a workflow asks as Baton's own kind models (`human.kinds`), answered with
their answer models. `TypedInputs` takes every other `ctx.request_info(data, response_type)` as an
`input` request: the data shown field by field, the form made from the response type, the answer
delivered as that type; it is always a workflow's last adapter, so any workflow runs with no
adapter of its own. `UserTurns` takes MAF's handoff orchestration's `HandoffAgentUserRequest`: an
agent replied to the user and waits for them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from agent_framework import AgentExecutorResponse, WorkflowEvent
from agent_framework_orchestrations import (
    AgentRequestInfoResponse,
    HandoffAgentUserRequest,
    MagenticPlanReviewRequest,
    MagenticPlanReviewResponse,
)
from pydantic import BaseModel

from executors.platform.adapters import (
    KINDS_ADAPTER,
    Ask,
    Finish,
    Outcome,
    Reply,
    Scene,
    resolved,
    returned_text,
    takeover_request,
)
from executors.platform.services import RunServices
from executors.platform.shown import maf_value
from human import summary, typed
from human.answer_schema import echoed
from human.kinds import (
    KINDS,
    ApprovalAnswer,
    InputAnswer,
    InputRequest,
    QuestionAnswer,
    QuestionRequest,
    ReviewAnswer,
    ReviewRequest,
    Routing,
    TakeoverAnswer,
    kind_of,
)
from human.policy import Route
from human.records import HumanRequest
from human.requests import origin_of
from human.text import with_stop

# a workflow's own kind requests -------------------------------------------------------------


class Kinds:
    """Requests that are already Baton kind models, answered with their answer models."""

    name: ClassVar[str] = KINDS_ADAPTER

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
    guidance. It words the user as the workflow calls them (`register(..., party=...)`).
    """

    name: ClassVar[str] = "user_turns"

    def __init__(self, services: RunServices, *, team: str) -> None:
        self._services = services
        self._team = team
        self._party = services.party

    def accepts(self, event: WorkflowEvent[Any]) -> bool:
        """The handoff orchestration's user-input request."""
        return isinstance(event.data, HandoffAgentUserRequest)

    async def ask(self, event: WorkflowEvent[Any], scene: Scene) -> Outcome:
        """A question for the user-facing team, or a takeover when the policy says so."""
        data: HandoffAgentUserRequest = event.data
        agent = str(event.source_executor_id)
        named = summary.humanize(agent)  # `refund_agent`: the refund agent
        said = data.agent_response.text.strip()
        origin = {"agent": agent}
        context = await scene.case()
        takeover = self._services.policy.takeover(scene.state())
        if takeover is not None:
            return Ask(
                takeover_request(
                    f"Take over the conversation from {the_agent(named)}",
                    f"{takeover.handing_over()} {the_agent(named).capitalize()} last said: {said}",
                    takeover,
                    context,
                    scene,
                ),
                origin,
            )
        party = self._party
        return Ask(
            QuestionRequest(
                title=f"{the_agent(named).capitalize()} waits for the {party}'s reply",
                reason=(
                    f"{the_agent(named).capitalize()} answered the {party} and waits for their "
                    f"reply. Relay what the {party} says; it reaches the agent as the {party}'s "
                    "message."
                ),
                context=context,
                team=self._team,
                question=said or f"({the_agent(named)} is waiting for the {party})",
                # the answer is the party's words, not the person's own reply to the agent
                outcomes={
                    "answer": f"{the_agent(named).capitalize()} gets it as the {party}'s message "
                    "and carries on."
                },
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


def the_agent(named: str) -> str:
    """An agent named in words, as a sentence says it: `the refund agent`, `the editor agent`."""
    return f"the {named}" if named.lower().endswith("agent") else f"the {named} agent"


# an orchestration's review of an agent's reply -------------------------------------------------


@dataclass(frozen=True)
class _Held:
    """One kind of MAF orchestration pause on an agent's output, and how to answer it."""

    what: str
    draft: Callable[[Any], str]
    agent: Callable[[WorkflowEvent[Any]], str]
    approve: Callable[[], Any]
    revise: Callable[[str | list[str]], Any]
    """The output sent back with a person's guidance (a text, or texts)."""


_HELD: dict[type, _Held] = {
    AgentExecutorResponse: _Held(
        what="reply",
        draft=lambda data: data.agent_response.text,
        agent=lambda event: str(event.data.executor_id),
        approve=AgentRequestInfoResponse.approve,
        revise=lambda said: AgentRequestInfoResponse.from_strings(
            [said] if isinstance(said, str) else said
        ),
    ),
    MagenticPlanReviewRequest: _Held(
        what="plan",
        draft=lambda data: data.plan.text,
        agent=lambda event: str(event.source_executor_id),
        approve=MagenticPlanReviewResponse.approve,
        revise=MagenticPlanReviewResponse.revise,
    ),
}


def hold_of(data: Any) -> _Held | None:
    """How to answer `data`, if it is an orchestration's hold on an agent's output."""
    return _HELD.get(type(data))


class AgentReviews:
    """An orchestration holds an agent's output for a person: a `review` of it.

    MAF's sequential, concurrent and group chat builders `.with_request_info(...)` hold an
    agent's reply (answered by an `AgentRequestInfoResponse`); Magentic's plan review holds the
    manager's plan (a `MagenticPlanReviewResponse`). Approve lets it stand; reject sends the
    person's reason back as guidance, edit the person's version, and the agent goes on from
    them. The team is the one `routes` give the held type (or the agent's executor id), else the
    policy's default.
    """

    name: ClassVar[str] = "agent_reviews"

    def __init__(self, services: RunServices, *, routes: Mapping[RouteKey, Route]) -> None:
        self._services = services
        self._routes = routes

    def accepts(self, event: WorkflowEvent[Any]) -> bool:
        """An agent's reply or plan held for a person."""
        return type(event.data) in _HELD

    async def ask(self, event: WorkflowEvent[Any], scene: Scene) -> Outcome:
        """A review of the held output, with the conversation that led to it."""
        held = _HELD[type(event.data)]
        agent = held.agent(event)
        route = routed(self._routes, (type(event.data), agent))
        named = summary.humanize(agent)  # `magentic_orchestrator`: the magentic orchestrator
        return Ask(
            ReviewRequest(
                title=f"Review {named}'s {held.what}",
                reason=f"{the_agent(named).capitalize()}'s {held.what} waits for a person: let it "
                f"stand, send it back with guidance, or write the {held.what} it should take.",
                context=await scene.case(),
                team=route.team or self._services.policy.default_team,
                priority=route.priority or "normal",
                expires_in_s=route.deadline_s,
                escalation=list(route.escalation),
                draft=held.draft(event.data),
                what=held.what,
            ),
            {"agent": agent, "held": held.what},
        )

    async def deliver(self, request: HumanRequest, answer: BaseModel, scene: Scene) -> Outcome:
        """The output stands, or the agent goes on with the person's words."""
        held = next(h for h in _HELD.values() if h.what == origin_of(request).get("held"))
        if isinstance(answer, TakeoverAnswer):
            if answer.decision == "resolve":
                return resolved(request, answer)
            return Reply(held.revise(returned_text(request, answer)))
        assert isinstance(answer, ReviewAnswer)
        if answer.decision == "approve":
            return Reply(held.approve())
        if answer.decision == "reject":
            words = str(answer.reason)
            said = f"{request.answered_by} sent your {held.what} back: {words}"
        elif answer.decision == "edit":
            words = answer.content if isinstance(answer.content, str) else str(answer.content)
            said = f"{request.answered_by} rewrote your {held.what}; take this instead: {words}"
        else:  # never read a deadline as a person's approval
            raise RuntimeError(
                f"request {request.id} ({request.title}) {answer.decision} before anyone "
                f"reviewed the {held.what}: the run cannot go on"
            )
        scene.note({"type": "message", "role": "user", "by": request.answered_by, "text": words})
        return Reply(held.revise(said))


# any other typed request ------------------------------------------------------------------------

RouteKey = type | str
"""A request data type, or an executor id: what `register(..., routes=...)` routes by."""

HINTS = "__baton__"
"""A request type's own routing hints: a class attribute mapping `Route` fields to values."""

_PROMPTS = ("question", "prompt", "message", "instructions", "text", "description")
_FIELD = re.compile(r"\{([A-Za-z_][\w.]*)\}")


class TypedInputs:
    """Any `request_info` no other adapter takes: an `input` request for people.

    The request data is shown field by field (nested objects as their own sections); the answer's
    form, validation and schema come from the response type, and the answer reaches the
    workflow's `@response_handler` as an instance of that type. Routing, most specific last: the
    request type's own `__baton__` hints, the registration's `routes` (by request type or by
    executor id), the policies file's `requests:` rules; a route names the team, the title and
    reason (templates over the request's fields), the priority, the deadline and escalation.
    """

    name: ClassVar[str] = "typed_inputs"

    def __init__(
        self, services: RunServices, *, workflow: str, routes: Mapping[RouteKey, Route]
    ) -> None:
        self._services = services
        self._workflow = workflow
        self._routes = routes

    def accepts(self, event: WorkflowEvent[Any]) -> bool:
        """Every request: this adapter is the last one asked."""
        return True

    async def ask(self, event: WorkflowEvent[Any], scene: Scene) -> Outcome:
        """An `input` request routed and worded by the routes that speak for it."""
        data, executor = event.data, str(event.source_executor_id)
        try:
            answer_type = typed.describe(event.response_type)
            answer_schema = typed.schema_of_type(event.response_type)
        except Exception as exc:  # a type pydantic cannot describe: the author must hear it
            raise TypeError(
                f"{executor} asks for an answer of type {event.response_type!r}, which Baton "
                f"cannot make a form for: {exc}"
            ) from exc
        shown = typed.as_json(data, fallback=maf_value)
        fields = shown if isinstance(shown, dict) else {"request": shown}
        answer_schema = echoed(answer_schema, shown)
        request_type = f"{type(data).__module__}:{type(data).__qualname__}"
        route, rule = self._route(type(data), executor, request_type)
        words = {**fields, "executor": executor}
        added = self._services.case_context
        request = InputRequest(
            title=_fill(route.title, words) if route.title else _title(type(data), executor),
            reason=(
                _fill(route.reason, words)
                if route.reason
                else _reason(fields, executor, type(data))
            ),
            context=fields | (await added(self._services) if added is not None else {}),
            team=route.team or self._services.policy.default_team,
            priority=route.priority or "normal",
            expires_in_s=route.deadline_s,
            escalation=list(route.escalation),
            policy_rule=rule,
            data=shown,
            request_type=request_type,
            answer_schema=answer_schema,
            answer_type=answer_type,
        )
        return Ask(request, {"input": request.stored()})

    def _route(self, data_type: type, executor: str, request_type: str) -> tuple[Route, str | None]:
        """The route of a request, and the id of the policies file's rule in it (if one is)."""
        hints = getattr(data_type, HINTS, None)
        base = Route.model_validate(dict(hints)) if isinstance(hints, Mapping) else Route()
        route = routed(self._routes, (data_type, executor), base)
        ruled = self._services.policy.route(self._workflow, executor, request_type)
        return (ruled.over(route), ruled.id) if ruled is not None else (route, None)

    async def deliver(self, request: HumanRequest, answer: BaseModel, scene: Scene) -> Outcome:
        """The answer as the workflow's type; a takeover resolves the case or asks again."""
        if isinstance(answer, TakeoverAnswer):
            if answer.decision == "resolve":
                return resolved(request, answer)
            if answer.decision == "return":
                asked = InputRequest.model_validate(origin_of(request)["input"])
                again = asked.model_copy(
                    update={"reason": f"{returned_text(request, answer)} {asked.reason}"}
                )
                return Ask(again, {"input": again.stored()})
        if isinstance(answer, InputAnswer) and answer.decision == "answer":
            return Reply(typed.value_of(request.payload.get("answer_type"), answer.answer))
        decision = getattr(answer, "decision", "ended")
        raise RuntimeError(
            f"request {request.id} ({request.title}) {decision} before anyone answered, and "
            "its answer type has no value that says so: the run cannot go on"
        )


def routed(
    routes: Mapping[RouteKey, Route], keys: tuple[RouteKey, ...], base: Route | None = None
) -> Route:
    """The registration's routes for `keys` (a request type, an executor id), each over the last."""
    route = base or Route()
    for key in keys:
        if key in routes:
            route = routes[key].over(route)
    return route


def _fill(template: str, words: Mapping[str, Any]) -> str:
    """`template` with each `{field}` (or `{field.nested}`) replaced by the request's value."""

    def value(found: re.Match[str]) -> str:
        current: Any = words
        for part in found[1].split("."):
            if not isinstance(current, Mapping) or part not in current:
                return found[0]
            current = current[part]
        return str(current)

    return _FIELD.sub(value, template)[:300]


def _humanized(name: str) -> str:
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ").split()
    return " ".join([words[0], *(w.lower() for w in words[1:])]) if words else name


def _title(data_type: type, executor: str) -> str:
    """A typed request's title: its type in words, and its step.

    `Feedback request from turn manager`: less the `Human` of `HumanFeedbackRequest`, which only
    tells a developer who answers it.
    """
    step = summary.humanize(executor)  # `policy_engine`: the policy engine
    if data_type.__module__ == "builtins":
        return f"Input for {step}"
    words = _humanized(data_type.__name__)
    if words.lower().startswith("human ") and len(words.split()) > 1:
        words = words[len("human ") :].capitalize()
    return f"{words} from {step}"


def _reason(fields: Mapping[str, Any], executor: str, data_type: type) -> str:
    """Why a typed request asks: its prompt field, else the request as text, else its step.

    Said by its step, the request type's own docstring comes first where its author wrote one
    (`Request for computing resources.`): the words the workflow has for what it asks.
    """
    said = next(
        (str(fields[k]) for k in _PROMPTS if isinstance(fields.get(k), str) and fields[k].strip()),
        None,
    )
    if said is None and isinstance(fields.get("request"), str):
        said = fields["request"]
    if said:
        return said
    step = f"The {summary.humanize(executor)} step waits for your answer before it goes on."
    described = _described(data_type)
    return f"{described} {step}" if described else step


def _described(data_type: type) -> str | None:
    """The first paragraph of a type's own docstring, as one line; None without one.

    Not one inherited (a model's base's), nor the signature `dataclass` writes for a class
    without one, nor a built-in type's.
    """
    doc = data_type.__dict__.get("__doc__")
    if data_type.__module__ == "builtins" or not isinstance(doc, str):
        return None
    first = " ".join(doc.strip().split("\n\n")[0].split())
    if not first or first.startswith(f"{data_type.__name__}("):
        return None
    said = with_stop(first)
    return said if len(said) <= 300 else None
