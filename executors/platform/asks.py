"""Asking a person on behalf of an agent outside any workflow (an MCP client, say).

An ask is one run of the platform's `ask` workflow (`workflows.platform.ask`): its one executor,
`AskDesk`, pauses on `ctx.request_info` with what the agent asked (an `ApprovalAsked`,
`QuestionAsked` or `ReviewAsked`) and its kind's answer model, and ends the run with the typed
answer as its output. So an ask has what every request has: the inbox, deadlines, escalation,
notifications, audit, the run page and restart safety.

`Asks`, the workflow's request adapter, routes each ask through the policies file:

- an approval is the call `action(arguments)` the policy's tool rules decide: `auto` answers
  approve at once and `deny` answers reject at once (each audited as `request.auto_decided` with
  its rule, no person asked); `approval` asks the rule's team (its approvers, deadline and
  escalation); `takeover` hands the case to the rule's team as a takeover. The caller's team is
  used only where the policy names none (its default rule). A person's edit is checked against
  the rules again, as any edit is: into a stricter band it asks that band, into `deny` it is a
  rejection;
- a question or a review is routed by the file's `requests:` rules (workflow `ask`, request
  `QuestionAsked` / `ReviewAsked`), over the caller's team, over the policy's default team.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Never

from agent_framework import Executor, WorkflowContext, WorkflowEvent, handler, response_handler
from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

from executors.platform.adapters import Ask, Outcome, Reply, Scene, returned_text, takeover_request
from executors.platform.services import RunServices
from executors.platform.tool_gate import routed_approval
from human.kinds import (
    ApprovalAnswer,
    ProposedAction,
    QuestionAnswer,
    QuestionRequest,
    ReviewAnswer,
    ReviewRequest,
    TakeoverAnswer,
)
from human.policy import DEFAULT_RULE, Decision, Route
from human.records import HumanRequest
from human.requests import origin_of

ASK_EXECUTOR = "agent"
"""The id of the ask workflow's one executor (`requests:` rules may name it)."""

AskKind = Literal["approval", "question", "review"]


class AskInput(BaseModel):
    """What an agent asks a person: the input of an `ask` run.

    `agent` names the program that asked, as it named itself (an MCP client's name and version);
    who it asks for is whoever started the run, as Baton authenticated them, never an input.
    """

    model_config = ConfigDict(extra="forbid")

    kind: AskKind = Field(description="approval, question or review")
    action: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        pattern=r"^[A-Za-z0-9_.:/-]+$",
        description="approval: the tool or action to allow (the name policy rules match)",
    )
    arguments: dict[str, JsonValue] = Field(
        default_factory=dict,
        description="approval: the action's arguments (a file among them, as a data URI: a "
        "screenshot, is shown to the person as itself)",
    )
    reason: str = Field("", max_length=4000, description="Why the agent asks")
    question: str | None = Field(None, min_length=1, max_length=4000)
    options: list[str] = Field(default_factory=list, max_length=50)
    draft: JsonValue = Field(None, description="review: the draft a person approves or edits")
    team: str | None = Field(None, min_length=1, max_length=200, description="Who to ask")
    agent: str = Field("", max_length=300, description="The program that asks, as it names itself")

    @model_validator(mode="after")
    def _fields_of_kind(self) -> AskInput:
        needed = {"approval": ("action", "reason"), "question": ("question",), "review": ()}
        for name in needed[self.kind]:
            value = getattr(self, name)
            if value is None or (isinstance(value, str) and not value.strip()):
                article = "an" if self.kind == "approval" else "a"
                raise ValueError(f"{name}: required for {article} {self.kind}")
        if self.kind == "review" and self.draft in (None, "", {}, []):
            raise ValueError("draft: required for a review")
        if any(not o.strip() or len(o) > 500 for o in self.options):
            raise ValueError("options: each option is 1 to 500 characters")
        return self


class _Asked(BaseModel):
    """What an agent asked, as the executor hands it to the adapter (MAF's request data)."""

    model_config = ConfigDict(frozen=True)

    title: str | None = None
    reason: str = ""
    team: str | None = None
    asked_by: str = ""
    agent: str = ""


