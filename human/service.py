"""RequestService: the one path by which a person's answer reaches a request.

The API, the CLI (and later the pages and Slack) all call `respond`; it validates against the
request's own schema and decisions, checks access, and then lets the store's conditional write
decide: the first answer wins, the same answer again is a no-op, a different one a conflict.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import logging
from collections.abc import AsyncGenerator, Callable, Collection, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import jsonschema
from pydantic import BaseModel, ConfigDict, ValidationError

from baton import failpoints
from baton.errors import (
    AlreadyTakeover,
    AnswerConflict,
    AttachmentNotFound,
    EditRefused,
    Invalid,
    InvalidAnswer,
    NotClaimed,
    NotPermitted,
    RecordDamaged,
    RequestAnswered,
    RequestClaimed,
    RequestClosed,
    RequestNotFound,
)
from baton.telemetry import span
from human import text, typed
from human.access import (
    can_see_run,
    check_can_answer,
    check_can_claim,
    check_can_reassign,
    check_four_eyes,
    may_be_assigned,
    moved_away,
    release_scope,
    viewer_of,
)
from human.answer_schema import answer_schema, with_defaults
from human.attachments import Kept
from human.kinds import KINDS, Kind
from human.policy import Decision, EditedCall, Invariant, Policy, consequences
from human.records import (
    OPEN_STATUSES,
    AnswerRecord,
    AuditEvent,
    HumanRequest,
    Page,
    Run,
    User,
)
from human.routing import blocks, notifications_for
from human.store.base import ClaimOutcome, LocalWorker, RequestFilter, Store, utcnow
from human.summary import deed, edit_diff

logger = logging.getLogger(__name__)

_ROUTING_EVENTS = frozenset({"request.created", "request.escalated", "request.reassigned"})

TAKEOVER = "takeover"
"""The decision `take_over` records; the runtime turns it into a takeover request."""


class RespondResult(BaseModel):
    """The request after an answer, and whether this call changed it."""

    model_config = ConfigDict(frozen=True)

    request: HumanRequest
    changed: bool
    outcome: str


class AnswerPreview(BaseModel):
    """An answer as `respond` would apply it, and an edit's diff (`{field: {before, after}}`)."""

    model_config = ConfigDict(frozen=True)

    answer: dict[str, Any]
    diff: dict[str, Any] | None = None
    consequences: list[str] = []


