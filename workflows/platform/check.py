"""Does a workflow keep its executors' state across restarts? Find out pause by pause.

On Baton every resume of a paused run happens in a fresh workflow instance restored from the
pause's checkpoint, often in another process. MAF saves an executor's own state only through
`on_checkpoint_save`/`on_checkpoint_restore`: what an executor keeps in plain attributes
(`self.turns += 1`) is silently gone after a restore. `check_spec` drives a workflow as Baton
does, on MAF's `FileCheckpointStorage` under the workflow's allow-list, and at each pause builds
a fresh instance, restores it from the pause's checkpoint and compares every executor's own
attributes with those of the instance that paused (`workflows.platform.snapshots`). Then it
answers one pending request in the restored instance, as a drive delivers one answer, and goes
on there: to the end, a failure, or `max_pauses`. Answers are the caller's (by executor id or
request type name), else made up from the response type (`workflows.platform.samples`).

It reports executors that lost state, pauses no saved checkpoint covers (a type that cannot be
checkpointed, say: Baton fails such a run) and failures. It also starts the run on an instance
of Baton's pool (`workflows.platform.pool`), resets it as the pool does when a drive ends, and
compares its executors' own attributes with a new instance's: for a workflow registered with
`reuse=True`, what differs is a finding (state one run would carry into the next); for any other,
a clean reset is a hint that it could be. It works at MAF's level: no request adapters, no
people, no store of runs.

A functional workflow (`@workflow`) has no executors to compare, and a kept one holds nothing
of a run between drives (its engine clears MAF's replay state as each run ends): the check
drives it through the engine a drive uses (`workflows.platform.engine`), each pause's snapshot
saved to the same storage and restored into a new instance, so a pause whose checkpoint does not
encode or decode under the allow-list is found as not durable.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import logging
import reprlib
import tempfile
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Final, Literal

from agent_framework import (
    AgentExecutor,
    AgentResponse,
    Content,
    FileCheckpointStorage,
    FunctionalWorkflow,
    InMemoryCheckpointStorage,
    Message,
    SubWorkflowRequestMessage,
    Workflow,
    WorkflowEvent,
    WorkflowExecutor,
    WorkflowRunResult,
    WorkflowRunState,
)
from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from baton.errors import InvalidAnswer, InvalidInput
from executors.platform.agents import agents_of, executors_of, tools_of
from executors.platform.run_end import END_EVENT
from executors.platform.services import RunServices
from executors.platform.shown import maf_value
from workflows.platform.attributes import refusal
from workflows.platform.engine import (
    Instance,
    NotAWorkflow,
    RunRaised,
    UnstableGraph,
    engine_for,
    keeping_events,
    without_run_kwargs,
)
from workflows.platform.pool import WorkflowPool, close_connections, new_instance
from workflows.platform.registry import (
    RunKwargsRefused,
    WorkflowSpec,
    batons_own,
    check_run_kwargs,
)
from workflows.platform.runtime import typed_input
from workflows.platform.samples import answer_to, given_answer, sample_of
from workflows.platform.snapshots import (
    MIDDLEWARE,
    PROVIDER,
    Snapshot,
    kept_attributes,
    keys_became_strings,
    lost_attributes,
    own_attributes,
    parts_of,
    snapshot,
)

_short = reprlib.Repr()
_short.maxstring = _short.maxother = 60
_short.maxlist = _short.maxdict = _short.maxtuple = _short.maxset = 6
_short.maxlevel = 3


@dataclass(frozen=True)
class LostAttribute:
    """One attribute a restore did not bring back: its value at the pause, and after."""

    name: str
    before: str
    after: str
    why: str = ""
    """Why Baton's checkpoints could not carry it (`workflows.platform.attributes`), if known."""
    string_keys: bool = False
    """It came back but for its dicts' keys, now strings (`snapshots.keys_became_strings`)."""