class ApprovalAsked(_Asked):
    """An agent asks to do `action(arguments)`."""

    action: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class QuestionAsked(_Asked):
    """An agent asks a question, optionally with options."""

    question: str
    options: list[str] = Field(default_factory=list)


class ReviewAsked(_Asked):
    """An agent asks a person to approve, edit or reject a draft."""

    draft: Any = None


class AskDesk(Executor):
    """Asks a person what the agent asked, and ends the run with the typed answer."""

    def __init__(self) -> None:
        super().__init__(id=ASK_EXECUTOR)

    @handler
    async def on_ask_input(
        self, ask: AskInput, ctx: WorkflowContext[Never, dict[str, Any]]
    ) -> None:
        """Pause on the ask, typed by its kind."""
        common = {"reason": ask.reason, "team": ask.team, "agent": ask.agent}
        if ask.kind == "approval":
            asked = ApprovalAsked(action=str(ask.action), arguments=ask.arguments, **common)
            await ctx.request_info(asked, ApprovalAnswer)
        elif ask.kind == "question":
            question = QuestionAsked(question=str(ask.question), options=ask.options, **common)
            await ctx.request_info(question, QuestionAnswer)
        else:
            await ctx.request_info(ReviewAsked(draft=ask.draft, **common), ReviewAnswer)

    @response_handler
    async def on_approval_answer(
        self,
        asked: ApprovalAsked,
        answer: ApprovalAnswer,
        ctx: WorkflowContext[Never, dict[str, Any]],
    ) -> None:
        """The approval's answer is the run's output."""
        await ctx.yield_output(answer_output("approval", answer))

    @response_handler
    async def on_question_answer(
        self,
        asked: QuestionAsked,
        answer: QuestionAnswer,
        ctx: WorkflowContext[Never, dict[str, Any]],
    ) -> None:
        """The question's answer is the run's output."""
        await ctx.yield_output(answer_output("question", answer))

    @response_handler
    async def on_review_answer(
        self,
        asked: ReviewAsked,
        answer: ReviewAnswer,
        ctx: WorkflowContext[Never, dict[str, Any]],
    ) -> None:
        """The review's answer is the run's output."""
        await ctx.yield_output(answer_output("review", answer))


def answer_output(kind: str, answer: BaseModel) -> dict[str, Any]:
    """The run's output: the kind and the typed answer's fields that are set."""
    return {"kind": kind, **answer.model_dump(mode="json", exclude_none=True)}


# the adapter: routing by the policies file ------------------------------------------------------

ASK_TYPES = (ApprovalAsked, QuestionAsked, ReviewAsked)