class RequestService:
    """Reads and answers human requests."""

    def __init__(
        self,
        store: Store,
        *,
        clock: Callable[[], datetime] = utcnow,
        on_change: Callable[[str, str], None] | None = None,
        worker: LocalWorker | None = None,
        claim_s: float = 900.0,
        notify_channels: Sequence[str] = (),
        answer_channels: Sequence[str] = (),
        policy: Policy | None = None,
        invariants: Mapping[str, Invariant] | None = None,
    ) -> None:
        self._store = store
        self._policy = policy
        self._invariants = dict(invariants or {})
        self._channels = tuple(notify_channels)
        self._answer_channels = tuple(answer_channels)
        self._clock = clock
        self._on_change = on_change or (lambda kind, request_id: None)
        self._worker = worker
        self._claim_s = claim_s

    def now(self) -> datetime:
        """Baton's clock, which deadlines and claims are measured by."""
        return self._clock()

    @property
    def claim_seconds(self) -> float:
        """How long a claim holds a request for its holder (`BATON_CLAIM_SECONDS`)."""
        return self._claim_s

    async def get(self, request_id: str, *, viewer: User | None = None) -> HumanRequest:
        """A request by id, or `RequestNotFound` (also when `viewer` may not see it)."""
        if viewer is not None:
            seen, _ = await self._answerable(request_id, viewer)
            return seen
        request = await self._store.get_request(request_id)
        if request is None:
            raise RequestNotFound(f"no request {request_id}")
        return request

    async def attachment(self, request_id: str, attachment_id: str, *, viewer: User) -> Kept:
        """The bytes of a file the request lists.

        `RequestNotFound` where `viewer` may not see the request (as for its page),
        `AttachmentNotFound` where it lists no such file: no id opens a file through a request
        that did not come with it.
        """
        request = await self.get(request_id, viewer=viewer)
        listed = next((a for a in request.attachments if a.id == attachment_id), None)
        kept = await self._store.load_attachment(attachment_id) if listed else None
        if listed is None or kept is None:
            raise AttachmentNotFound(f"request {request_id} has no attachment {attachment_id}")
        return kept

    async def moved_away_from(self, request_id: str, *, viewer: User) -> AuditEvent | None:
        """The move that took a request `viewer` cannot see out of their teams, else None.

        For the page of a request that escalated or was reassigned away from the reader's team
        (`moved_away`); None, as for a request that does not exist, when it was never theirs.
        """
        if await self._store.get_request(request_id) is None:
            return None
        return moved_away(await self._store.list_events(request_id=request_id), viewer.teams)

    async def list(self, flt: RequestFilter, *, viewer: User | None = None) -> Page:
        """A page of requests matching `flt` (of the runs `viewer` may see, when given)."""
        return await self._store.list_requests(_seen_by(flt, viewer))

    async def of_run(self, run_id: str) -> builtins.list[HumanRequest]:
        """A run's requests in the order they were asked (who may see the run sees them all)."""
        return await run_requests(self._store, run_id)

    async def count(self, flt: RequestFilter, *, viewer: User | None = None) -> dict[str, int]:
        """How many requests match `flt` per status (of the runs `viewer` may see)."""
        return await self._store.count_requests(_seen_by(flt, viewer))

    async def events(self, request_id: str, *, viewer: User) -> builtins.list[AuditEvent]:
        """The audit trail of a request `viewer` may see, oldest first."""
        await self.get(request_id, viewer=viewer)
        return await self._store.list_events(request_id=request_id)

    async def watch(
        self,
        viewer: User,
        *,
        after_id: int,
        run_id: str | None = None,
        types: Collection[str] | None = None,
    ) -> AsyncGenerator[AuditEvent, None]:
        """Audit events as they commit, of the runs `viewer` may see (`Store.watch`).

        Whether a run is visible is decided once per run and remembered; a run not visible yet is
        looked at again when a request of it is created or moves, which may involve their teams.
        """
        seen: dict[str, bool] = {}
        feed = self._store.watch(after_id=after_id)
        try:
            async for event in feed:
                if run_id is not None and event.run_id != run_id:
                    continue
                if types is not None and event.type not in types:
                    continue
                if viewer.role != "admin":
                    if event.run_id is None:
                        continue
                    visible = seen.get(event.run_id)
                    if visible is None or (not visible and event.type in _ROUTING_EVENTS):
                        run = await self._store.get_run(event.run_id)
                        teams = await self._store.teams_of_run(event.run_id)
                        visible = run is not None and can_see_run(viewer, run, teams)
                        seen[event.run_id] = visible
                    if not visible:
                        continue
                yield event
        finally:
            await feed.aclose()

    async def _answerable(self, request_id: str, responder: User) -> tuple[HumanRequest, Run]:
        """The request and its run, read at once; `RequestNotFound` if `responder` cannot see it."""
        found = await self._store.request_with_run(request_id)
        if found is None or not await self._may_see(*found, responder):
            raise RequestNotFound(f"no request {request_id}")
        return found

    async def _may_see(self, request: HumanRequest, run: Run, user: User) -> bool:
        """Whether `user` may see `request` of `run`."""
        if user.role == "admin" or run.created_by == user.name or request.team in user.teams:
            return True
        return can_see_run(user, run, await self._store.teams_of_run(run.id))

    async def respond(
        self, request_id: str, body: dict[str, Any], *, responder: User
    ) -> RespondResult:
        """Validate, authorize and apply one answer; refusals change nothing stored."""
        with span("baton.answer", {"baton.request_id": request_id}) as answering:
            request, answer = await self._checked(request_id, body, responder)
            answering.set_attribute("baton.run_id", request.run_id)
            answering.set_attribute("baton.decision", str(answer["decision"]))
            result = await self._record(request, answer, responder, edit_diff(request, answer))
            answering.set_attribute("baton.outcome", result.outcome)
            return result

    async def check_answer(self, request_id: str, body: Any, *, responder: User) -> HumanRequest:
        """Refuse `body` as `respond` would refuse it, storing nothing; the request if it passes.

        For a caller that gives several answers at once and must give none when one is wrong (an
        AG-UI resume); whether the answer still wins is decided when it is recorded.
        """
        request, _ = await self._checked(request_id, body, responder)
        return request

    async def _checked(
        self, request_id: str, body: Any, responder: User
    ) -> tuple[HumanRequest, dict[str, Any]]:
        """The request and the validated answer `responder` may give it, or the refusal."""
        request, run = await self._answerable(request_id, responder)
        if request.status in ("expired", "cancelled"):
            raise closed_error(request)
        _check_whole(request)
        answer = _checked_answer(request, run, body, responder)
        _refuse_second_word(request, answer, responder)
        await self.check_edit(request, run, answer)
        return request, answer

    async def take_over(self, request_id: str, *, responder: User) -> RespondResult:
        """A person takes an open request over, from its page.

        The request closes with the decision `takeover` (first answer wins, as for any answer) and
        the run's next drive turns it into a `takeover` request assigned to that person, with the
        conversation so far: they resolve the case (the run ends with their resolution) or return
        it to the agent with guidance. Audited as `request.answered` with decision `takeover`.
        """
        with span("baton.takeover", {"baton.request_id": request_id}) as taking:
            request = await self.check_take_over(request_id, responder=responder)
            taking.set_attribute("baton.run_id", request.run_id)
            answer = {"decision": TAKEOVER, "by": responder.name}
            result = await self._record(request, answer, responder, {"takeover_by": responder.name})
            taking.set_attribute("baton.outcome", result.outcome)
            return result

    async def check_take_over(self, request_id: str, *, responder: User) -> HumanRequest:
        """The request, if `responder` may take it over now; else the refusal `take_over` raises."""
        request = await self.get(request_id, viewer=responder)
        if request.status in ("expired", "cancelled"):
            raise closed_error(request)
        check_can_answer(responder, request)
        _check_whole(request)
        if request.kind == "takeover":
            raise AlreadyTakeover(
                f"request {request_id} is already a takeover: answer it with resolve or return",
                to_reader="You cannot take this request over because it is a takeover already: "
                "resolve it, or return it to the agent.",
            )
        return request

    async def takeover_of(self, request: HumanRequest, *, viewer: User) -> HumanRequest | None:
        """The takeover request a take-over of `request` became, once its run has asked it."""
        taker = request.answered_by
        if (request.answer or {}).get("decision") != TAKEOVER or taker is None:
            return None
        found = await self.list(
            RequestFilter(run_id=request.run_id, kind="takeover", limit=100), viewer=viewer
        )
        return next(
            (r for r in found.items if r.assignee == taker and r.created_at >= request.created_at),
            None,
        )

    async def _record(
        self,
        request: HumanRequest,
        answer: dict[str, Any],
        responder: User,
        audit: dict[str, Any] | None,
    ) -> RespondResult:
        outcome = await self._store.record_answer(
            AnswerRecord(
                request_id=request.id,
                actor=responder.name,
                decision=answer["decision"],
                body={k: v for k, v in answer.items() if k != "decision"},
                at=self._clock(),
            ),
            final=answer,
            lease=self._worker.lease if self._worker else None,
            audit=audit,
            notifications=notifications_for(request, self._answer_channels, "answered"),
        )
        if outcome.job is not None and self._worker is not None:
            self._worker.accept(outcome.job, outcome.in_play)
        if outcome.result in ("closed", "partial"):
            failpoints.hit("answer.after_commit")
            self._on_change("request", request.id)
            logger.info(
                "request answered",
                extra={
                    "request_id": request.id,
                    "outcome": outcome.result,
                    "actor": responder.name,
                },
            )
            return RespondResult(request=outcome.request, changed=True, outcome=outcome.result)
        if outcome.result == "repeated":
            return RespondResult(request=outcome.request, changed=False, outcome="repeated")
        if outcome.result == "claimed":
            raise claimed_error(outcome.request)
        return self._settle_closed(outcome.request, answer)

    async def claim(self, request_id: str, *, user: User) -> HumanRequest:
        """Hold a request for `user` alone for the claim time (`BATON_CLAIM_SECONDS`).

        While the claim lives, another person's answer or claim is a 409 naming the holder and
        until when; the holder claiming again renews it.
        """
        request = await self.get(request_id, viewer=user)
        refuse_closed(request)
        check_can_claim(user, request)
        until = self._clock() + timedelta(seconds=self._claim_s)
        outcome = await self._store.claim_request(request_id, user.name, until=until)
        return self._settle_change(outcome)

    async def release(self, request_id: str, *, user: User) -> HumanRequest:
        """End a live claim: the holder's own, or anyone's for an admin."""
        request = await self.get(request_id, viewer=user)
        refuse_closed(request)
        holder = release_scope(user)
        outcome = await self._store.release_request(request_id, user.name, holder=holder)
        if outcome.result == "held":
            by = outcome.request.claimed_by
            raise NotPermitted(
                f"{user.name} cannot release {by}'s claim on request {request_id}; only they "
                "or an admin can",
                claimed_by=by,
                to_reader=f"You cannot release {by}'s claim because only {by} or an admin can.",
            )
        if outcome.result == "not_claimed":
            raise NotClaimed(
                f"request {request_id} is not claimed",
                to_reader="You cannot release this request because nobody holds a claim on it.",
            )
        return self._settle_change(outcome)

    async def reassign(
        self, request_id: str, *, user: User, team: str | None, assignee: str | None
    ) -> HumanRequest:
        """Move an open request to another team and/or person; audited as `request.reassigned`.

        The new team or person is notified on every configured channel. The team must exist;
        the assignee must be someone who could answer the request in its (new) team. Either is a
        422 naming the field; a live claim ends with the move.
        """
        request = await self.get(request_id, viewer=user)
        refuse_closed(request)
        check_can_reassign(user, request)
        if team is None and assignee is None:
            raise Invalid(
                "name a team or an assignee to reassign to",
                [_err([], "one of team or assignee is required")],
            )
        to_team = team or request.team
        if team is not None and team not in {t.name for t in await self._store.list_teams()}:
            raise Invalid(f"no team named {team!r}", [_err(["team"], f"no team named {team!r}")])
        if assignee is not None:
            person = await self._store.get_user(assignee)
            if person is None:
                raise Invalid(
                    f"no user named {assignee!r}",
                    [_err(["assignee"], f"no user named {assignee!r}")],
                )
            if not may_be_assigned(person, to_team):
                msg = f"{assignee} cannot answer requests of team {to_team}"
                raise Invalid(msg, [_err(["assignee"], msg)])
        outcome = await self._store.reassign_request(
            request_id, user.name, team=team, assignee=assignee, channels=self._channels
        )
        return self._settle_change(outcome)

    def _settle_change(self, outcome: ClaimOutcome) -> HumanRequest:
        if outcome.result == "held":
            raise claimed_error(outcome.request)
        if outcome.result == "not_open":
            refuse_closed(outcome.request)
        self._on_change("request", outcome.request.id)
        logger.info(
            "request holder changed",
            extra={"request_id": outcome.request.id, "outcome": outcome.result},
        )
        return outcome.request

    def _settle_closed(self, request: HumanRequest, answer: dict[str, Any]) -> RespondResult:
        if request.status in ("expired", "cancelled"):
            raise closed_error(request)
        if request.answer == answer:
            return RespondResult(request=request, changed=False, outcome="repeated")
        decision = (request.answer or {}).get("decision")
        raise AnswerConflict(
            f"request {request.id} was already answered by {request.answered_by} "
            f"with decision '{decision}'",
            answered_by=request.answered_by,
            to_reader=f"You cannot answer this request because {request.answered_by} already "
            f"answered it: {deed(decision).lower()}.",
        )

    async def preview(
        self, request_id: str, body: dict[str, Any], *, responder: User
    ) -> AnswerPreview:
        """What `respond` would apply, checked as it checks, without applying anything.

        The pages' confirm step: the answer as the workflow would receive it and, for an edit, its
        before -> after diff. Refusals raise as `respond`'s do (someone else's live claim is the
        same 409); a request already answered otherwise is an `AnswerConflict` naming who answered.
        """
        request, run = await self._answerable(request_id, responder)
        if request.status not in OPEN_STATUSES:
            self._settle_closed(request, dict(body))  # raises unless it repeats the stored answer
        answer = _checked_answer(request, run, body, responder)
        _refuse_second_word(request, answer, responder)
        if blocks(request, responder.name, self._clock()):
            raise claimed_error(request)
        told = await self.check_edit(request, run, answer)
        diff = edit_diff(request, answer)
        return AnswerPreview(answer=answer, diff=diff["diff"] if diff else None, consequences=told)

    async def check_edit(
        self, request: HumanRequest, run: Run, answer: dict[str, Any]
    ) -> builtins.list[str]:
        """Refuse an edit its policy rule does not allow; else say what it leads to.

        An approval's edited arguments may change only what the request's rule lets them
        (`editable`, `keep`) and must keep the rule's invariants (and those of the rule the edited
        call now meets); an invariant no workflow registers refuses every edit (fail closed).

        Returns:
            The edit's consequences in words (another rule, more approvers, a refusal); none
            for anything but an approval's edit.

        Raises:
            EditRefused: Naming each argument it may not change, or each invariant it breaks.
        """
        action = request.proposed_action
        if (
            self._policy is None
            or request.kind != "approval"
            or answer.get("decision") != "edit"
            or not action
        ):
            return []
        tool = str(action.get("tool"))
        before: dict[str, Any] = action.get("arguments") or {}
        after: dict[str, Any] = answer.get("arguments") or {}
        errors = [
            _err(["arguments", arg], f"{arg} may not be changed: {why}")
            for arg, why in self._policy.edit_refusals(request.policy_rule, tool, before, after)
        ]
        if not errors:
            call = EditedCall(tool, before, after, context=request.context, run_input=run.input)
            for name in self._policy.invariants_of(request.policy_rule, tool, before, after):
                why = await self._broken(name, call)
                if why:
                    errors.append(_err(["arguments"], f"the edit breaks {name}: {why}"))
        if errors:
            raise EditRefused(f"edit refused: {errors[0]['msg']}", errors)
        asking = self._policy.asking_rule(request.policy_rule, tool, before)
        asked = Decision(
            action="approval",
            rule_id=request.policy_rule or (asking.id if asking else "default.approval"),
            team=request.team,
            approvals_required=request.approvals_required,
        )
        return consequences(asked, self._policy.recheck_edit(asked, tool, after))

    def fixed_arguments(self, request: HumanRequest) -> dict[str, str]:
        """The proposed arguments an edit of `request` may not change, each with why (forms)."""
        return fixed_arguments(self._policy, request)

    async def _broken(self, name: str, call: EditedCall) -> str | None:
        """Why `call` breaks the invariant `name`, or None; a check that fails refuses."""
        check = self._invariants.get(name)
        if check is None:
            return "no workflow registers this invariant, so no edit can be checked against it"
        try:
            return await check(call)
        except Exception as exc:  # a workflow's own check: whatever it raises refuses the edit
            logger.exception("invariant check failed", extra={"invariant": name})
            return f"it could not be checked ({type(exc).__name__}); nothing was changed"


