"""How a drive runs, snapshots and restores a workflow instance, whichever kind MAF built.

MAF builds two kinds of workflow, and a drive (`workflows.platform.drive`) needs three things of
either: run it (on its first message, or on responses to its pending requests), take the one
snapshot a pause commits, and restore a committed snapshot into a new instance.

- A **graph** (`Workflow`, from `WorkflowBuilder` or an orchestration) runs superstep by
  superstep; its runner builds a checkpoint of where it stands and restores one it is handed
  (what a nested `WorkflowExecutor` does), so the drive runs it with no checkpoint storage and
  snapshots once, at the pause.
- A **functional** workflow (`@workflow` and `@step`, a `FunctionalWorkflow`, experimental in MAF
  1.26) runs a function. Asked for a person, it raises out of the function, and on the answer
  MAF *replays* the function from its top: each `@step` returns its cached result, and each
  `ctx.request_info` the response it is given by request id. MAF saves a checkpoint after each
  step and at the pause (the steps' cache, the function's state, its first message, the pending
  requests), but not the responses: a caller must hand the replay every answer given so far
  (MAF's docs: "accumulate prior answers across multi-round HITL"). So this engine keeps them in
  the checkpoint it commits, under `ANSWERS` (MAF restores no key that starts with `_` into the
  function's state), and every run after the first restores the run's latest checkpoint with
  all of them.

`engine_for(instance, storage)` gives the drive either, over the storage the drive's snapshots go
to (`RunCheckpointStorage`, or MAF's own in `baton check`).
"""

from __future__ import annotations

import dataclasses
import functools
import uuid
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, Protocol, TypeAlias

from agent_framework import (
    CheckpointStorage,
    FunctionalWorkflow,
    FunctionalWorkflowAgent,
    FunctionalWorkflowDefinition,
    SupportsAgentRun,
    Workflow,
    WorkflowAgent,
    WorkflowCheckpoint,
    WorkflowContext,
    WorkflowExecutor,
    WorkflowRunResult,
)
from agent_framework.exceptions import WorkflowCheckpointException

from executors.platform.agents import as_workflow, executors_of

Instance: TypeAlias = Workflow | FunctionalWorkflow
"""A built workflow as Baton drives it: a graph, or a functional workflow."""

RUN_KWARGS_KEYS = frozenset(
    {"_workflow_run_kwargs", "_resolved_workflow_run_kwargs", "_routed_workflow_run_kwargs"}
)
"""The keys of a graph's state where MAF keeps the kwargs its `run` was given (its `_const`)."""


def without_run_kwargs(checkpoint: WorkflowCheckpoint) -> WorkflowCheckpoint:
    """`checkpoint` less the run's kwargs, in it and in its sub-workflows' (new objects).

    A `WorkflowExecutor` saves its sub-workflow's whole checkpoint in its own state, kwargs
    included (MAF passes the run's kwargs down).
    """
    state = {k: v for k, v in checkpoint.state.items() if k not in RUN_KWARGS_KEYS}
    executors = state.get(EXECUTOR_STATE)
    if isinstance(executors, dict):
        state[EXECUTOR_STATE] = {
            executor: _sub_without_kwargs(saved) for executor, saved in executors.items()
        }
    return dataclasses.replace(checkpoint, state=state)


def _sub_without_kwargs(saved: Any) -> Any:
    inner = saved.get(SUB_CHECKPOINT) if isinstance(saved, dict) else None
    if not isinstance(inner, WorkflowCheckpoint):
        return saved
    return {**saved, SUB_CHECKPOINT: without_run_kwargs(inner)}


def kwargs_again_for_sub_workflows(workflow: Workflow) -> None:
    """Each sub-workflow of `workflow` (at any depth) given the run's kwargs as it is answered.

    MAF's `WorkflowExecutor` passes the parent run's kwargs to its sub-workflow as it starts it
    (`process_workflow`) and as it cancels its requests, but runs it on an answer
    (`_handle_response`: `run(responses=...)`, nothing else) trusting the kwargs of its start to
    be in the sub-workflow's state, restored from the checkpoint. Baton's checkpoints hold none
    (`without_run_kwargs`, the sub-workflow's too): the drive gives the kwargs to the workflow's
    `run` again, and this hands the sub-workflow the same scoped kwargs its start got
    (`_get_child_invocation_kwargs`), so that its agents' tools have them after a restore, as on
    MAF alone. Installed once per instance (`pool.new_instance`), before its attributes are noted.
    """
    for executor in executors_of(workflow):
        if isinstance(executor, WorkflowExecutor):
            _answered_with_kwargs(executor)


