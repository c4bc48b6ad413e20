"""A workflow graph laid out for an SVG drawn on the server: layers from the start node down.

Workflows are small (a handful of executors), so a plain layered layout reads well: each node sits
one layer below the first node that reaches it (breadth-first from the start), nodes of a layer
side by side. Edges down are drawn straight; edges within a layer arc over it (left to right) or
under it (right to left); edges back up run along the side, so a loop or a full mesh of
hand-offs stays readable. A sub-workflow's executors (MAF's `outer/inner` ids) sit in layers of
their own below, in a dashed box named for the step that runs them, as MAF's visualizer draws a
cluster. The page's template draws the shapes; this module only places them.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Final, Literal

from human.summary import humanize
from workflows.platform.graph import WorkflowGraph

NODE_H: Final = 36
LAYER_GAP: Final = 64
NODE_GAP: Final = 28
MARGIN: Final = 24
CHAR_W: Final = 7.5  # a label's width per character, for the 13px sans-serif of app.css
CLUSTER_PAD: Final = 10
CLUSTER_HEAD: Final = 30  # room above a sub-workflow's first row for its name, within LAYER_GAP
BACK_EDGE_ROOM: Final = 48  # beside a box's nodes: an edge back up runs out up to 44 (`_route`)

NodeState = Literal["idle", "pending", "current", "current-pending"]


@dataclass(frozen=True)
class PlacedNode:
    """A node with its box: `x`, `y` its top-left corner."""

    id: str
    label: str
    kind: str
    start: bool
    state: NodeState
    x: float
    y: float
    w: float
    h: float

    @property
    def cx(self) -> float:
        """The horizontal centre."""
        return self.x + self.w / 2

    @property
    def cy(self) -> float:
        """The vertical centre."""
        return self.y + self.h / 2


@dataclass(frozen=True)
class PlacedEdge:
    """An edge as an SVG path."""

    source: str
    target: str
    path: str
    conditional: bool


@dataclass(frozen=True)
class PlacedCluster:
    """A sub-workflow's box around its executors, named for the step that runs it."""

    label: str
    x: float
    y: float
    w: float
    h: float


@dataclass(frozen=True)
class GraphLayout:
    """Everything the SVG template draws."""

    width: float
    height: float
    nodes: tuple[PlacedNode, ...]
    edges: tuple[PlacedEdge, ...]
    clusters: tuple[PlacedCluster, ...] = ()

    def node(self, node_id: str) -> PlacedNode:
        """A placed node by id."""
        return next(n for n in self.nodes if n.id == node_id)


def lay_out(
    graph: WorkflowGraph, *, pending: frozenset[str] = frozenset(), current: str | None = None
) -> GraphLayout:
    """Place `graph`'s nodes and route its edges.

    Args:
        graph: The workflow's graph.
        pending: Executors with requests waiting for a person.
        current: The executor the run is at (where it last asked, or its start while it runs).

    Returns:
        The layout, with each node's state for highlighting.
    """
    layers = _layers(graph)
    placed: dict[str, PlacedNode] = {}
    rows: dict[int, list[str]] = {}
    for node in graph.nodes:
        rows.setdefault(layers[node.id], []).append(node.id)
    labels = _in_words(graph)
    widths = {n.id: _node_width(labels[n.id], n.kind) for n in graph.nodes}
    row_width = {
        layer: sum(widths[i] for i in ids) + NODE_GAP * (len(ids) - 1)
        for layer, ids in rows.items()
    }
    inner = max(row_width.values(), default=0.0)
    by_id = {n.id: n for n in graph.nodes}
    for layer, ids in sorted(rows.items()):
        x = MARGIN + (inner - row_width[layer]) / 2
        y = MARGIN + layer * (NODE_H + LAYER_GAP)
        for node_id in ids:
            node = by_id[node_id]
            placed[node_id] = PlacedNode(
                id=node.id,
                label=labels[node_id],
                kind=node.kind,
                start=node.start,
                state=_state(node.id, pending, current),
                x=x,
                y=y,
                w=widths[node_id],
                h=NODE_H,
            )
            x += widths[node_id] + NODE_GAP
    edges = tuple(
        PlacedEdge(
            source=e.source,
            target=e.target,
            path=_route(placed[e.source], placed[e.target], layers),
            conditional=e.conditional,
        )
        for e in graph.edges
        if e.source in placed and e.target in placed
    )
    depth = max(rows, default=0) + 1
    clusters = _clusters(placed)
    return GraphLayout(
        width=max(  # room on the right for edges running back up, and for the boxes
            [inner + 2 * MARGIN + 40, *(c.x + c.w + MARGIN for c in clusters)]
        ),
        height=depth * NODE_H + (depth - 1) * LAYER_GAP + 2 * MARGIN,
        nodes=tuple(placed.values()),
        edges=edges,
        clusters=clusters,
    )


def _group(node_id: str) -> str:
    """The sub-workflow a node is in (MAF's `outer/inner` ids: `outer`), "" for the workflow's."""
    return node_id.rpartition("/")[0]