class Asks:
    """Routes an agent's ask by the policies file; a person's answer goes back as it is."""

    name: ClassVar[str] = "asks"

    def __init__(self, services: RunServices, *, workflow: str) -> None:
        self._services = services
        self._workflow = workflow

    def accepts(self, event: WorkflowEvent[Any]) -> bool:
        """An ask of the ask workflow."""
        return isinstance(event.data, ASK_TYPES)

    async def ask(self, event: WorkflowEvent[Any], scene: Scene) -> Outcome:
        """Decide or route the ask."""
        data = event.data.model_copy(update={"asked_by": self._services.started_by or ""})
        if isinstance(data, ApprovalAsked):
            decision = self._services.policy.evaluate(data.action, data.arguments)
            return self._approval(data, data.arguments, decision, scene, edited=False)
        executor = str(event.source_executor_id)
        route, rule = self._route(type(data), executor, Route(team=data.team))
        routing = _routing(route, rule, self._services.policy.default_team)
        if isinstance(data, QuestionAsked):
            return Ask(
                QuestionRequest(
                    title=data.title or f"{_agent(data)} asks: {_clip(data.question)}",
                    reason=_reason(
                        data,
                        "asks a question and waits for your answer.",
                        "What you write goes back to the agent as your answer"
                        + (", one of the options or words of your own." if data.options else "."),
                    ),
                    context=_who(data),
                    question=data.question,
                    options=data.options,
                    **routing,
                )
            )
        assert isinstance(data, ReviewAsked)
        return Ask(
            ReviewRequest(
                title=data.title or f"Review a draft from {_agent(data)}",
                reason=_reason(
                    data,
                    "drafted this and waits for your review.",
                    "Approve lets the agent use it as it is; Edit gives the agent your version to "
                    "use instead; Reject stops it and tells the agent your reason.",
                ),
                context=_who(data),
                draft=data.draft,
                **routing,
            )
        )

    async def deliver(self, request: HumanRequest, answer: BaseModel, scene: Scene) -> Outcome:
        """The answer as the agent gets it; an edited approval is checked by the rules again."""
        origin = origin_of(request)
        if isinstance(answer, TakeoverAnswer):
            return Reply(_taken_over(request, answer, str(origin.get("taken_over_from"))))
        if isinstance(answer, ApprovalAnswer) and answer.decision == "edit":
            asked = ApprovalAsked.model_validate(origin["asked"])
            before = Decision.model_validate(origin["decision"])
            edited = dict(answer.arguments or {})
            after = self._services.policy.recheck_edit(before, asked.action, edited)
            if after.action == "deny":
                return Reply(
                    ApprovalAnswer(
                        decision="reject",
                        reason=f"{request.answered_by} changed the arguments, and policy rule "
                        f"{after.rule_id} refuses the changed call: do not do it.",
                    )
                )
            if after.action != "auto":  # the edit needs more than its editor could give
                return self._approval(asked, edited, after, scene, edited=True)
        if (
            isinstance(answer, ApprovalAnswer)
            and answer.decision == "approve"
            and origin.get("edited")
        ):
            # approving an edit's re-ask approves the edited call: the agent gets its arguments
            changed = dict(origin.get("arguments") or {})
            return Reply(ApprovalAnswer(decision="edit", arguments=changed, reason=answer.reason))
        return Reply(answer)

    def _approval(
        self,
        asked: ApprovalAsked,
        arguments: dict[str, Any],
        decision: Decision,
        scene: Scene,
        *,
        edited: bool,
    ) -> Outcome:
        policy = self._services.policy
        if decision.action in ("auto", "deny") and not edited:
            scene.audit(
                "request.auto_decided",
                tool=asked.action,
                arguments=arguments,
                decision="approve" if decision.action == "auto" else "reject",
                rule=decision.rule_id,
            )
            if decision.action == "auto":
                reason = f"Allowed by policy rule {decision.rule_id}; no person was asked."
                return Reply(ApprovalAnswer(decision="approve", reason=reason))
            reason = f"Refused by policy rule {decision.rule_id}: do not do it."
            return Reply(ApprovalAnswer(decision="reject", reason=reason))
        if decision.rule_id == DEFAULT_RULE and asked.team:
            decision = decision.model_copy(update={"team": asked.team})  # no rule named a team
        origin: dict[str, Any] = {
            "asked": asked.model_dump(mode="json"),
            "decision": decision.model_dump(mode="json"),
            "arguments": arguments,
            "edited": edited,
        }
        what = f"{_agent(asked)} wants to run {asked.action}"
        if decision.action == "takeover":
            origin |= {"taken_over_from": "approval"}
            return Ask(
                takeover_request(
                    f"Take over: {what}",
                    _reason(
                        asked,
                        f"asks to run {asked.action}.",
                        f"{decision.handing_over()} Resolve it yourself (the agent is told your "
                        "resolution and does not run it) or return it to the agent with guidance.",
                    ),
                    decision,
                    _who(asked) | {"arguments": arguments},
                    scene,
                ),
                origin,
            )
        approvers = (
            f"{decision.approvals_required} different people of {decision.team}"
            if decision.approvals_required > 1
            else f"a person of {decision.team}"
        )
        action = ProposedAction(
            tool=asked.action,
            arguments=arguments,
            arguments_schema=schema_of_arguments(asked.arguments),
        )
        request = routed_approval(
            action,
            decision,
            title=asked.title or f"Approve: {what}",
            reason=(
                ("An edit changed the arguments, and the changed call needs this approval. ")
                if edited
                else ""
            )
            + _reason(
                asked,
                f"asks to run {asked.action} with the arguments below and waits for your decision.",
                "Approve lets the agent go ahead exactly as shown; Edit lets it go ahead with "
                "your changes instead; Reject stops it and tells the agent your reason. Baton "
                "does not run the action itself: the agent does, once it has your decision. "
                f"(Policy rule {decision.rule_id} asks {approvers}.)",
            ),
            context=_who(asked),
            default_team=policy.default_team,
        )
        return Ask(request, origin)

    def _route(self, data_type: type, executor: str, base: Route) -> tuple[Route, str | None]:
        """The policies file's `requests:` rule over `base`, and the rule's id (if one matched)."""
        request_type = f"{data_type.__module__}:{data_type.__qualname__}"
        ruled = self._services.policy.route(self._workflow, executor, request_type)
        return (base, None) if ruled is None else (ruled.over(base), ruled.id)


