"""One drive of a run: deliver at most one answer, settle what MAF asks, produce the progress.

The runtime (`workflows.platform.runtime`) hands each drive a workflow instance, built for it or
kept and reset (`workflows.platform.pool`), and commits the `Progress` a drive returns in one
fenced transaction; the drive itself writes nothing. The drive runs, snapshots and restores its
instance through an engine (`workflows.platform.engine`: a graph, or a functional workflow), and
takes one snapshot, the pause's (`_snapshot`).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from agent_framework import AgentResponse, Message, WorkflowRunResult, WorkflowRunState
from agent_framework.exceptions import WorkflowCheckpointException
from pydantic import BaseModel

from baton.errors import PauseNotDurable
from executors.platform.adapters import (
    Ask,
    Finish,
    Outcome,
    Reply,
    Scene,
    adapter_for,
    maf_request_id,
    take_over,
)
from executors.platform.agents import (
    REPLIES,
    SESSIONS,
    carry_sessions,
    history_kept_by_provider,
    kept_sessions,
    replies_of,
    seed_history,
    turns_carry_on,
)
from executors.platform.builtin_adapters import Kinds
from executors.platform.run_end import END_EVENT
from executors.platform.services import DRIVING_SERVICES, RunServices
from executors.platform.shown import files_in, maf_value
from executors.platform.tool_gate import AUDIT_EVENT
from executors.platform.transcript import DRIVING, reported, standing_of
from human.attachments import LISTED_MAX, THE_REQUEST, Kept, merged
from human.kinds import KINDS
from human.records import Attachment, HumanRequest, NewEvent, Run
from human.requests import deciders, new_request, origin_of
from human.routing import notifications_for, timers_for
from human.service import TAKEOVER
from human.store.base import NewEffect, Progress, Store
from human.typed import as_json
from workflows.platform.checkpoints import RunCheckpointStorage
from workflows.platform.engine import Instance, RunRaised, engine_for
from workflows.platform.registry import WorkflowSpec, check_run_kwargs

OUTPUTS_SO_FAR: Final = "baton_outputs"
"""The checkpoint metadata key of the run's outputs before it (JSON values, in order)."""


