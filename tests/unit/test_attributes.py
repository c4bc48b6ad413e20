"""An executor's own attributes carried by MAF's checkpoints (`workflows.platform.attributes`).

Each test drives a real MAF workflow to a pause, takes its checkpoint as MAF makes it, encodes and
decodes it under the allow-list as Baton's storage does, and restores it into another instance.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from dataclasses import dataclass
from typing import Any, Never

import pytest
from agent_framework import (
    Executor,
    Workflow,
    WorkflowBuilder,
    WorkflowCheckpoint,
    WorkflowContext,
    WorkflowExecutor,
    handler,
    response_handler,
)
from agent_framework._workflows._checkpoint_encoding import (
    decode_checkpoint_value,
    encode_checkpoint_value,
)

from tests.fixtures.ledger_values import Ledger
from workflows.platform import attributes
from workflows.platform.attributes import KEY, install, refusal, writes_own_hooks
from workflows.platform.checkpoints import checkpoint_types_of
from workflows.platform.state import install as lean_state


@dataclass
class Ask:
    topic: str


@dataclass
class Reply:
    text: str


class Client:
    """A resource an executor holds: it cannot be copied (its lock), and is no state of a run."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls = 0


class Keeper(Executor):
    """Keeps what a run did in plain attributes, as an executor written for one process does."""

    def __init__(self) -> None:
        super().__init__(id="keeper")
        self.turns = 0
        self.seen: dict[str, int] = {"start": 0}
        self.asked: dict[str, Ask] = {}
        self.ledger = Ledger()
        self.lock = asyncio.Lock()  # machinery: a fresh instance makes its own
        self.client = Client()

    @handler
    async def begin(self, topic: str, ctx: WorkflowContext[Never, str]) -> None:
        self.turns += 1
        self.seen["start"] += 1  # changed in place
        self.asked[topic] = Ask(topic)
        self.ledger.entries.append(topic)
        self.late = f"first {topic}"  # an attribute the build did not make
        self.client.calls += 1
        await ctx.request_info(Ask(topic), Reply)

    @response_handler
    async def answered(self, asked: Ask, reply: Reply, ctx: WorkflowContext[Never, str]) -> None:
        self.turns += 1
        await ctx.yield_output(f"{self.turns} {sorted(self.asked)} {self.late} {reply.text}")


class Hooked(Keeper):
    """The same, keeping its state through MAF's hooks: Baton leaves those alone."""

    async def on_checkpoint_save(self) -> dict[str, Any]:
        return {"turns": self.turns}

    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        self.turns = state["turns"]


def built(executor: Executor, *, allow: tuple[type, ...] = ()) -> tuple[Workflow, frozenset[str]]:
    """An instance as Baton's pool builds one: on the lean state, its attributes carried."""
    workflow = WorkflowBuilder(start_executor=executor).build()
    lean_state(workflow)  # shares a checkpoint's values with the state: nothing copies for us
    allowed = checkpoint_types_of(workflow) | {f"{t.__module__}:{t.__qualname__}" for t in allow}
    install(workflow, allowed)
    return workflow, allowed


async def paused(workflow: Workflow) -> WorkflowCheckpoint:
    """The checkpoint of `workflow` at its pause, as a store would keep it."""
    result = await workflow.run("tea")
    assert result.get_request_info_events()
    return await workflow._runner.build_checkpoint()


def stored(checkpoint: WorkflowCheckpoint, allowed: frozenset[str]) -> WorkflowCheckpoint:
    """The checkpoint after a round trip through storage, under the allow-list."""
    encoded = encode_checkpoint_value(checkpoint.to_dict())
    return WorkflowCheckpoint.from_dict(decode_checkpoint_value(encoded, allowed_types=allowed))


def carried(state: dict[str, Any]) -> dict[str, Any]:
    """The attributes an executor's checkpointed state carries, decoded as `restore` does."""
    return {name: decode_checkpoint_value(json.loads(text))[0] for name, text in state[KEY].items()}


