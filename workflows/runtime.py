"""The runtime: starts runs, turns `request_info` into HumanRequests, resumes runs with answers.

A drive of a run builds a fresh workflow instance, restores it from the run's current checkpoint
(or seeds it with the input), delivers at most one answer, and commits everything that came of it
in one fenced transaction. Nothing of a paused run stays in memory.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import Any

from agent_framework import WorkflowEvent, WorkflowRunResult, WorkflowRunState
from opentelemetry import trace
from pydantic import BaseModel, ValidationError

from baton import failpoints
from baton.errors import (
    InvalidInput,
    PauseNotDurable,
    RunNotCancellable,
    RunNotFound,
    StoreError,
)
from executors.services import ChatClientFactory, RunServices
from executors.tool_gate import AUDIT_EVENT
from human.access import can_see_run, check_can_cancel, viewer_of
from human.effects import EffectLedger
from human.kinds import KINDS, ApprovalRequest, Routing, kind_of
from human.policy import Policy, default_policy
from human.records import TERMINAL_RUN, AuditEvent, HumanRequest, NewEvent, Page, Run, User
from human.store.base import LocalWorker, Progress, Store, utcnow
from workflows import registry
from workflows.checkpoints import RunCheckpointStorage
from workflows.graph import WorkflowGraph, describe

logger = logging.getLogger(__name__)
_tracer = trace.get_tracer("baton")

_ROUTING_FIELDS = set(Routing.model_fields)


class Runtime:
    """Starts, drives and cancels runs."""

    def __init__(
        self,
        store: Store,
        *,
        model: str = "scripted",
        policy: Policy | None = None,
        clock: Callable[[], datetime] = utcnow,
        on_change: Callable[[str, str], None] | None = None,
        workflow_modules: str = "",
    ) -> None:
        registry.load(workflow_modules)
        self.store = store
        self._clients = ChatClientFactory(model)
        self._policy = policy or default_policy()
        self._ledger = EffectLedger(store)
        self._clock = clock
        self._on_change = on_change or (lambda kind, run_id: None)
        self._worker: LocalWorker | None = None
        self._graphs: dict[str, WorkflowGraph] = {}

    def attach_worker(self, worker: LocalWorker) -> None:
        """Hand the runs this process starts straight to its own worker (no lease round)."""
        self._worker = worker

    # runs -----------------------------------------------------------------------------------

    async def start(self, workflow: str, run_input: Any, *, actor: str) -> Run:
        """Validate the input and store the run with its start job; the worker drives it."""
        spec = registry.get(workflow)
        try:
            typed = spec.input_model.model_validate(run_input)
        except ValidationError as exc:
            errors = [
                {"loc": ["body", "input", *(str(p) for p in e["loc"])], "msg": e["msg"]}
                for e in exc.errors(include_url=False)
            ]
            where = ".".join(errors[0]["loc"][2:]) or "input"
            raise InvalidInput(
                f"invalid input for {workflow}: {where}: {errors[0]['msg']}", errors
            ) from exc
        now = self._clock()
        run = Run(
            id=f"run_{secrets.token_urlsafe(12)}",
            workflow=workflow,
            input=typed.model_dump(mode="json"),
            status="running",
            created_by=actor,
            created_at=now,
            updated_at=now,
        )
        event = NewEvent(
            type="run.started",
            run_id=run.id,
            actor=actor,
            data={"workflow": workflow, "input": run.input},
        )
        job = await self.store.create_run(
            run, [event], lease=self._worker.lease if self._worker else None
        )
        if job is not None and self._worker is not None:
            self._worker.accept(job)
        self._on_change("run", run.id)
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

    async def events(self, run_id: str, *, viewer: User) -> list[AuditEvent]:
        """The audit trail of a run `viewer` may see, oldest first."""
        await self.get(run_id, viewer=viewer)
        return await self.store.list_events(run_id=run_id)

    async def cancel(self, run_id: str, *, by: User) -> Run:
        """Cancel a run that has not ended; its open requests close as cancelled."""
        run = await self.get(run_id, viewer=by)
        check_can_cancel(by)
        cancelled = await self.store.cancel_run(run_id, by.name)
        if cancelled is None:
            raise RunNotCancellable(f"run {run_id} already {run.status}")
        self._on_change("run", run_id)
        return cancelled

    # driving --------------------------------------------------------------------------------

    async def drive(self, run_id: str, job_id: int | None) -> bool:
        """Advance a run as far as stored answers allow; True if `job_id` was consumed."""
        run = await self.store.get_run(run_id)
        if run is None or run.status in TERMINAL_RUN:
            return False
        if run.checkpoint_id is None:
            with _tracer.start_as_current_span("baton.start", attributes=_span_attributes(run)):
                return await self._advance(run, job_id, deliver=None)
        answered = await self.store.answered_requests(run_id)
        consumed = False
        for index, request in enumerate(answered):
            last = index == len(answered) - 1
            with _tracer.start_as_current_span(
                "baton.resume", attributes=_span_attributes(run, request)
            ):
                consumed = await self._advance(run, job_id if last else None, deliver=request)
            fresh = await self.store.get_run(run_id)
            if (
                fresh is None
                or fresh.status in TERMINAL_RUN
                or fresh.checkpoint_id == run.checkpoint_id
            ):
                break
            run = fresh
        return consumed

    def services(self, run_id: str) -> RunServices:
        """What the executors of one run may use."""
        return RunServices(
            run_id=run_id,
            ledger=self._ledger,
            back_office=self.store,
            policy=self._policy,
            chat_clients=self._clients,
        )

    async def _advance(self, run: Run, job_id: int | None, *, deliver: HumanRequest | None) -> bool:
        spec = registry.get(run.workflow)
        workflow = spec.build(self.services(run.id))
        storage = RunCheckpointStorage(self.store, run.id, spec.allowed_types)
        try:
            if deliver is None:
                result = await workflow.run(
                    spec.input_model.model_validate(run.input), checkpoint_storage=storage
                )
            else:
                answer = KINDS[deliver.kind].answer_model.model_validate(deliver.answer)
                result = await workflow.run(
                    checkpoint_id=run.checkpoint_id,
                    responses={deliver.maf_request_id: answer},
                    checkpoint_storage=storage,
                )
            progress = await self._progress_of(run, job_id, deliver, workflow, storage, result)
        except StoreError:
            raise  # the store is down, not the run: the worker retries the job
        except Exception as exc:  # a failing workflow fails its run, loudly and on record
            logger.exception("run failed", extra={"run_id": run.id})
            progress = self._failure(run, job_id, deliver, f"{type(exc).__name__}: {exc}")
        if progress.status == "waiting":
            failpoints.hit("pause.after_checkpoint")
        with _pause_span(run, progress) as span:
            committed = await self.store.record_progress(progress)
            span.set_attribute("baton.committed", committed)
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
        for request in progress.new_requests:
            self._on_change("request", request.id)
        self._on_change("run", run.id)
        return job_id is not None

    async def _progress_of(
        self,
        run: Run,
        job_id: int | None,
        deliver: HumanRequest | None,
        workflow: Any,
        storage: RunCheckpointStorage,
        result: WorkflowRunResult,
    ) -> Progress:
        events: list[NewEvent] = []
        if deliver is not None:
            events.append(
                NewEvent(
                    type="run.resumed",
                    run_id=run.id,
                    request_id=deliver.id,
                    data={"decision": (deliver.answer or {}).get("decision")},
                )
            )
        events += [
            NewEvent(type=e.data["type"], run_id=run.id, data=e.data["data"])
            for e in result
            if e.type == AUDIT_EVENT
        ]
        failure = next((e for e in result if e.type == "failed"), None)
        state = result.get_final_state()
        if failure is not None or state == WorkflowRunState.FAILED:
            details = getattr(failure, "details", None)
            message = getattr(details, "message", None) or "the workflow failed"
            return self._failure(run, job_id, deliver, message, events)
        waiting = [
            *await self.store.open_requests(run.id),
            *await self.store.answered_requests(run.id),
        ]
        still_open = [r.maf_request_id for r in waiting if deliver is None or r.id != deliver.id]
        # A restore re-emits the requests still pending; only the others are new.
        asked = [e for e in result.get_request_info_events() if e.request_id not in still_open]
        pending = [e.request_id for e in asked] + still_open
        if not pending and state == WorkflowRunState.IDLE_WITH_PENDING_REQUESTS:
            raise PauseNotDurable("the workflow waits on requests Baton does not know of")
        base = {
            "run_id": run.id,
            "expected_checkpoint_id": run.checkpoint_id,
            "job_id": job_id,
            "delivered_request_ids": [deliver.id] if deliver else [],
        }
        if pending:
            checkpoint_id = await workflow.resolve_pause_checkpoint_id(
                pending, checkpoint_storage=storage
            )
            if checkpoint_id is None:
                raise PauseNotDurable(
                    f"no saved checkpoint covers requests {pending}; refusing a pause that a "
                    "restart would lose"
                )
            requests = [self._request_of(run, e) for e in asked]
            events += [
                NewEvent(
                    type="request.created",
                    run_id=run.id,
                    request_id=r.id,
                    data={
                        "kind": r.kind,
                        "team": r.team,
                        "title": r.title,
                        "policy_rule": r.policy_rule,
                    },
                )
                for r in requests
            ]
            return Progress(
                status="waiting",
                checkpoint=storage.draft(checkpoint_id),
                new_requests=requests,
                events=events,
                **base,
            )
        output = _jsonable(result.get_outputs())
        events.append(NewEvent(type="run.completed", run_id=run.id, data={"output": output}))
        return Progress(status="completed", output=output, events=events, **base)

    def _failure(
        self,
        run: Run,
        job_id: int | None,
        deliver: HumanRequest | None,
        error: str,
        events: list[NewEvent] | None = None,
    ) -> Progress:
        return Progress(
            run_id=run.id,
            expected_checkpoint_id=run.checkpoint_id,
            job_id=job_id,
            status="failed",
            error=error,
            delivered_request_ids=[deliver.id] if deliver else [],
            events=[
                *(events or []),
                NewEvent(type="run.failed", run_id=run.id, data={"error": error}),
            ],
        )

    def _request_of(self, run: Run, event: WorkflowEvent[Any]) -> HumanRequest:
        data = event.data
        kind = kind_of(data)
        if kind is None or not isinstance(data, Routing):
            raise TypeError(
                "request_info data must be a Baton request model (human.kinds), "
                f"got {type(data).__name__}"
            )
        if event.response_type is not kind.answer_model:
            raise TypeError(
                f"a {kind.name} request must expect {kind.answer_model.__name__}, "
                f"not {getattr(event.response_type, '__name__', event.response_type)}"
            )
        now = self._clock()
        proposed = None
        arguments_schema = None
        if isinstance(data, ApprovalRequest):
            proposed = data.proposed_action.model_dump(mode="json")
            arguments_schema = data.proposed_action.arguments_schema
        return HumanRequest(
            id=f"req_{secrets.token_urlsafe(16)}",
            run_id=run.id,
            maf_request_id=str(event.request_id),
            kind=kind.name,
            title=data.title,
            reason=data.reason,
            # as JSON: a model or date in the context would otherwise be stored as its str()
            context=data.model_dump(mode="json", include={"context"})["context"],
            proposed_action=proposed,
            payload=data.model_dump(mode="json", exclude=_ROUTING_FIELDS | {"proposed_action"}),
            allowed_decisions=list(kind.decisions),
            response_schema=kind.response_schema(arguments_schema),
            team=data.team,
            priority=data.priority,
            status="pending",
            created_at=now,
            expires_at=now + timedelta(seconds=data.expires_in_s) if data.expires_in_s else None,
            approvals_required=data.approvals_required,
            policy_rule=data.policy_rule,
            executor_id=event.source_executor_id,
        )

    # graphs ---------------------------------------------------------------------------------

    def graph(self, workflow: str) -> WorkflowGraph:
        """The graph of a registered workflow (built once per process: every build is the same)."""
        found = self._graphs.get(workflow)
        if found is None:
            spec = registry.get(workflow)
            found = describe(spec.build(self.services(f"graph-{workflow}")))
            self._graphs[workflow] = found
        return found


def _span_attributes(run: Run, deliver: HumanRequest | None = None) -> dict[str, str]:
    attributes = {"baton.run_id": run.id, "baton.workflow": run.workflow}
    if deliver is not None:
        attributes["baton.request_id"] = deliver.id
        attributes["baton.decision"] = str((deliver.answer or {}).get("decision"))
    return attributes


def _pause_span(run: Run, progress: Progress) -> AbstractContextManager[trace.Span]:
    """`baton.pause` around the commit of a pause; other commits get no span of their own."""
    if progress.status != "waiting":
        return contextlib.nullcontext(trace.INVALID_SPAN)
    return _tracer.start_as_current_span(
        "baton.pause",
        attributes={
            **_span_attributes(run),
            "baton.request_ids": [r.id for r in progress.new_requests],
        },
    )


def _jsonable(outputs: list[Any]) -> Any:
    values = [o.model_dump(mode="json") if isinstance(o, BaseModel) else o for o in outputs]
    return values[0] if len(values) == 1 else values