@dataclass(frozen=True)
class LostState:
    """An executor whose own attributes differ after a restore from a pause (its first)."""

    pause: int
    executor_id: str
    executor_class: str
    attributes: tuple[LostAttribute, ...]

    def line(self) -> str:
        """The finding in one line, with what to do about it."""
        said = "; ".join(
            f"self.{a.name} was {a.before}, is {a.after} after restore"
            + (f" (a checkpoint cannot carry it: {a.why})" if a.why else "")
            + (
                " (a checkpoint keeps a dict's keys as strings, as JSON does)"
                if a.string_keys
                else ""
            )
            for a in self.attributes
        )
        one = len(self.attributes) == 1
        them, types = ("it", "its type") if one else ("them", "their types")
        who, kind = holder_of(self.executor_id, self.executor_class)
        lost = f"{who} lost state on resume from pause {self.pause}: {said} — "
        if all(a.string_keys for a in self.attributes):
            return f"{lost}key {them} by strings, or turn the keys back after a restore"
        if kind == "middleware":
            return (
                f"{lost}keep {them} in the session's state (context.session.state), which the "
                "checkpoint carries, or in a store outside the process"
            )
        if kind == "provider":
            return (
                f"{lost}keep {them} in the session's state MAF hands its before_run/after_run "
                "(`state`), which the checkpoint carries, or in a store outside the process"
            )
        listed = (  # only a value the allow-list refused is helped by allow-listing it
            f"allow-list {types} (register(..., checkpoint_types=...)), or "
            if any(a.why for a in self.attributes)
            else ""
        )
        return (
            f"{lost}{listed}keep {them} in on_checkpoint_save/on_checkpoint_restore or in "
            "ctx.set_state"
        )


def holder_of(
    executor_id: str, executor_class: str
) -> tuple[str, Literal["middleware", "provider", "executor"]]:
    """Who holds a finding's attributes, in words, and what it is.

    An agent's middleware object, its context provider, or the executor itself (the ids of
    `snapshots.parts_of`).
    """
    executor, _, holder = executor_id.partition(MIDDLEWARE)
    if holder:
        return f"middleware object {holder} of executor {executor}'s agent", "middleware"
    executor, _, provider = executor_id.partition(PROVIDER)
    if provider:
        return (
            f"context provider {provider} ({executor_class}) of executor {executor}'s agent",
            "provider",
        )
    return f"executor {executor_id} ({executor_class})", "executor"


@dataclass(frozen=True)
class KeptState:
    """An executor whose own attributes, on a kept instance reset for another run, are not new."""

    executor_id: str
    executor_class: str
    attributes: tuple[LostAttribute, ...]
    """Each attribute as a new instance has it (`before`) and as the reset one has it (`after`)."""

    def line(self) -> str:
        """The finding in one line, with what to do about it."""
        said = "; ".join(
            f"self.{a.name} is {a.after} after the reset, {a.before} when built"
            for a in self.attributes
        )
        them = "it" if len(self.attributes) == 1 else "them"
        who, kind = holder_of(self.executor_id, self.executor_class)
        carries = (
            f"{who} carries state into the next run on a kept instance (register(reuse=True)): "
            f"{said} — "
        )
        if kind == "middleware":
            return (
                f"{carries}make it in the builder for each build and keep a run's state in the "
                "session's state, or register the workflow without reuse"
            )
        if kind == "provider":
            return (
                f"{carries}keep {them} in the session's state MAF hands its before_run/after_run "
                "(`state`), or register the workflow without reuse"
            )
        return (
            f"{carries}keep {them} in on_checkpoint_save/on_checkpoint_restore or in "
            "ctx.set_state, or register the workflow without reuse"
        )


@dataclass(frozen=True)
class SharedState:
    """A class attribute of an executor's own class that a run changed: every run shares it."""

    executor_class: str
    name: str
    before: str
    after: str
    paused: bool = False
    """The run paused: no checkpoint carries a class attribute, so a pause answered in another
    process finds it as built."""

    def line(self) -> str:
        """The finding in one line, with what to do about it."""
        lost = (
            ", and no checkpoint carries it: a pause answered in another process finds it as "
            f"built ({self.before})"
            if self.paused
            else ""
        )
        return (
            f"executor class {self.executor_class}'s class attribute {self.name} changed during "
            f"the run ({self.before} before, {self.after} after): it is one object for every "
            f"instance and every run a process drives{lost} — set it on the instance (in "
            "__init__)"
        )


@dataclass(frozen=True)
class SharedExecutor:
    """An executor the builder hands every build (a module's): one object for every run."""

    executor_id: str
    executor_class: str

    def line(self) -> str:
        """The finding in one line, with what to do about it."""
        return (
            f"executor {self.executor_id} ({self.executor_class}) is the same object in every "
            "build of the workflow: what it keeps of a run (its attributes, an agent's session "
            "and messages) is every run's, and runs at once share it — make a new one in the "
            "builder for each build"
        )