def fixed_arguments(policy: Policy | None, request: HumanRequest) -> dict[str, str]:
    """The proposed arguments an edit of `request` may not change under `policy`, with why."""
    action = request.proposed_action
    if policy is None or request.kind != "approval" or not action:
        return {}
    arguments: dict[str, Any] = action.get("arguments") or {}
    rule = policy.asking_rule(request.policy_rule, str(action.get("tool")), arguments)
    if rule is None:
        return {}
    return {arg: why for arg in arguments if (why := rule.fixed(arg)) is not None}


def _seen_by(flt: RequestFilter, viewer: User | None) -> RequestFilter:
    if viewer is None:
        return flt
    return flt.model_copy(update={"visible_to": viewer_of(viewer)})


def validate_answer(request: HumanRequest, body: Any) -> dict[str, Any]:
    """The answer as the workflow will receive it, or `InvalidAnswer` naming each bad field."""
    kind: Kind = KINDS[request.kind]
    if not isinstance(body, dict):
        raise InvalidAnswer("the answer must be a JSON object", [_err([], "expected an object")])
    unstorable = text.problems(body)
    if unstorable:  # nothing that cannot be stored and read back reaches the store
        errors = [_err(loc, msg) for loc, msg in unstorable[:20]]
        raise InvalidAnswer(f"{text.where(unstorable[0][0])}: {unstorable[0][1]}", errors)
    decision = body.get("decision")
    if decision not in request.allowed_decisions:
        raise InvalidAnswer(
            f"decision must be one of {', '.join(request.allowed_decisions)}",
            [_err(["decision"], f"must be one of {request.allowed_decisions}, got {decision!r}")],
        )
    problems = kind.answer_model.field_problems(decision, body)
    if problems:
        raise InvalidAnswer(
            f"invalid {request.kind} answer: {problems[0][0]} {problems[0][1]}",
            [_err([name], msg) for name, msg in problems],
        )
    try:
        model = kind.answer_model.model_validate(body)
    except ValidationError as exc:
        errors = [
            _err([str(p) for p in e["loc"]], e["msg"].removeprefix("Value error, "))
            for e in exc.errors(include_url=False)
        ]
        raise InvalidAnswer(f"invalid {request.kind} answer: {errors[0]['msg']}", errors) from exc
    answer = model.model_dump(mode="json", exclude_none=True)
    if request.kind == "approval" and decision == "edit" and request.proposed_action:
        _check_arguments(request.proposed_action.get("arguments_schema") or {}, answer["arguments"])
    if request.kind == "takeover" and answer.get("outcome") is not None:
        outcome = (request.response_schema.get("properties") or {}).get("outcome") or {}
        if outcome.get("properties"):  # a workflow's own outcome model (else: any object)
            defs = request.response_schema.get("$defs")
            _check_arguments(
                outcome | ({"$defs": defs} if defs else {}), answer["outcome"], "outcome"
            )
    if request.kind == "input" and decision == "answer":
        answer["answer"] = _typed_answer(request, answer["answer"])
    if request.kind == "question" and decision == "answer":
        _check_option(request, answer["answer"])
    if request.kind == "approval":
        _check_standing(request, answer)
    return answer


