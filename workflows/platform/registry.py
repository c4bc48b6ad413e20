"""Workflows by name: each registers its input model and a builder, and nothing else.

A workflow author writes executors and a `build_workflow(services)` and decorates it with
`@register(...)`; the runtime persists, routes and resumes. Builders are called for any drive of
a run, in any process, and must build the same graph with a stable name: afresh for every drive,
or once per kept instance for a workflow registered with `reuse=True` (`workflows.platform.pool`).
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_framework import FunctionalWorkflow, Message, Workflow
from pydantic import BaseModel

from baton.errors import WorkflowNotFound
from executors.platform.adapters import RequestAdapter
from executors.platform.builtin_adapters import RouteKey
from executors.platform.services import CaseContext, Resources, RunServices
from human.kinds import CHECKPOINT_TYPES, schema_of
from human.policy import EditedCall, Invariant, Route
from workflows.platform.checkpoints import checkpoint_types_of, type_key
from workflows.platform.engine import (
    Instance,
    NotAWorkflow,
    UnstableGraph,
    as_instance,
    graph_changes,
)

logger = logging.getLogger(__name__)

Builder = Callable[[RunServices], Any]
"""Builds an instance: a MAF `Workflow` (a graph), or a functional workflow or its definition."""
InvariantCheck = Callable[[EditedCall, Resources], Awaitable[str | None]]
"""An invariant as a workflow writes it: the edited call, the process's resources (`Resources`)."""
Adapters = Callable[[RunServices], Sequence[RequestAdapter]]
StartMessage = Callable[[Any], Any]
RunKwargs = Callable[[Any, RunServices], Mapping[str, Any]]
"""The keyword arguments MAF's `workflow.run` takes for a run: from its typed input, services."""
BATONS_RUN_KWARGS: frozenset[str] = frozenset(
    {"message", "responses", "stream", "checkpoint_id", "checkpoint_storage"}
)
"""`workflow.run`'s arguments each drive gives (or withholds) itself: never a registration's."""


def batons_own(kwargs: Mapping[str, Any]) -> list[str]:
    """The names among `kwargs` that each drive gives `workflow.run` itself (left out)."""
    return sorted(BATONS_RUN_KWARGS & kwargs.keys())


class RunKwargsRefused(TypeError):
    """A registration's `run_kwargs` gives a name the instance's `run` does not take.

    MAF's graph `Workflow.run` takes no other keywords: every run would fail as it starts (an
    agent's `run(middleware=...)`, say, which has no place in a workflow's run).
    """


def check_run_kwargs(kwargs: Mapping[str, Any], instance: Instance) -> None:
    """`RunKwargsRefused` naming what of `kwargs` `instance`'s `run` does not take, if any."""
    taken = _run_keywords(type(instance))
    refused = sorted(kwargs.keys() - taken) if taken is not None else []
    if refused:
        assert taken is not None
        raise RunKwargsRefused(
            f"register(run_kwargs=...) gives {', '.join(refused)}, which MAF's "
            f"{type(instance).__name__}.run does not take (it takes "
            f"{', '.join(sorted(taken - BATONS_RUN_KWARGS))}): give an agent's own run options "
            "(its middleware, its options) to the agent the builder makes"
        )


def _run_keywords(kind: type[Instance]) -> frozenset[str] | None:
    """The keywords a `run` of this type takes; None where it takes any (`**kwargs`)."""
    run = getattr(kind, "run", None)
    if run is None:
        return None
    parameters = inspect.signature(run).parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return None
    return frozenset(p.name for p in parameters if p.name != "self")


