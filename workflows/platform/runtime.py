"""The runtime: starts runs, turns `request_info` into HumanRequests, resumes runs with answers.

A drive of a run builds a fresh workflow instance, restores it from the run's current checkpoint
(or seeds it with the input), delivers at most one answer, and commits everything that came of it
in one fenced transaction. Nothing of a paused run stays in memory.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import Any

from agent_framework import AgentResponse, WorkflowRunResult, WorkflowRunState
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
from executors.platform.adapters import (
    ORIGIN,
    Ask,
    Finish,
    Kinds,
    Outcome,
    Reply,
    Scene,
    adapter_for,
    maf_request_id,
    origin_of,
    take_over,
)
from executors.platform.chat_clients import ProviderConfig
from executors.platform.run_end import END_EVENT
from executors.platform.services import ChatClientFactory, Resources, RunServices
from executors.platform.tool_gate import AUDIT_EVENT
from human.access import can_see_run, check_can_cancel, viewer_of
from human.effects import EffectLedger
from human.kinds import KINDS, ApprovalRequest, Routing, kind_of
from human.policy import Policy
from human.records import TERMINAL_RUN, AuditEvent, HumanRequest, NewEvent, Page, Run, User
from human.routing import notifications_for, timers_for
from human.service import TAKEOVER
from human.store.base import LocalWorker, Progress, Store, utcnow
from workflows.platform import registry
from workflows.platform.checkpoints import RunCheckpointStorage
from workflows.platform.graph import WorkflowGraph, describe

logger = logging.getLogger(__name__)
_tracer = trace.get_tracer("baton")

_ROUTING_FIELDS = set(Routing.model_fields)


class Runtime:
    """Starts, drives and cancels runs."""

    def __init__(
        self,
        store: Store,
        *,
        policy: Policy,
        model: str = "scripted",
        clock: Callable[[], datetime] = utcnow,
        on_change: Callable[[str, str], None] | None = None,
        provider: ProviderConfig | None = None,
        notify_channels: Sequence[str] = (),
        resources: Resources | None = None,
    ) -> None:
        self.store = store
        self.resources = resources or Resources()
        self._channels = tuple(notify_channels)
        self._clients = ChatClientFactory(model, provider)
        self._clients.check()  # a provider missing a setting refuses to start, naming it
        self._policy = policy
        self._ledger = EffectLedger(store)
        self._clock = clock
        self._on_change = on_change or (lambda kind, run_id: None)
        self._worker: LocalWorker | None = None
        self._graphs: dict[str, WorkflowGraph] = {}

    @property
    def notify_channels(self) -> tuple[str, ...]:
        """The channels each new request gets an outbox row for."""
        return self._channels

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

    async def conversation(self, run_id: str) -> list[dict[str, Any]]:
        """A run's agent conversation: messages, tool calls and results, handoffs, asks, answers."""
        return await self.store.list_transcript(run_id)

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

    def services(
        self, spec: registry.WorkflowSpec, run_id: str, run_input: dict[str, Any] | None = None
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
        )

    async def _advance(self, run: Run, job_id: int | None, *, deliver: HumanRequest | None) -> bool:
        spec = registry.get(run.workflow)
        services = self.services(spec, run.id, run.input)
        scene = Scene(services)
        try:
            if spec.adapters is not None:
                # adapters show people the conversation and read the run's state from it
                services.transcript.history = await self.store.list_transcript(run.id)
            drive = _Drive(self, run, spec, services, scene)
            progress = await drive.go(job_id, deliver)
        except StoreError:
            raise  # the store is down, not the run: the worker retries the job
        except Exception as exc:  # a failing workflow fails its run, loudly and on record
            logger.exception("run failed", extra={"run_id": run.id})
            progress = self._failure(
                run,
                job_id,
                deliver,
                f"{type(exc).__name__}: {exc}",
                scene.events,
                services.transcript.entries,
            )
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

    def _failure(
        self,
        run: Run,
        job_id: int | None,
        deliver: HumanRequest | None,
        error: str,
        events: Sequence[NewEvent] = (),
        transcript: Sequence[dict[str, Any]] = (),
    ) -> Progress:
        return Progress(
            run_id=run.id,
            expected_checkpoint_id=run.checkpoint_id,
            job_id=job_id,
            status="failed",
            error=error,
            delivered_request_ids=[deliver.id] if deliver else [],
            events=[
                *events,
                NewEvent(type="run.failed", run_id=run.id, data={"error": error}),
            ],
            transcript=list(transcript),
        )

    def _request_of(
        self, run: Run, maf_id: str, ask: Ask, *, label: str, executor_id: str | None
    ) -> HumanRequest:
        data = ask.request
        kind = kind_of(data)
        if kind is None:
            raise TypeError(f"not a Baton request model: {type(data).__name__}")
        now = self._clock()
        proposed = None
        arguments_schema = None
        if isinstance(data, ApprovalRequest):
            proposed = data.proposed_action.model_dump(mode="json")
            arguments_schema = data.proposed_action.arguments_schema
        payload = data.model_dump(mode="json", exclude=_ROUTING_FIELDS | {"proposed_action"})
        if ask.origin:
            payload[ORIGIN] = {**ask.origin, "maf_request_id": maf_id}
        return HumanRequest(
            id=f"req_{secrets.token_urlsafe(16)}",
            run_id=run.id,
            # unique per run: an answer that asks again binds a new request to the same MAF one
            maf_request_id=label,
            kind=kind.name,
            title=data.title,
            reason=data.reason,
            # as JSON: a model or date in the context would otherwise be stored as its str()
            context=data.model_dump(mode="json", include={"context"})["context"],
            proposed_action=proposed,
            payload=payload,
            allowed_decisions=list(kind.decisions),
            response_schema=kind.response_schema(arguments_schema),
            team=data.team,
            assignee=ask.assignee,
            priority=data.priority,
            status="pending",
            created_at=now,
            expires_at=now + timedelta(seconds=data.expires_in_s) if data.expires_in_s else None,
            approvals_required=data.approvals_required,
            policy_rule=data.policy_rule,
            escalation=[e.model_dump(mode="json", exclude_none=True) for e in data.escalation],
            executor_id=executor_id,
        )

    # graphs ---------------------------------------------------------------------------------

    def graph(self, workflow: str) -> WorkflowGraph:
        """The graph of a registered workflow (built once per process: every build is the same)."""
        found = self._graphs.get(workflow)
        if found is None:
            spec = registry.get(workflow)
            found = describe(spec.build(self.services(spec, f"graph-{workflow}")))
            self._graphs[workflow] = found
        return found