class Drive:
    """One drive of a run: deliver at most one answer, settle what MAF asks, commit the result.

    Every `request_info` goes through the workflow's request adapters
    (`executors.platform.adapters`): an adapter asks a person (`Ask`), answers MAF at once
    (`Reply`, e.g. a policy's auto decision), or ends the run (`Finish`). Replies are fed back to
    the same workflow instance until MAF waits only on people; then one checkpoint covering every
    pending request is committed with them.
    """

    def __init__(
        self,
        store: Store,
        run: Run,
        spec: WorkflowSpec,
        workflow: Instance,
        services: RunServices,
        scene: Scene,
        *,
        clock: Callable[[], datetime],
        notify_channels: Sequence[str],
        checkpoint: bytes | None = None,
        history: Sequence[Message] = (),
        sessions: Mapping[str, Any] | None = None,
    ) -> None:
        """`workflow`: built with `services` (its agents' turns noted in their transcript).

        `checkpoint`: the run's current checkpoint's body, if the runtime has read it.
        `history`: the messages of the conversation the run continues, which its start hands
        the workflow before its input; `sessions`, what its agents' sessions held as it ended
        (`kept_sessions`), which they carry on.
        """
        self._history = tuple(history)
        self._sessions = dict(sessions or {})
        self._clock = clock
        self._channels = tuple(notify_channels)
        self._run = run
        self._spec = spec
        self._services = services
        self._scene = scene
        self._storage = RunCheckpointStorage(
            store,
            run.id,
            spec.allow_list(workflow),
            read={run.checkpoint_id: checkpoint} if run.checkpoint_id and checkpoint else None,
        )
        self._engine = engine_for(workflow, self._storage)
        self._workflow = workflow
        self._adapters = spec.request_adapters(services, workflow)
        self._results: list[WorkflowRunResult] = []
        # what the run's earlier drives output (kept in the checkpoint it paused at)
        self._earlier_outputs: list[Any] = []
        # (MAF request id, ask, HumanRequest label, the executor that asked)
        self._asks: list[tuple[str, Ask, str, str | None]] = []
        # the files each ask's data holds, by its label; the bytes of those new in this drive
        self._attached: dict[str, list[Attachment]] = {}
        self._kept: dict[str, Kept] = {}

    async def go(
        self, job_id: int | None, deliver: HumanRequest | None, waiting: Sequence[HumanRequest]
    ) -> Progress:
        """Start the run (`deliver` None) or deliver one answer; what came of it, to commit.

        `waiting` is the run's open and answered-undelivered requests, as the drive read them.
        """
        run = self._run
        still_open = {maf_request_id(r) for r in waiting if deliver is None or r.id != deliver.id}
        known = set(still_open)
        events: list[NewEvent] = []
        finish: Finish | None = None
        if deliver is None:
            typed = self._spec.input_model.model_validate(run.input)
            if self._sessions:
                carry_sessions(self._workflow, self._sessions)
            # an agent's earlier messages go in its session, where MAF keeps them
            seeded = seed_history(self._workflow, self._history) or (
                await history_kept_by_provider(self._workflow, self._history)
            )
            message = self._spec.first_message(
                typed, self._workflow, () if seeded else self._history
            )
            self._scene.note(self._said(message, run.input))
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
        converses = self._spec.converses(self._workflow)
        if converses and not turns_carry_on(self._workflow):
            # what a run continuing this one starts on, as MAF's `WorkflowAgent` keeps it
            said = replies_of(e for r in self._results for e in r)
            self._scene.note({"type": REPLIES, "replies": said})
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
            "effects": self._services.effects,
        }
        failure = next((e for r in self._results for e in r if e.type == "failed"), None)
        state = self._results[-1].get_final_state() if self._results else None
        if failure is not None or state == WorkflowRunState.FAILED:
            details = getattr(failure, "details", None)
            message = getattr(details, "message", None) or "the workflow failed"
            return failed(
                run,
                job_id,
                deliver,
                message,
                events,
                self._services.transcript.entries,
                self._services.effects,
                _output_of(self._outputs()),
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
            outputs = self._outputs()
            checkpoint_id = await self._snapshot(pending, outputs)
            now = self._clock()
            transcript = self._services.transcript
            conversation = transcript.attachments()
            requests = [
                new_request(
                    ask.request,
                    run_id=run.id,
                    label=label,
                    now=now,
                    origin={**ask.origin, "maf_request_id": maf_id} if ask.origin else None,
                    assignee=ask.assignee,
                    executor_id=executor_id,
                    attachments=merged(self._attached.get(label, []), conversation)[:LISTED_MAX],
                )
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
            channels = self._channels
            return Progress(
                status="waiting",
                output=_output_of(outputs),
                checkpoint=self._storage.draft(checkpoint_id),
                new_requests=requests,
                events=events,
                transcript=transcript.entries,
                attachments=[*self._kept.values(), *transcript.kept.values()],
                timers=[t for r in requests for t in timers_for(r)],
                notifications=[
                    n for r in requests for n in notifications_for(r, channels, "created")
                ],
                **base,
            )
        if converses:  # what its agents' sessions carry on to the next
            kept = kept_sessions(self._workflow)
            if kept:
                self._scene.note({"type": SESSIONS, "sessions": kept})
        output = _jsonable(self._outputs())
        events.append(NewEvent(type="run.completed", run_id=run.id, data={"output": output}))
        return Progress(
            status="completed",
            output=output,
            events=events,
            transcript=self._services.transcript.entries,
            **base,
        )

    def _outputs(self) -> list[Any]:
        """The run's outputs so far, as JSON: its earlier drives', then this drive's.

        MAF gives a workflow's outputs run by run (`WorkflowRunResult.get_outputs()`); a run that
        outputs before it pauses (an agent's reply, then a question) keeps them in the checkpoint
        it pauses at, so the output it ends with holds every one, as MAF alone would give them,
        less an agent's turn that said nothing (a handoff orchestration yields each turn that
        only hands the case on).
        """
        return [
            *self._earlier_outputs,
            *(
                _plain(e.data, e.executor_id)
                for r in self._results
                for e in r
                if e.type == "output" and not _silent(e.data)
            ),
        ]

    async def _run_workflow(
        self, message: Any = None, *, responses: dict[str, Any] | None = None
    ) -> WorkflowRunResult:
        """One run of the instance, on its first message or on responses (`Engine.run`).

        Its agents note their turns in this drive's transcript (`DRIVING`), whoever followed them,
        and the calls Baton runs in their tool loops use this drive's services (`DRIVING_SERVICES`).
        """
        driving = DRIVING.set(self._services.transcript)
        serving = DRIVING_SERVICES.set(self._services)
        try:
            result = await self._engine.run(message, responses=responses, **self._run_kwargs())
        except RunRaised as raised:  # what the run gave before it failed is the run's, too
            self._results.append(raised.result)
            self._note_reports(raised.result)
            raise raised.error from raised.error.__cause__
        finally:
            DRIVING_SERVICES.reset(serving)
            DRIVING.reset(driving)
        self._results.append(result)
        self._note_reports(result)
        return result

    def _note_reports(self, result: WorkflowRunResult) -> None:
        """Note the workflow's own reports of `result` (`ctx.add_event`, intermediate outputs)."""
        for event in result:
            if (entry := reported(event, OWN_EVENTS)) is not None:
                self._scene.note(entry)

    def output_so_far(self) -> Any:
        """The run's output up to now (its earlier drives' and this one's), None before any.

        The output a run that fails in this drive ends with: what it output before it failed.
        """
        return _output_of(self._outputs())

    def _said(self, message: Any, run_input: Any) -> dict[str, Any]:
        """The conversation's first entry: the user's words the run starts on, else its input.

        A user's `Message` (a `start_message` that adds a photo to the words, say) is its text,
        with its attachments named (`maf_value`): what the agent was given, as a person reads it.
        """
        said: dict[str, Any] = {"type": "message", "role": "user", "by": self._spec.party}
        if isinstance(message, str):
            return said | {"from_user": True, "text": message}
        if isinstance(message, Message) and message.role == "user" and message.text:
            shown = maf_value(message)
            attached = {"attachments": shown["attachments"]} if "attachments" in shown else {}
            entry = said | {"from_user": True, "text": message.text} | attached
            if attached:  # the files themselves, for the run's requests to show
                self._services.transcript.attach(entry, files_in(message))
            return entry
        return {"type": "input", "input": run_input}

    def _run_kwargs(self) -> dict[str, Any]:
        """The kwargs MAF's `run` takes for this run, from its registration (`run_kwargs`)."""
        if self._spec.run_kwargs is None:
            return {}
        typed_input = self._spec.input_model.model_validate(self._run.input)
        kwargs = self._spec.kwargs_for_run(typed_input, self._services)
        check_run_kwargs(kwargs, self._workflow)
        function_kwargs = kwargs.get("function_invocation_kwargs")
        if isinstance(function_kwargs, Mapping):  # for the tools Baton runs itself
            self._services.using(invocation_kwargs=function_kwargs)
        return kwargs

    async def _restore(self) -> None:
        """Restore the run's committed checkpoint into this drive's workflow instance.

        The next `run(responses=...)` continues from it (`Engine.restore`).
        """
        if self._run.checkpoint_id is None:
            raise WorkflowCheckpointException(f"run {self._run.id} has no checkpoint to resume")
        checkpoint = await self._storage.load(self._run.checkpoint_id)
        self._earlier_outputs = list(checkpoint.metadata.get(OUTPUTS_SO_FAR) or [])
        await self._engine.restore(checkpoint)

    async def _snapshot(self, pending: Sequence[str], outputs: list[Any]) -> str:
        """The one snapshot of a drive: the workflow as it waits on `pending`, kept to commit.

        MAF snapshots a graph run with a checkpoint storage after every superstep (its
        executors' states serialized, the shared state deep-copied), and Baton only ever commits
        the last one: so the drive runs a graph without a storage and takes the snapshot once,
        here, from MAF's runner (`build_checkpoint`, as a nested `WorkflowExecutor` does); a
        functional workflow's is the last MAF saved, with the answers its replay needs
        (`workflows.platform.engine`). A snapshot that does not hold every pending request
        would lose one on restart: `PauseNotDurable`.
        """
        checkpoint = await self._engine.snapshot()
        if outputs:  # (most runs output only as they end: nothing more to store)
            checkpoint.metadata[OUTPUTS_SO_FAR] = outputs
        missing = set(pending) - set(checkpoint.pending_request_info_events)
        if missing:
            raise PauseNotDurable(
                f"the workflow's checkpoint does not hold requests {sorted(missing)}; refusing a "
                "pause that a restart would lose"
            )
        return await self._storage.save(checkpoint)

    async def _deliver(self, deliver: HumanRequest, known: set[str]) -> Finish | None:
        """Deliver one answer: MAF gets a response, a person is asked again, or the run ends."""
        body = deliver.answer or {}
        noted = {
            "type": "answer",
            "request_id": deliver.id,
            "kind": deliver.kind,
            "by": deliver.answered_by,
            "decision": body.get("decision"),
            "text": _said(body),
        }
        if body.get("standing") is True:  # the service let it stand (`_check_standing`)
            noted |= standing_of(deliver)
        self._scene.note(noted)
        maf_id = maf_request_id(deliver)
        outcome: Outcome
        if body.get("decision") == TAKEOVER:
            outcome = take_over(deliver, str(body.get("by") or deliver.answered_by), self._scene)
        else:
            answer = KINDS[deliver.kind].answer_model.model_validate(body)
            answer = answer.delivered(deciders(deliver))
            adapter = adapter_for(self._adapters, deliver)
            outcome = await adapter.deliver(deliver, answer, self._scene)
            if isinstance(outcome, Ask):
                origin = {"adapter": adapter.name, **origin_of(deliver), **outcome.origin}
                outcome = Ask(outcome.request, origin, outcome.assignee)
        if isinstance(outcome, Finish):
            return outcome
        await self._restore()
        if isinstance(outcome, Reply):
            await self._run_workflow(responses={maf_id: outcome.response})
            return None
        # asked again: the MAF request stays pending in the restored state, and in the snapshot
        known.add(maf_id)
        label = f"{maf_id}#{secrets.token_hex(4)}"
        self._asks.append((maf_id, outcome, label, deliver.executor_id))
        self._attached[label] = [a for a in deliver.attachments if a.source == THE_REQUEST]
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
                if files := files_in(event.data):
                    self._kept.update((f.id, f) for f in files)
                    self._attached[maf_id] = [f.about(THE_REQUEST) for f in files]
            if not replies:
                return None
            await self._run_workflow(responses=replies)
        return None


def _said(answer: dict[str, Any]) -> Any:
    for field in ("answer", "resolution", "guidance", "reason", "content", "arguments"):
        if answer.get(field) not in (None, "", {}):
            return answer[field]
    return None


def failed(
    run: Run,
    job_id: int | None,
    deliver: HumanRequest | None,
    error: str,
    events: Sequence[NewEvent] = (),
    transcript: Sequence[dict[str, Any]] = (),
    effects: Sequence[NewEffect] = (),
    output: Any = None,
) -> Progress:
    """A run's failure as progress: the error on record, its events, conversation and effects kept.

    The effects a failing drive performed are recorded with its failure: the called systems acted.
    `output`: what the run output before it failed (by default what it had output at its pause).
    """
    return Progress(
        run_id=run.id,
        expected_checkpoint_id=run.checkpoint_id,
        job_id=job_id,
        status="failed",
        output=run.output if output is None else output,
        error=error,
        delivered_request_ids=[deliver.id] if deliver else [],
        events=[
            *events,
            NewEvent(type="run.failed", run_id=run.id, data={"error": error}),
        ],
        transcript=list(transcript),
        effects=list(effects),
    )


def _output_of(values: list[Any]) -> Any:
    """A run's `output` so far: None before its first output."""
    return _jsonable(values) if values else None


def _jsonable(values: list[Any]) -> Any:
    """A run's outputs (JSON) as its `output`: the one, or the list of them."""
    return values[0] if len(values) == 1 else values


OWN_EVENTS: Final = frozenset({AUDIT_EVENT, END_EVENT})
"""Baton's own workflow events (an audit event, the run's end), not the workflow's reports."""

UNNAMED: Final = "UnnamedAgent"
"""What MAF calls an agent without a name (`Agent.display_name`): Baton names it by its executor."""


def _value_of(response: AgentResponse) -> dict[str, Any]:
    """`{"value": ...}`: a structured reply's parsed value (`response_format`), if it has one.

    A reply that does not parse as its format keeps its text alone, as MAF's `value` would
    raise only when read.
    """
    try:
        value = response.value
    except (ValueError, TypeError):
        return {}
    return {} if value is None else {"value": as_json(value, fallback=maf_value)}


def _silent(output: Any) -> bool:
    """Whether an output is an agent's turn with no words (its calls only, say a handoff)."""
    return isinstance(output, AgentResponse) and not output.text and not _value_of(output)


def _plain(output: Any, executor: str | None = None) -> Any:
    """One output as JSON; an unnamed agent's reply under the executor that yielded it.

    (The run's conversation names such an agent so too: `Transcript.follow`.)
    """
    if isinstance(output, BaseModel):
        return output.model_dump(mode="json")
    if isinstance(output, AgentResponse):  # an agent's turn, as the handoff orchestration yields it
        said = [m for m in output.messages if m.text]
        authors = {m.author_name for m in said if m.author_name}
        if len(authors) > 1:  # several agents' replies (a concurrent run's)
            return [{"agent": m.author_name, "text": m.text} for m in said]
        author = output.messages[-1].author_name if output.messages else None
        reply = {
            "agent": executor if author in (None, UNNAMED) and executor else author,
            "text": output.text,
        }
        return reply | _value_of(output)
    if isinstance(output, str | int | float | bool | None):
        return output
    return as_json(output, fallback=maf_value)  # a dataclass by its fields, MAF's by theirs
