"""The agents a built workflow runs, wherever MAF keeps them (orchestrations, sub-workflows).

And a MAF agent a builder returns as it is, as the workflow Baton drives (`as_workflow`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import CodeType, UnionType
from typing import Any, Final, Union, get_args, get_origin, get_type_hints

from agent_framework import (
    Agent,
    AgentExecutor,
    AgentExecutorResponse,
    AgentResponse,
    AgentResponseUpdate,
    AgentSession,
    BaseAgent,
    CompactionProvider,
    FunctionalWorkflow,
    FunctionTool,
    HistoryProvider,
    InMemoryHistoryProvider,
    Message,
    SupportsAgentRun,
    Workflow,
    WorkflowAgent,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowEvent,
    handler,
)
from agent_framework._mcp import MCPTool
from agent_framework._workflows._agent import _caller_facing_messages
from agent_framework._workflows._functional import StepWrapper
from agent_framework_orchestrations import MagenticOrchestrator
from pydantic import BaseModel

logger = logging.getLogger(__name__)


class NoConversation(TypeError):
    """A run continues a conversation in a workflow whose start takes no list of messages."""


def workflows_of(workflow: object, depth: int = 0) -> list[Workflow]:
    """`workflow` and the sub-workflows it runs (`WorkflowExecutor`), theirs too, depth first.

    None (an empty list) for a workflow that is no graph: MAF's functional `@workflow` has no
    executors.
    """
    if not isinstance(workflow, Workflow):
        return []
    found = [workflow]
    for executor in workflow.executors.values():
        inner = getattr(executor, "workflow", None)
        if isinstance(inner, Workflow) and depth < 8:
            found += workflows_of(inner, depth + 1)
    return found


def executors_of(workflow: object) -> list[Any]:
    """The executors of `workflow` and of the sub-workflows it runs (`WorkflowExecutor`)."""
    return [e for each in workflows_of(workflow) for e in each.executors.values()]


def agents_of(workflow: object) -> list[Any]:
    """Each agent an executor of `workflow` (or of a sub-workflow it runs) wraps, once.

    A functional workflow's are those its code reaches (`functional_agents`).
    """
    if isinstance(workflow, FunctionalWorkflow):
        return functional_agents(workflow)
    found: dict[int, Any] = {}
    for agent in agent_executors(workflow).values():
        found[id(agent)] = agent
    for agent in held_agents(workflow).values():
        found.setdefault(id(agent), agent)
    return list(found.values())


def held_agents(workflow: object) -> dict[str, Any]:
    """The agents executors of `workflow` hold by name, in a mapping, and run themselves.

    MAF's declarative workflows do so: each `InvokeAzureAgent` executor holds the workflow's
    agents (`_agents`) and runs the one its action names. By the name they are held under. And
    an executor's manager's agent, under the executor's id: MAF's Magentic orchestrator runs
    its manager's (`_manager._agent`) for the plan, the progress ledger and the final answer.
    """
    if isinstance(workflow, FunctionalWorkflow):
        return {}
    found: dict[str, Any] = {}
    for executor in executors_of(workflow):
        manager = getattr(getattr(executor, "_manager", None), "_agent", None)
        if manager is not None and hasattr(manager, "default_options"):
            found.setdefault(str(executor.id), manager)
        for name in ("agents", "_agents"):
            held = getattr(executor, name, None)
            if isinstance(held, Mapping):
                for key, agent in held.items():
                    if hasattr(agent, "default_options"):
                        found.setdefault(str(key), agent)
    return found


def agent_executors(workflow: object) -> dict[str, Any]:
    """The agent each executor of a graph `workflow` (and its sub-workflows) wraps, by its id."""
    if isinstance(workflow, FunctionalWorkflow):
        return {}
    found: dict[str, Any] = {}
    for executor in executors_of(workflow):
        for name in ("agent", "_agent"):
            agent = getattr(executor, name, None)
            if agent is not None and hasattr(agent, "default_options"):
                found[str(executor.id)] = agent
    return found


def functional_agents(workflow: FunctionalWorkflow) -> list[Any]:
    """The agents a functional workflow's code reaches, once each.

    Those its function names (a global of its module, or a variable it closes over: an agent its
    builder made), and those the `@step`s and the functions of its module it calls name, as MAF
    finds the code a functional checkpoint is tied to.
    """
    func: Callable[..., Any] = workflow._func
    module = getattr(func, "__module__", None)
    found: dict[int, Any] = {}
    seen: set[int] = set()

    def visit(value: Any) -> None:
        if id(value) in seen:
            return
        seen.add(id(value))
        # a class check first: a module's other globals may be proxies whose attributes raise
        if isinstance(value, BaseAgent) and hasattr(value, "default_options"):
            found[id(value)] = value
        elif isinstance(value, StepWrapper):
            visit(value._func)
        elif inspect.isfunction(value) and (value is func or value.__module__ == module):
            for cell in value.__closure__ or ():
                with contextlib.suppress(ValueError):  # a cell not yet filled
                    visit(cell.cell_contents)
            for name in _names(value.__code__):
                if name in value.__globals__:
                    visit(value.__globals__[name])

    visit(func)
    return list(found.values())


def _names(code: CodeType) -> set[str]:
    """The names `code` (and the code it defines: lambdas, inner functions) looks up."""
    names = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, CodeType):
            names |= _names(constant)
    return names


def tools_of(agents: Iterable[Any]) -> dict[str, FunctionTool]:
    """The tools `agents` declare (a workflow's: `agents_of`), by name."""
    found: dict[str, FunctionTool] = {}
    for agent in agents:
        for candidate in (agent.default_options or {}).get("tools") or ():
            if isinstance(candidate, FunctionTool):
                found.setdefault(candidate.name, candidate)
    return found


class RegisteredAgent(AgentExecutor):
    """A MAF agent a builder returned as it is, run as a workflow of this one executor.

    Its id is the agent's name, else the workflow's (MAF's own default, the agent's `id`, is a
    new UUID at every build of an agent without a name, and a checkpoint restores only into
    executors of the ids that saved it). It starts on the run's typed input as the user's
    message: the value of an input of one text field, else the input as JSON. Everything else
    is MAF's `AgentExecutor`: the agent's replies are the workflow's output, its tool approvals
    and declaration-only calls are requests, its session is in the checkpoint.
    """

    def __init__(self, agent: SupportsAgentRun, workflow: str) -> None:
        super().__init__(agent, id=agent.name or workflow)

    @handler
    async def from_input(
        self,
        typed: BaseModel,
        ctx: WorkflowContext[AgentExecutorResponse, AgentResponse | AgentResponseUpdate],
    ) -> None:
        """Start on the run's input, as the user's message."""
        await self.from_str(said(typed), ctx)


def said(typed: BaseModel) -> str:
    """A typed input as a user's message: its one text field's value, else its JSON."""
    return said_of(typed.model_dump(mode="json"))


def said_of(values: dict[str, Any]) -> str:
    """An input's values as stored (a run's `input`) as a user's message: `said`."""
    if len(values) == 1:
        [value] = values.values()
        if isinstance(value, str):
            return value
    return json.dumps(values, ensure_ascii=False, separators=(",", ":"))


def takes_conversation(workflow: object) -> bool:
    """Whether `workflow` is a graph whose start executor takes a list of messages.

    Such a workflow (an agent registered as it is, an orchestration, a workflow made an agent)
    can carry on an ended run's conversation: it starts on the earlier messages and the new one,
    as MAF's `WorkflowAgent` hands a session's history to its workflow.
    """
    if not isinstance(workflow, Workflow) or _one_task(workflow):
        return False
    return any(_message_list(t) for t in _taken(workflow))


def _one_task(workflow: Workflow) -> bool:
    """A Magentic orchestration (made an agent or not): it starts on one message, never more.

    MAF's own `as_agent()` session fails its second turn ("Magentic only support a single task
    message"); Baton refuses the continuing start instead (`invalid_continues`).
    """
    start = workflow.get_start_executor()
    if isinstance(start, RegisteredAgent) and isinstance(start.agent, WorkflowAgent):
        start = start.agent.workflow.get_start_executor()
    return isinstance(start, MagenticOrchestrator)


def _taken(workflow: Workflow | FunctionalWorkflow) -> list[Any]:
    """The types `workflow`'s start executor takes, a handler's union taken apart into each.

    A functional workflow's: its function's one parameter besides its context, by its
    annotation (none: `Any`, the typed input as it is).
    """
    if isinstance(workflow, FunctionalWorkflow):
        kinds = [_annotation(workflow._func, name) for name in workflow._non_ctx_param_names]
    else:
        kinds = list(workflow.get_start_executor().input_types)
    return [
        member
        for kind in kinds
        for member in (get_args(kind) if get_origin(kind) in (Union, UnionType) else (kind,))
    ]


def _annotation(func: Any, name: str) -> Any:
    """The type of `func`'s parameter `name` (`Any` where it has none, or none resolves)."""
    try:
        hints = get_type_hints(func)
    except Exception:  # (a name the annotation's module cannot resolve: as MAF, the raw one)
        hints = {}
    found = hints.get(name, inspect.signature(func).parameters[name].annotation)
    return Any if found is inspect.Parameter.empty or isinstance(found, str) else found


def _a_mapping(kind: Any) -> bool:
    """`dict`, `dict[str, Any]`, `Mapping[...]` and the like."""
    origin = get_origin(kind) or kind
    return isinstance(origin, type) and issubclass(origin, Mapping)


def _message_list(kind: Any) -> bool:
    """`list[Message]`, `list[str | Message]` and the like."""
    if get_origin(kind) is not list:
        return False
    return any(arg is Message or Message in get_args(arg) for arg in get_args(kind))


def start_input(
    workflow: Workflow | FunctionalWorkflow, typed: BaseModel, history: Sequence[Message] = ()
) -> Any:
    """The run's typed input as `workflow`'s start executor takes it.

    With `history` (the messages of the conversation the run continues), those messages and the
    input as the user's next one, for a start executor that `takes_conversation`. Else as it is
    when a handler takes its type; else as the user's message (`said`: its one text field's
    value, else its JSON), in the first form the executor takes: a text, a `Message`, or a list
    of them (an orchestration, or a workflow made an agent, as MAF's `WorkflowAgent` hands it
    the user's messages). An executor that takes a mapping gets the input's values, as a script
    passes MAF's `run({"age": 8})` (MAF's declarative workflows take so), unless the input is one
    text field and it takes a text too. A handler's union is taken apart into each of its types.
    """
    if history:  # (a start executor that `takes_conversation`: `WorkflowSpec.first_message`)
        return [*history, Message(role="user", contents=[said(typed)])]
    takes = _taken(workflow)
    if any(isinstance(t, type) and isinstance(typed, t) for t in takes) or Any in takes:
        return typed
    as_taken = _as_taken(typed, takes)
    if as_taken is not None:
        return as_taken[0]
    values = typed.model_dump(mode="json")
    one_text = len(values) == 1 and all(isinstance(v, str) for v in values.values())
    if any(_a_mapping(t) for t in takes) and not (one_text and str in takes):
        return values
    text = said_of(values)
    if str in takes:
        return text
    message = Message(role="user", contents=[text])
    if Message in takes:
        return message
    if any(_message_list(t) for t in takes):
        return [message]
    return typed


def _as_taken(typed: BaseModel, takes: Sequence[Any]) -> tuple[Any] | None:
    """The input made what the start executor takes, where its shape says how; else None.

    An input of one field whose type the executor takes (`numbers: list[int]` for a handler of
    `list[int]`) gives that field's value, as one text field gives its text; an input whose
    fields are a dataclass's that it takes builds that dataclass, as a script would
    (`Email(sender=..., body=...)`). (In a tuple: the value may itself be None.)
    """
    fields = type(typed).model_fields
    if len(fields) == 1:
        [(name, info)] = fields.items()
        if info.annotation in takes and info.annotation is not str:  # (text: `said`, below)
            return (getattr(typed, name),)
    for kind in takes:
        if isinstance(kind, type) and dataclasses.is_dataclass(kind):
            wanted = {f.name for f in dataclasses.fields(kind) if f.init}
            if wanted and wanted == set(fields):
                return (kind(**{n: getattr(typed, n) for n in wanted}),)
    return None


SESSIONS: Final = "sessions"
"""The conversation entry a run that ended notes its agents' sessions in (`kept_sessions`)."""


SESSION_ID: Final = "baton_session_id"
"""The key a kept session's id rides under, beside its providers' state (`kept_sessions`)."""

TOOL_COUNTS: Final = "baton_tool_counts"
"""The key the calls MAF counted on the agent's limited tools ride under (`tool_counts`)."""


def kept_sessions(workflow: object) -> dict[str, dict[str, Any]]:
    """What each agent executor's session holds that a run continuing this one carries on.

    MAF keeps an agent's session between turns: its context providers' state (a harness's todos
    and mode, its standing tool approvals, a memory) goes on with the conversation. Each
    executor's session state as MAF serializes it (`AgentSession.to_dict`), by executor id,
    and always the session's id. An agent registered as it is keeps none of its history
    providers' (the next run is handed the recorded messages: they would come twice); the
    agents of an orchestration or a workflow made an agent keep theirs, as on MAF alone, where
    `WorkflowAgent` hands the session's messages to the same workflow instance, whose agent
    executors each load their own earlier turns too.
    """
    kept: dict[str, dict[str, Any]] = {}
    as_it_is = turns_carry_on(workflow)  # an agent registered as it is
    for executor in executors_of(workflow):
        session = getattr(executor, "_session", None)
        if not isinstance(executor, AgentExecutor) or not isinstance(session, AgentSession):
            continue
        providers = getattr(executor.agent, "context_providers", None) or ()
        history: set[str] = set()
        if as_it_is:
            history = {p.source_id for p in providers if isinstance(p, HistoryProvider)}
            history.add(InMemoryHistoryProvider.DEFAULT_SOURCE_ID)
        # a history a compaction provider rewrites (its summaries, the messages it excluded)
        # is more than the record holds: it goes on as MAF keeps it (`seed_history`)
        history -= _compacted(providers)
        try:
            state = session.to_dict()["state"]
        except Exception:  # a value MAF cannot serialize: that session does not carry on
            logger.warning(
                "an agent's session state cannot be kept for the next turn",
                exc_info=True,
                extra={"executor": str(executor.id)},
            )
            continue
        carried = {key: value for key, value in state.items() if key not in history}
        # with its session's id, kept even where nothing else is: MAF goes on in one session,
        # whose id a tool may read (`ctx.session`) and a provider hold its state to (FIDES)
        kept[str(executor.id)] = carried | {SESSION_ID: session.session_id}
        # and what MAF counted for its tools' limits, which hold across `main()`'s turns
        if counted := tool_counts(executor):
            kept[str(executor.id)][TOOL_COUNTS] = counted
    return kept


def sessions_of(earlier: Sequence[tuple[str, Sequence[Mapping[str, Any]]]]) -> dict[str, Any]:
    """The sessions the run a new one continues kept as it ended (the last of `earlier`)."""
    last = earlier[-1][1] if earlier else ()
    kept = next((e.get("sessions") for e in reversed(last) if e.get("type") == SESSIONS), None)
    return dict(kept) if isinstance(kept, dict) else {}


def carry_sessions(workflow: object, sessions: Mapping[str, Any]) -> None:
    """Give each agent executor of `workflow` the session state a run it continues kept.

    Under the session's id as it was (runs recorded before it was kept: a new one's), as MAF
    goes on with one session: FIDES holds its security state to the session it began in.
    """
    again: dict[int, AgentSession] = {}  # a session executors share stays one, of the old id
    for executor in executors_of(workflow):
        saved = sessions.get(str(executor.id))
        session = getattr(executor, "_session", None)
        if not isinstance(saved, Mapping) or not isinstance(session, AgentSession):
            continue
        state = {key: value for key, value in saved.items() if key not in (SESSION_ID, TOOL_COUNTS)}
        count_tools(executor, saved.get(TOOL_COUNTS) or {})
        same = saved.get(SESSION_ID)
        if isinstance(same, str) and same and same != session.session_id:
            # (a new build's: its state is what the build put there)
            session = executor._session = renamed(session, same, again)
        try:
            restored = AgentSession.from_dict({"session_id": session.session_id, "state": state})
        except Exception:  # (a state type this code no longer registers): it starts afresh
            logger.warning(
                "an agent's session state from the turn before cannot be restored",
                exc_info=True,
                extra={"executor": str(executor.id)},
            )
            continue
        session.state.update(restored.state)


def seed_history(workflow: object, history: Sequence[Message]) -> bool:
    """Give an agent registered as it is the conversation it continues where MAF keeps it.

    MAF keeps an agent's earlier messages in its session, which its in-memory history provider
    (put first among its context providers) loads at each turn: a turn's model input is the
    history, then what the other providers add (a todo list, a memory's notes, a mode's notice),
    then the new message. Handed as the run's input, the earlier messages would come after what
    the providers add. True when they were put in the start agent's session, to be loaded so
    (the run then starts on the new message alone); False where something else would load the
    agent's history (another history provider, the service), and for any other workflow.
    """
    continued = _continued_agent(workflow, history)
    if continued is None:
        return False
    agent, session = continued
    source = _in_memory_history(agent, session)
    if source is None:
        return False
    kept = session.state.setdefault(source, {})
    if source in _compacted(agent.context_providers) and kept.get("messages"):
        return True  # the history as the run continued left it (`kept_sessions`), compacted
    kept["messages"] = [*history, *kept.get("messages", ())]
    return True


async def history_kept_by_provider(workflow: object, history: Sequence[Message]) -> bool:
    """Whether the start agent's own history provider already holds the conversation continued.

    A history provider that keeps an agent's messages by its session's id outside the session
    (MAF's `FileHistoryProvider`, a database's), given the session's id as it was
    (`carry_sessions`), loads the earlier turns itself, as on MAF alone: handed as the run's
    input too, the model would see them twice (and the provider store them again). True when
    one of the start agent's loading history providers has messages for its session: the run
    then starts on the new message alone. False where none has (a provider keeping them in
    the session's state, which a kept session leaves out, or in itself, in a new build), and
    for any other workflow: the earlier turns are its input.
    """
    continued = _continued_agent(workflow, history)
    if continued is None:
        return False
    agent, session = continued
    for provider in agent.context_providers:
        if not isinstance(provider, HistoryProvider) or not provider.load_messages:
            continue
        state = session.state.setdefault(provider.source_id, {})
        try:
            if await provider.get_messages(session.session_id, state=state):
                return True
        except Exception:  # (its store unreachable now): the run is handed the turns instead
            logger.warning(
                "a history provider could not be asked for the conversation continued",
                exc_info=True,
                extra={"provider": provider.source_id},
            )
    return False


def _continued_agent(
    workflow: object, history: Sequence[Message]
) -> tuple[Agent, AgentSession] | None:
    """The agent a run of `workflow` continuing `history` starts, with its session; else None.

    None where there is no history, and for any workflow but an agent registered as it is.
    """
    if not history or not turns_carry_on(workflow):
        return None
    assert isinstance(workflow, Workflow)
    start = workflow.get_start_executor()
    session = getattr(start, "_session", None)
    agent = getattr(start, "agent", None)
    if not isinstance(agent, Agent) or not isinstance(session, AgentSession):
        return None
    return agent, session


def _compacted(providers: Iterable[Any]) -> set[str]:
    """The history sources a `CompactionProvider` among `providers` compacts after each turn."""
    return {
        p.history_source_id
        for p in providers
        if isinstance(p, CompactionProvider) and p.after_strategy is not None
    }


def _in_memory_history(agent: Agent, session: AgentSession) -> str | None:
    """The session state key MAF's `InMemoryHistoryProvider` loads `agent`'s history from.

    Its one loading history provider's, where that is MAF's in-memory one; else the default key
    where MAF puts one in itself (`Agent._prepare_run_context`: no loading history provider, no
    service keeping the conversation); None otherwise.
    """
    loaders = [
        p for p in agent.context_providers if isinstance(p, HistoryProvider) and p.load_messages
    ]
    if loaders:
        one_in_memory = len(loaders) == 1 and type(loaders[0]) is InMemoryHistoryProvider
        return loaders[0].source_id if one_in_memory else None
    options = agent.default_options or {}
    stores = options.get("store")
    if stores is None:
        stores = getattr(agent.client, "STORES_BY_DEFAULT", False)
    elsewhere = stores or options.get("conversation_id") or options.get("continuation_token")
    if elsewhere or session.service_session_id:
        return None
    return InMemoryHistoryProvider.DEFAULT_SOURCE_ID


def renamed(
    session: AgentSession, session_id: str | None, made: dict[int, AgentSession]
) -> AgentSession:
    """`session` under another id (a new one for None), with its state and its service's id.

    `made` holds the copies made so far, by the session they copy: executors that share one
    session share its copy too.
    """
    copy = made.get(id(session))
    if copy is None:
        copy = made[id(session)] = AgentSession(
            session_id=session_id, service_session_id=session.service_session_id
        )
        copy.state.update(session.state)
    return copy


def loaded_tools(executor: object) -> dict[str, list[str]]:
    """The tools each MCP tool of `executor`'s agent has loaded (progressive disclosure), by name.

    MAF keeps them on the tool object (`load_tool` adds one for the model's next turns), in no
    session or checkpoint: a restore into a fresh build loses them, and a call of a loaded tool
    a person approved meanwhile would find no tool (MAF then drops it, on MAF alone too).
    """
    return {
        tool.name: sorted(names)
        for tool in _mcp_tools(executor)
        if (names := getattr(tool, "_progressive_loaded_tool_names", None))
    }


def load_tools(executor: object, loaded: Mapping[str, Sequence[str]]) -> None:
    """Load into `executor`'s agent's MCP tools what `loaded_tools` saved; the rest as built."""
    for tool in _mcp_tools(executor):
        names = getattr(tool, "_progressive_loaded_tool_names", None)
        if isinstance(names, set):
            names.clear()
            names.update(str(n) for n in loaded.get(tool.name) or ())


COUNTS: Final = ("invocation_count", "invocation_exception_count")
"""What MAF counts on a tool object for its limits (`max_invocations`, `..._exceptions`)."""


def tool_counts(executor: object) -> dict[str, list[int]]:
    """The calls and failures MAF has counted on `executor`'s agent's limited tools, by name.

    MAF counts them on the tool object, in the process, in no session or checkpoint: a resume
    in another process would count from 0, and a tool MAF lets run once would run again.
    """
    return {
        tool.name: [int(getattr(tool, count, 0) or 0) for count in COUNTS]
        for tool in _limited_tools(executor)
    }


def count_tools(executor: object, counted: Mapping[str, Sequence[int]]) -> None:
    """Raise `executor`'s agent's limited tools' counts to what `tool_counts` saved.

    Never lowered: a tool object the process shares (a module's `@tool`) counts every run's
    calls, as on MAF alone, and has counted at least those of the process it runs in.
    """
    for tool in _limited_tools(executor):
        for count, saved in zip(COUNTS, counted.get(tool.name) or (), strict=False):
            setattr(tool, count, max(int(getattr(tool, count, 0) or 0), int(saved)))


def _limited_tools(executor: object) -> list[FunctionTool]:
    agent = getattr(executor, "agent", None) if isinstance(executor, AgentExecutor) else None
    return [
        tool
        for tool in tools_of([agent] if agent is not None else []).values()
        if tool.max_invocations is not None or tool.max_invocation_exceptions is not None
    ]


def _mcp_tools(executor: object) -> list[MCPTool]:
    agent = getattr(executor, "agent", None) if isinstance(executor, AgentExecutor) else None
    return [t for t in getattr(agent, "mcp_tools", None) or () if isinstance(t, MCPTool)]


def connections_of(workflow: object) -> list[Any]:
    """The MCP tools of `workflow`'s agents, each once.

    Each holds a connection it opens as its agent first runs (a server process for
    `MCPStdioTool`), until its `close()`.
    """
    found: dict[int, Any] = {}
    for agent in agents_of(workflow):
        for tool in getattr(agent, "mcp_tools", None) or ():
            if isinstance(tool, MCPTool):
                found.setdefault(id(tool), tool)
    return list(found.values())


REPLIES: Final = "replies"
"""The conversation entry a drive notes its workflow's replies in (`replies_of`)."""

_REPLYING: Final = frozenset({"output", "intermediate", "data"})
"""The events whose data MAF's `WorkflowAgent` makes its reply (`data`: MAF's older name)."""


def turns_carry_on(workflow: object) -> bool:
    """Whether a run continuing a run of `workflow` starts on every turn it recorded.

    So for an agent registered as it is: MAF keeps an agent's every message in its session
    (its text, its tool calls and their results). Any other workflow that converses (an
    orchestration, a workflow made an agent) starts on the user's messages and the workflow's
    replies, as MAF's `WorkflowAgent` keeps them in a session (`replies_of`): not each agent's
    drafts on the way, nor an orchestrator's routing.
    """
    if not isinstance(workflow, Workflow):
        return False
    start = workflow.get_start_executor()
    return isinstance(start, RegisteredAgent) and not isinstance(start.agent, WorkflowAgent)


def replies_of(events: Iterable[WorkflowEvent[Any]]) -> list[dict[str, Any]]:
    """A workflow's replies in `events`, as MAF's `WorkflowAgent` makes them its response.

    The caller-facing assistant messages of its outputs (and intermediate outputs): an agent's
    response, a message or a list of them (an orchestration's conversation) less what is not
    said to the caller (the user's messages, tool calls and their results); any other value as
    text, by the executor that yielded it. Each as `{"agent", "text"}`; one with no text is left
    out (Baton's conversation keeps words).
    """
    replies: list[dict[str, Any]] = []
    for event in events:
        if event.type not in _REPLYING:
            continue
        data = event.data
        if isinstance(data, AgentResponse):
            messages = _caller_facing_messages(data.messages)
        elif isinstance(data, Message):
            messages = _caller_facing_messages([data])
        elif isinstance(data, list) and data and all(isinstance(m, Message) for m in data):
            messages = _caller_facing_messages(data)
        elif data is None or isinstance(data, AgentResponseUpdate):
            continue
        else:
            text = data if isinstance(data, str) else str(data)
            messages = [Message(role="assistant", contents=[text])]
        replies += [
            {"agent": m.author_name or event.executor_id, "text": m.text}
            for m in messages
            if m.text
        ]
    return replies


def as_workflow(agent: SupportsAgentRun, name: str) -> Workflow:
    """`agent` as a workflow named `name`: one `RegisteredAgent`, its replies the output."""
    return WorkflowBuilder(name=name, start_executor=RegisteredAgent(agent, name)).build()