@dataclass(frozen=True)
class WorkflowSpec:
    """A registered workflow."""

    name: str
    description: str
    input_model: type[BaseModel]
    build: Builder
    checkpoint_types: tuple[type, ...] = ()
    allowed_types: frozenset[str] = field(default_factory=frozenset)
    adapters: Adapters | None = None
    start_message: StartMessage | None = None
    case_context: CaseContext | None = None
    party: str = "user"
    routes: Mapping[RouteKey, Route] = field(default_factory=dict)
    outcome: type[BaseModel] | None = None
    reuse: bool = False
    run_kwargs: RunKwargs | None = None

    # Caches of what every build of the spec shares; each spec its own (`dataclasses.replace`
    # makes a new one: a spec with other types must not read another's allow-list).
    _found: dict[str, frozenset[str]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )
    _schemas: dict[type, dict[str, Any]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )
    _proven: set[str] = field(default_factory=set, init=False, compare=False, repr=False)

    def graph(self, services: RunServices) -> Instance:
        """A new instance of the workflow: what its builder returns.

        A graph (`Workflow`), a functional workflow (`@workflow`; a definition is built), or an
        agent (a workflow of that one agent, named as registered; a workflow made an agent is
        the workflow); any other value is a `NotAWorkflow` (a `TypeError`) saying what Baton
        drives, not an attribute missing deep in a drive.
        """
        built: object = self.build(services)
        instance = as_instance(built, self.name)
        if instance is None:
            raise NotAWorkflow(
                f"the builder of workflow {self.name!r} returned a {type(built).__name__}; "
                "Baton drives MAF workflows: a Workflow (WorkflowBuilder, an orchestration), a "
                "functional @workflow, or an agent"
            )
        return instance

    def prove_stable(self, workflow: Instance, services: RunServices) -> None:
        """`UnstableGraph` unless another build for the same run is the same graph as `workflow`.

        Every resume on Baton restores the run's checkpoint into a new build, which MAF refuses
        unless it is the graph that paused (its executors by id, its edges): a builder that
        gives an executor a new id at every build (an agent without a name) would have every run
        pause and never resume. Proven once per process, by a second build, so that such a
        workflow fails its runs as they start, saying why, before anyone is asked anything.
        """
        if self.proven_stable:
            return
        changed = graph_changes(workflow, self.graph(services))
        if changed is not None:
            raise UnstableGraph(
                f"workflow {self.name!r} builds another graph every time, so a run that paused "
                f"could never resume: {changed}"
            )
        self._proven.add("graph")

    @property
    def proven_stable(self) -> bool:
        """Whether this process has proven that the builder builds the same graph every time."""
        return "graph" in self._proven

    def allow_list(self, workflow: Instance) -> frozenset[str]:
        """The checkpoint allow-list of a built instance: the registered types and those found.

        Found once per process (every build of a workflow is the same): the types its executors
        take, send, ask and are answered, or a functional workflow's function and steps take and
        return (`checkpoint_types_of`).
        """
        found = self._found.get("types")
        if found is None:
            found = self._found["types"] = self.allowed_types | checkpoint_types_of(workflow)
        return found

    def kwargs_for_run(self, typed_input: BaseModel, services: RunServices) -> dict[str, Any]:
        """The kwargs MAF's `run` takes for a run of this workflow (`run_kwargs`), less Baton's.

        A checkpoint storage given there (MAF's `run(checkpoint_storage=...)`, as MAF's
        `checkpoint/workflow_as_agent_checkpoint.py` gives one to its workflow agent's `run`) is
        left out as a builder's is (`pool.new_instance`): MAF would save a checkpoint after every
        superstep of every drive to it. So are the message, the responses, `stream` and a
        checkpoint id, which each drive gives itself. Logged once per process; `baton check`
        says it in its report.
        """
        if self.run_kwargs is None:
            return {}
        kwargs = dict(self.run_kwargs(typed_input, services))
        dropped = batons_own(kwargs)
        if dropped and "run_kwargs" not in self._proven:
            self._proven.add("run_kwargs")
            logger.warning(
                "run_kwargs that Baton gives itself are not used",
                extra={"workflow": self.name, "dropped": dropped},
            )
        return {k: v for k, v in kwargs.items() if k not in BATONS_RUN_KWARGS}

    def outcome_schema(self) -> dict[str, Any]:
        """The JSON Schema of what a person's resolution of a takeover records ({}: free-form).

        Made once per process (every drive of a run needs it; pydantic makes it anew each time).
        """
        if self.outcome is None:
            return {}
        if self.outcome not in self._schemas:
            self._schemas[self.outcome] = schema_of(self.outcome)
        return copy.deepcopy(self._schemas[self.outcome])

    def text_field(self) -> str | None:
        """The input's one field, if it is text: what a person's chat message fills in.

        (An agent registered as it is starts on that field's value as its user message:
        `executors.platform.agents.said`.)
        """
        fields = self.input_model.model_fields
        if len(fields) != 1:
            return None
        [(name, info)] = fields.items()
        return name if info.annotation is str else None

    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of the workflow's input."""
        return self.input_model.model_json_schema()

    def request_adapters(self, services: RunServices, workflow: Instance) -> list[RequestAdapter]:
        """The workflow's request adapters, then those every workflow has, in this order.

        Baton's own kind models; MAF's tool approvals of the workflow's agents; a handoff's turns
        of the user (to the team `routes` give `HandoffAgentUserRequest`, or the policy's
        default); a call of a declaration-only tool, for a person to carry out; an orchestration's
        hold on an agent's reply (`with_request_info`) as a review;
        and last, any other typed request, as an `input` request for people: a
        workflow needs no adapter of its own.
        """
        from agent_framework import Content
        from agent_framework_orchestrations import HandoffAgentUserRequest

        from executors.platform.agents import agent_executors, agents_of, tools_of
        from executors.platform.builtin_adapters import (
            AgentReviews,
            Kinds,
            TypedInputs,
            UserTurns,
        )
        from executors.platform.tool_adapters import (
            AgentToolApprovals,
            HostCallInputs,
            install_calls,
        )

        turns = self.routes.get(HandoffAgentUserRequest)
        agents = agents_of(workflow)
        tools = tools_of(agents)
        install_calls(agents)  # Baton's results for the calls it decided reach MAF's tool loop
        services.using(baton_calls=frozenset(agent_executors(workflow)))
        return [
            *(self.adapters(services) if self.adapters else ()),
            Kinds(),
            AgentToolApprovals(services, tools),
            UserTurns(services, team=(turns and turns.team) or services.policy.default_team),
            AgentReviews(services, routes=self.routes),
            HostCallInputs(services, tools, route=self.routes.get(Content) or Route()),
            TypedInputs(services, workflow=self.name, routes=self.routes),
        ]

    def first_message(
        self,
        typed_input: BaseModel,
        workflow: Instance | None = None,
        history: Sequence[Message] = (),
    ) -> Any:
        """What the workflow's start executor receives for this input.

        `start_message(input)` if the registration gives one; else, for a graph `workflow`, the
        input as its start executor takes it, and for a functional one as its function takes it
        (`start_input`: the user's message to an orchestration or a workflow made an agent, the
        one text field's value to a function of a `str`; after `history`, the messages of the
        conversation the run continues); else the typed input.
        """
        from executors.platform.agents import NoConversation, start_input

        if history and not self.converses(workflow):
            raise NoConversation(
                f"workflow {self.name!r} starts on its typed input, not on a conversation: "
                "a run of it cannot continue another"
            )
        if self.start_message:
            return self.start_message(typed_input)
        if isinstance(workflow, Workflow | FunctionalWorkflow):
            return start_input(workflow, typed_input, history)
        return typed_input

    def converses(self, workflow: Instance | None) -> bool:
        """Whether a run of this workflow can continue an ended run's conversation.

        Its `workflow` (an instance) starts on a list of messages (`takes_conversation`: an agent
        registered as it is, an orchestration, a workflow made an agent) and the registration
        gives no `start_message` of its own.
        """
        from executors.platform.agents import takes_conversation

        return self.start_message is None and takes_conversation(workflow)