def _routing(route: Route, rule: str | None, default_team: str) -> dict[str, Any]:
    return {
        "team": route.team or default_team,
        "priority": route.priority or "normal",
        "expires_in_s": route.deadline_s,
        "escalation": list(route.escalation),
        "policy_rule": rule,
    }


_ANSWERS: dict[str, type[ApprovalAnswer | QuestionAnswer | ReviewAnswer]] = {
    "approval": ApprovalAnswer,
    "question": QuestionAnswer,
    "review": ReviewAnswer,
}


def _taken_over(request: HumanRequest, answer: TakeoverAnswer, kind: str) -> BaseModel:
    """A takeover's answer as the ask's own kind: the agent always gets the answer it asked for.

    Resolved by the person or handed back with guidance, an approval or a review is a rejection
    with their words (the agent does not go ahead on its own), a question is answered with them.
    """
    model = _ANSWERS.get(kind, ApprovalAnswer)
    if answer.decision in ("expired", "cancelled"):
        return model.model_validate({"decision": answer.decision})
    if answer.decision == "return":
        words = returned_text(request, answer)
    else:
        words = f"{request.answered_by} took this over and resolved it: {answer.resolution}"
    if model is QuestionAnswer:
        return QuestionAnswer(decision="answer", answer=words)
    return model.model_validate({"decision": "reject", "reason": words})


def _agent(asked: _Asked) -> str:
    return asked.agent.split(" ")[0] if asked.agent else "An MCP client"


def _who(asked: _Asked) -> dict[str, Any]:
    """Who asked, as the request shows it: the person the agent acts for and the agent."""
    return {
        "asked_by": asked.asked_by or "unknown",
        "agent": asked.agent or "an MCP client that gave no name",
        "asked_through": "MCP (Model Context Protocol)",
    }


def _reason(asked: _Asked, what: str, then: str) -> str:
    """Who asks for whom and what, the agent's own words, then what each answer does."""
    said = f' Its reason: "{asked.reason.strip()}"' if asked.reason.strip() else ""
    on_behalf = f", an agent acting for {asked.asked_by}," if asked.asked_by else ", an agent,"
    return f"{_agent(asked)}{on_behalf} {what}{said} {then}"


def _clip(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


_JSON_TYPES: dict[type, str] = {bool: "boolean", int: "integer", float: "number", str: "string"}


def schema_of_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """A JSON Schema for an edit of `arguments`: the same names, each of the type it was given.

    An agent's action has no schema Baton knows; the one its arguments show is what an edit must
    keep (a number stays a number), so the form offers one field per argument.
    """
    properties: dict[str, Any] = {}
    for name, value in arguments.items():
        json_type = next((t for k, t in _JSON_TYPES.items() if type(value) is k), None)
        if json_type is None:
            json_type = (
                "object" if isinstance(value, dict) else "array" if value is not None else ""
            )
        properties[name] = {"title": name.replace("_", " ").capitalize()} | (
            {"type": json_type} if json_type else {}
        )
    return {
        "type": "object",
        "properties": properties,
        "required": sorted(properties),
        "additionalProperties": False,
    }
