"""The runtime: starts, lists and cancels runs, and drives them as their jobs come due.

A drive of a run (`workflows.platform.drive`) takes a workflow instance (built for it, or kept
and reset: `workflows.platform.pool`), restores it from the run's current checkpoint (or seeds it
with the input), delivers at most one answer, and the runtime commits everything that came of it
in one fenced transaction. Nothing of a paused run stays in memory.
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from opentelemetry import trace
from pydantic import BaseModel, ValidationError

from baton import failpoints
from baton.errors import (
    IdempotencyConflict,
    Invalid,
    InvalidContinues,
    InvalidInput,
    RunHeld,
    RunNotCancellable,
    RunNotEnded,
    RunNotFound,
    StoreError,
)
from baton.telemetry import NO_SPAN, span
from executors.platform.adapters import Scene
from executors.platform.agents import sessions_of, turns_carry_on
from executors.platform.chat_clients import ProviderConfig
from executors.platform.services import ChatClientFactory, Resources, RunServices
from executors.platform.transcript import history_of
from human import text
from human.access import can_see_run, check_can_cancel, viewer_of
from human.effects import EffectLedger
from human.policy import Policy
from human.records import (
    TERMINAL_RUN,
    AuditEvent,
    HumanRequest,
    JobLane,
    NewEvent,
    Page,
    Run,
    User,
)
from human.store.base import InPlay, KeyTaken, LocalWorker, Progress, RunKey, Store, utcnow
from workflows.platform import registry
from workflows.platform.drive import Drive, failed
from workflows.platform.engine import CheckpointOfOtherCode
from workflows.platform.graph import WorkflowGraph, describe
from workflows.platform.pool import KEPT_PER_WORKFLOW, Built, WorkflowPool

logger = logging.getLogger(__name__)

CANCEL_REASON_MAX: Final = 2000
"""The longest why a person may give for cancelling a run, in characters."""


class Runtime:
    """Starts, drives and cancels runs."""

    def __init__(
        self,
        store: Store,
        *,
        policy: Policy,
        model: str = "scripted",
        clock: Callable[[], datetime] = utcnow,
        provider: ProviderConfig | None = None,
        notify_channels: Sequence[str] = (),
        answer_channels: Sequence[str] = (),
        resources: Resources | None = None,
        kept_per_workflow: int = KEPT_PER_WORKFLOW,
    ) -> None:
        """`kept_per_workflow`: how many built instances of a reusable workflow to keep idle.

        `notify_channels` are told of the requests runs ask; `answer_channels` (those that follow
        a request to its end) of each a run's end or cancellation closes.
        """
        self.store = store
        self.resources = resources or Resources()
        self._channels = tuple(notify_channels)
        self._answer_channels = tuple(answer_channels)
        self._clients = ChatClientFactory(model, provider)
        self._clients.check()  # a provider missing a setting refuses to start, naming it
        self._policy = policy
        self._ledger = EffectLedger(store)
        self._clock = clock
        self._worker: LocalWorker | None = None
        self._shapes: dict[str, tuple[WorkflowGraph, bool]] = {}
        self.pool = WorkflowPool(
            lambda spec, run_id, run_input, started_by: self.services(
                spec, run_id, run_input, started_by=started_by
            ),
            keep=kept_per_workflow,
        )

    def attach_worker(self, worker: LocalWorker) -> None:
        """Hand the runs this process starts straight to its own worker (no lease round)."""
        self._worker = worker

    # runs -----------------------------------------------------------------------------------

    async def start(
        self,
        workflow: str,
        run_input: Any,
        *,
        actor: str,
        continues: str | None = None,
        viewer: User | None = None,
    ) -> Run:
        """Validate the input and store the run with its start job; the worker drives it.

        `continues`: an ended run whose conversation the new run carries on (`Run.continues`);
        `viewer`, when given, must be able to see it.
        """
        typed = typed_input(registry.get(workflow), run_input)
        if continues is not None:
            await self._check_continues(workflow, continues, viewer)
        return await self._start(workflow, typed, actor, continues=continues)

    async def start_once(
        self,
        workflow: str,
        run_input: Any,
        *,
        actor: str,
        key: str,
        continues: str | None = None,
        viewer: User | None = None,
    ) -> tuple[Run, bool]:
        """`start`, once per client Idempotency-Key: the run, and whether it is a replay.

        A start the same person made with `key` before returns that run when it asked the same
        workflow, input and `continues`, and is an `IdempotencyConflict` when it asked something
        else; nothing new is stored either way. Concurrent starts with one key store one run.
        """
        typed = typed_input(registry.get(workflow), run_input)
        asked: dict[str, Any] = {"workflow": workflow, "input": typed.model_dump(mode="json")}
        if continues is not None:
            asked["continues"] = continues  # (absent otherwise: older keys' digests still match)
        digest = hashlib.sha256(json.dumps(asked).encode()).hexdigest()
        run_key = RunKey(key=key, digest=digest)
        if continues is not None:
            await self._check_continues(workflow, continues, viewer)
        try:
            run = await self._start(workflow, typed, actor, key=run_key, continues=continues)
            return run, False
        except (KeyTaken, StoreError):
            found = await self.store.run_of_key(actor, key)
            if found is None:
                raise
        if found.digest != run_key.digest:
            raise IdempotencyConflict(
                f"Idempotency-Key {key[:40]!r} already started run {found.key} with another "
                "workflow or input; use a new key for a new run"
            )
        return await self.get(found.key), True

    async def started_with(self, key: str, *, actor: str) -> Run | None:
        """The run `actor` started with idempotency key `key` (`start_once`), if any."""
        found = await self.store.run_of_key(actor, key)
        return None if found is None else await self.store.get_run(found.key)

    async def _check_continues(self, workflow: str, continues: str, viewer: User | None) -> None:
        """That a run of `workflow` may continue run `continues`'s conversation."""
        try:
            earlier = await self.get(continues, viewer=viewer)
        except RunNotFound:
            msg = f"no run {continues[:80]} to continue"
            raise InvalidContinues(msg, [{"loc": ["continues"], "msg": msg}]) from None
        if earlier.status not in TERMINAL_RUN:
            raise RunNotEnded(
                f"run {earlier.id} is {earlier.status}: a run continues a conversation once it "
                "has ended (answer its requests, or cancel it)"
            )
        if not self.converses(workflow):
            msg = (
                f"workflow {workflow} starts on its typed input, not on a conversation: a run "
                "of it cannot continue another"
            )
            raise InvalidContinues(msg, [{"loc": ["continues"], "msg": msg}])

    async def _start(
        self,
        workflow: str,
        typed: BaseModel,
        actor: str,
        *,
        key: RunKey | None = None,
        continues: str | None = None,
    ) -> Run:
        now = self._clock()
        run = Run(
            id=f"run_{secrets.token_urlsafe(12)}",
            workflow=workflow,
            input=typed.model_dump(mode="json"),
            status="running",
            created_by=actor,
            created_at=now,
            updated_at=now,
            continues=continues,
        )
        data: dict[str, Any] = {"workflow": workflow, "input": run.input}
        if continues is not None:
            data["continues"] = continues
        event = NewEvent(type="run.started", run_id=run.id, actor=actor, data=data)
        job = await self.store.create_run(
            run, [event], lease=self._worker.lease if self._worker else None, key=key
        )
        failpoints.hit("start.after_commit")  # the start committed without waiting for the disk
        if job is not None and self._worker is not None:
            self._worker.accept(job, InPlay(run=run, open=[], answered=[]))  # nothing asked yet
        return run

    async def get(self, run_id: str, *, viewer: User | None = None) -> Run:
        """A run, or `RunNotFound` (also when `viewer` may not see it)."""
        run = await self.store.get_run(run_id)
        if run is None or (viewer is not None and not await self.can_see(run, viewer)):
            raise RunNotFound(f"no run {run_id}")
        return run

    async def can_see(self, run: Run, user: User) -> bool:
        """Whether `user` may see `run` (human.access)."""
        if user.role == "admin" or run.created_by == user.name:
            return True
        return can_see_run(user, run, await self.store.teams_of_run(run.id))

    async def list_runs(
        self,
        *,
        status: str | None = None,
        workflow: str | None = None,
        cursor: str | None = None,
        limit: int = 50,
        viewer: User | None = None,
    ) -> Page:
        """Runs, newest first (those `viewer` may see, when given)."""
        return await self.store.list_runs(
            status=status,
            workflow=workflow,
            cursor=cursor,
            limit=limit,
            visible_to=viewer_of(viewer) if viewer is not None else None,
        )

    async def continued_by(self, run_id: str, *, viewer: User) -> list[Run]:
        """The runs that continue `run_id`'s conversation, those `viewer` may see, oldest first."""
        found = []
        for later_id in await self.store.runs_continuing(run_id):
            later = await self.store.get_run(later_id)
            if later is not None and await self.can_see(later, viewer):
                found.append(later)
        return found

    async def conversations_before(
        self, run: Run, *, viewer: User | None = None
    ) -> list[tuple[str, list[dict[str, Any]]]]:
        """The runs whose conversation `run` continues (along `Run.continues`), oldest first.

        Each with its conversation (`conversation`); none for a run that continues none. With
        `viewer`, only the later ones they may see: from the first they may not, none before.
        """
        chain: list[str] = []
        at = run.continues
        while at is not None and at not in chain:
            earlier = await self.store.get_run(at)
            if earlier is None or (viewer is not None and not await self.can_see(earlier, viewer)):
                break
            chain.append(earlier.id)
            at = earlier.continues
        return [(run_id, await self.store.list_transcript(run_id)) for run_id in reversed(chain)]

    async def conversation(self, run_id: str) -> list[dict[str, Any]]:
        """A run's agent conversation: messages, tool calls and results, handoffs, asks, answers."""
        return await self.store.list_transcript(run_id)

    async def events(self, run_id: str, *, viewer: User) -> list[AuditEvent]:
        """The audit trail of a run `viewer` may see, oldest first."""
        await self.get(run_id, viewer=viewer)
        return await self.store.list_events(run_id=run_id)

    async def check_cancel(self, run_id: str, *, by: User) -> Run:
        """The run, if `by` may cancel it now (a page asks first); else what `cancel` raises."""
        run = await self.get(run_id, viewer=by)
        check_can_cancel(by)
        if run.status in TERMINAL_RUN:
            raise RunNotCancellable(
                f"run {run_id} already {run.status}",
                to_reader=f"You cannot cancel this run because {_ended_words(run.status)}.",
            )
        return run

    async def cancel(self, run_id: str, *, by: User, reason: str | None = None) -> Run:
        """Cancel a run that has not ended; its open requests close as cancelled.

        `reason`, the canceller's why, is recorded with the cancellation (its audit events);
        `Invalid` past `CANCEL_REASON_MAX` characters, nothing stored.
        """
        run = await self.check_cancel(run_id, by=by)
        reason = (reason or "").strip() or None
        if reason is not None and len(reason) > CANCEL_REASON_MAX:
            limit = f"at most {CANCEL_REASON_MAX} characters"
            raise Invalid(f"the reason is too long: {limit}", [{"loc": ["reason"], "msg": limit}])
        cancelled = await self.store.cancel_run(
            run_id, by.name, notify=self._answer_channels, reason=reason
        )
        if cancelled is None:
            raise RunNotCancellable(
                f"run {run_id} already {run.status}",
                to_reader=f"You cannot cancel this run because {_ended_words(run.status)}.",
            )
        if self._worker is not None:  # a drive of it here stops now (elsewhere: at its renewal)
            self._worker.stop_run(run_id)
        return cancelled

    # driving --------------------------------------------------------------------------------

    async def drive(self, run_id: str, job_id: int | None, in_play: InPlay | None = None) -> bool:
        """Advance a run as far as stored answers allow; True if `job_id` was consumed.

        Each step reads the run and its requests in play once (`Store.run_in_play`) and hands
        them to the drive; the next answer, if any, is read again after the step commits.
        `in_play` is that read for the first step, made by the transaction that queued the job
        (a start, an answer) in this process: its commit is fenced like any other.
        """
        state = in_play if in_play is not None else await self.store.run_in_play(run_id)
        if state is None or state.run.status in TERMINAL_RUN:
            return False
        if state.run.checkpoint_id is None:
            with span("baton.start", _span_attributes(state.run)):
                return await self._advance(state, job_id, deliver=None)
        consumed = False
        while state.answered:
            request, last = state.answered[0], len(state.answered) == 1
            with span("baton.resume", _span_attributes(state.run, request)):
                consumed = await self._advance(state, job_id if last else None, deliver=request)
            if last:
                break
            fresh = await self.store.run_in_play(run_id)
            if (
                fresh is None
                or fresh.run.status in TERMINAL_RUN
                or fresh.run.checkpoint_id == state.run.checkpoint_id
            ):
                break
            state = fresh
        return consumed

    def services(
        self,
        spec: registry.WorkflowSpec,
        run_id: str,
        run_input: dict[str, Any] | None = None,
        *,
        started_by: str | None = None,
    ) -> RunServices:
        """What the executors of one run of `spec` may use."""
        return RunServices(
            run_id=run_id,
            ledger=self._ledger,
            policy=self._policy,
            chat_clients=self._clients,
            resources=self.resources,
            run_input=dict(run_input or {}),
            case_context=spec.case_context,
            party=spec.party,
            started_by=started_by,
            outcome_schema=spec.outcome_schema(),
        )

    async def _advance(
        self, state: InPlay, job_id: int | None, *, deliver: HumanRequest | None
    ) -> bool:
        """Drive `state.run` once and commit what came of it; True if `job_id` was consumed.

        The instance goes back to the pool once the drive's progress is committed (or refused);
        one whose drive raised, or that is left for any other reason, is dropped (its agents'
        connections closed: `WorkflowPool.drop`).
        """
        spec = registry.get(state.run.workflow)
        held = _Held()
        try:
            return await self._drive(state, job_id, deliver, spec, held)
        finally:
            if held.built is not None and held.keep:
                await self.pool.give_back(spec, held.built)
            elif held.built is not None:
                await self.pool.drop(held.built)

    async def _drive(
        self,
        state: InPlay,
        job_id: int | None,
        deliver: HumanRequest | None,
        spec: registry.WorkflowSpec,
        held: _Held,
    ) -> bool:
        """`_advance`'s drive, on the instance it takes into `held` (`keep`: it may go back)."""
        run = state.run
        scene: Scene | None = None
        drive: Drive | None = None
        try:
            built = held.built = await self.pool.take(spec, run.id, run.input, run.created_by)
            services = built.services
            scene = Scene(services)
            if state.transcript is not None:  # read with the rest of what the drive needs
                services.transcript.history = state.transcript
            elif deliver is not None or spec.adapters is not None or services.policy.standing:
                # requests show people the run's conversation (one asked again in a later drive
                # too, as FIDES asks on replaying an approved call) and adapters read the run's
                # state from it; the gates find there the approvals a person let stand
                # (`tool_gate.stood_for`). A run's first drive has none stored yet.
                services.transcript.history = await self.store.list_transcript(run.id)
            earlier = await self.conversations_before(run) if deliver is None else []
            turns = turns_carry_on(built.workflow)
            history = [m for _, entries in earlier for m in history_of(entries, turns=turns)]
            drive = Drive(
                self.store,
                run,
                spec,
                built.workflow,
                services,
                scene,
                clock=self._clock,
                notify_channels=self._channels,
                checkpoint=state.checkpoint,
                history=history,
                sessions=sessions_of(earlier),
            )
            progress = await drive.go(job_id, deliver, [*state.open, *state.answered])
        except StoreError:
            raise  # the store is down, not the run: the worker retries the job
        except CheckpointOfOtherCode as exc:
            # A deploy changed the workflow since the run paused: the run keeps waiting, its
            # answer undelivered, and the worker retries the job (backing off to hourly) until
            # the code that paused it runs again, or someone cancels the run. The job's recorded
            # error says so (`RunHeld: ...`), and the run's page shows it.
            logger.exception("run held: its checkpoint is of other code", extra={"run_id": run.id})
            raise RunHeld(str(exc)) from exc
        except Exception as exc:  # a failing workflow fails its run, loudly and on record
            if held.built is not None and held.built.services.store_failures:
                # a tool met the store down: neither is the run's fault
                raise held.built.services.store_failures[0] from exc
            if held.built is not None and held.built.services.run_ended:
                return _ended_under(run)  # not kept: it stopped mid-superstep
            logger.exception("run failed", extra={"run_id": run.id})
            # an instance whose drive raised may be mid-superstep: not kept
            return await self._commit(
                run,
                failed(
                    run,
                    job_id,
                    deliver,
                    f"{type(exc).__name__}: {exc}",
                    scene.events if scene else (),
                    held.built.services.transcript.entries if held.built else (),
                    held.built.services.effects if held.built else (),
                    drive.output_so_far() if drive is not None else None,
                ),
                job_id,
                deliver,
            )
        if services.store_failures:
            raise services.store_failures[0]  # told to the model as the tool's error: void
        held.keep = True  # reset once its progress is committed (or refused)
        if services.run_ended:
            return _ended_under(run)  # MAF told the model; the drive ran to its end
        return await self._commit(run, progress, job_id, deliver)

    async def _commit(
        self, run: Run, progress: Progress, job_id: int | None, deliver: HumanRequest | None
    ) -> bool:
        """Commit what a drive of `run` came to; True if `job_id` was consumed."""
        if progress.status == "waiting":
            failpoints.hit("pause.after_checkpoint")
        elif progress.status in TERMINAL_RUN and self._answer_channels:
            progress = progress.model_copy(update={"closing_channels": self._answer_channels})
        with _pause_span(run, progress) as pausing:
            committed = await self.store.record_progress(progress)
            pausing.set_attribute("baton.committed", committed)
        if not committed:
            logger.warning("progress fenced off: run moved on", extra={"run_id": run.id})
            return False
        logger.info(
            "run progressed",
            extra={
                "run_id": run.id,
                "status": progress.status,
                "delivered": deliver.id if deliver else None,
                "new_requests": [r.id for r in progress.new_requests],
            },
        )
        if progress.status == "waiting":
            failpoints.hit("pause.after_commit")
        if deliver is not None:
            failpoints.hit("resume.after_commit")
        if self._worker is not None and (lanes := _queued_lanes(progress)):
            self._worker.wake(lanes)  # what the progress queued, for this process's worker
        return job_id is not None

    # graphs ---------------------------------------------------------------------------------

    def graph(self, workflow: str) -> WorkflowGraph:
        """The graph of a registered workflow (built once per process: every build is the same)."""
        return self._shape(workflow)[0]

    def converses(self, workflow: str) -> bool:
        """Whether a run of `workflow` can continue a conversation (`WorkflowSpec.converses`)."""
        return self._shape(workflow)[1]

    def _shape(self, workflow: str) -> tuple[WorkflowGraph, bool]:
        """What one instance of a workflow tells of every build of it (built once a process)."""
        found = self._shapes.get(workflow)
        if found is None:
            spec = registry.get(workflow)
            instance = spec.graph(self.services(spec, f"graph-{workflow}"))
            found = self._shapes[workflow] = (describe(instance), spec.converses(instance))
        return found


