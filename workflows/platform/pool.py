"""Built workflow instances kept per process, for workflows registered with `reuse=True`.

A drive needs a built workflow: its executors, agents, tools and chat clients. Building one costs
from a tenth of a short drive's CPU to as much again (the support desk's handoff orchestration
creates a pydantic model per handoff tool, and MAF generates their schemas on the first agent
run: 6 ms a build). A workflow registered with
`reuse=True` promises two things, and Baton keeps as many of its built instances per process as
drive at once there:

- its builder reads nothing of a particular run while building: executors may keep `services`
  and read it when they run (Baton points it at each drive's run);
- its executors keep a run's state where a reset puts it back: MAF's checkpoints
  (`on_checkpoint_save` and `on_checkpoint_restore`, or the workflow's state), or attributes
  Baton carries (`workflows.platform.attributes`), not in an object a reset leaves as it is
  (one that cannot be pickled, a class attribute, a module's global).

When a drive ends (its progress committed), Baton resets its instance and keeps it: it restores
the checkpoint it took of the instance just built (no workflow state, no messages in flight, no
pending requests, every executor's state as built) and points its services at no run, so nothing
of a run stays in memory between its drives. The next drive points them at its run
(`RunServices.rebind`). A drive that raises does not give its instance back. Any other workflow
is built for every drive.

An instance's agents may hold connections they open as they first run (MAF's MCP tools: a
server process each for `MCPStdioTool`, a session for the HTTP ones), which MAF closes with the
agent (`async with agent` in a script). Baton closes each MCP tool once no instance it keeps or
has handed out holds it: after the drive of an instance it drops (not reusable, no room, its
reset failed, its drive raised), and as the pool closes with its process. A tool several
instances share (one a module holds, or `services.resources.shared` builds) stays open while any
of them is out; an instance taken while one of its tools closes waits for the close (its agent
then connects again as it runs). A close is shielded from the drive's cancellation, and the
pool's own close waits for every one under way.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from agent_framework import AgentExecutor, AgentSession, Workflow, WorkflowCheckpoint

from executors.platform.agents import (
    agent_executors,
    agents_of,
    connections_of,
    executors_of,
    held_agents,
    renamed,
    workflows_of,
)
from executors.platform.services import RunServices
from workflows.platform.attributes import install as carry_attributes
from workflows.platform.engine import Instance, kwargs_again_for_sub_workflows
from workflows.platform.registry import WorkflowSpec
from workflows.platform.state import install as lean_state

ServicesFor = Callable[[WorkflowSpec, str, dict[str, Any], str | None], RunServices]
"""Makes the services of a new instance: given the spec, run id, run input and its starter."""

logger = logging.getLogger(__name__)

KEPT_PER_WORKFLOW = 4
"""Idle instances kept per reusable workflow, by default: `baton serve` and `baton worker` keep as
many as drive at once (`BATON_WORKER_CONCURRENCY`); more drives at once build more."""


@dataclass
class Built:
    """A built workflow instance, with the services its executors hold."""

    workflow: Instance
    services: RunServices
    pristine: WorkflowCheckpoint | None = None
    """The checkpoint of the instance as built (reusable workflows only): what a reset restores."""
    connections: tuple[Any, ...] = ()
    """Its agents' MCP tools (`agents.connections_of`), which `WorkflowPool.drop` closes."""


async def close_connections(instances: Iterable[Instance]) -> None:
    """Close the MCP tools of `instances`' agents, each once (`baton check`, as it ends)."""
    tools = {id(t): t for instance in instances for t in connections_of(instance)}
    for tool in tools.values():
        await _closed(tool)


async def _closed(tool: Any) -> None:
    """Close one MCP tool; one that fails to close is logged (the server's loss, not a run's)."""
    try:
        await tool.close()
    except Exception:
        logger.exception("an MCP tool's connection did not close", extra={"tool": tool.name})


def new_instance(spec: WorkflowSpec, services: RunServices) -> Instance:
    """A new instance of `spec`, made ready to be driven as Baton drives every one.

    Built with `services` (the first build in a process proves that the builder builds the same
    graph every time: `WorkflowSpec.prove_stable`); its runner on Baton's lean state
    (`workflows.platform.state`); its executors' own attributes carried by checkpoints
    (`workflows.platform.attributes`); and no checkpoint storage of its own, nor of its
    sub-workflows': a builder's `checkpoint_storage=...` (MAF's way to resume a run in one
    process) would save a checkpoint after every superstep of every drive to the author's
    storage. Baton keeps the one checkpoint a pause needs in its store, and restores from there.
    A functional workflow has no runner or executors: it is driven as built
    (`workflows.platform.engine`).
    """
    workflow = spec.graph(services)
    if not isinstance(workflow, Workflow):
        return workflow
    spec.prove_stable(workflow, services)
    lean_state(workflow)
    kwargs_again_for_sub_workflows(workflow)
    carry_attributes(workflow, spec.allow_list(workflow))
    for each in workflows_of(workflow):
        # The builder's, on MAF's in-process runner context (MAF has no setter for it).
        each._runner.context._checkpoint_storage = None  # type: ignore[attr-defined]
    return workflow


