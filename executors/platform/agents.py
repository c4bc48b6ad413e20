"""The agents a built workflow runs, wherever MAF keeps them (orchestrations, sub-workflows)."""

from __future__ import annotations

from typing import Any

from agent_framework import FunctionTool, Workflow


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
    """Each agent an executor of `workflow` (or of a sub-workflow it runs) wraps, once."""
    found: dict[int, Any] = {}
    for executor in executors_of(workflow):
        for name in ("agent", "_agent"):
            agent = getattr(executor, name, None)
            if agent is not None and hasattr(agent, "default_options"):
                found[id(agent)] = agent
    return list(found.values())


def tools_of(workflow: object) -> dict[str, FunctionTool]:
    """The tools of every agent in `workflow` and its sub-workflows, by name."""
    found: dict[str, FunctionTool] = {}
    for agent in agents_of(workflow):
        for candidate in (agent.default_options or {}).get("tools") or ():
            if isinstance(candidate, FunctionTool):
                found.setdefault(candidate.name, candidate)
    return found