PLATFORM_WORKFLOWS = ("workflows.platform.ask",)
"""The workflows the platform itself registers (knowing no business): loaded before any other."""

_REGISTRY: dict[str, WorkflowSpec] = {}
_UNAVAILABLE: dict[str, str] = {}


def register(
    name: str,
    *,
    input_model: type[BaseModel],
    description: str = "",
    checkpoint_types: tuple[type, ...] = (),
    allowed_type_keys: tuple[str, ...] = (),
    adapters: Adapters | None = None,
    start_message: StartMessage | None = None,
    case_context: CaseContext | None = None,
    party: str = "user",
    routes: Mapping[RouteKey, Route] | None = None,
    outcome: type[BaseModel] | None = None,
    reuse: bool = False,
    run_kwargs: RunKwargs | None = None,
) -> Callable[[Builder], Builder]:
    """Register `build_workflow` under `name`; its input model and extra types are allow-listed.

    `allowed_type_keys` allow-lists types by MAF's key (`"module:Qualname"`), for types that are
    not classes of your own, such as `"types:GenericAlias"` for a `list[Message]` response type.
    `adapters(services)` map the workflow's non-Baton request types to people and back
    (`executors.platform.adapters`); `start_message(input)` is what the start executor receives
    instead of the typed input. `case_context(services)` adds what people should see of the case
    (a customer's record, say) to every request the adapters ask, beside the conversation;
    `party` is what the workflow calls the person it serves in the words people read (the
    conversation's first message is theirs). Request, response and message types are found from
    the executors, with the value classes their modules define; `checkpoint_types` names any
    other type an executor keeps in its own state or the workflow's (`ctx.set_state`).

    Any other `ctx.request_info(data, response_type)` becomes an `input` request with no adapter;
    `routes` route them (team, title, priority, deadline) by request data type or executor id.
    `outcome` is the model of what a person who takes a case over records when they resolve it:
    its fields are the resolve form's (free-form JSON without one).

    `run_kwargs(input, services)` gives the keyword arguments MAF's `workflow.run` takes beside
    the message (`function_invocation_kwargs` for the tools, `client_kwargs` for the chat
    clients), as a script passes them: Baton passes them at every drive of the run (its start
    and each resume), made again from the run's input and this process's services, and keeps
    them out of the run's checkpoints (they may hold a connection string or a token).

    `reuse=True` lets a process keep built instances and reset them between drives rather than
    build one per drive (`workflows.platform.pool`). Only for a builder that reads nothing of a
    run while building (executors may keep `services` and read it as they run), and executors
    that keep a run's state where MAF checkpoints it.
    """

    def decorate(build: Builder) -> Builder:
        types = (input_model, *checkpoint_types, *CHECKPOINT_TYPES)
        _REGISTRY[name] = WorkflowSpec(
            name=name,
            description=description or (build.__doc__ or "").strip().split("\n")[0],
            input_model=input_model,
            build=build,
            checkpoint_types=tuple(checkpoint_types),
            allowed_types=frozenset({*(type_key(t) for t in types), *allowed_type_keys}),
            adapters=adapters,
            start_message=start_message,
            case_context=case_context,
            party=party,
            routes=dict(routes or {}),
            outcome=outcome,
            reuse=reuse,
            run_kwargs=run_kwargs,
        )
        return build

    return decorate