def _check_standing(request: HumanRequest, answer: dict[str, Any]) -> None:
    """`InvalidAnswer` for an approval asked to stand where its request does not offer that.

    The offer is the request's own (`standing`, from its policy rule when it was asked), and one
    approver's: a request that needs two approvals never offers it. An answer that does not ask
    it is stored without the field.
    """
    if not answer.get("standing"):
        answer.pop("standing", None)
        return
    if not request.payload.get("standing") or request.approvals_required > 1:
        msg = (
            f"rule {request.policy_rule or 'default.approval'} does not let an approval stand "
            "for the run's later calls"
        )
        raise InvalidAnswer(f"standing: {msg}", [_err(["standing"], msg)])


def _check_option(request: HumanRequest, answer: str) -> None:
    """`InvalidAnswer` unless `answer` is one of a question's options, where it takes no other."""
    options = [str(o) for o in request.payload.get("options") or []]
    if options and not request.payload.get("other", True) and answer not in options:
        msg = f"must be one of the options: {', '.join(options)}"
        raise InvalidAnswer(f"answer {msg}", [_err(["answer"], msg)])


def _typed_answer(request: HumanRequest, value: Any) -> Any:
    """An input's answer as a value of the workflow's type, or `InvalidAnswer` naming the field."""
    schema = answer_schema(request)
    value = with_defaults(schema, value)  # what the answer repeats of its request (`echoed`)
    canonical, problems = typed.check(request.payload.get("answer_type"), schema, value)
    if problems:
        errors = [_err(["answer", *loc], msg) for loc, msg in problems]
        where = ".".join(errors[0]["loc"])
        raise InvalidAnswer(f"invalid answer: {where}: {errors[0]['msg']}", errors)
    return canonical