class _Drive:
    """One drive of a run: deliver at most one answer, settle what MAF asks, commit the result.

    Every `request_info` goes through the workflow's request adapters
    (`executors.platform.adapters`): an adapter asks a person (`Ask`), answers MAF at once
    (`Reply`, e.g. a policy's auto decision), or ends the run (`Finish`). Replies are fed back to
    the same workflow instance until MAF waits only on people; then one checkpoint covering every
    pending request is committed with them.
    """

    def __init__(
        self,
        runtime: Runtime,
        run: Run,
        spec: registry.WorkflowSpec,
        services: RunServices,
        scene: Scene,
    ) -> None:
        self._runtime = runtime
        self._run = run
        self._spec = spec
        self._services = services
        self._scene = scene
        self._workflow = spec.build(services)
        self._storage = RunCheckpointStorage(runtime.store, run.id, spec.allowed_types)
        self._adapters = spec.request_adapters(services)
        self._results: list[WorkflowRunResult] = []
        # (MAF request id, ask, HumanRequest label, the executor that asked)
        self._asks: list[tuple[str, Ask, str, str | None]] = []

    async def go(self, job_id: int | None, deliver: HumanRequest | None) -> Progress:
        run, store = self._run, self._runtime.store
        waiting = [*await store.open_requests(run.id), *await store.answered_requests(run.id)]
        still_open = {maf_request_id(r) for r in waiting if deliver is None or r.id != deliver.id}
        known = set(still_open)
        events: list[NewEvent] = []
        finish: Finish | None = None
        if deliver is None:
            typed = self._spec.input_model.model_validate(run.input)
            message = self._spec.first_message(typed)
            self._scene.note(
                {
                    "type": "message",
                    "role": "user",
                    "by": "user",
                    "from_user": True,
                    "text": message,
                }
                if isinstance(message, str)
                else {"type": "input", "input": run.input}
            )
            await self._run_workflow(message)
        else:
            events.append(
                NewEvent(
                    type="run.resumed",
                    run_id=run.id,
                    request_id=deliver.id,
                    data={"decision": (deliver.answer or {}).get("decision")},
                )
            )
            finish = await self._deliver(deliver, known)
        if finish is None:
            finish = await self._settle(known)
        events += self._scene.events
        events += [
            NewEvent(type=e.data["type"], run_id=run.id, data=e.data["data"])
            for result in self._results
            for e in result
            if e.type == AUDIT_EVENT
        ]
        base: dict[str, Any] = {
            "run_id": run.id,
            "expected_checkpoint_id": run.checkpoint_id,
            "job_id": job_id,
            "delivered_request_ids": [deliver.id] if deliver else [],
        }
        failure = next((e for r in self._results for e in r if e.type == "failed"), None)
        state = self._results[-1].get_final_state() if self._results else None
        if failure is not None or state == WorkflowRunState.FAILED:
            details = getattr(failure, "details", None)
            message = getattr(details, "message", None) or "the workflow failed"
            return self._runtime._failure(
                run, job_id, deliver, message, events, self._services.transcript.entries
            )
        if finish is not None:
            events.append(
                NewEvent(type="run.completed", run_id=run.id, data={"output": finish.output})
            )
            return Progress(
                status="completed",
                output=finish.output,
                events=events,
                transcript=self._services.transcript.entries,
                **base,
            )
        # A workflow that called `end_run` completes now; what it still waited for is cancelled.
        ended = any(e.type == END_EVENT for r in self._results for e in r)
        pending = [] if ended else [*(maf_id for maf_id, *_ in self._asks), *still_open]
        if not pending and not ended and state == WorkflowRunState.IDLE_WITH_PENDING_REQUESTS:
            raise PauseNotDurable("the workflow waits on requests Baton does not know of")
        if pending:
            checkpoint_id = await self._workflow.resolve_pause_checkpoint_id(
                pending, checkpoint_storage=self._storage
            )
            if checkpoint_id is None:
                raise PauseNotDurable(
                    f"no saved checkpoint covers requests {pending}; refusing a pause that a "
                    "restart would lose"
                )
            requests = [
                self._runtime._request_of(run, maf_id, ask, label=label, executor_id=executor_id)
                for maf_id, ask, label, executor_id in self._asks
            ]
            for r in requests:
                events.append(
                    NewEvent(
                        type="request.created",
                        run_id=run.id,
                        request_id=r.id,
                        data={
                            "kind": r.kind,
                            "team": r.team,
                            "title": r.title,
                            "policy_rule": r.policy_rule,
                            **(
                                {"takeover_of": origin_of(r)["taken_over_request"]}
                                if "taken_over_request" in origin_of(r)
                                else {}
                            ),
                        },
                    )
                )
                self._scene.note(
                    {
                        "type": "request",
                        "request_id": r.id,
                        "kind": r.kind,
                        "team": r.team,
                        "title": r.title,
                    }
                )
            channels = self._runtime.notify_channels
            return Progress(
                status="waiting",
                checkpoint=self._storage.draft(checkpoint_id),
                new_requests=requests,
                events=events,
                transcript=self._services.transcript.entries,
                timers=[t for r in requests for t in timers_for(r)],
                notifications=[
                    n for r in requests for n in notifications_for(r, channels, "created")
                ],
                **base,
            )
        output = _jsonable([o for r in self._results for o in r.get_outputs()])
        events.append(NewEvent(type="run.completed", run_id=run.id, data={"output": output}))
        return Progress(
            status="completed",
            output=output,
            events=events,
            transcript=self._services.transcript.entries,
            **base,
        )

    async def _run_workflow(self, message: Any = None, **kwargs: Any) -> WorkflowRunResult:
        result: WorkflowRunResult = await self._workflow.run(
            message, checkpoint_storage=self._storage, **kwargs
        )
        self._results.append(result)
        return result

    async def _deliver(self, deliver: HumanRequest, known: set[str]) -> Finish | None:
        """Deliver one answer: MAF gets a response, a person is asked again, or the run ends."""
        body = deliver.answer or {}
        self._scene.note(
            {
                "type": "answer",
                "request_id": deliver.id,
                "kind": deliver.kind,
                "by": deliver.answered_by,
                "decision": body.get("decision"),
                "text": _said(body),
            }
        )
        maf_id = maf_request_id(deliver)
        outcome: Outcome
        if body.get("decision") == TAKEOVER:
            outcome = take_over(deliver, str(body.get("by") or deliver.answered_by), self._scene)
        else:
            answer = KINDS[deliver.kind].answer_model.model_validate(body)
            adapter = adapter_for(self._adapters, deliver)
            outcome = await adapter.deliver(deliver, answer, self._scene)
            if isinstance(outcome, Ask):
                origin = {"adapter": adapter.name, **origin_of(deliver), **outcome.origin}
                outcome = Ask(outcome.request, origin, outcome.assignee)
        checkpoint_id = self._run.checkpoint_id
        if isinstance(outcome, Finish):
            return outcome
        if isinstance(outcome, Reply):
            await self._run_workflow(
                checkpoint_id=checkpoint_id, responses={maf_id: outcome.response}
            )
            return None
        # asked again: the MAF request stays pending; restoring re-emits it in a fresh checkpoint
        known.add(maf_id)
        label = f"{maf_id}#{secrets.token_hex(4)}"
        self._asks.append((maf_id, outcome, label, deliver.executor_id))
        await self._run_workflow(checkpoint_id=checkpoint_id)
        return None

    async def _settle(self, known: set[str]) -> Finish | None:
        """Hand each new MAF request to its adapter; feed MAF the replies until only people wait."""
        while self._results:
            replies: dict[str, Any] = {}
            for event in self._results[-1].get_request_info_events():
                maf_id = str(event.request_id)
                if maf_id in known:
                    continue  # a restore re-emits what is already waiting
                known.add(maf_id)
                adapter = next((a for a in self._adapters if a.accepts(event)), None)
                if adapter is None:
                    raise TypeError(
                        f"no request adapter of workflow {self._spec.name} takes a "
                        f"{type(event.data).__name__} request (from {event.source_executor_id})"
                    )
                outcome = await adapter.ask(event, self._scene)
                if isinstance(outcome, Finish):
                    return outcome
                if isinstance(outcome, Reply):
                    replies[maf_id] = outcome.response
                    continue
                origin = (
                    {}
                    if adapter.name == Kinds.name and not outcome.origin
                    else {"adapter": adapter.name, **outcome.origin}
                )
                ask = Ask(outcome.request, origin, outcome.assignee)
                self._asks.append((maf_id, ask, maf_id, event.source_executor_id))
            if not replies:
                return None
            await self._run_workflow(responses=replies)
        return None


def _said(answer: dict[str, Any]) -> Any:
    for field in ("answer", "resolution", "guidance", "reason", "content", "arguments"):
        if answer.get(field) not in (None, "", {}):
            return answer[field]
    return None


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
    values = [_plain(o) for o in outputs]
    return values[0] if len(values) == 1 else values


def _plain(output: Any) -> Any:
    if isinstance(output, BaseModel):
        return output.model_dump(mode="json")
    if isinstance(output, AgentResponse):  # an agent's turn, as the handoff orchestration yields it
        return {
            "agent": output.messages[-1].author_name if output.messages else None,
            "text": output.text,
        }
    return output
