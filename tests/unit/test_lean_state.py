"""The shared state Baton gives the workflows it drives (`workflows.platform.state`).

`tree_copy` must make what `copy.deepcopy` makes (equal values, nothing mutable shared with the
original, shared parts shared once, cycles kept), and a workflow on a `LeanState` must behave as
on MAF's `State`: what an executor stores or reads cannot be changed behind it, and a checkpoint
taken keeps the state it had, whatever the workflow does next.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any, Never

from agent_framework import (
    Executor,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowRunState,
    handler,
)
from agent_framework._workflows._state import State
from hypothesis import given
from hypothesis import strategies as st

from workflows.platform.state import LeanState, install, tree_copy


@dataclasses.dataclass
class Point:
    x: int
    tags: list[str]


json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=5), inner, max_size=4)
        | st.tuples(inner, inner)
        | st.builds(Point, st.integers(), st.lists(st.text(max_size=3), max_size=3))
    ),
    max_leaves=30,
)


def _mutable_ids(value: Any, found: set[int] | None = None) -> set[int]:
    """The ids of every list, dict and dataclass reachable from `value`."""
    found = set() if found is None else found
    if isinstance(value, (list, dict, Point)) and id(value) not in found:
        found.add(id(value))
        items = (
            [*value.keys(), *value.values()]
            if isinstance(value, dict)
            else (dataclasses.astuple(value) if isinstance(value, Point) else value)
        )
        for item in items:
            _mutable_ids(item, found)
    elif isinstance(value, tuple):
        for item in value:
            _mutable_ids(item, found)
    return found


@given(json_like)
def test_a_tree_copy_equals_a_deep_copy_and_shares_nothing_mutable(value: Any) -> None:
    made = tree_copy(value)
    assert made == copy.deepcopy(value)
    assert type(made) is type(value)
    assert not _mutable_ids(made) & _mutable_ids(value)


def test_a_tree_copy_keeps_shared_parts_shared_and_cycles_cyclic() -> None:
    items = [1, {"a": "b"}]
    value: dict[str, Any] = {"first": items, "second": items, "point": Point(1, ["t"])}
    value["self"] = value
    value["point_again"] = value["point"]

    made = tree_copy(value)

    assert made["first"] is made["second"]
    assert made["first"] is not items
    assert made["self"] is made
    assert made["point"] is made["point_again"]
    assert made["point"] is not value["point"]
    assert made["point"].tags is not value["point"].tags


def test_a_tree_copy_goes_as_deep_as_a_deep_copy() -> None:
    nested_lists: list[Any] = []
    nested_dicts: dict[str, Any] = {}
    for _ in range(450):  # deepcopy's limit is about 497 levels at the default recursion limit
        nested_lists = [nested_lists]
        nested_dicts = {"in": nested_dicts}
    for value in (nested_lists, nested_dicts):
        assert tree_copy(value) == copy.deepcopy(value)


def test_a_lean_state_hands_out_and_keeps_copies() -> None:
    state = LeanState()
    stored = {"items": ["a"]}
    state.set("k", stored)
    stored["items"].append("changed by the caller after set")
    got = state.get("k")
    got["items"].append("changed by the caller after get")
    assert state.get("k") == {"items": ["a"]}

    state.commit()
    exported = state.export_state()
    exported["k"] = "replaced in the export"
    assert state.get("k") == {"items": ["a"]}
    state.delete("k")
    assert state.get("k", "gone") == "gone"
    state.commit()
    assert not state.has("k")


class _Notes(Executor):
    """Keeps what it heard in the workflow's state, reading and changing a copy each time."""

    @handler
    async def hear(self, message: str, ctx: WorkflowContext[Never, list[str]]) -> None:
        heard = ctx.get_state("heard", [])
        heard.append(message)
        heard_again = ctx.get_state("heard", [])
        assert message not in heard_again  # a copy was changed, not the state
        ctx.set_state("heard", heard)
        heard.append("changed after set")
        await ctx.yield_output(ctx.get_state("heard"))


def _workflow() -> Workflow:
    return WorkflowBuilder(start_executor=_Notes(id="notes")).build()


async def test_a_workflow_on_a_lean_state_runs_as_on_mafs_and_its_checkpoints_stay_put() -> None:
    outputs: dict[str, list[Any]] = {}
    for name, lean in (("maf", False), ("lean", True)):
        workflow = _workflow()
        if lean:
            assert install(workflow)
        assert type(workflow._runner._state) is (LeanState if lean else State)
        runner = workflow._runner
        first = await workflow.run("one")
        assert first.get_final_state() == WorkflowRunState.IDLE
        taken = await runner.build_checkpoint()
        second = await workflow.run("two")
        outputs[name] = [first.get_outputs(), second.get_outputs()]
        assert taken.state["heard"] == ["one"]  # the later run changed nothing taken

        for again in ("three", "four"):  # one checkpoint restored twice, as a drive may
            await runner.restore_checkpoint(taken)
            assert runner.state.get("heard") == ["one"]
            later = await workflow.run(again)
            assert later.get_outputs() == [["one", again]]
            assert taken.state["heard"] == ["one"]
    assert outputs["lean"] == outputs["maf"] == [[["one"]], [["one", "two"]]]


def test_install_takes_only_an_empty_maf_state() -> None:
    workflow = _workflow()
    assert install(workflow) is True
    assert type(workflow._runner._state) is LeanState
    assert install(workflow) is False  # already lean

    written = _workflow()
    written._runner._state.set("k", 1)
    assert install(written) is False
    assert type(written._runner._state) is State


def test_a_tree_copy_of_plain_data_copies_odd_strings_numbers_and_tuples_exactly() -> None:
    value = {"s": "\ud800 lone surrogate", "nan": float("nan"), "neg": -0.0, "big": 2**100}
    value["t"] = (["in a tuple"], frozenset({1}), b"\x00")
    made = tree_copy(value)
    assert made["s"] == value["s"]
    assert made["nan"] != made["nan"]
    assert str(made["neg"]) == "-0.0"
    assert made["big"] == 2**100
    assert made["t"] == value["t"]
    assert made["t"][0] is not value["t"][0]


def test_a_tree_copy_of_a_dict_subclass_or_an_int_subclass_keeps_its_type() -> None:
    import collections
    import enum

    class Level(enum.IntEnum):
        HIGH = 3

    value = {"counts": collections.Counter(a=2), "level": Level.HIGH, "items": [Level.HIGH]}
    made = tree_copy(value)
    assert type(made["counts"]) is collections.Counter
    assert made["counts"] == {"a": 2}
    assert made["counts"] is not value["counts"]
    assert made["level"] is Level.HIGH
    assert made["items"][0] is Level.HIGH