def state_of(checkpoint: WorkflowCheckpoint) -> dict[str, Any]:
    executors: dict[str, dict[str, Any]] = checkpoint.state["_executor_state"]
    return executors["keeper"]


async def test_a_fresh_instance_restored_from_a_pause_gets_the_paused_one_s_attributes() -> None:
    workflow, allowed = built(Keeper(), allow=(Ledger,))
    checkpoint = stored(await paused(workflow), allowed)
    fresh, _ = built(Keeper(), allow=(Ledger,))

    await fresh._runner.restore_checkpoint(checkpoint)
    keeper = fresh.executors["keeper"]
    assert isinstance(keeper, Keeper)

    assert (keeper.turns, keeper.seen, keeper.asked) == (1, {"start": 1}, {"tea": Ask("tea")})
    assert keeper.ledger == Ledger(["tea"])
    assert keeper.late == "first tea"
    assert isinstance(keeper.lock, asyncio.Lock)
    assert sorted(state_of(checkpoint)[KEY]) == ["asked", "late", "ledger", "seen", "turns"]


async def test_the_resumed_run_ends_as_one_that_never_stopped() -> None:
    workflow, allowed = built(Keeper())
    checkpoint = stored(await paused(workflow), allowed)
    [request] = (await workflow._runner.build_checkpoint()).pending_request_info_events
    fresh, _ = built(Keeper())

    await fresh._runner.restore_checkpoint(checkpoint)
    done = await fresh.run(responses={request: Reply("yes")})

    assert done.get_outputs() == ["2 ['tea'] first tea yes"]


async def test_the_checkpoint_keeps_a_copy_not_the_attribute_itself() -> None:
    workflow, _ = built(Keeper())
    checkpoint = await paused(workflow)
    keeper = workflow.executors["keeper"]
    assert isinstance(keeper, Keeper)
    keeper.seen["start"] = 99  # after the save, in place
    fresh, _ = built(Keeper())

    await fresh._runner.restore_checkpoint(checkpoint)
    await fresh._runner.restore_checkpoint(checkpoint)  # a drive may restore one twice

    restored = fresh.executors["keeper"]
    assert isinstance(restored, Keeper)
    assert restored.seen == {"start": 1}
    restored.seen["start"] = 7
    assert carried(state_of(checkpoint))["seen"] == {"start": 1}