def shared_executors(one: object, another: object) -> list[SharedExecutor]:
    """The executors two builds of a workflow hold as the same object, that keep a run's state.

    An agent's executor (its session, its messages), or one whose own class sets attributes
    on it; not a function's (`@executor` at a module's level, as MAF's samples write them),
    which keeps nothing of a run.
    """
    theirs = {id(e) for e in executors_of(another)}
    return [
        SharedExecutor(str(e.id), type(e).__qualname__)
        for e in executors_of(one)
        if id(e) in theirs and (isinstance(e, AgentExecutor) or own_attributes(e))
    ]


@dataclass(frozen=True)
class CountedTool:
    """A tool whose limit (`max_invocations`, ...) MAF counts on the tool object, in memory."""

    tool: str
    limits: str

    def line(self) -> str:
        """The finding in one line."""
        return (
            f"tool {self.tool} counts its calls on its tool object, in the process ({self.limits}):"
            " Baton carries the count through a pause and into a run continuing this one, in any"
            " process; runs that do not continue one another count together only where one"
            " process drives them"
        )


def counted_tools(workflow: object) -> list[CountedTool]:
    """The tools of the workflow's agents that MAF limits by counting their calls."""
    found = []
    for name, tool in tools_of(agents_of(workflow)).items():
        limits = [
            f"{limit}={value}"
            for limit in ("max_invocations", "max_invocation_exceptions")
            if (value := getattr(tool, limit, None)) is not None
        ]
        if limits:
            found.append(CountedTool(name, ", ".join(limits)))
    return found


MUTABLE: Final = (list, dict, set, bytearray)
"""The class attributes a run can change in place (`SharedState`)."""


def class_state(workflow: object) -> dict[tuple[type, str], Any]:
    """The mutable class attributes of the executors' own classes (not MAF's), copied."""
    found: dict[tuple[type, str], Any] = {}
    for executor in executors_of(workflow):
        for klass in type(executor).__mro__:
            if klass.__module__.startswith("agent_framework") or klass is object:
                continue
            for name, value in vars(klass).items():
                if not name.startswith("__") and isinstance(value, MUTABLE):
                    with contextlib.suppress(Exception):  # what cannot be copied is not compared
                        found[(klass, name)] = copy.deepcopy(value)
    return found


def shared_state(
    before: Mapping[tuple[type, str], Any], *, paused: bool = False
) -> list[SharedState]:
    """The class attributes in `before` that differ now (`paused`: the run paused on the way)."""
    return [
        SharedState(
            klass.__qualname__,
            name,
            _short.repr(was),
            _short.repr(vars(klass).get(name)),
            paused,
        )
        for (klass, name), was in before.items()
        if vars(klass).get(name) != was
    ]


@dataclass(frozen=True)
class DroppedRequests:
    """A sub-workflow that keeps its requests to itself, and no executor after it takes them.

    MAF's `WorkflowExecutor(..., propagate_request=False)` sends its inner workflow's
    `request_info` on as a `SubWorkflowRequestMessage`, for an executor of the parent workflow to
    answer; with none there to take it, MAF's runner drops it, and the run ends asking nobody.
    """

    executor_id: str

    def line(self) -> str:
        """The finding in one line, with what to do about it."""
        return (
            f"sub-workflow {self.executor_id} keeps its requests to itself "
            "(propagate_request=False) and no executor it sends to takes them "
            "(SubWorkflowRequestMessage): its request_info is dropped, and the run ends asking "
            "nobody — pass propagate_request=True, or add an executor after it that handles "
            "SubWorkflowRequestMessage"
        )


def dropped_requests(workflow: object) -> list[DroppedRequests]:
    """The sub-workflows of `workflow` (at any depth) whose requests no executor takes."""
    if not isinstance(workflow, Workflow):
        return []
    targets: dict[str, list[str]] = {}
    for group in workflow.edge_groups:
        for edge in group.edges:
            targets.setdefault(edge.source_id, []).append(edge.target_id)
    found = []
    for executor in workflow.executors.values():
        if not isinstance(executor, WorkflowExecutor):
            continue
        found += dropped_requests(executor.workflow)
        asks = SubWorkflowRequestMessage in executor.output_types
        if not asks or getattr(executor, "_propagate_request", True):
            continue
        takers = [workflow.executors.get(t) for t in targets.get(executor.id, [])]
        if not any(t is not None and SubWorkflowRequestMessage in t.input_types for t in takers):
            found.append(DroppedRequests(str(executor.id)))
    return found


@dataclass(frozen=True)
class NotDurable:
    """A pause no saved checkpoint covers: a restart would lose it (Baton fails the run)."""

    pause: int
    request_ids: tuple[str, ...]
    reason: str

    def line(self) -> str:
        """The finding in one line."""
        advice = (
            " — allow-list the type: register(..., checkpoint_types=(...))"
            if "blocked for type" in self.reason
            else ""
        )
        return (
            f"pause {self.pause} is not durable: no saved checkpoint covers requests "
            f"{', '.join(self.request_ids)} ({self.reason}); a restart would lose it{advice}"
        )