def _checked_answer(
    request: HumanRequest, run: Run, body: dict[str, Any], responder: User
) -> dict[str, Any]:
    """The validated answer, once `responder` may give it (team, role, four eyes).

    Who may give it is decided first, from the decision named: someone who may not is refused
    (403) whatever else is wrong with what they sent, never told how to send it better (422).
    """
    check_can_answer(responder, request)
    named = body.get("decision") if isinstance(body, dict) else None  # JSON: anything may come
    check_four_eyes(responder, request, run, str(named))
    return validate_answer(request, body)


def _refuse_second_word(request: HumanRequest, answer: dict[str, Any], responder: User) -> None:
    """`AnswerConflict` for an approver of a request that needs more, who now answers otherwise.

    Where two people must approve, each gives one answer: one who approved may not then edit or
    reject (a veto of their own approval); approving again repeats (a no-op).
    """
    if request.status not in OPEN_STATUSES or answer.get("decision") == "approve":
        return
    if any(a.actor == responder.name and a.decision == "approve" for a in request.answers):
        raise AnswerConflict(
            f"{responder.name} already approved request {request.id}; it waits for "
            f"{request.approvals_required - 1} more approver(s) of {request.team}, not for "
            f"another answer of theirs",
            answered_by=responder.name,
            to_reader="You cannot answer this request again because you already approved it: "
            f"it waits for another person of {request.team}.",
        )


