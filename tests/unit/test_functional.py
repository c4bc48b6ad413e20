"""MAF's functional workflows (`@workflow`, `@step`) run on Baton with a registration alone.

MAF replays a functional workflow's function from its top at every answer: each `@step` returns
its cached result and each `ctx.request_info` the response it is handed, so a run that asks in
rounds needs every earlier answer at every replay. Each drive here gets an instance of its own,
built for it or kept and reset, so what a replay needs can come only from the run's committed
checkpoint.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import warnings
import zlib
from collections.abc import Callable
from typing import Any

import pytest
from agent_framework import (
    InMemoryCheckpointStorage,
    RunContext,
    WorkflowCheckpoint,
    step,
    workflow,
)
from agent_framework._workflows._checkpoint_encoding import decode_checkpoint_value
from pydantic import BaseModel

from baton.api import check_workflow
from baton.wiring import Parts
from executors.platform.services import Resources
from human.store.base import RequestFilter
from tests.fixtures.forgetful_workflow import Tally
from tests.fixtures.versioned_workflow import spec_of, versioned_graph
from tests.harness import eventually
from tests.samples import functional_rounds
from tests.samples.functional_rounds import Review
from workflows.platform import registry
from workflows.platform.checkpoints import checkpoint_types_of
from workflows.platform.engine import ANSWERS, engine_for
from workflows.platform.graph import describe

registry.load(
    "tests.samples.functional_rounds, tests.samples.functional_review, "
    "tests.samples.functional_basics"
)

ROUNDS = [
    {"decision": "answer", "answer": {"approved": False, "note": "shorter"}},
    {"decision": "answer", "answer": {"approved": False, "note": "warmer"}},
    {"decision": "answer", "answer": {"approved": True}},
    {"decision": "answer", "answer": "the blog"},
]
DONE = (
    "A draft on pauses (revised: shorter) (revised: warmer) approved in round 3 for the blog "
    "after: ['shorter', 'warmer']"
)


async def _pending(parts: Parts, run_id: str) -> Any:
    page = await parts.requests.list(RequestFilter(run_id=run_id, status="pending"))
    [request] = page.items
    return request


async def _answer(parts: Parts, run_id: str, answer: dict[str, Any]) -> Any:
    request = await _pending(parts, run_id)
    lee = await parts.store.get_user("lee")
    assert lee is not None
    await parts.requests.respond(request.id, answer, responder=lee)
    await parts.worker.drain()
    return request


async def test_a_function_of_a_text_gets_the_input_s_one_text_field(parts: Parts) -> None:
    """As a graph's start executor that takes a `str` does: MAF's own basics sample, registered
    with its input model alone, runs as `text_workflow.run("hello world")` does."""
    run = await parts.runtime.start("functional_basics", {"text": "hello world"}, actor="sam")
    await parts.worker.drain()

    done = await parts.runtime.get(run.id)
    assert (done.status, done.output) == ("completed", "DLROW OLLEH")


async def test_a_run_asking_in_rounds_replays_every_answer_from_its_checkpoint(
    parts: Parts,
    caplog: pytest.LogCaptureFixture,
) -> None:
    functional_rounds.DRAFTS.clear()
    run = await parts.runtime.start("functional_rounds", {"topic": "pauses"}, actor="sam")
    await parts.worker.drain()
    asked = [await _answer(parts, run.id, answer) for answer in ROUNDS]
    done = await parts.runtime.get(run.id)

    assert done.status == "completed", done.error
    assert done.output == DONE
    assert functional_rounds.DRAFTS == ["pauses"]  # the @step ran once, in the first drive
    assert [r.kind for r in asked] == ["input"] * 4
    assert [r.context["round"] for r in asked[:3]] == [1, 2, 3]
    assert {r.executor_id for r in asked} == {"functional_rounds"}
    assert "Draft review" in asked[0].title
    assert asked[3].context == {
        "draft": "A draft on pauses (revised: shorter) (revised: warmer)",
        "ask": "Where should it go?",
    }
    said = [r.getMessage() for r in caplog.records if r.name.startswith("agent_framework")]
    assert not [s for s in said if "still pending" in s], said


async def test_the_answers_a_replay_needs_are_in_the_committed_checkpoint(
    parts: Parts,
) -> None:
    run = await parts.runtime.start("functional_rounds", {"topic": "pauses"}, actor="sam")
    await parts.worker.drain()
    for answer in ROUNDS[:2]:
        await _answer(parts, run.id, answer)
    paused = await parts.runtime.get(run.id)
    assert paused.checkpoint_id is not None
    body = await parts.store.load_checkpoint(paused.checkpoint_id)
    assert body is not None
    state = decode_checkpoint_value(
        json.loads(zlib.decompress(body)),
        allowed_types=registry.get("functional_rounds").allow_list(
            functional_rounds.rounds.build()
        ),
    )["state"]

    answers = state[ANSWERS]
    assert sorted(answers) == ["auto::0", "auto::1"]
    assert answers["auto::1"] == functional_rounds.Review(approved=False, note="warmer")
    assert list(state["_step_cache"].values()) == ["A draft on pauses"]


async def test_kept_instances_carry_nothing_from_one_run_to_the_other(
    parts: Parts,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = dataclasses.replace(registry.get("functional_rounds"), reuse=True)
    monkeypatch.setitem(registry._REGISTRY, "functional_rounds", spec)
    runs = [
        await parts.runtime.start("functional_rounds", {"topic": "pauses"}, actor="sam")
        for _ in range(2)
    ]
    await parts.worker.drain()
    for answer in ROUNDS:
        for run in runs:  # turn about, on the instances the pool keeps
            await _answer(parts, run.id, answer)

    assert [(await parts.runtime.get(r.id)).output for r in runs] == [DONE, DONE]
    idle = [built.workflow for built in parts.runtime.pool.idle("functional_rounds")]
    # nothing of a run stays in memory between its drives: MAF's replay state is cleared
    assert idle
    assert [(w._last_message, w._last_step_cache) for w in idle] == [(None, {})] * len(idle)  # type: ignore[union-attr]


async def test_baton_check_drives_a_functional_workflow_pause_by_pause() -> None:
    rounds = await check_workflow(
        "functional_rounds",
        run_input={"topic": "pauses"},
        answers={
            "DraftReview": [{"approved": False, "note": "shorter"}, {"approved": True}],
            "dict": "the blog",
        },
    )
    review = await check_workflow("functional_review", answers={"dict": "more on alignment"})

    assert rounds.clean, rounds.lines()
    assert rounds.lines()[-1] == "clean: every pause is durable"  # no executors to lose state
    assert rounds.pauses == 3
    assert [a.given for a in rounds.answered] == [True, True, True]
    assert rounds.outputs == [
        "A draft on pauses (revised: shorter) approved in round 2 for the blog after: ['shorter']"
    ]
    assert review.clean, review.lines()
    assert review.outputs == [
        "Revised: Draft document about 'AI Safety': Lorem ipsum dolo... "
        "[Applied feedback: more on alignment]"
    ]


class Topic(BaseModel):
    topic: str = "x"


with warnings.catch_warnings():  # experimental in MAF: said once a process
    warnings.simplefilter("ignore")

    @workflow(name="asks_for_a_tally")
    async def asks_for_a_tally(given: Topic, ctx: RunContext) -> str:
        tally = await ctx.request_info(Tally(), Tally)  # a class of another module
        return f"{given.topic}: {tally.turns}"


async def test_a_request_of_a_type_the_allow_list_lacks_is_a_pause_not_durable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = registry.WorkflowSpec(
        name="asks_for_a_tally",
        description="",
        input_model=Topic,
        build=lambda services: asks_for_a_tally,
    )
    monkeypatch.setitem(registry._REGISTRY, spec.name, spec)
    listed = dataclasses.replace(  # a spec of its own: not the first's allow-list, found once
        spec, allowed_types=frozenset({"tests.fixtures.tally_values:Tally"})
    )

    refused = await check_workflow(spec.name, run_input={"topic": "x"})
    monkeypatch.setitem(registry._REGISTRY, spec.name, listed)
    allowed = await check_workflow(spec.name, run_input={"topic": "x"}, answers={"Tally": {}})

    [finding] = refused.not_durable
    assert "tests.fixtures.tally_values:Tally" in finding.reason
    assert allowed.clean, allowed.lines()
    assert allowed.outputs == ["x: 0"]


async def test_one_engine_carries_a_run_through_its_rounds_without_maf_s_replay_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # what a drive does when an adapter answers at once (a policy): runs again on one instance
    engine = engine_for(functional_rounds.rounds.build(), InMemoryCheckpointStorage())
    results = [await engine.run("pauses")]
    for review in (Review(approved=False, note="shorter"), Review(approved=True)):
        [asked] = results[-1].get_request_info_events()
        results.append(await engine.run(responses={str(asked.request_id): review}))
    [asked] = results[-1].get_request_info_events()
    done = await engine.run(responses={str(asked.request_id): "the blog"})

    assert done.get_outputs() == [
        "A draft on pauses (revised: shorter) approved in round 2 for the blog after: ['shorter']"
    ]
    said = [r.getMessage() for r in caplog.records if r.name.startswith("agent_framework")]
    assert said == []


with warnings.catch_warnings():
    warnings.simplefilter("ignore")

    @workflow(name="versioned")
    async def version_1(topic: str, ctx: RunContext) -> str:
        return f"{topic}: {await ctx.request_info({'topic': topic}, str)}"

    @workflow(name="versioned")
    async def version_2(topic: str, ctx: RunContext) -> str:
        return f"{topic}! {await ctx.request_info({'topic': topic}, str)}"


@pytest.mark.parametrize(
    ("first", "deployed"),
    [
        (lambda: version_1, lambda: version_2),  # a functional workflow's code changed
        (lambda: versioned_graph(extra=False), lambda: versioned_graph(extra=True)),  # edges
    ],
    ids=["functional", "graph"],
)
async def test_a_run_paused_on_code_a_deploy_changed_waits_for_that_code_and_then_ends(
    parts: Parts,
    monkeypatch: pytest.MonkeyPatch,
    first: Callable[[], Any],
    deployed: Callable[[], Any],
) -> None:
    """MAF refuses a checkpoint of other code: the run keeps its answer and waits, not fails."""
    spec = spec_of(first)
    monkeypatch.setitem(registry._REGISTRY, spec.name, spec)
    run = await parts.runtime.start("versioned", {"topic": "x"}, actor="sam")
    await parts.worker.drain()
    monkeypatch.setitem(registry._REGISTRY, spec.name, spec_of(deployed))
    asked = await _answer(parts, run.id, {"decision": "answer", "answer": "yes"})
    held = await parts.runtime.get(run.id)
    kept = await parts.store.get_request(asked.id)
    retrying = await parts.store.run_retrying(run.id)
    monkeypatch.setitem(registry._REGISTRY, spec.name, spec)  # rolled back

    async def ended() -> Any:
        await parts.worker.run_until_idle()  # the job again once due, as `baton serve` polls
        found = await parts.runtime.get(run.id)
        return found if found.status != "waiting" else None

    done = await eventually(ended, what="the run resumed by the code that paused it")

    assert (held.status, held.error) == ("waiting", None)
    assert kept is not None
    assert kept.status == "answered"  # answered, not yet delivered
    assert done.status == "completed", done.error
    assert done.output == "x: yes"
    assert retrying is not None
    assert (retrying.kind, retrying.attempts) == ("resume", 1)
    assert retrying.error.startswith("RunHeld: the run paused on "), retrying.error
    assert await parts.store.run_retrying(run.id) is None  # nothing left to try again


with warnings.catch_warnings():
    warnings.simplefilter("ignore")

    @workflow(name="breaks_on_answer")
    async def breaks_on_answer(given: Topic, ctx: RunContext) -> str:
        said = await ctx.request_info({"topic": given.topic}, str)
        raise ValueError(f"cannot use {said!r}")


async def test_a_check_of_a_workflow_failing_after_an_answer_says_it_failed_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = registry.WorkflowSpec(
        name="breaks_on_answer", description="", input_model=Topic, build=lambda s: breaks_on_answer
    )
    monkeypatch.setitem(registry._REGISTRY, spec.name, spec)

    report = await check_workflow(spec.name, run_input={"topic": "x"}, answers={"dict": "this"})

    assert report.failures == ["after pause 1: ValueError: cannot use 'this'"]
    assert report.final_state == "FAILED"


def _reading_services(*, replay_key: bool) -> registry.WorkflowSpec:
    """A functional workflow built per drive whose step reads the run's services."""

    def build(services: Any) -> object:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")

            async def lookup(topic: str) -> str:
                return f"{topic} for {services.run_id[:4]}"

            wrapped = step(replay_key=lambda topic: topic)(lookup) if replay_key else step(lookup)

            @workflow(name="reads_services")
            async def reads_services(topic: str, ctx: RunContext) -> str:
                found = await wrapped(topic)
                return f"{found}: {await ctx.request_info({'found': found}, str)}"

        return reads_services

    return registry.WorkflowSpec(
        name="reads_services",
        description="",
        input_model=Topic,
        build=build,
        start_message=lambda given: given.topic,
    )