def typed_input(spec: registry.WorkflowSpec, run_input: Any) -> BaseModel:
    """`run_input` validated as the workflow's input model; `InvalidInput` naming the bad field."""
    unstorable = text.problems(run_input)
    if unstorable:  # nothing that cannot be stored and read back reaches the store
        errors = [{"loc": ["input", *loc], "msg": msg} for loc, msg in unstorable[:20]]
        where = text.where(unstorable[0][0])
        raise InvalidInput(f"invalid input for {spec.name}: {where}: {unstorable[0][1]}", errors)
    model = spec.input_model
    if model.model_config.get("extra") is None and isinstance(run_input, dict):
        # unknown fields are refused unless the workflow's model says what to do with them
        known = {f.alias or n for n, f in model.model_fields.items()} | set(model.model_fields)
        unknown = sorted(str(k) for k in run_input if k not in known)
        if unknown:
            errors = [{"loc": ["input", k[:80]], "msg": "unknown field"} for k in unknown[:20]]
            raise InvalidInput(
                f"invalid input for {spec.name}: {unknown[0][:80]}: unknown field "
                f"(known: {', '.join(sorted(model.model_fields))})",
                errors,
            )
    try:
        return model.model_validate(run_input)
    except ValidationError as exc:
        errors = [
            {"loc": ["input", *(str(p) for p in e["loc"])], "msg": e["msg"]}
            for e in exc.errors(include_url=False)
        ]
        where = ".".join(errors[0]["loc"][1:]) or "input"
        raise InvalidInput(
            f"invalid input for {spec.name}: {where}: {errors[0]['msg']}", errors
        ) from exc