def _check_arguments(
    schema: dict[str, Any], arguments: dict[str, Any], field: str = "arguments"
) -> None:
    """`InvalidAnswer` naming each place `arguments` (the answer's `field`) breaks `schema`."""
    if not schema:
        return
    validator = jsonschema.Draft202012Validator(schema)
    problems = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
    if problems:
        errors = [_err([field, *(str(p) for p in e.absolute_path)], e.message) for e in problems]
        what = "edited arguments do not fit the tool" if field == "arguments" else f"bad {field}"
        raise InvalidAnswer(f"{what}: {errors[0]['msg']}", errors)


def _err(loc: list[str], msg: str) -> dict[str, Any]:
    """An error naming a field of the answer (or of the call) by its path in it."""
    return {"loc": loc, "msg": msg}


def refuse_closed(request: HumanRequest) -> None:
    """Raise `RequestClosed` (410) or `RequestAnswered` (409) unless the request is open."""
    if request.status in ("expired", "cancelled"):
        raise closed_error(request)
    if request.status in ("answered", "resumed"):
        raise RequestAnswered(
            f"request {request.id} was already answered by {request.answered_by}",
            answered_by=request.answered_by,
            to_reader=f"You cannot act on this request any more because {request.answered_by} "
            "already answered it.",
        )