def _answered_with_kwargs(executor: WorkflowExecutor) -> None:
    answer = executor._handle_response
    inner = executor.workflow

    async def handle_response(request_id: str, response: Any, ctx: WorkflowContext[Any]) -> None:
        functions, clients = executor._get_child_invocation_kwargs(ctx)
        inner.run = functools.partial(  # type: ignore[method-assign]
            type(inner).run, inner, function_invocation_kwargs=functions, client_kwargs=clients
        )
        try:
            await answer(request_id, response, ctx)
        finally:
            vars(inner).pop("run", None)

    executor._handle_response = handle_response  # type: ignore[method-assign]


EXECUTOR_STATE = "_executor_state"
"""The key of a graph's state where MAF keeps each executor's saved state."""

SUB_CHECKPOINT = "sub_workflow_checkpoint"
"""The key of a `WorkflowExecutor`'s saved state that holds its sub-workflow's checkpoint."""

ANSWERS = "_baton_answers"
"""The key of a functional workflow's checkpoint state holding every answer its replay needs."""


class RunRaised(Exception):
    """MAF's `run` raised: what it raised (`error`), and the events of the run before (`result`).

    MAF's non-streaming `run` gives a failing run's events to nobody: a script that streams the
    run sees its outputs and its own events (`ctx.add_event`, intermediate outputs) up to the
    failure, then the failure. The drive keeps them, then fails the run with `error`.
    """

    def __init__(self, error: Exception, result: WorkflowRunResult) -> None:
        super().__init__(str(error))
        self.error = error
        self.result = result

    @classmethod
    def of(cls, error: Exception, stream: object) -> RunRaised:
        """`error`, with the events MAF's stream of the failed run (a `ResponseStream`) held."""
        events = list(getattr(stream, "updates", None) or ())
        return cls(
            error,
            WorkflowRunResult(
                [e for e in events if e.type not in ("started", "status")],
                [e for e in events if e.type == "status"],
            ),
        )


class CheckpointOfOtherCode(Exception):
    """The run's checkpoint was made by other code than the workflow this process runs.

    MAF ties a checkpoint to what made it: a graph's topology (its executors and edges), a
    functional workflow's code (the bytecode of its function, its steps and the functions they
    call). A deploy that changed it cannot resume a run paused before it; the code that paused
    it can. The runtime keeps such a run waiting, its answer undelivered, and the worker tries
    the delivery again later (`workflows.platform.runtime`), rather than fail it.
    """


class Engine(Protocol):
    """Runs one workflow instance for a drive, snapshots it at a pause, restores a snapshot."""

    async def run(
        self, message: Any = None, *, responses: dict[str, Any] | None = None, **kwargs: Any
    ) -> WorkflowRunResult:
        """Start the instance on `message`, or carry it on with `responses` by request id.

        `kwargs` are those MAF's `run` takes beside (`function_invocation_kwargs`, ...).
        """
        ...

    async def restore(self, checkpoint: WorkflowCheckpoint) -> None:
        """Put the instance where `checkpoint` (a committed snapshot) has it."""
        ...

    async def snapshot(self) -> WorkflowCheckpoint:
        """A new checkpoint of the instance where it stands (not saved anywhere)."""
        ...


def as_instance(built: object, name: str) -> Instance | None:
    """`built` as an instance Baton drives, else None.

    A functional definition is built; a workflow made an agent (`.as_agent()`) is the workflow
    it runs (as an agent, its requests would be calls of a tool named `request_info` that no
    executor pauses on: MAF's own `AgentExecutor` would end the run with the question unasked);
    any other agent (MAF's `Agent`, any `SupportsAgentRun`) becomes a workflow named `name` of
    that one agent (`executors.platform.agents.as_workflow`).
    """
    if isinstance(built, FunctionalWorkflowDefinition):
        return built.build()
    if isinstance(built, Workflow | FunctionalWorkflow):
        return built
    if isinstance(built, WorkflowAgent):
        return built.workflow
    if isinstance(built, FunctionalWorkflowAgent):
        inner: FunctionalWorkflow = built._workflow  # MAF keeps it without a property
        return inner
    if isinstance(built, SupportsAgentRun):
        return as_workflow(built, name)
    return None


class NotAWorkflow(TypeError):
    """A builder returned something Baton does not drive (not a workflow, nor an agent)."""