def _clusters(placed: dict[str, PlacedNode]) -> tuple[PlacedCluster, ...]:
    """A box around each sub-workflow's executors, named for the step that runs it."""
    groups: dict[str, list[PlacedNode]] = {}
    for node in placed.values():
        if _group(node.id):
            groups.setdefault(_group(node.id), []).append(node)
    boxes = []
    for group, nodes in groups.items():
        runner = _runner(placed, group)
        label = f"Inside the {_step(runner, group)} step"
        if runner is not None and _group(runner.id):  # a sub-workflow within a sub-workflow
            outer = _group(runner.id)
            label += f", within the {_step(_runner(placed, outer), outer)} step"
        left = min(n.x for n in nodes) - CLUSTER_PAD
        top = min(n.y for n in nodes) - CLUSTER_HEAD
        # room for the edges running back up beside the nodes (`_route`), and for the label
        right = max(max(n.x + n.w for n in nodes) + BACK_EDGE_ROOM, left + _label_width(label))
        bottom = max(n.y + n.h for n in nodes) + CLUSTER_PAD
        boxes.append(PlacedCluster(label, left, top, right - left, bottom - top))
    return tuple(boxes)


def _runner(placed: dict[str, PlacedNode], group: str) -> PlacedNode | None:
    """The node of the executor that runs sub-workflow `group` (MAF names it by its own id)."""
    return placed.get(group) or next(
        (n for n in placed.values() if n.id.endswith(f"/{group}")), None
    )


def _step(runner: PlacedNode | None, group: str) -> str:
    """The step that runs sub-workflow `group` (its `runner`, if drawn), in words."""
    return humanize(runner.label if runner is not None else group)


def _label_width(label: str) -> float:
    """A box's label's width, in the 12px of app.css, and its margins."""
    return len(label) * CHAR_W * 0.9 + 2 * CLUSTER_PAD


def _layers(graph: WorkflowGraph) -> dict[str, int]:
    """Each node's layer: breadth-first from the start.

    Then each sub-workflow's executors in layers of their own below, breadth-first from its
    first (MAF lists its start first).
    """
    targets: dict[str, list[str]] = {}
    for edge in graph.edges:
        targets.setdefault(edge.source, []).append(edge.target)
    groups: dict[str, list[str]] = {}
    for node in graph.nodes:
        groups.setdefault(_group(node.id), []).append(node.id)
    main = groups.pop("", [])
    layers = _reached(graph.start, targets, main, 0)
    for members in groups.values():
        below = max(layers.values(), default=-1) + 1
        layers |= _reached(members[0], targets, members, below)
    return layers


def _reached(
    start: str, targets: dict[str, list[str]], members: list[str], first: int
) -> dict[str, int]:
    """The layers of `members`, breadth-first from `start` at layer `first`.

    Those it does not reach are in a layer after the last.
    """
    layers = {start: first}
    queue = deque([start])
    while queue:
        here = queue.popleft()
        for there in targets.get(here, []):
            if there not in layers and there in members:
                layers[there] = layers[here] + 1
                queue.append(there)
    unreached = max(layers.values()) + 1
    return {m: layers.get(m, unreached) for m in members}


def _in_words(graph: WorkflowGraph) -> dict[str, str]:
    """Each node's label as words (`legal_approval` -> `legal approval`), as the page names steps.

    A label that would then be another's (`a_b` and `a b`) stays as it was; two nodes of one
    label (an agent and the step that runs it in a sub-workflow) both read as words.
    """
    words = {n.id: humanize(n.label) for n in graph.nodes}
    raw: dict[str, set[str]] = {}
    for n in graph.nodes:
        raw.setdefault(words[n.id], set()).add(n.label)
    return {n.id: n.label if len(raw[words[n.id]]) > 1 else words[n.id] for n in graph.nodes}


def _node_width(label: str, kind: str) -> float:
    if kind == "fan_in":
        return 64.0
    return max(96.0, len(label) * CHAR_W + 28)


def _state(node_id: str, pending: frozenset[str], current: str | None) -> NodeState:
    if node_id == current:
        return "current-pending" if node_id in pending else "current"
    return "pending" if node_id in pending else "idle"


def _route(source: PlacedNode, target: PlacedNode, layers: dict[str, int]) -> str:
    down = layers[target.id] - layers[source.id]
    if source.id == target.id:  # a self-loop on the right of the node
        x, y = source.x + source.w, source.cy
        return _curve((x, y - 8), (x + 30, y - 24), (x + 30, y + 24), (x, y + 8))
    if down > 0:
        x1, y1 = source.cx, source.y + source.h
        x2, y2 = target.cx, target.y
        bend = (y2 - y1) / 2
        return _curve((x1, y1), (x1, y1 + bend), (x2, y2 - bend), (x2, y2))
    if down == 0:  # same layer: over the top left to right, under the bottom right to left
        over = source.cx < target.cx
        y = source.y if over else source.y + source.h
        lift = -28 if over else 28
        x1, x2 = source.cx, target.cx
        return (
            f"M{x1:.1f},{y:.1f} C{x1:.1f},{y + lift:.1f} {x2:.1f},{y + lift:.1f} {x2:.1f},{y:.1f}"
        )
    # back up: from the source's right side out and up to the target's right side
    x1, y1 = source.x + source.w, source.cy - 6
    x2, y2 = target.x + target.w, target.cy + 6
    out = max(x1, x2) + 20 + 8 * min(-down, 3)
    return _curve((x1, y1), (out, y1), (out, y2), (x2, y2))


def _curve(*points: tuple[float, float]) -> str:
    """An SVG cubic Bézier path through a start, two control points and an end."""
    start, *rest = (f"{x:.1f},{y:.1f}" for x, y in points)
    return f"M{start} C{' '.join(rest)}"