async def test_a_step_reading_the_run_s_services_replays_by_its_replay_key(
    parts: Parts, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = []
    for keyed in (True, False):
        monkeypatch.setitem(
            registry._REGISTRY, "reads_services", _reading_services(replay_key=keyed)
        )
        run = await parts.runtime.start("reads_services", {"topic": "x"}, actor="sam")
        await parts.worker.drain()
        if keyed:
            await _answer(parts, run.id, {"decision": "answer", "answer": "fine"})
        runs.append(await parts.runtime.get(run.id))
    keyed_run, unkeyed_run = runs

    assert keyed_run.status == "completed", keyed_run.error
    assert keyed_run.output == f"x for {keyed_run.id[:4]}: fine"
    assert unkeyed_run.status == "failed"
    assert "Cannot checkpoint @step calls without a durable replay identity" in str(
        unkeyed_run.error
    )


class Hook:
    """A class that acts when made: no checkpoint may make it, though its module is a workflow's."""

    def __init__(self, command: str) -> None:
        self.command = command


def test_only_value_classes_of_the_workflow_s_module_are_allow_listed() -> None:
    allowed = registry.get("functional_rounds").allow_list(functional_rounds.rounds.build())
    mine = checkpoint_types_of(asks_for_a_tally.build())

    assert "tests.samples.functional_rounds:Review" in allowed  # a dataclass it is answered
    assert "tests.unit.test_functional:Topic" in mine  # a pydantic model
    assert "tests.unit.test_functional:Hook" not in mine


class Counted(InMemoryCheckpointStorage):
    def __init__(self) -> None:
        super().__init__()
        self.saves = 0

    async def save(self, checkpoint: WorkflowCheckpoint) -> str:
        self.saves += 1
        return await super().save(checkpoint)


with warnings.catch_warnings():
    warnings.simplefilter("ignore")

    @step
    async def one_of_many(n: int) -> int:
        return n + 1

    @workflow(name="many_steps")
    async def many_steps(count: int, ctx: RunContext) -> str:
        total = 0
        for n in range(count):
            total += await one_of_many(n)
        return f"{total} {await ctx.request_info({'total': total}, str)}"


async def test_a_drive_keeps_only_the_last_of_the_checkpoints_maf_saves_step_by_step() -> None:
    storage = Counted()
    engine = engine_for(many_steps.build(), storage)
    paused = await engine.run(50)
    snapshot = await engine.snapshot()

    assert storage.saves == 0  # 51 saves by MAF, none kept but the last
    assert list(snapshot.pending_request_info_events) == [
        str(paused.get_request_info_events()[0].request_id)
    ]
    assert len(snapshot.state["_step_cache"]) == 50
    await storage.save(snapshot)
    again = engine_for(many_steps.build(), storage)
    await again.restore(await storage.load(snapshot.checkpoint_id))
    done = await again.run(responses={"auto::0": "ok"})
    assert done.get_outputs() == ["1275 ok"]


class Relay:
    """A process-wide client whose keep-alive runs as a task, as many async clients' do."""

    def __init__(self) -> None:
        self.alive = asyncio.create_task(asyncio.sleep(3600))


async def open_relay(database_url: str) -> Relay:
    return Relay()


RESOURCES = Resources("sqlite:///unused")

with warnings.catch_warnings():
    warnings.simplefilter("ignore")

    @step
    async def notify(topic: str) -> str:
        await RESOURCES.get(open_relay)
        return f"{topic} sent"

    @workflow(name="notifies")
    async def notifies(topic: str, ctx: RunContext) -> str:
        return str(await ctx.request_info({"sent": await notify(topic)}, str))


async def test_a_resource_a_functional_run_opens_outlives_that_run_s_pause() -> None:
    # MAF cancels every task a functional run made when it pauses; a resource is the process's
    await engine_for(notifies.build(), InMemoryCheckpointStorage()).run("x")
    await asyncio.sleep(0)
    relay = await RESOURCES.get(open_relay)

    assert not relay.alive.done()
    relay.alive.cancel()


async def rounds_function(topic: str) -> str:
    return topic


def test_a_functional_workflow_is_drawn_as_one_node_the_source_of_its_requests() -> None:
    graph = describe(functional_rounds.rounds.build())

    assert [(n.id, n.start) for n in graph.nodes] == [("functional_rounds", True)]
    assert graph.start == "functional_rounds"
    assert graph.edges == ()
    quoted = describe(workflow(name='say "hi"')(rounds_function).build())
    assert quoted.mermaid == 'flowchart TD\n  n0["say #quot;hi#quot;"];'


async def test_a_builder_returning_no_maf_workflow_is_told_what_baton_drives(
    parts: Parts,
) -> None:
    spec = registry.WorkflowSpec(
        name="not_a_workflow",
        description="",
        input_model=Topic,
        build=lambda services: "a graph, I promise",
    )

    with pytest.raises(TypeError) as told:
        await parts.runtime.pool.take(spec, "run_1", {"topic": "x"}, None)

    assert str(told.value) == (
        "the builder of workflow 'not_a_workflow' returned a str; Baton drives MAF workflows: "
        "a Workflow (WorkflowBuilder, an orchestration), a functional @workflow, or an agent"
    )


async def test_a_functional_workflow_s_module_agents_note_each_run_s_turns_in_that_run(
    parts: Parts,
) -> None:
    # MAF's agent_integration.py shape: two agents its module holds serve every run at once
    registry.load("tests.samples.functional_agents")
    runs = {
        note: await parts.runtime.start("functional_agents", {"document": doc}, actor="sam")
        for doc, note in (("alpha", "shorter"), ("beta", "warmer"))
    }
    await parts.worker.drain()
    for note, run in runs.items():
        await _answer(parts, run.id, {"decision": "answer", "answer": note})

    for (note, run), doc in zip(runs.items(), ("alpha", "beta"), strict=True):
        done = await parts.runtime.get(run.id)
        assert done.status == "completed", done.error
        entries = await parts.store.list_transcript(run.id)
        said = [(e["agent"], e["text"]) for e in entries if e.get("agent") and e.get("text")]
        assert said == [
            ("WriterAgent", f"In one sentence: {doc}"),
            ("EditorAgent", f"In one sentence: {doc} ({note})"),
        ]


class _Proxy:
    """A global whose every attribute raises, as a lazy client or a settings proxy may."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"no {name} before it is configured")


_PROXY = _Proxy()

with warnings.catch_warnings():
    warnings.simplefilter("ignore")

    @workflow(name="with_a_proxy")
    async def with_a_proxy(topic: str, ctx: RunContext) -> str:
        return f"{topic} {type(_PROXY).__name__}"


def test_finding_a_functional_workflow_s_agents_reads_no_attribute_of_its_other_globals() -> None:
    from executors.platform.agents import agents_of

    assert agents_of(with_a_proxy.build()) == []