class UnstableGraph(Exception):
    """Two builds of a workflow, for the same run, are not the same graph.

    MAF restores a graph's checkpoint only into the graph that made it (its executors by id,
    its edges), and every resume on Baton is a restore into a new build: a workflow whose
    builder gives an executor a new id at each build could pause but never resume. MAF gives an
    agent without a `name` a random id at each build (`Agent.id` is a new UUID), and uses it as
    the id of the agent's executor, so this is the usual cause.
    """


def graph_changes(first: Instance, second: Instance) -> str | None:
    """None if two builds are the same graph to MAF's checkpoints; else what differs, in words.

    A functional workflow's checkpoint is tied to its code, the same for every build in a
    process: only graphs are compared (MAF's `graph_signature_hash`).
    """
    if not isinstance(first, Workflow) or not isinstance(second, Workflow):
        return None
    if first.graph_signature_hash == second.graph_signature_hash:
        return None
    ours, theirs = _executor_ids(first.graph_signature), _executor_ids(second.graph_signature)
    gone, new = sorted(ours.keys() - theirs.keys()), sorted(theirs.keys() - ours.keys())
    if gone or new:
        return (
            f"executors {_named(gone, ours)} of one build are {_named(new, theirs)} in the next "
            "(MAF gives an agent without a name a new random id at each build: give each agent "
            "its name=..., the agents an orchestration's builder takes too, such as "
            "GroupChatBuilder's orchestrator_agent or MagenticBuilder's manager_agent)"
        )
    return "its executors' types or edges differ from one build to the next"


def _named(ids: Sequence[str], kinds: Mapping[str, str]) -> str:
    """Executor ids, each with its type's name: `8edf… (AgentBasedGroupChatOrchestrator)`."""
    return ", ".join(f"{i} ({kinds[i].rpartition('.')[2]})" if kinds[i] else i for i in ids)


def _executor_ids(signature: dict[str, Any], within: str = "") -> dict[str, str]:
    """Every executor id of a graph signature (a sub-workflow's as `outer/inner`), its type."""
    found: dict[str, str] = {}
    for executor_id, kind in signature.get("executors", {}).items():
        found[within + executor_id] = kind if isinstance(kind, str) else ""
        if isinstance(kind, dict) and isinstance(kind.get("sub_workflow"), dict):
            found |= _executor_ids(kind["sub_workflow"], f"{within}{executor_id}/")
    return found


def engine_for(instance: Instance, storage: CheckpointStorage) -> Engine:
    """The engine of `instance`; a functional one reads and saves its checkpoints in `storage`."""
    if isinstance(instance, FunctionalWorkflow):
        return FunctionalEngine(instance, storage)
    return GraphEngine(instance)


class GraphEngine:
    """A graph workflow: run with no checkpoint storage, snapshot and restore by its runner."""

    def __init__(self, workflow: Workflow) -> None:
        self._workflow = workflow

    async def run(
        self, message: Any = None, *, responses: dict[str, Any] | None = None, **kwargs: Any
    ) -> WorkflowRunResult:
        """One `run()`, no storage: MAF takes no snapshot per superstep (`snapshot` takes one).

        `RunRaised` if it raised, with the events it gave before: MAF's stream of the run (its
        `_active_run`, set as `run` returns) holds them, as a streaming caller would have seen
        them (the run itself stays non-streaming: an agent's output stays one `AgentResponse`).
        """
        pending = (
            self._workflow.run(responses=responses, **kwargs)
            if responses is not None
            else self._workflow.run(message, **kwargs)
        )
        return await keeping_events(self._workflow, pending)

    async def restore(self, checkpoint: WorkflowCheckpoint) -> None:
        """The runner applies the checkpoint; the next `run(responses=...)` continues from it.

        `CheckpointOfOtherCode` if the checkpoint is of another graph (MAF would refuse it).
        """
        if checkpoint.graph_signature_hash != self._workflow.graph_signature_hash:
            raise CheckpointOfOtherCode(
                f"the run paused on another graph of workflow {self._workflow.name!r} than the "
                "one this process builds (its executors or edges changed since)"
            )
        await self._workflow._runner.restore_checkpoint(checkpoint)

    async def snapshot(self) -> WorkflowCheckpoint:
        """The runner's checkpoint of where the workflow stands, less the run's kwargs.

        MAF keeps the kwargs `run` was given in the workflow's state; the drive gives them
        again at every run (`register(run_kwargs=...)`), so no checkpoint stores them.
        """
        return without_run_kwargs(await self._workflow._runner.build_checkpoint())