def new_sessions(workflow: Workflow) -> None:
    """Give each agent executor of a reset instance a session of its own, of a new id.

    The pristine checkpoint a reset restores holds the session its build made: each run on the
    kept instance would go on in that one session id, where a history provider keeping messages
    by it (MAF's `FileHistoryProvider`, a database's) would hand one run's conversation to the
    next, and a provider holding state to its session (FIDES) would see one session. A new build
    makes a new one (`agent.create_session()`); so does a reset, with what the build put in it.
    """
    fresh: dict[int, AgentSession] = {}  # a session executors share stays one
    for executor in executors_of(workflow):
        session = getattr(executor, "_session", None)
        if isinstance(executor, AgentExecutor) and isinstance(session, AgentSession):
            executor._session = renamed(session, None, fresh)


class WorkflowPool:
    """Hands out built workflow instances: kept ones, reset, for reusable workflows; else new."""

    def __init__(self, services: ServicesFor, *, keep: int = KEPT_PER_WORKFLOW) -> None:
        """`services(spec, run_id, run_input, started_by)`: services for a new instance.

        `keep`: how many idle instances of each reusable workflow to keep.
        """
        self._services = services
        self.keep = keep
        self._idle: dict[str, list[Built]] = {}
        self._holders: dict[int, int] = {}  # by an MCP tool's id: the instances out or kept with it
        self._closing: dict[int, asyncio.Future[None]] = {}  # by an MCP tool's id: its close

    async def take(
        self, spec: WorkflowSpec, run_id: str, run_input: dict[str, Any], started_by: str | None
    ) -> Built:
        """An instance of `spec` for one drive of run `run_id`: kept (reset already), or built."""
        idle = self._idle.get(spec.name)
        if idle:
            built = idle.pop()
            built.services.rebind(run_id, run_input, started_by)
            return built
        services = self._services(spec, run_id, run_input, started_by)
        workflow = new_instance(spec, services)
        names = {id(agent): name for name, agent in held_agents(workflow).items()}
        names |= {id(agent): executor for executor, agent in agent_executors(workflow).items()}
        services.transcript.follow(agents_of(workflow), names)
        built = Built(workflow, services)
        if spec.reuse and isinstance(workflow, Workflow):
            built.pristine = await workflow._runner.build_checkpoint()
        built.connections = tuple(connections_of(workflow))
        for tool in built.connections:
            self._holders[id(tool)] = self._holders.get(id(tool), 0) + 1
            closing = self._closing.get(id(tool))
            if closing is not None:  # another instance's drop is closing it: reconnect after
                await asyncio.shield(closing)
        return built

    async def give_back(self, spec: WorkflowSpec, built: Built) -> None:
        """Reset `built` and keep it for a later drive, if `spec` may be reused and there is room.

        The reset happens as the drive ends (after its progress is committed), so that nothing of
        a run stays in memory between its drives: an idle instance holds no run's state, and its
        services point at no run. Only an instance whose drive ended without raising comes back:
        one that raised may have stopped in the middle of a superstep. One whose reset fails is
        dropped. A functional workflow has nothing to reset: its engine leaves nothing of a run
        on it (`workflows.platform.engine.FunctionalEngine.run`).
        """
        idle = self._idle.setdefault(spec.name, [])
        if not spec.reuse or len(idle) >= self.keep:
            await self.drop(built)
            return
        if isinstance(built.workflow, Workflow):
            if built.pristine is None:
                await self.drop(built)
                return
            try:
                await built.workflow._runner.restore_checkpoint(built.pristine)
            except Exception:  # an executor's restore hook failed: build anew next time
                logger.exception(
                    "a kept workflow could not be reset", extra={"workflow": spec.name}
                )
                await self.drop(built)
                return
            new_sessions(built.workflow)
        built.services.rebind("", {}, None)  # no run: what the last one left goes with its lists
        idle.append(built)

    async def drop(self, built: Built) -> None:
        """Let go of an instance: close each of its MCP tools no other instance held holds."""
        connections, built.connections = built.connections, ()
        closes: list[asyncio.Future[None]] = []
        for tool in connections:
            left = self._holders.get(id(tool), 1) - 1
            if left > 0:
                self._holders[id(tool)] = left
                continue
            self._holders.pop(id(tool), None)
            closing = self._closing[id(tool)] = asyncio.ensure_future(_closed(tool))
            closing.add_done_callback(functools.partial(self._closed, id(tool)))
            closes.append(closing)
        if closes:  # a cancelled drive leaves them closing, not half-closed
            await asyncio.shield(asyncio.gather(*closes))

    def _closed(self, key: int, _closing: asyncio.Future[None]) -> None:
        self._closing.pop(key, None)

    async def close(self) -> None:
        """Drop every kept instance, and wait for every close under way (the process ends)."""
        kept = [built for idle in self._idle.values() for built in idle]
        self._idle.clear()
        for built in kept:
            await self.drop(built)
        await asyncio.gather(*self._closing.values(), return_exceptions=True)

    def idle(self, workflow: str) -> list[Built]:
        """The instances of `workflow` kept idle, reset."""
        return list(self._idle.get(workflow, ()))