_INVARIANTS: dict[str, InvariantCheck] = {}


def invariant(name: str) -> Callable[[InvariantCheck], InvariantCheck]:
    """Register a check an approver's edit must pass, under the name policies files use.

    A rule's `invariants: [name]` runs it on every edit of a call the rule asked about (and of
    a call the edit makes it meet), before the edit is recorded: it returns None when the edited
    call keeps the invariant, else one sentence saying why not, which refuses the edit (422, with
    that sentence). It gets the call before and after the edit, the request's context and the
    run's input (`EditedCall`), and the systems the workflow's tools use (`Resources`): the
    invariant's business is the workflow's, never Baton's.

    Example:
        ```python
        @invariant("refund.same_customer")
        async def same_customer(call: EditedCall, resources: Resources) -> str | None:
            order = await (await resources.get(Office.open)).get_order(call.after["order_id"])
            return None if order["customer"] == call.run_input["customer_id"] else "..."
        ```
    """

    def decorate(check: InvariantCheck) -> InvariantCheck:
        _INVARIANTS[name] = check
        return check

    return decorate


def invariants(resources: Resources) -> dict[str, Invariant]:
    """The registered invariants, each bound to this process's `resources`."""

    def bound(check: InvariantCheck) -> Invariant:
        async def run(call: EditedCall) -> str | None:
            return await check(call, resources)

        return run

    return {name: bound(check) for name, check in _INVARIANTS.items()}


def invariant_names() -> frozenset[str]:
    """The names invariants are registered under."""
    return frozenset(_INVARIANTS)


def load(modules: str | Sequence[str]) -> dict[str, str]:
    """Import `modules` (a sequence, or comma-separated names) so that their workflows register.

    A module that fails to import fails alone: it is logged and kept, with its error, in
    `unavailable()`, and every other module still loads. Returns the failures of this call.
    """
    if isinstance(modules, str):
        modules = [m.strip() for m in modules.split(",") if m.strip()]
    failed: dict[str, str] = {}
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception as exc:  # any error of a workflow's own code: that module is unavailable
            failed[module] = f"{type(exc).__name__}: {exc}"
            logger.exception("workflow module failed to import", extra={"workflow_module": module})
        else:
            _UNAVAILABLE.pop(module, None)
    _UNAVAILABLE.update(failed)
    return failed


def unavailable() -> dict[str, str]:
    """The workflow modules that failed to import, with their errors."""
    return dict(_UNAVAILABLE)


def build_for_every_drive(name: str) -> None:
    """Build workflow `name` for every drive in this process, even if registered with reuse."""
    _REGISTRY[name] = dataclasses.replace(get(name), reuse=False)


def get(name: str) -> WorkflowSpec:
    """A workflow by name, or `WorkflowNotFound`."""
    spec = _REGISTRY.get(name)
    if spec is None:
        shown = name if len(name) <= 80 else name[:80] + "…"
        raise WorkflowNotFound(f"no workflow named {shown!r}; known: {sorted(_REGISTRY)}")
    return spec


def all_workflows() -> list[WorkflowSpec]:
    """Every registered workflow, by name."""
    return [_REGISTRY[n] for n in sorted(_REGISTRY)]
