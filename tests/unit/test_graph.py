"""Workflow graphs: read from MAF's WorkflowViz (workflows/graph.py), laid out (web/graph.py)."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

from agent_framework import (
    Executor,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowExecutor,
    handler,
)

from human.policy import load_policy
from human.store import open_store
from web.graph import MARGIN, lay_out
from workflows.platform.graph import GraphEdge, WorkflowGraph, describe
from workflows.platform.runtime import Runtime
from workflows.shipped import POLICIES


class Split(Executor):
    @handler
    async def on_text(self, message: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(message)


class Desk(Executor):
    @handler
    async def on_text(self, message: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(message)


class Join(Executor):
    @handler
    async def on_texts(self, messages: list[str], ctx: WorkflowContext[str, str]) -> None:
        await ctx.yield_output(",".join(messages))


def fan_workflow() -> Workflow:
    split, legal, finance, join = (
        Split(id="split"),
        Desk(id="legal"),
        Desk(id="finance"),
        Join(id="join"),
    )
    return (
        WorkflowBuilder(name="fan", start_executor=split)
        .add_fan_out_edges(split, [legal, finance])
        .add_fan_in_edges([legal, finance], join)
        .add_edge(join, split, condition=lambda message: False)
        .build()
    )


def test_the_graph_is_what_workflowviz_draws() -> None:
    graph = describe(fan_workflow())

    assert (graph.name, graph.start) == ("fan", "split")
    executors = [n.id for n in graph.nodes if n.kind == "executor"]
    assert executors == ["split", "legal", "finance", "join"]
    [fan_in] = [n for n in graph.nodes if n.kind == "fan_in"]
    assert fan_in.label == "fan-in"
    assert [n.id for n in graph.nodes if n.start] == ["split"]
    assert {(e.source, e.target) for e in graph.edges} == {
        ("split", "legal"),
        ("split", "finance"),
        ("legal", fan_in.id),
        ("finance", fan_in.id),
        (fan_in.id, "join"),
        ("join", "split"),
    }
    assert [(e.source, e.target) for e in graph.edges if e.conditional] == [("join", "split")]
    assert graph.mermaid.startswith("flowchart TD")
    assert "join -. conditional .-> split" in graph.mermaid


async def test_the_runtime_describes_a_registered_workflow_once(tmp_path: Path) -> None:
    store = await open_store(f"sqlite:///{tmp_path / 'baton.db'}")
    try:
        runtime = Runtime(store, policy=load_policy(POLICIES))
        graph = runtime.graph("refund")
        assert runtime.graph("refund") is graph
    finally:
        await store.close()
    assert [(n.id, n.start) for n in graph.nodes] == [("refund_agent", True)]
    assert graph.edges == ()


def test_nodes_sit_in_layers_from_the_start_and_never_overlap() -> None:
    graph = describe(fan_workflow())
    layout = lay_out(graph)

    top = layout.node("split").y
    assert top == MARGIN
    assert layout.node("legal").y == layout.node("finance").y > top
    fan_in = next(n for n in layout.nodes if n.kind == "fan_in")
    assert layout.node("legal").y < fan_in.y < layout.node("join").y
    for a, b in combinations(layout.nodes, 2):
        apart = a.x + a.w <= b.x or b.x + b.w <= a.x or a.y + a.h <= b.y or b.y + b.h <= a.y
        assert apart, (a.id, b.id)
    for n in layout.nodes:
        assert n.x >= 0
        assert n.x + n.w <= layout.width
        assert n.y >= 0
        assert n.y + n.h <= layout.height
    assert all(e.path.startswith("M") and " C" in e.path for e in layout.edges)
    back = next(e for e in layout.edges if e.target == "split")
    assert back.conditional


def test_nodes_are_marked_where_the_run_is_and_where_it_waits() -> None:
    layout = lay_out(
        describe(fan_workflow()), pending=frozenset({"legal", "finance"}), current="finance"
    )
    states = {n.id: n.state for n in layout.nodes if n.kind == "executor"}
    assert states == {
        "split": "idle",
        "legal": "pending",
        "finance": "current-pending",
        "join": "idle",
    }
    assert lay_out(describe(fan_workflow()), current="split").node("split").state == "current"


def test_edges_within_a_layer_and_self_loops_are_routed() -> None:
    graph = WorkflowGraph(
        name="mesh",
        start="triage",
        nodes=tuple(
            describe(fan_workflow())
            .nodes[0]
            .model_copy(update={"id": i, "label": i, "start": i == "triage"})
            for i in ("triage", "billing", "accounts")
        ),
        edges=(
            GraphEdge(source="triage", target="billing"),
            GraphEdge(source="triage", target="accounts"),
            GraphEdge(source="billing", target="accounts"),
            GraphEdge(source="accounts", target="billing"),
            GraphEdge(source="billing", target="triage"),
            GraphEdge(source="accounts", target="accounts"),
        ),
        mermaid="",
    )
    layout = lay_out(graph)
    assert layout.node("billing").y == layout.node("accounts").y
    paths = {(e.source, e.target): e.path for e in layout.edges}
    assert len(set(paths.values())) == len(paths)  # no two edges drawn over each other
    assert len(paths) == 6


def test_an_unreachable_node_still_shows_below_the_rest() -> None:
    base = describe(fan_workflow())
    lonely = base.nodes[1].model_copy(update={"id": "lonely", "label": "lonely", "start": False})
    graph = base.model_copy(update={"nodes": (*base.nodes, lonely)})
    layout = lay_out(graph)
    assert layout.node("lonely").y > max(n.y for n in layout.nodes if n.id != "lonely")


def test_nodes_are_labelled_in_words_unless_two_would_then_read_alike() -> None:
    base = describe(fan_workflow())
    named = {"split": "legal_approval", "legal": "refund-agent", "finance": "a.b", "join": "a_b"}
    graph = base.model_copy(
        update={
            "nodes": tuple(
                n.model_copy(update={"label": named.get(n.id, n.label)}) for n in base.nodes
            )
        }
    )
    labels = {n.id: n.label for n in lay_out(graph).nodes if n.kind == "executor"}
    # words as the page's sentences name steps; `a.b` and `a_b` would both read `a b`: kept
    assert labels == {
        "split": "legal approval",
        "legal": "refund-agent",
        "finance": "a.b",
        "join": "a_b",
    }
    twice = base.model_copy(
        update={
            "nodes": tuple(
                n.model_copy(update={"label": "data_agent"}) if n.id in ("split", "legal") else n
                for n in base.nodes
            )
        }
    )
    shown = {n.id: n.label for n in lay_out(twice).nodes}
    assert shown["split"] == shown["legal"] == "data agent"  # one label twice: words both


def test_a_sub_workflow_sits_below_in_a_box_named_for_its_step() -> None:
    """MAF's visualizer draws a sub-workflow's executors in a cluster ("sub-workflow: review");
    the page draws them in layers of their own below the workflow's, boxed and named."""
    inner = fan_workflow()
    review = WorkflowExecutor(inner, id="review")
    intake = Split(id="intake")
    outer = WorkflowBuilder(name="outer", start_executor=intake).add_edge(intake, review)
    layout = lay_out(describe(outer.build()))

    [box] = layout.clusters
    assert box.label == "Inside the review step"
    inside = [n for n in layout.nodes if n.id.startswith("review/")]
    assert {n.label for n in inside} >= {"split", "legal", "finance", "join"}
    assert min(n.y for n in inside) > layout.node("review").y  # below the workflow's own
    assert layout.node("review/split").y < layout.node("review/legal").y  # in its own layers
    for n in inside:  # each within its box
        assert box.x <= n.x
        assert n.x + n.w <= box.x + box.w
        assert box.y <= n.y
        assert n.y + n.h <= box.y + box.h
    for n in layout.nodes:
        if not n.id.startswith("review/"):  # nothing else in it
            apart = n.x + n.w <= box.x or box.x + box.w <= n.x or n.y + n.h <= box.y
            assert apart or box.y + box.h <= n.y, n.id
    assert box.y + box.h <= layout.height


