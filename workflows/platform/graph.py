"""A workflow's graph as plain data (nodes, edges, start), read from MAF's `WorkflowViz`.

The web layer draws run graphs but may not import MAF; this module turns the DOT text
`WorkflowViz.to_digraph()` emits into models it can. DOT is read rather than the workflow's edge
groups so the page shows exactly the graph MAF's own visualizer shows: fan-in nodes, conditional
edges and sub-workflow executors (namespaced `outer/inner`) included. The Mermaid text of the same
graph comes along for anyone who wants to paste it elsewhere.
"""

from __future__ import annotations

import re
from typing import Final, Literal

from agent_framework import Executor, FunctionalWorkflow, Workflow, WorkflowExecutor, WorkflowViz
from pydantic import BaseModel, ConfigDict

_NODE: Final = re.compile(r'^\s*"(?P<id>[^"]+)" \[(?P<attrs>[^\]]*)\];$')
_EDGE: Final = re.compile(
    r'^\s*"(?P<source>[^"]+)" -> "(?P<target>[^"]+)"(?: \[(?P<attrs>.*)\])?;$'
)
_MAF_OWN: Final = {
    "AgentRequestInfoExecutor": "person's review",  # `.with_request_info()`: holds a reply
    "_TerminalAgentRequestInfoExecutor": "person's review",  # the same, of the last agent
    "_InputToConversation": "input",  # an orchestration's first step: the input as messages
}
"""Labels for the executors MAF's orchestrations add of their own, by class: their ids
(`agent_request_info_executor`, `input-conversation`) name MAF's code, not a step of the work."""
_ATTR: Final = re.compile(r'(?P<key>\w+)=(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<bare>[^,\s]+))')


class GraphNode(BaseModel):
    """One node: an executor, or a fan-in point MAF draws between its sources and target."""

    model_config = ConfigDict(frozen=True)

    id: str
    label: str
    kind: Literal["executor", "fan_in"] = "executor"
    start: bool = False


class GraphEdge(BaseModel):
    """A directed edge; `conditional` when a condition decides whether a message takes it."""

    model_config = ConfigDict(frozen=True)

    source: str
    target: str
    conditional: bool = False


class WorkflowGraph(BaseModel):
    """A workflow's nodes and edges, its start node, and the same graph as Mermaid text."""

    model_config = ConfigDict(frozen=True)

    name: str
    start: str
    nodes: tuple[GraphNode, ...]
    edges: tuple[GraphEdge, ...]
    mermaid: str


def describe(workflow: Workflow | FunctionalWorkflow) -> WorkflowGraph:
    """The graph of `workflow`, as `WorkflowViz` draws it.

    Args:
        workflow: A built workflow (any instance: every build of a workflow is the same graph).

    Returns:
        Its nodes in the order MAF lists them (the start node first), edges, start and Mermaid.
        A functional workflow is one function, and MAF names it as the source of every request
        it asks: one node, its name.
    """
    if isinstance(workflow, FunctionalWorkflow):
        name = workflow.name
        shown = name.replace('"', "#quot;")  # Mermaid's entity for a quote in a label
        return WorkflowGraph(
            name=name,
            start=name,
            nodes=(GraphNode(id=name, label=name, start=True),),
            edges=(),
            mermaid=f'flowchart TD\n  n0["{shown}"];',
        )
    viz = WorkflowViz(workflow)
    own = {node: said for node, e in _executors(workflow).items() if (said := _maf_own(e))}
    nodes: dict[str, GraphNode] = {}
    edges: list[GraphEdge] = []
    for line in viz.to_digraph().splitlines():
        edge = _EDGE.match(line)
        if edge is not None:
            attrs = _attributes(edge["attrs"] or "")
            edges.append(
                GraphEdge(
                    source=edge["source"],
                    target=edge["target"],
                    conditional=attrs.get("style") == "dashed",
                )
            )
            continue
        node = _NODE.match(line)
        if node is None or node["id"] in nodes:
            continue
        attrs = _attributes(node["attrs"])
        label = own.get(node["id"]) or attrs.get("label", node["id"]).split("\\n")[0]
        fan_in = attrs.get("shape") == "ellipse"
        nodes[node["id"]] = GraphNode(
            id=node["id"],
            label=label,
            kind="fan_in" if fan_in else "executor",
            start=node["id"] == workflow.start_executor_id,
        )
    return WorkflowGraph(
        name=workflow.name or "",
        start=workflow.start_executor_id,
        nodes=tuple(nodes.values()),
        edges=tuple(edges),
        mermaid=viz.to_mermaid(),
    )


def _maf_own(executor: Executor) -> str | None:
    """The label of an executor of MAF's own (`_MAF_OWN`), by its class or one it extends."""
    classes = type(executor).__mro__
    return next((_MAF_OWN[c.__name__] for c in classes if c.__name__ in _MAF_OWN), None)


def _executors(workflow: Workflow, prefix: str = "") -> dict[str, Executor]:
    """Each executor by its node's id, as MAF's visualizer names it.

    A sub-workflow's executors are `runner/inner`: the id of the executor that runs it first
    (at any depth, that one alone).
    """
    found: dict[str, Executor] = {}
    for executor in workflow.executors.values():
        found[prefix + executor.id] = executor
        if isinstance(executor, WorkflowExecutor):
            found |= _executors(executor.workflow, f"{executor.id}/")
    return found


def _attributes(text: str) -> dict[str, str]:
    return {
        m["key"]: m["quoted"] if m["quoted"] is not None else m["bare"]
        for m in _ATTR.finditer(text)
    }