@dataclass(frozen=True)
class AnsweredRequest:
    """A request the check answered, and whether the answer was the caller's or made up."""

    pause: int
    request_id: str
    executor_id: str
    request_type: str
    answer: str
    given: bool


@dataclass
class CheckReport:
    """What `check_spec` found; `clean` when it found nothing.

    Findings: executors that lost state (`lost_state`), pauses a restart would lose
    (`not_durable`), failures of the workflow or of the check (`failures`).
    """

    workflow: str
    input: dict[str, Any]
    pauses: int = 0
    answered: list[AnsweredRequest] = field(default_factory=list)
    lost_state: list[LostState] = field(default_factory=list)
    kept_state: list[KeptState] = field(default_factory=list)
    shared_state: list[SharedState] = field(default_factory=list)
    shared_executors: list[SharedExecutor] = field(default_factory=list)
    counted_tools: list[CountedTool] = field(default_factory=list)
    """Tools whose call limits a pause resets (found only in a workflow that paused)."""
    dropped_requests: list[DroppedRequests] = field(default_factory=list)
    not_durable: list[NotDurable] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    final_state: str | None = None
    functional: bool = False
    """Whether the workflow is a functional one (`@workflow`): no executors to lose state."""
    outputs: list[Any] = field(default_factory=list)
    ended_by_workflow: bool = False
    stopped_at_limit: bool = False
    reused: bool = False
    """Whether the workflow is registered with `reuse=True` (what a kept instance keeps: found)."""
    could_reuse: bool = False
    """Not registered for reuse, but a kept instance, reset, held nothing of its last run."""
    unused_run_kwargs: list[str] = field(default_factory=list)
    """What the registration's `run_kwargs` give that each drive gives `workflow.run` itself."""

    @property
    def clean(self) -> bool:
        """Whether the check found nothing."""
        return not (
            self.lost_state
            or self.kept_state
            or self.shared_state
            or self.shared_executors
            or self.counted_tools
            or self.dropped_requests
            or self.not_durable
            or self.failures
        )

    def findings(self) -> list[str]:
        """One line per finding."""
        return [
            *(f.line() for f in self.lost_state),
            *(f.line() for f in self.kept_state),
            *(f.line() for f in self.shared_state),
            *(f.line() for f in self.shared_executors),
            *(f.line() for f in self.counted_tools),
            *(f.line() for f in self.dropped_requests),
            *(f.line() for f in self.not_durable),
            *(f"failed: {f}" for f in self.failures),
        ]

    def lines(self) -> list[str]:
        """The report as text: what ran, a line per finding, the verdict."""
        ran = (
            f"checked {self.workflow}: {self.pauses} pause(s), {len(self.answered)} request(s) "
            f"answered, each resume in a fresh instance restored from its checkpoint; "
            f"final state {self.final_state}"
        )
        if self.ended_by_workflow:
            ran += " (the workflow ended the run)"
        if self.stopped_at_limit:
            ran += f" (stopped after {self.pauses} pauses: max_pauses)"
        verdict = (
            (
                "clean: every pause is durable"
                if self.functional
                else "clean: no executor lost state, every pause is durable"
            )
            + (", a kept instance resets to a new one's state" if self.reused else "")
            if self.clean
            else f"{len(self.findings())} finding(s)"
        )
        hint = (
            [
                "a kept instance, reset, held nothing of its last run: if the builder reads "
                "nothing of a run while building, register(..., reuse=True) builds it once per "
                "process rather than for every drive"
            ]
            if self.could_reuse and self.clean
            else []
        )
        unused = (
            [
                f"run_kwargs gives {', '.join(self.unused_run_kwargs)}, which Baton gives "
                "workflow.run itself: not used (Baton keeps each pause's checkpoint in its store)"
            ]
            if self.unused_run_kwargs
            else []
        )
        return [
            ran,
            *self.findings(),
            f"outputs: {_short.repr(self.outputs)}",
            *unused,
            *hint,
            verdict,
        ]

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data, `clean` included."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        return {"clean": self.clean, **to_jsonable_python(data, fallback=repr)}


ServicesFactory = Callable[[], RunServices]
"""Makes the services of one workflow instance, as the runtime does for every drive."""