async def test_a_value_the_allow_list_refuses_is_left_as_built_and_the_pause_stays_durable(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(attributes, "_TOLD", set())  # told once a process: earlier tests told
    workflow, allowed = built(Keeper())  # `Ledger` not allow-listed
    with caplog.at_level(logging.WARNING, logger="workflows.platform.attributes"):
        checkpoint = stored(await paused(workflow), allowed)  # encodes and decodes: durable
    fresh, _ = built(Keeper())

    await fresh._runner.restore_checkpoint(checkpoint)
    keeper = fresh.executors["keeper"]
    assert isinstance(keeper, Keeper)

    assert keeper.ledger == Ledger()  # as built
    assert keeper.turns == 1  # the others carried
    assert "ledger" not in state_of(checkpoint)[KEY]
    reason = refusal(workflow.executors["keeper"], "ledger")
    assert reason is not None
    assert "Ledger" in reason
    assert [r.attribute for r in caplog.records] == ["ledger"]  # not `client`, a resource


async def test_a_kept_instance_reset_from_its_built_checkpoint_holds_what_it_was_built_with() -> (
    None
):
    workflow, _ = built(Keeper(), allow=(Ledger,))
    pristine = await workflow._runner.build_checkpoint()
    await paused(workflow)

    await workflow._runner.restore_checkpoint(pristine)
    keeper = workflow.executors["keeper"]
    assert isinstance(keeper, Keeper)

    assert (keeper.turns, keeper.seen, keeper.asked, keeper.ledger) == (
        0,
        {"start": 0},
        {},
        Ledger(),
    )
    assert not hasattr(keeper, "late")
    assert keeper.client.calls == 1  # a resource, left as it is
    assert state_of(pristine) == {}  # nothing differed from the build
    await paused(workflow)  # the next run, on the reset instance, changes them again
    await workflow._runner.restore_checkpoint(pristine)
    assert (keeper.turns, keeper.seen, keeper.ledger) == (0, {"start": 0}, Ledger())


async def test_an_executor_that_writes_its_own_hooks_is_left_alone() -> None:
    workflow, _ = built(Hooked())
    checkpoint = await paused(workflow)

    assert writes_own_hooks(Hooked)
    assert not writes_own_hooks(Keeper)
    assert "on_checkpoint_save" not in vars(workflow.executors["keeper"])
    assert state_of(checkpoint) == {"turns": 1}


class Nested(WorkflowExecutor):
    """An author's subclass of a MAF class that has hooks of its own (MAF's), adding none."""

    def __init__(self) -> None:
        super().__init__(WorkflowBuilder(start_executor=Keeper()).build(), id="nested")
        self.note = "built"


async def test_an_author_s_subclass_of_a_maf_executor_with_hooks_has_its_attributes_carried() -> (
    None
):
    outer = WorkflowBuilder(start_executor=Nested()).build()
    install(outer, checkpoint_types_of(outer))
    nested = outer.executors["nested"]
    assert isinstance(nested, Nested)
    nested.note = "changed by a run"

    state = await nested.on_checkpoint_save()
    fresh = Nested()
    install(WorkflowBuilder(start_executor=fresh).build(), checkpoint_types_of(outer))
    await fresh.on_checkpoint_restore(state)

    assert not writes_own_hooks(WorkflowExecutor)  # MAF's hooks are MAF's business
    assert "sub_workflow_checkpoint" in state  # MAF's own hook still saved its state
    assert carried(state) == {"note": "changed by a run"}
    assert fresh.note == "changed by a run"


# what a restore must not change ----------------------------------------------------------------


class Ledgers(Executor):
    """Keys of every kind, a list it shares with another executor, a client made on first use."""

    def __init__(self, shared: list[str], id: str = "ledgers") -> None:
        super().__init__(id=id)
        self.by_number: dict[int, str] = {}
        self.by_pair: dict[tuple[str, int], bool] = {}
        self.shared = shared
        self.client: Client | None = None

    @handler
    async def begin(self, topic: str, ctx: WorkflowContext[Never, str]) -> None:
        self.by_number[7] = topic
        self.by_pair[(topic, 1)] = True
        self.client = self.client or Client()
        await ctx.request_info(Ask(topic), Reply)

    @response_handler
    async def answered(self, asked: Ask, reply: Reply, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"{self.by_number[7]} {self.by_pair[(asked.topic, 1)]}")


async def test_keys_of_every_kind_come_back_as_they_were() -> None:
    workflow, allowed = built(Ledgers([]))
    checkpoint = stored(await paused(workflow), allowed)
    fresh, _ = built(Ledgers([]))
    [request] = checkpoint.pending_request_info_events

    await fresh._runner.restore_checkpoint(checkpoint)
    done = await fresh.run(responses={request: Reply("yes")})

    ledgers = fresh.executors["ledgers"]
    assert isinstance(ledgers, Ledgers)
    assert (ledgers.by_number, ledgers.by_pair) == ({7: "tea"}, {("tea", 1): True})
    assert done.get_outputs() == ["tea True"]


async def test_a_reset_keeps_what_executors_share_and_the_resources_they_made(
    caplog: pytest.LogCaptureFixture,
) -> None:
    shared: list[str] = ["seed"]
    first, second = Ledgers(shared, id="first"), Ledgers(shared, id="second")
    workflow = WorkflowBuilder(start_executor=first).add_edge(first, second).build()
    lean_state(workflow)
    install(workflow, checkpoint_types_of(workflow))
    pristine = await workflow._runner.build_checkpoint()
    with caplog.at_level(logging.WARNING, logger="workflows.platform.attributes"):
        await paused(workflow)  # makes `first.client`, which cannot be checkpointed
        client = first.client
        first.shared.append("from a run")

        await workflow._runner.restore_checkpoint(pristine)

    assert first.shared is second.shared is shared  # still one list, refilled as built
    assert shared == ["seed"]
    assert first.client is client  # a resource: left as it is, and told of to no one
    assert [r for r in caplog.records if r.name == "workflows.platform.attributes"] == []
    assert (first.by_number, second.by_number) == ({}, {})


async def test_an_executor_every_build_shares_is_carried_once() -> None:
    keeper = Keeper()  # one instance a builder hands every build (a module's, say)
    for _ in range(1200):
        workflow, _ = built(keeper)

    checkpoint = await paused(workflow)

    assert carried(state_of(checkpoint))["turns"] == 1


async def test_an_attribute_that_no_longer_decodes_comes_back_as_built_and_the_rest_as_saved(
    caplog: pytest.LogCaptureFixture,
) -> None:
    workflow, allowed = built(Keeper(), allow=(Ledger,))
    checkpoint = stored(await paused(workflow), allowed)
    fresh, _ = built(Keeper())  # a deploy later: `Ledger` no longer allow-listed

    with caplog.at_level(logging.WARNING, logger="workflows.platform.attributes"):
        await fresh._runner.restore_checkpoint(checkpoint)
    keeper = fresh.executors["keeper"]
    assert isinstance(keeper, Keeper)

    assert keeper.ledger == Ledger()
    assert (keeper.turns, keeper.late) == (1, "first tea")
    assert [r.attribute for r in caplog.records] == ["ledger"]


class Caller(Executor):
    """Makes its client on first use and ends its run at once: no checkpoint in between."""

    def __init__(self) -> None:
        super().__init__(id="caller")
        self.client: Client | None = None

    @handler
    async def begin(self, topic: str, ctx: WorkflowContext[Never, str]) -> None:
        self.client = self.client or Client()
        await ctx.yield_output(topic)


async def test_a_reset_after_a_run_that_never_paused_leaves_a_client_made_on_first_use() -> None:
    workflow, _ = built(Caller())
    pristine = await workflow._runner.build_checkpoint()
    assert (await workflow.run("tea")).get_outputs() == ["tea"]
    caller = workflow.executors["caller"]
    assert isinstance(caller, Caller)
    client = caller.client

    await workflow._runner.restore_checkpoint(pristine)

    assert client is not None
    assert caller.client is client


async def test_the_calls_maf_counted_on_an_agent_s_limited_tool_come_back_never_lowered() -> None:
    """MAF counts a tool's calls on the tool object for `max_invocations`: a fresh build in
    another process counted 0, and the once-only tool an approval then ran would run again."""
    from agent_framework import Agent, AgentExecutor, tool

    from executors.platform.chat_clients import ScriptedChatClient

    def build(limit: int) -> tuple[AgentExecutor, Any]:
        @tool(approval_mode="always_require", max_invocations=limit)
        def ring(to: str) -> str:
            """Ring someone."""
            return f"rang {to}"

        agent = Agent(client=ScriptedChatClient(lambda m, o: []), name="Ringer", tools=[ring])
        executor = AgentExecutor(agent, id="ringer")
        install(WorkflowBuilder(start_executor=executor).build(), frozenset())
        return executor, ring

    paused, rung = build(1)
    rung.invocation_count, rung.invocation_exception_count = 1, 1
    saved = await paused.on_checkpoint_save()
    fresh, ring = build(1)
    await fresh.on_checkpoint_restore(saved)
    shared, counted = build(1)
    counted.invocation_count = 3  # a tool the process shares counted more since
    await shared.on_checkpoint_restore(saved)

    assert (ring.invocation_count, ring.invocation_exception_count) == (1, 1)
    assert counted.invocation_count == 3