def test_the_executors_maf_s_orchestrations_add_are_named_for_what_they_do() -> None:
    """`.with_request_info()` holds an agent's reply in an executor of MAF's own, and a
    sequential orchestration starts at one: named by what they do, not by MAF's ids."""
    from agent_framework import Agent
    from agent_framework.orchestrations import SequentialBuilder

    from executors.platform.chat_clients import ScriptedChatClient

    client = ScriptedChatClient(lambda messages, options: [])
    editor = Agent(client=client, name="editor")
    built = SequentialBuilder(participants=[editor]).with_request_info(agents=["editor"]).build()

    labels = {n.id: n.label for n in describe(built).nodes}

    assert labels["input-conversation"] == "input"
    assert labels["editor/agent_request_info_executor"] == "person's review"
    assert labels["editor"] == labels["editor/editor"] == "editor"


def test_a_sub_workflow_within_a_sub_workflow_is_named_within_its_runner() -> None:
    """MAF names a nested sub-workflow's executors by their runner's id alone
    (`editor/agent_request_info_executor` inside `team/editor`): found, named, and boxed."""
    from agent_framework import Agent
    from agent_framework.orchestrations import SequentialBuilder

    from executors.platform.chat_clients import ScriptedChatClient

    client = ScriptedChatClient(lambda messages, options: [])
    editor = Agent(client=client, name="editor")
    inner = SequentialBuilder(participants=[editor]).with_request_info(agents=["editor"]).build()
    team = WorkflowExecutor(inner, id="team")
    intake = Split(id="intake")
    graph = describe(WorkflowBuilder(start_executor=intake).add_edge(intake, team).build())
    layout = lay_out(graph)

    labels = {n.id: n.label for n in graph.nodes}
    assert labels["editor/agent_request_info_executor"] == "person's review"
    assert {c.label for c in layout.clusters} == {
        "Inside the team step",
        "Inside the editor step, within the team step",
    }
    for box in layout.clusters:  # each wide enough for its name, and inside the drawing
        assert box.w >= len(box.label) * 7.5 * 0.9
        assert box.x + box.w <= layout.width