async def check_spec(
    spec: WorkflowSpec,
    new_services: ServicesFactory,
    *,
    run_input: Any,
    answers: Mapping[str, Any] | None = None,
    max_pauses: int = 10,
) -> CheckReport:
    """Run `spec` pause by pause, each resume in a fresh restored instance; report what was lost.

    `answers` maps an executor id or a request's type name to a JSON answer, or to a list of
    answers taken in order (wrap an answer that is itself a list: `[[...]]`); a request with no
    answer left gets a made-up one. Raises `InvalidInput` for an input the workflow refuses and
    `InvalidAnswer` for a given answer that does not fit its request; what the workflow itself
    does wrong is in the report.
    """
    typed = typed_input(spec, run_input)
    report = CheckReport(workflow=spec.name, input=typed.model_dump(mode="json"))
    script = _Script(answers or {})
    with tempfile.TemporaryDirectory(prefix="baton-check-") as directory, _saves() as failed_saves:
        check = _Check(spec, new_services, Path(directory), script, report, failed_saves)
        try:
            return await _checked(check, spec, new_services, typed, report, max_pauses)
        finally:  # an MCP tool's server, say, ends with the check (MAF's `async with agent`)
            await close_connections(check.built)


async def _checked(
    check: _Check,
    spec: WorkflowSpec,
    new_services: ServicesFactory,
    typed: BaseModel,
    report: CheckReport,
    max_pauses: int,
) -> CheckReport:
    """`check_spec`'s runs and findings, in `check`."""
    if spec.run_kwargs is not None:  # as a drive gives them to every run
        services = new_services()
        report.unused_run_kwargs = batons_own(spec.run_kwargs(typed, services))
        check.run_kwargs = spec.kwargs_for_run(typed, services)
    try:
        await check.go(typed, max_pauses)
    except (NotAWorkflow, UnstableGraph, RunKwargsRefused) as exc:  # as a drive's: fails at start
        report.failures.append(str(exc))
        report.final_state = "FAILED"
        return report
    report.shared_state = shared_state(check.classes, paused=report.pauses > 0)
    report.shared_executors = check.shared
    report.dropped_requests = check.dropped
    report.counted_tools = check.counted if report.pauses else []
    report.reused = spec.reuse
    report.functional = check.functional
    if check.functional:
        return report  # a kept one holds no executors, and its engine leaves it as built
    kept = await check.reuse(check.message, report.input, max_pauses)
    if spec.reuse and kept is None:
        report.failures.append(
            "a kept instance could not be reset: restoring the checkpoint taken as it was "
            "built raised (the pool drops such an instance and builds another every drive)"
        )
    elif spec.reuse:
        report.kept_state = kept or []
    else:
        report.could_reuse = kept == [] and not (report.shared_state or report.shared_executors)
    return report


def sample_input(spec: WorkflowSpec) -> dict[str, Any]:
    """An input made up from the workflow's input schema; `InvalidInput` if it does not validate."""
    made_up = sample_of(spec.input_schema())
    try:
        return typed_input(spec, made_up).model_dump(mode="json")
    except InvalidInput as exc:
        raise InvalidInput(
            f"cannot make up an input for {spec.name} from its schema ({exc}); give one",
            exc.errors,
        ) from exc


class _Script:
    """The caller's answers, by executor id or request type name, each taken once in order."""

    def __init__(self, answers: Mapping[str, Any]) -> None:
        self._given = answers
        self._left = {k: list(v) if isinstance(v, list) else [v] for k, v in answers.items()}

    def again(self) -> _Script:
        """The same answers, none taken yet: for another run of the workflow."""
        return _Script(self._given)

    def answer(self, event: WorkflowEvent[Any]) -> tuple[Any, bool]:
        """The response to `event` and whether it was given (`InvalidAnswer` if it does not fit)."""
        for key in (str(event.source_executor_id), type(event.data).__name__):
            if self._left.get(key):
                value = self._left[key].pop(0)
                try:
                    return given_answer(event, value), True
                except Exception as exc:  # whatever the type's validation raises
                    raise InvalidAnswer(
                        f"the answer given for {key} does not fit the "
                        f"{_typename(event.response_type)} its request takes",
                        [{"loc": ["answers", key], "msg": str(exc)}],
                    ) from exc
        try:
            return answer_to(event), False
        except ValueError as exc:
            raise _CannotAnswer(
                f"cannot make up an answer to the {type(event.data).__name__} request of "
                f"{event.source_executor_id} ({exc}); give one in answers"
            ) from exc


_NO_ANSWER = object()


class _CannotAnswer(Exception):
    """No answer was given for a request, and none can be made up."""