def closed_error(request: HumanRequest) -> RequestClosed:
    """The 410 for an expired or cancelled request."""
    said = "it expired" if request.status == "expired" else "it was cancelled"
    return RequestClosed(
        f"request {request.id} is {request.status}; it takes no answer",
        to_reader=f"You cannot answer this request because {said}: it takes no answer.",
    )


def claimed_error(request: HumanRequest) -> RequestClaimed:
    """The 409 for someone else's live claim, naming the holder and until when."""
    until = request.model_dump(mode="json", include={"claimed_until"})["claimed_until"]
    return RequestClaimed(
        f"request {request.id} is claimed by {request.claimed_by} until {until}",
        claimed_by=request.claimed_by,
        claimed_until=until,
    )


def _check_whole(request: HumanRequest) -> None:
    """`RecordDamaged` if part of the stored request could not be read (`HumanRequest.faults`)."""
    if request.faults:
        raise RecordDamaged(
            f"request {request.id} cannot be answered: part of its stored record could not be "
            f"read ({'; '.join(request.faults)[:300]}); an admin can cancel its run",
            to_reader="You cannot answer this request because part of its stored record could "
            "not be read: nobody decides without all of it. An admin can cancel its run.",
        )


async def close_feed(
    feed: AsyncGenerator[AuditEvent, None], pending: asyncio.Future[AuditEvent] | None
) -> None:
    """Close a `watch` feed, letting a step of it that is still pending end first."""
    if pending is not None:
        pending.cancel()
        with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
            await pending
    await feed.aclose()


async def run_requests(store: Store, run_id: str) -> list[HumanRequest]:
    """A run's requests (its newest 500), oldest first: one model turn's calls in its order."""
    newest_first = await store.list_requests(RequestFilter(run_id=run_id, limit=500))
    return newest_first.items[::-1]