@dataclass
class _Held:
    """The instance a drive took from the pool, and whether it may go back (`Runtime._advance`)."""

    built: Built | None = None
    keep: bool = False


def _ended_under(run: Run) -> bool:
    """A drive whose run ended (was cancelled) under it: nothing of it is committed.

    The ledger refused its tool's call; its progress would be fenced off. Its job is not
    consumed: the worker ends it.
    """
    logger.info("drive dropped: the run ended under it", extra={"run_id": run.id})
    return False


def _span_attributes(run: Run, deliver: HumanRequest | None = None) -> dict[str, str]:
    attributes = {"baton.run_id": run.id, "baton.workflow": run.workflow}
    if deliver is not None:
        attributes["baton.request_id"] = deliver.id
        attributes["baton.decision"] = str((deliver.answer or {}).get("decision"))
    return attributes


def _pause_span(run: Run, progress: Progress) -> AbstractContextManager[trace.Span]:
    """`baton.pause` around the commit of a pause; other commits get no span of their own."""
    if progress.status != "waiting":
        return NO_SPAN
    return span(
        "baton.pause",
        {**_span_attributes(run), "baton.request_ids": [r.id for r in progress.new_requests]},
    )


def _queued_lanes(progress: Progress) -> set[JobLane]:
    """The lanes of the jobs a drive's progress queues besides drives (leased as they are queued).

    The drive's own job ends after it, and a worker looks in its lane again then.
    """
    return {
        *(("delivery",) if progress.notifications else ()),
        *(("work",) if progress.timers else ()),
    }


def _ended_words(status: str) -> str:
    """How a run that ended ended, after "because": `it has already completed`."""
    return "it was already cancelled" if status == "cancelled" else f"it has already {status}"