class _FailedSaves(logging.Handler):
    """Keeps what MAF says when it cannot save a checkpoint (it only logs a warning)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.said: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("Failed to create checkpoint"):
            why = message.split(": ", 1)[-1]
            self.said.append(why.split(". To allow", 1)[0].split(". Note that", 1)[0])


@contextmanager
def _saves() -> Iterator[_FailedSaves]:
    handler = _FailedSaves()
    maf = logging.getLogger("agent_framework")
    maf.addHandler(handler)
    try:
        yield handler
    finally:
        maf.removeHandler(handler)


class _Check:
    """One check: the instance that paused last, and what is pending on it."""

    def __init__(
        self,
        spec: WorkflowSpec,
        new_services: ServicesFactory,
        directory: Path,
        script: _Script,
        report: CheckReport,
        failed_saves: _FailedSaves,
    ) -> None:
        self._spec = spec
        self._new_services = new_services
        self._directory = directory
        self._script = script
        self._report = report
        self._failed_saves = failed_saves
        self._storage: FileCheckpointStorage | None = None
        self._fresh: tuple[Snapshot, Snapshot] = ({}, {})
        self._lost: set[tuple[str, str]] = set()
        self.functional = False
        self.message: Any = None
        """What the start executor received (`WorkflowSpec.first_message`)."""
        self.classes: dict[tuple[type, str], Any] = {}
        """The executors' mutable class attributes as built (`class_state`)."""
        self.shared: list[SharedExecutor] = []
        self.counted: list[CountedTool] = []
        self.dropped: list[DroppedRequests] = []
        self.run_kwargs: dict[str, Any] = {}
        """The kwargs MAF's `run` takes, from the registration (`run_kwargs`)."""
        self.built: list[Instance] = []
        """Every instance it built: their agents close what they opened as the check ends."""

    def _build(self) -> Instance:
        """An instance as a drive gets one (`pool.new_instance`); closed as the check ends."""
        built = new_instance(self._spec, self._new_services())
        self.built.append(built)
        return built

    def _graph(self) -> Workflow:
        """A new instance of a graph workflow (`go` checks which kind the builder builds)."""
        built = self._build()
        if not isinstance(built, Workflow):
            raise TypeError(f"the builder of {self._spec.name} built a graph, then not")
        return built

    async def go(self, typed: BaseModel, max_pauses: int) -> None:
        """Start the workflow on `typed` and carry it on, pause by pause, as far as it goes."""
        workflow = self._build()
        self.classes = class_state(workflow)
        self.message = message = self._spec.first_message(typed, workflow)
        allowed = sorted(self._spec.allow_list(workflow))
        self._storage = FileCheckpointStorage(self._directory, allowed_checkpoint_types=allowed)
        if isinstance(workflow, FunctionalWorkflow):
            self.functional = True
            await self._go_functional(workflow, message, max_pauses)
            return
        another = self._graph()
        self.shared = shared_executors(workflow, another)
        self.dropped = dropped_requests(workflow)
        self.counted = counted_tools(workflow)
        self._fresh = (snapshot(workflow), snapshot(another))
        result = await self._run(workflow, message)
        pending = {str(e.request_id): e for e in _requests(result)}
        while result is not None and pending and not self._over(result):
            if self._report.pauses == max_pauses:
                self._report.stopped_at_limit = True
                return
            self._report.pauses += 1
            resumed = await self._resume(workflow, pending)
            if resumed is None:
                return
            workflow, result, pending = resumed

    async def _go_functional(
        self, workflow: FunctionalWorkflow, message: Any, max_pauses: int
    ) -> None:
        """`go` for a functional workflow: each pause snapshot, saved, restored anew, answered.

        Its runs save in memory, as a drive's do; the pause's snapshot alone goes through the
        check's storage (encoded, then decoded under the allow-list), as a drive commits it.
        """
        assert self._storage is not None
        engine = engine_for(workflow, InMemoryCheckpointStorage())
        result = await self._guarded(engine.run(message, **self.run_kwargs))
        pending = {str(e.request_id): e for e in _requests(result)}
        while result is not None and pending:
            if self._report.pauses == max_pauses:
                self._report.stopped_at_limit = True
                return
            self._report.pauses += 1
            pause = self._report.pauses
            try:
                checkpoint_id = await self._storage.save(await engine.snapshot())
                restored = await self._storage.load(checkpoint_id)
            except Exception as exc:  # MAF's encoder or the allow-list refused the checkpoint
                reason = str(exc).split(". To allow", 1)[0]
                self._report.not_durable.append(NotDurable(pause, tuple(pending), reason))
                return
            memory = InMemoryCheckpointStorage()
            await memory.save(restored)
            engine = engine_for(self._build(), memory)
            await engine.restore(restored)
            request_id = next(iter(pending))
            event = pending.pop(request_id)
            answered = self._answer(pause, request_id, event)
            if answered is _NO_ANSWER:
                return
            result = await self._guarded(
                engine.run(responses={request_id: answered}, **self.run_kwargs)
            )
            pending = pending | {str(e.request_id): e for e in _requests(result)}

    def _answer(self, pause: int, request_id: str, event: WorkflowEvent[Any]) -> Any:
        """The response to `event`, noted in the report; `_NO_ANSWER` if none (reported)."""
        try:
            response, given = self._script.answer(event)
        except _CannotAnswer as exc:
            self._report.failures.append(str(exc))
            return _NO_ANSWER
        self._report.answered.append(
            AnsweredRequest(
                pause=pause,
                request_id=request_id,
                executor_id=str(event.source_executor_id),
                request_type=type(event.data).__name__,
                answer=_short.repr(
                    maf_value(response) if isinstance(response, Content | Message) else response
                ),  # MAF's objects as their data, not `<... object at 0x...>`
                given=given,
            )
        )
        return response

    async def _resume(
        self, paused: Workflow, pending: dict[str, WorkflowEvent[Any]]
    ) -> tuple[Workflow, WorkflowRunResult | None, dict[str, WorkflowEvent[Any]]] | None:
        """Restore a fresh instance from the pause, compare, and answer one request there."""
        pause = self._report.pauses
        checkpoint_id = await paused.resolve_pause_checkpoint_id(
            list(pending), checkpoint_storage=self._storage
        )
        if checkpoint_id is None:
            said = self._failed_saves.said
            reason = said[-1] if said else "MAF saved none, and said nothing of why"
            self._report.not_durable.append(NotDurable(pause, tuple(pending), reason))
            return None
        workflow = self._graph()
        assert self._storage is not None
        checkpoint = await self._storage.load(checkpoint_id)
        try:  # as a drive restores (MAF's `run(checkpoint_id=)` would run a superstep more),
            # what a drive stores: no run kwargs, a sub-workflow's neither (`without_run_kwargs`)
            await engine_for(workflow, self._storage).restore(without_run_kwargs(checkpoint))
        except Exception as exc:
            self._report.failures.append(_failure(pause, f"{type(exc).__name__}: {exc}"))
            self._report.final_state = "FAILED"
            return None
        self._compare(pause, paused, workflow)
        again = {str(e.request_id): e for e in checkpoint.pending_request_info_events.values()}
        if set(pending) - set(again):
            self._report.failures.append(
                f"the restore from pause {pause} did not bring back requests "
                f"{sorted(set(pending) - set(again))}"
            )
            return None
        request_id = next(iter(pending))
        response = self._answer(pause, request_id, again.pop(request_id))
        if response is _NO_ANSWER:
            return None
        result = await self._run(workflow, responses={request_id: response})
        return workflow, result, again | {str(e.request_id): e for e in _requests(result)}

    async def reuse(
        self, message: Any, run_input: dict[str, Any], max_pauses: int
    ) -> list[KeptState] | None:
        """Run on a kept instance, reset it as the pool does, compare with a new one.

        The run goes on through its pauses, each answered as the check's were (in place, as one
        process would), so what the workflow keeps after an answer is compared too. The pool
        keeps the instance whether or not the workflow is registered for reuse: what would a
        kept instance carry into the next run. None if the reset failed.
        """
        spec = dataclasses.replace(self._spec, reuse=True)
        pool = WorkflowPool(lambda spec, run_id, given, by: self._new_services())
        kept = await pool.take(spec, "check-kept-1", run_input, None)
        script = self._script.again()
        with contextlib.suppress(Exception):  # the check's own run has reported what failed
            result = await kept.workflow.run(message, **self.run_kwargs)
            for _ in range(max_pauses):
                pending = _requests(result)
                if not pending or any(e.type == END_EVENT for e in result):
                    break
                answers = {str(e.request_id): script.answer(e)[0] for e in pending}
                result = await kept.workflow.run(responses=answers, **self.run_kwargs)
        await pool.give_back(spec, kept)
        if not pool.idle(spec.name):
            return None
        again = await pool.take(spec, "check-kept-2", run_input, None)
        self.built += [kept.workflow, again.workflow]  # closed as the check ends
        if not isinstance(again.workflow, Workflow):
            return None  # a functional workflow: nothing to compare (`check_spec` does not ask)
        new = self._graph()
        reset, fresh = snapshot(again.workflow), snapshot(new)
        built = parts_of(new)
        found: list[KeptState] = []
        for executor_id, executor in parts_of(again.workflow).items():
            names = kept_attributes(
                reset.get(executor_id, {}),
                (fresh.get(executor_id, {}), self._fresh[0].get(executor_id, {})),
            )
            if names:
                other = built.get(executor_id)
                found.append(
                    KeptState(
                        executor_id=executor_id,
                        executor_class=type(executor).__qualname__,
                        attributes=tuple(
                            LostAttribute(n, _value_of(other, n), _value_of(executor, n))
                            for n in names
                        ),
                    )
                )
        return found

    def _compare(self, pause: int, paused: Workflow, restored: Workflow) -> None:
        """Note each executor whose own attributes the restore did not bring back."""
        before, after = snapshot(paused), snapshot(restored)
        others = parts_of(restored)
        for executor_id, executor in parts_of(paused).items():
            names = lost_attributes(
                before[executor_id],
                after.get(executor_id, {}),
                (self._fresh[0].get(executor_id, {}), self._fresh[1].get(executor_id, {})),
            )
            names = [n for n in names if (executor_id, n) not in self._lost]
            if not names:
                continue
            self._lost |= {(executor_id, n) for n in names}
            other = others.get(executor_id)
            self._report.lost_state.append(
                LostState(
                    pause=pause,
                    executor_id=executor_id,
                    executor_class=type(executor).__qualname__,
                    attributes=tuple(
                        LostAttribute(
                            n,
                            _value_of(executor, n),
                            _value_of(other, n),
                            refusal(executor, n) or "",
                            keys_became_strings(
                                vars(executor).get(n), getattr(other, "__dict__", {}).get(n)
                            ),
                        )
                        for n in names
                    ),
                )
            )

    async def _run(
        self, workflow: Workflow, message: Any = None, **kwargs: Any
    ) -> WorkflowRunResult | None:
        """One `run()` of `workflow` on the check's storage; None if it failed (reported)."""
        check_run_kwargs(self.run_kwargs, workflow)  # as a drive does, before it runs
        running = workflow.run(
            message, checkpoint_storage=self._storage, **(self.run_kwargs | kwargs)
        )
        return await self._guarded(keeping_events(workflow, running))

    async def _guarded(self, running: Awaitable[WorkflowRunResult]) -> WorkflowRunResult | None:
        """The result of one run of the workflow; None if it failed (reported)."""
        self._failed_saves.said.clear()
        try:
            result = await running
        except InvalidAnswer:
            raise
        except Exception as exc:  # the workflow's own code failed: that is a finding
            error = exc
            if isinstance(exc, RunRaised):  # an engine's run: what it gave before it failed
                self._report.outputs += [_plain(o) for o in exc.result.get_outputs()]
                error = exc.error
            self._report.failures.append(
                _failure(self._report.pauses, f"{type(error).__name__}: {error}")
            )
            self._report.final_state = "FAILED"
            return None
        state = result.get_final_state()
        self._report.final_state = state.name
        self._report.outputs += [_plain(o) for o in result.get_outputs()]
        failure = next((e for e in result if e.type == "failed"), None)
        if failure is not None or state == WorkflowRunState.FAILED:
            details = getattr(failure, "details", None)
            message = getattr(details, "message", None) or "the workflow failed"
            self._report.failures.append(_failure(self._report.pauses, message))
            return None
        return result

    def _over(self, result: WorkflowRunResult) -> bool:
        """Whether the workflow ended the run itself (`end_run`), whatever it still waits for."""
        ended = any(e.type == END_EVENT for e in result)
        self._report.ended_by_workflow = ended
        return ended


def _requests(result: WorkflowRunResult | None) -> list[WorkflowEvent[Any]]:
    return list(result.get_request_info_events()) if result is not None else []


def _value_of(executor: Any, name: str) -> str:
    found = getattr(executor, "__dict__", {})
    return _short.repr(found[name]) if name in found else "unset"


def _failure(pause: int, message: str) -> str:
    return f"{f'after pause {pause}' if pause else 'before the first pause'}: {message}"


def _plain(output: Any) -> Any:
    if isinstance(output, BaseModel):
        return output.model_dump(mode="json")
    return output.text if isinstance(output, AgentResponse) else output  # a handoff's agent turn


def _typename(declared: Any) -> str:
    return getattr(declared, "__name__", None) or repr(declared)