class FunctionalEngine:
    """A functional workflow: each run after the first replays from the latest checkpoint."""

    def __init__(self, workflow: FunctionalWorkflow, storage: CheckpointStorage) -> None:
        self._workflow = workflow
        self._storage = _Noting(storage)
        self._latest: WorkflowCheckpoint | None = None
        self._answers: dict[str, Any] = {}

    async def run(
        self, message: Any = None, *, responses: dict[str, Any] | None = None, **kwargs: Any
    ) -> WorkflowRunResult:
        """Start on `message`, or replay from the latest checkpoint with every answer so far.

        A run that paused leaves MAF's in-process replay state on the instance (its message, its
        steps' results), which MAF warns of at every later restore; this engine never replays
        from it (each run names its checkpoint), so it is cleared as each run ends: an instance
        holds nothing of a run between runs, and a kept one nothing between drives.
        """
        before = self._storage.last
        result: WorkflowRunResult
        try:
            if responses is None:
                self._answers = {}
                pending = self._workflow.run(message, checkpoint_storage=self._storage, **kwargs)
            else:
                if self._latest is None:
                    raise WorkflowCheckpointException(
                        "a functional workflow resumes from a checkpoint"
                    )
                self._answers = {**self._answers, **responses}
                pending = self._workflow.run(
                    responses=dict(self._answers),
                    checkpoint_id=self._latest.checkpoint_id,
                    checkpoint_storage=self._storage,
                    **kwargs,
                )
            stream = _stream_awaited_by(pending)
            try:
                result = await pending
            except Exception as exc:
                raise RunRaised.of(exc, stream) from exc
        finally:
            self._workflow._clear_replay_state()
        if self._storage.last is not before:  # it saved: its last is where the run stands
            self._latest = self._storage.last
        return result

    async def restore(self, checkpoint: WorkflowCheckpoint) -> None:
        """The next run replays from `checkpoint`, with the answers it holds.

        `CheckpointOfOtherCode` if other code made it (MAF would refuse to replay it).
        """
        if checkpoint.graph_signature_hash != self._workflow._compute_signature_hash():
            raise CheckpointOfOtherCode(
                f"the run paused on other code of workflow {self._workflow.name!r} than this "
                "process runs (its function, its steps or a function they call changed since)"
            )
        self._latest = checkpoint
        self._answers = dict(checkpoint.state.get(ANSWERS) or {})

    async def snapshot(self) -> WorkflowCheckpoint:
        """The latest checkpoint MAF saved (or the one restored), with every answer so far."""
        if self._latest is None:
            raise WorkflowCheckpointException("the functional workflow saved no checkpoint")
        return dataclasses.replace(
            self._latest,
            checkpoint_id=str(uuid.uuid4()),
            state={**self._latest.state, ANSWERS: dict(self._answers)},
        )


async def keeping_events(
    workflow: Workflow, pending: Awaitable[WorkflowRunResult]
) -> WorkflowRunResult:
    """The result of `pending`, a `run()` of `workflow` just called; `RunRaised` if it raised.

    MAF's stream of the run (the graph's `_active_run`, set as `run` returns) holds its events
    up to a failure, as a streaming caller would have seen them.
    """
    active = getattr(workflow, "_active_run", None)  # MAF's private: none, no events
    stream = active() if active is not None else None
    try:
        return await pending
    except Exception as exc:
        raise RunRaised.of(exc, stream) from exc


def _stream_awaited_by(pending: Awaitable[Any]) -> object:
    """The `ResponseStream` whose final response `pending` awaits, None if not one of those.

    A functional workflow's plain `run` returns its stream's `get_final_response()`, a coroutine
    not yet started, whose frame holds the stream as `self` (MAF keeps no other reference to it).
    """
    frame = getattr(pending, "cr_frame", None)
    return frame.f_locals.get("self") if frame is not None else None


class _Noting:
    """A checkpoint storage that keeps only the last checkpoint saved through it.

    MAF saves one after every `@step` and one at the end of a run; only the last can become the
    pause's snapshot, so the others are not kept (a drive of 2,000 steps kept 119 MB of them).
    Loads of any other checkpoint (the run's committed one) go to `storage`.
    """

    def __init__(self, storage: CheckpointStorage) -> None:
        self._storage = storage
        self.last: WorkflowCheckpoint | None = None

    async def save(self, checkpoint: WorkflowCheckpoint) -> str:
        self.last = checkpoint
        return checkpoint.checkpoint_id

    async def load(self, checkpoint_id: str) -> WorkflowCheckpoint:
        if self.last is not None and self.last.checkpoint_id == checkpoint_id:
            return self.last
        return await self._storage.load(checkpoint_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._storage, name)
