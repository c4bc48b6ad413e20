"""`baton check`: executors that lose state across a restart, pauses a restart would lose.

The check runs a workflow as Baton drives it (each resume in a fresh instance restored from the
pause's checkpoint, its executors' own attributes carried where a checkpoint can carry them) and
compares each executor's own attributes before and after every restore.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Never

import pytest
from agent_framework import (
    Executor,
    FileCheckpointStorage,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowExecutor,
    executor,
    handler,
    response_handler,
)
from pydantic import BaseModel

from baton.api import check_workflow
from baton.errors import InvalidAnswer, InvalidInput, WorkflowNotFound
from baton.settings import Settings
from baton.wiring import open_parts
from executors.platform.services import RunServices
from human.store.base import RequestFilter
from tests.fixtures.failing_after_outputs import build_failing
from tests.harness import seed
from tests.unit.test_workflow_loading import baton
from workflows.platform import registry
from workflows.platform.check import CheckReport, check_spec, sample_input
from workflows.platform.registry import WorkflowSpec

FIXTURE = "tests.fixtures.forgetful_workflow"
REUSED = "tests.fixtures.reused_workflow"


@pytest.fixture(autouse=True)
def fixtures_registered() -> None:
    registry.load(f"{FIXTURE}, tests.fixtures.unlisted_workflow, {REUSED}")


BLOCKED = "Checkpoint deserialization blocked for type 'tests.fixtures.tally_values:Tally'"


async def test_the_check_names_the_executor_and_the_attribute_a_restore_loses() -> None:
    report = await check_workflow("forgetful", run_input={"topic": "tea"})

    assert not report.clean
    assert (report.pauses, len(report.answered)) == (2, 2)
    found = [
        (
            f.pause,
            f.executor_id,
            f.executor_class,
            [(a.name, a.before, a.after, a.why) for a in f.attributes],
        )
        for f in report.lost_state
    ]
    assert found == [
        (
            1,
            "turn_counter",
            "TallyCounter",
            [("tally", "Tally(turns=1, notes=[])", "Tally(turns=0, notes=[])", BLOCKED)],
        ),
    ]
    assert report.outputs == ["turns=1 notes=ok"]  # the bug as a user would meet it
    assert report.findings()[0] == (
        "executor turn_counter (TallyCounter) lost state on resume from pause 1: self.tally was "
        "Tally(turns=1, notes=[]), is Tally(turns=0, notes=[]) after restore (a checkpoint cannot "
        f"carry it: {BLOCKED}) — allow-list its type (register(..., checkpoint_types=...)), or "
        "keep it in on_checkpoint_save/on_checkpoint_restore or in ctx.set_state"
    )


async def test_a_dict_whose_keys_a_restore_makes_strings_is_named_with_what_to_do() -> None:
    report = await check_workflow("by_round", run_input={"topic": "tea"})

    assert report.outputs == ["rounds=['1', 2]"]  # the bug as a user would meet it
    [found] = report.lost_state
    assert [(a.name, a.string_keys, a.why) for a in found.attributes] == [("by_round", True, "")]
    assert report.findings() == [
        "executor turn_counter (RoundNoter) lost state on resume from pause 2: self.by_round was "
        "{1: 'ok'}, is {'1': 'ok'} after restore (a checkpoint keeps a dict's keys as strings, as "
        "JSON does) — key it by strings, or turn the keys back after a restore"
    ]


async def test_maf_s_sample_keeping_int_keys_through_its_checkpoint_hooks_is_named() -> None:
    # `checkpoint_with_resume.py` saves its factor pairs by number in `on_checkpoint_save`: they
    # come back keyed by strings, and its output mixes "5" and 6 (as on MAF's own file storage)
    registry.load("tests.samples.checkpoint_with_resume")
    report = await check_workflow("checkpoint_with_resume", run_input={"upper_limit": 10})

    [found] = report.lost_state
    assert (found.executor_id, found.executor_class) == ("worker", "AskingWorkerExecutor")
    assert [(a.name, a.string_keys) for a in found.attributes] == [
        ("_composite_number_pairs", True)
    ]
    [pairs] = report.outputs
    assert "5" in pairs  # restored
    assert 6 in pairs  # made after the restore


@pytest.mark.parametrize("workflow", ["plain", "tallied"])
async def test_plain_attributes_a_checkpoint_can_carry_come_back_and_check_clean(
    workflow: str,
) -> None:
    # `plain` keeps ints and a list of str; `tallied` the `Tally` that `forgetful` loses, its
    # type allow-listed: the same executor code, and the count survives each restore.
    report = await check_workflow(workflow, run_input={"topic": "tea"})

    assert report.clean, report.lines()
    assert (report.pauses, len(report.answered)) == (2, 2)
    assert report.outputs == ["turns=3 notes=ok,ok"]
    assert report.could_reuse  # a kept instance resets to its built attributes


async def test_state_kept_through_the_checkpoint_hooks_checks_clean() -> None:
    report = await check_workflow("mindful", run_input={"topic": "tea"})

    assert report.clean, report.lines()
    assert (report.pauses, report.final_state) == (2, "IDLE")
    assert report.outputs == ["turns=3 notes=ok,ok"]
    assert [a.answer for a in report.answered] == ["Nod(agreed=True, note='ok')"] * 2
    assert report.lines()[-1] == "clean: no executor lost state, every pause is durable"


async def test_given_answers_go_in_order_by_request_type_or_executor_then_made_up() -> None:
    by_type = await check_workflow(
        "mindful", run_input={"topic": "tea"}, answers={"Nudge": [{"agreed": False, "note": "a"}]}
    )
    by_executor = await check_workflow(
        "mindful",
        run_input={"topic": "tea"},
        answers={"turn_counter": [{"agreed": True, "note": "b"}, {"agreed": True, "note": "c"}]},
    )

    assert by_type.outputs == ["turns=3 notes=a,ok"]
    assert [a.given for a in by_type.answered] == [True, False]
    assert by_executor.outputs == ["turns=3 notes=b,c"]


async def test_a_given_answer_that_does_not_fit_is_refused_naming_it() -> None:
    with pytest.raises(InvalidAnswer) as refused:
        await check_workflow("mindful", run_input={"topic": "t"}, answers={"Nudge": "yes"})

    assert refused.value.errors[0]["loc"] == ["answers", "Nudge"]
    assert "is not a Nod" in refused.value.errors[0]["msg"]


async def test_a_pause_no_saved_checkpoint_covers_is_a_finding() -> None:
    unlisted = await check_workflow("unlisted", run_input={"sku": "S-1"})
    unsaveable = await check_workflow("unsaveable", run_input={"sku": "S-1"})
    listed = await check_workflow("listed", run_input={"sku": "S-1"})

    assert [(f.pause, len(f.request_ids)) for f in unlisted.not_durable] == [(1, 1)]
    assert "blocked for type 'tests.fixtures.shipment_values:Shipment'" in (
        unlisted.not_durable[0].reason
    )
    assert "allow-list the type" in unlisted.findings()[0]
    assert unlisted.answered == []  # Baton fails such a run: nothing to resume from
    assert len(unsaveable.not_durable) == 1
    assert "cannot be encoded" in unsaveable.not_durable[0].reason
    assert listed.clean, listed.lines()
    assert listed.outputs == ["S-1: approve"]


async def test_the_shipped_purchase_workflow_checks_clean() -> None:
    report = await check_workflow("purchase")  # its input made up from its schema

    assert report.clean, report.lines()
    assert report.input["amount"] == 1.0
    assert [a.executor_id for a in report.answered] == [
        "legal_approval",
        "finance_approval",
        "order_desk",
    ]
    assert report.outputs[0]["status"] == "ordered"


async def test_a_run_the_workflow_ends_itself_stops_the_check_clean() -> None:
    report = await check_workflow(
        "purchase", answers={"legal_approval": {"decision": "reject", "reason": "no"}}
    )

    assert report.clean, report.lines()
    assert report.ended_by_workflow
    assert report.outputs[0]["status"] == "rejected"


async def test_the_check_stops_at_max_pauses() -> None:
    report = await check_workflow("mindful", run_input={"topic": "t"}, max_pauses=1)

    assert (report.pauses, report.stopped_at_limit, report.clean) == (1, True, True)
    assert report.outputs == []


async def test_unknown_workflows_and_bad_inputs_are_refused() -> None:
    with pytest.raises(WorkflowNotFound):
        await check_workflow("no-such-workflow")
    with pytest.raises(InvalidInput, match="topic"):
        await check_workflow("mindful", run_input={"subject": "t"})


# failures, on a spec of the test's own ---------------------------------------------------------


class Fumble(BaseModel):
    text: str


class Fumbler(Executor):
    @handler
    async def on_fumble(self, message: Fumble, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.request_info(message, Fumble)

    @response_handler
    async def on_answer(
        self, asked: Fumble, answer: Fumble, ctx: WorkflowContext[Never, str]
    ) -> None:
        raise RuntimeError(f"dropped {answer.text}")


def fumbling(services: RunServices) -> Workflow:
    return WorkflowBuilder(name="fumbling", start_executor=Fumbler(id="fumbler")).build()


async def check_built(tmp_path: Path, name: str, build: Any, *, reuse: bool = False) -> CheckReport:
    """`check_spec` of a workflow `build` builds, on a Fumble input `{"text": "x"}`."""
    own = WorkflowSpec(name=name, description="", input_model=Fumble, build=build, reuse=reuse)
    settings = Settings(database_url=f"sqlite:///{tmp_path / name}.db")
    async with open_parts(settings, local_worker=False) as parts:
        return await check_spec(
            own, lambda: parts.runtime.services(own, f"run_{name}"), run_input={"text": "x"}
        )


async def test_a_workflow_that_fails_on_resume_is_a_failure(tmp_path: Path) -> None:
    report = await check_built(tmp_path, "fumbling", fumbling)

    assert not report.clean  # the made-up answer repeats the request's `text`, as a form would
    assert report.failures == ["after pause 1: RuntimeError: dropped x"]
    assert report.findings() == ["failed: after pause 1: RuntimeError: dropped x"]


async def test_a_check_of_a_run_that_fails_keeps_what_it_output_before(tmp_path: Path) -> None:
    """As a drive does: the outputs a streaming script sees before the failure are reported."""
    report = await check_built(tmp_path, "failing_after_outputs", lambda s: build_failing())

    assert report.failures == ["before the first pause: RuntimeError: the mail server refused x"]
    assert report.outputs == ["saved x", "sending x"]
    assert report.final_state == "FAILED"


async def test_maf_s_own_sample_keeping_its_state_in_plain_attributes_checks_clean() -> None:
    # `sub_workflow_parallel_requests.py` as MAF wrote it: pending requests and a cache in plain
    # attributes, in the parent's executors and in the sub-workflow's collector.
    registry.load("tests.samples.parallel_requests")

    report = await check_workflow(
        "parallel_requests",
        answers={
            "ResourceRequest": {"resource_type": "gpu", "allocated": 1, "source": "external"},
            "PolicyRequest": {"approved": True, "reason": "External system approved"},
        },
    )

    assert report.clean, report.lines()
    assert (report.pauses, len(report.answered)) == (2, 2)
    assert report.outputs == ["All 7 requests processed."]
    assert report.could_reuse


async def test_an_answer_repeating_its_request_s_id_is_given_it_when_given_or_made_up() -> None:
    # `workflow_as_agent_human_in_the_loop.py` as MAF wrote it: the `ReviewResponse` repeats the
    # `request_id` of the `ReviewRequest` asked about, and the worker refuses an id it does not
    # know. A drive fills it in from the request (`echoed`); so does the check.
    registry.load("tests.samples.workflow_as_agent_hitl")

    made_up = await check_workflow("workflow_as_agent_hitl")
    given = await check_workflow(
        "workflow_as_agent_hitl",
        answers={
            "HumanReviewRequest": [
                {"feedback": "merge with a heap", "approved": False},
                {"feedback": "ship it", "approved": True},
            ]
        },
    )

    draft = "read the files in parallel, sort each chunk, merge into one file."
    assert made_up.clean, made_up.findings()
    assert made_up.outputs == [f"Draft 1: {draft}"]
    assert given.clean, given.findings()
    assert (given.pauses, len(given.answered)) == (2, 2)
    assert given.outputs == [f"Draft 2: {draft} [merge with a heap]"]


# MAF's orchestrations holding an agent's reply for review ------------------------------------


async def test_an_orchestrations_hold_on_a_reply_is_let_stand_or_sent_back_with_guidance() -> None:
    registry.load("tests.samples.concurrent_review")

    made_up = await check_workflow("concurrent_review", run_input={"product": "Baton"})
    guided = await check_workflow(
        "concurrent_review",
        run_input={"product": "Baton"},
        answers={"AgentExecutorResponse": ["mention the price", True]},
    )

    assert made_up.clean, made_up.findings()
    assert made_up.outputs == ["Market note: strong demand expected.Budget: booked 1200.00 EUR"]
    assert guided.clean, guided.findings()
    assert guided.outputs == ["Market note, revised: mention the priceBudget: booked 1200.00 EUR"]
    assert [(a.request_type, a.given) for a in guided.answered] == [
        ("Content", False),
        ("AgentExecutorResponse", True),
        ("AgentExecutorResponse", True),
    ]
    with pytest.raises(InvalidAnswer, match="does not fit the AgentRequestInfoResponse"):
        await check_workflow(
            "concurrent_review",
            run_input={"product": "Baton"},
            answers={"AgentExecutorResponse": 3},
        )


# workflows registered for reuse ---------------------------------------------------------------


async def test_a_reused_workflow_whose_executor_keeps_a_plain_attribute_is_named() -> None:
    """One drive, no pause: no restore would show it, but the next run on the instance would."""
    report = await check_workflow("echo_reused", run_input={"item": "hello"})

    assert report.reused
    assert report.lost_state == []
    assert report.pauses == 0
    assert [
        (f.executor_id, f.executor_class, [(a.name, a.before, a.after) for a in f.attributes])
        for f in report.kept_state
    ] == [("echo", "Echo", [("memory", "Memory(said=[])", "Memory(said=['hello'])")])]
    assert report.findings() == [
        "executor echo (Echo) carries state into the next run on a kept instance "
        "(register(reuse=True)): self.memory is Memory(said=['hello']) after the reset, "
        "Memory(said=[]) when built — keep it in on_checkpoint_save/on_checkpoint_restore or in "
        "ctx.set_state, or register the workflow without reuse"
    ]


async def test_an_object_behind_an_agent_s_middleware_keeping_a_run_s_state_is_named() -> None:
    """MAF's `shared_state_middleware.py` counts calls in the object whose method is the
    middleware: a kept instance would count on from the last run, so reuse is not advised."""
    registry.load("tests.fixtures.counting_middleware")

    reused = await check_workflow("counting_reused")
    rebuilt = await check_workflow("counting_rebuilt")

    assert reused.outputs == ["[Call #1] pong"]
    assert reused.findings() == [
        "middleware object Counter of executor counter_agent's agent carries state into the next "
        "run on a kept instance (register(reuse=True)): self.call_count is 1 after the reset, 0 "
        "when built — make it in the builder for each build and keep a run's state in the "
        "session's state, or register the workflow without reuse"
    ]
    assert rebuilt.clean, rebuilt.findings()
    assert not rebuilt.could_reuse


async def test_a_kept_instance_s_run_goes_on_through_its_pauses_before_it_is_compared() -> None:
    """The count changes only once the approved call runs, after the pause: the kept run is
    answered as the check's was, so the reset instance shows it (it stopped at the pause)."""
    registry.load("tests.fixtures.counting_middleware")

    asked = await check_workflow("counting_asked")

    assert asked.pauses == 1
    assert asked.outputs == ["[Call #1] pong"]
    assert [
        (k.executor_id, [(a.name, a.before, a.after) for a in k.attributes])
        for k in asked.kept_state
    ] == [("counter_agent middleware Counter", [("call_count", "0", "1")])]


async def test_a_reused_workflow_that_checkpoints_its_state_resets_clean() -> None:
    report = await check_workflow("tally_reused", run_input={"item": "one"})
    rebuilt = await check_workflow("tally_rebuilt", run_input={"item": "one"})

    assert report.clean, report.findings()
    assert report.lines()[-1] == (
        "clean: no executor lost state, every pause is durable, a kept instance resets to a new "
        "one's state"
    )
    assert not rebuilt.reused
    assert rebuilt.lines()[-2:] == [
        "a kept instance, reset, held nothing of its last run: if the builder reads nothing of a "
        "run while building, register(..., reuse=True) builds it once per process rather than "
        "for every drive",
        "clean: no executor lost state, every pause is durable",
    ]


async def test_a_reused_workflow_whose_kept_instance_cannot_be_reset_is_a_failure() -> None:
    report = await check_workflow("brittle_reused", run_input={"item": "hello"})

    assert report.failures == [
        "a kept instance could not be reset: restoring the checkpoint taken as it was built "
        "raised (the pool drops such an instance and builds another every drive)"
    ]
    assert report.kept_state == []
    assert not report.clean


async def test_a_workflow_built_per_drive_is_told_only_when_it_could_be_kept() -> None:
    leaky = await check_workflow("echo_rebuilt", run_input={"item": "hello"})

    assert leaky.clean  # built for every drive, what it keeps is no finding
    assert leaky.kept_state == []
    assert not leaky.could_reuse
    assert not any("reuse=True" in line for line in leaky.lines())


@pytest.mark.parametrize("workflow", ["refund", "support", "purchase", "ask"])
async def test_the_shipped_workflows_registered_for_reuse_reset_clean(workflow: str) -> None:
    spec = registry.get(workflow)
    given = {"ask": {"kind": "question", "question": "Which plan?"}}
    report = await check_workflow(workflow, run_input=given.get(workflow) or sample_input(spec))

    assert spec.reuse
    assert report.kept_state == [], report.findings()


# the command ------------------------------------------------------------------------------------


def test_baton_check_exits_1_naming_the_lost_state_and_0_when_clean(tmp_path: Path) -> None:
    forgetful = baton(tmp_path, "check", "forgetful", workflows=FIXTURE)
    mindful = baton(tmp_path, "check", "mindful", "--input", '{"topic": "t"}', workflows=FIXTURE)

    assert forgetful.returncode == 1, forgetful.stderr
    lines = forgetful.stdout.splitlines()
    assert lines[0].startswith("checked forgetful: 2 pause(s), 2 request(s) answered")
    assert (
        "executor turn_counter (TallyCounter) lost state on resume from pause 1: self.tally was "
        "Tally(turns=1, notes=[]), is Tally(turns=0, notes=[]) after restore (a checkpoint cannot "
        f"carry it: {BLOCKED}) — allow-list its type (register(..., checkpoint_types=...)), or "
        "keep it in on_checkpoint_save/on_checkpoint_restore or in ctx.set_state"
    ) in lines
    assert lines[-1] == "1 finding(s)"
    assert mindful.returncode == 0, mindful.stderr
    assert (
        mindful.stdout.splitlines()[-1] == "clean: no executor lost state, every pause is durable"
    )
    assert not (tmp_path / "baton.db").exists()  # the check never opens Baton's database


def test_baton_check_json_is_the_report(tmp_path: Path) -> None:
    done = baton(
        tmp_path,
        "check",
        "forgetful",
        "--json",
        "--answers",
        '{"Nudge": {"agreed": true, "note": "given"}}',
        workflows=FIXTURE,
    )

    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)  # the whole of stdout is the report
    assert report["clean"] is False
    assert report["lost_state"][0] == {
        "pause": 1,
        "executor_id": "turn_counter",
        "executor_class": "TallyCounter",
        "attributes": [
            {
                "name": "tally",
                "before": "Tally(turns=1, notes=[])",
                "after": "Tally(turns=0, notes=[])",
                "why": BLOCKED,
                "string_keys": False,
            }
        ],
    }
    assert [a["given"] for a in report["answered"]] == [True, False]
    assert report["outputs"] == ["turns=1 notes=ok"]


def test_baton_check_usage_errors_exit_2(tmp_path: Path) -> None:
    unknown = baton(tmp_path, "check", "no-such-workflow", workflows=FIXTURE)
    not_json = baton(tmp_path, "check", "mindful", "--answers", "{nope", workflows=FIXTURE)
    no_fit = baton(tmp_path, "check", "mindful", "--input", '{"topic": 3}', workflows=FIXTURE)

    assert (unknown.returncode, not_json.returncode, no_fit.returncode) == (2, 2, 2)
    assert "no workflow named 'no-such-workflow'" in unknown.stderr
    assert "--answers is not JSON" in not_json.stderr
    assert "invalid input for mindful: topic" in no_fit.stderr
    assert unknown.stdout == not_json.stdout == no_fit.stdout == ""


class Collector(Executor):
    """MAF's `sub_workflow_basics` keeps its results so: a list on the class, one for all."""

    results: list[str] = []  # noqa: RUF012 - the finding under test

    @handler
    async def on_fumble(self, message: Fumble, ctx: WorkflowContext[Never, list[str]]) -> None:
        self.results.append(message.text)
        await ctx.yield_output(list(self.results))


def collecting(services: RunServices) -> Workflow:
    return WorkflowBuilder(name="collecting", start_executor=Collector(id="collector")).build()


async def test_a_class_attribute_a_run_changes_is_a_finding_every_run_would_share(
    tmp_path: Path,
) -> None:
    report = await check_built(tmp_path, "collecting", collecting)
    Collector.results.clear()

    assert not report.clean
    assert not report.could_reuse  # no advice to keep instances, which would share it too
    assert report.findings() == [
        "executor class Collector's class attribute results changed during the run ([] before, "
        "['x'] after): it is one object for every instance and every run a process drives — set "
        "it on the instance (in __init__)"
    ]


async def test_a_context_provider_keeping_history_in_itself_is_named_in_the_session_clean() -> None:
    """MAF's `custom_history_provider.py` keeps a session's messages in its own dict: after a
    resume (a new instance) its agent sees the question alone. Kept in the session's `state`,
    which the checkpoint carries, they all come back."""
    registry.load("tests.fixtures.history_providers")

    custom = await check_workflow("custom_history")
    session = await check_workflow("session_history")

    [lost] = custom.lost_state
    assert (lost.pause, lost.executor_id, lost.executor_class) == (
        1,
        "CustomBot context provider custom-history",
        "CustomHistoryProvider",
    )
    assert [a.name for a in lost.attributes] == ["_storage"]
    assert lost.attributes[0].after == "{}"
    assert lost.line().startswith(
        "context provider custom-history (CustomHistoryProvider) of executor CustomBot's agent "
        "lost state on resume from pause 1: self._storage was {"
    )
    assert "keep it in the session's state" in lost.line()
    assert custom.outputs == ["Done. I remember 1 messages."]  # the question alone
    assert session.clean, session.lines()
    assert session.outputs == ["Done. I remember 3 messages."]  # the question, call and result


class Keeper(Executor):
    """Keeps what it was given on itself, as an agent's executor keeps its messages."""

    def __init__(self, id: str) -> None:
        super().__init__(id=id)
        self.seen: list[str] = []

    @handler
    async def on_fumble(self, message: Fumble, ctx: WorkflowContext[Never, list[str]]) -> None:
        self.seen.append(message.text)
        await ctx.yield_output(list(self.seen))


ONE_FOR_ALL = Keeper(id="keeper")  # a module's: af-hosting's `local_responses_workflow`


@executor(id="shout")
async def shout(message: Fumble, ctx: WorkflowContext[Never, str]) -> None:
    """A module's function executor, as MAF's samples write them: it keeps nothing."""
    await ctx.yield_output(message.text.upper())


def sharing(services: RunServices) -> Workflow:
    return WorkflowBuilder(name="sharing", start_executor=ONE_FOR_ALL).build()


def shouting(services: RunServices) -> Workflow:
    return WorkflowBuilder(name="shouting", start_executor=shout).build()


async def test_an_executor_every_build_is_handed_is_a_finding_every_run_would_share(
    tmp_path: Path,
) -> None:
    shared = await check_built(tmp_path, "sharing", sharing)
    built_apart = await check_built(tmp_path, "collecting", collecting)
    Collector.results.clear()
    a_function = await check_built(tmp_path, "shouting", shouting)

    assert not shared.clean
    assert not shared.could_reuse
    assert shared.shared_executors[0].line() == (
        "executor keeper (Keeper) is the same object in every build of the workflow: what "
        "it keeps of a run (its attributes, an agent's session and messages) is every run's, and "
        "runs at once share it — make a new one in the builder for each build"
    )
    assert built_apart.shared_executors == []
    assert a_function.shared_executors == []  # a function keeps nothing of a run
    assert a_function.clean


def ringing(services: RunServices) -> Any:
    """An agent whose approved tool MAF lets run once (`max_invocations=1`)."""
    from agent_framework import Agent, Content, tool

    from executors.platform.chat_clients import ScriptedChatClient

    @tool(approval_mode="always_require", max_invocations=1)
    def ring(to: str) -> str:
        """Ring someone."""
        return f"rang {to}"

    def play(messages: Any, options: Any) -> list[Content]:
        done = any(c.type == "function_result" for m in messages for c in m.contents)
        if done:
            return [Content.from_text("Rang.")]
        return [Content.from_function_call("c1", "ring", arguments={"to": "lee"})]

    return Agent(client=ScriptedChatClient(play), name="Ringer", tools=[ring])


async def test_a_tool_whose_calls_maf_counts_in_memory_is_named_where_the_run_pauses(
    tmp_path: Path,
) -> None:
    report = await check_built(tmp_path, "ringing", ringing)

    assert report.pauses == 1
    assert report.findings() == [
        "tool ring counts its calls on its tool object, in the process (max_invocations=1): "
        "Baton carries the count through a pause and into a run continuing this one, in any "
        "process; runs that do not continue one another count together only where one process "
        "drives them"
    ]


async def test_the_check_restores_a_pause_as_a_drive_does_and_fails_where_the_run_fails(
    tmp_path: Path,
) -> None:
    """MAF's public restore (`run(checkpoint_id=)`) runs a superstep more than a drive's (the
    runner's own restore, then the answer): against a superstep limit, the check failed at the
    first answer where the run fails at the second."""
    registry.load("tests.fixtures.looping_review")
    revise = {"decision": "answer", "answer": "Shorter."}
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'run.db'}")
    await seed(settings.database_url)
    async with open_parts(settings, local_worker=False) as parts:
        lee = await parts.store.get_user("lee")
        assert lee is not None
        run = await parts.runtime.start("looping_review", {}, actor="lee")
        for _ in range(3):
            await parts.worker.run_until_idle()
            asked = (
                await parts.requests.list(RequestFilter(run_id=run.id, status="pending"))
            ).items
            if not asked:
                break
            await parts.requests.respond(asked[0].id, revise, responder=lee)
        ended = await parts.runtime.get(run.id)
        requests = (await parts.requests.list(RequestFilter(run_id=run.id))).items

    report = await check_workflow("looping_review", answers={"Draft": ["Shorter."] * 3})

    assert ended.status == "failed"
    assert len(requests) == 2  # the run failed at its second answer
    assert report.pauses == 2
    assert report.failures == [
        "after pause 2: WorkflowConvergenceException: Runner did not converge after 5 iterations."
    ]


class Asker(Executor):
    """A sub-workflow's executor that asks a person (durabletask's `12_subworkflow_hitl`)."""

    @handler
    async def on_text(self, text: str, ctx: WorkflowContext) -> None:
        await ctx.request_info(text, str)

    @response_handler
    async def on_answer(self, asked: str, answer: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"{asked}: {answer}")


class Forward(Executor):
    @handler
    async def on_fumble(self, message: Fumble, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(message.text)

    @handler
    async def on_result(self, result: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(result)


def with_sub_workflow(propagate: bool) -> Any:
    def build(services: RunServices) -> Workflow:
        inner = WorkflowBuilder(name="inner", start_executor=Asker(id="asker")).build()
        sub = WorkflowExecutor(inner, id="review_sub", propagate_request=propagate)
        parent = Forward(id="forward")
        return (
            WorkflowBuilder(name="outer", start_executor=parent)
            .add_edge(parent, sub)
            .add_edge(sub, parent)
            .build()
        )

    return build


async def test_a_sub_workflow_whose_requests_nobody_takes_is_a_finding(tmp_path: Path) -> None:
    kept = await check_built(tmp_path, "kept", with_sub_workflow(False))
    passed_on = await check_built(tmp_path, "passed_on", with_sub_workflow(True))

    # MAF's runner drops the inner request: the run ends asking nobody, and the check says why
    assert (kept.pauses, kept.outputs) == (0, [])
    assert kept.findings() == [
        "sub-workflow review_sub keeps its requests to itself (propagate_request=False) and no "
        "executor it sends to takes them (SubWorkflowRequestMessage): its request_info is "
        "dropped, and the run ends asking nobody — pass propagate_request=True, or add an "
        "executor after it that handles SubWorkflowRequestMessage"
    ]
    assert passed_on.clean, passed_on.lines()
    assert passed_on.pauses == 1


def asking(services: RunServices) -> Workflow:
    return WorkflowBuilder(name="asking", start_executor=Asker(id="asker")).build()


async def test_a_checkpoint_storage_given_in_run_kwargs_is_not_used_and_check_says_so(
    tmp_path: Path,
) -> None:
    """MAF's `workflow.run(checkpoint_storage=...)` given through `register(run_kwargs=...)`, as
    MAF's `workflow_as_agent_checkpoint.py` gives one to `run`: Baton keeps each pause's
    checkpoint itself, so the author's storage gets none (MAF would save one after every
    superstep of every drive), and the check, which gave `run` two, says it is not used."""
    storage = tmp_path / "authors-checkpoints"
    storage.mkdir()
    registry.register(
        "asking_with_storage",
        input_model=Fumble,
        start_message=lambda typed: typed.text,
        run_kwargs=lambda typed, services: {"checkpoint_storage": FileCheckpointStorage(storage)},
    )(asking)
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'run.db'}")
    await seed(settings.database_url)
    async with open_parts(settings, local_worker=False) as parts:
        lee = await parts.store.get_user("lee")
        assert lee is not None
        run = await parts.runtime.start("asking_with_storage", {"text": "x"}, actor="sam")
        await parts.worker.run_until_idle()
        [asked] = (await parts.requests.list(RequestFilter(run_id=run.id, status="pending"))).items
        await parts.requests.respond(
            asked.id, {"decision": "answer", "answer": "fine"}, responder=lee
        )
        await parts.worker.run_until_idle()
        ended = await parts.runtime.get(run.id)

    report = await check_workflow(
        "asking_with_storage", run_input={"text": "x"}, answers={"asker": "fine"}
    )

    assert (ended.status, ended.output) == ("completed", "x: fine")
    assert report.clean, report.lines()
    assert report.outputs == ["x: fine"]
    assert report.unused_run_kwargs == ["checkpoint_storage"]
    assert any("run_kwargs gives checkpoint_storage" in line for line in report.lines())
    assert list(storage.iterdir()) == []


async def test_run_kwargs_a_workflow_s_run_does_not_take_fail_the_run_and_the_check_precisely(
    tmp_path: Path,
) -> None:
    """An agent's run-level `middleware=` (MAF's `agent_and_run_level_middleware.py`) given
    through `register(run_kwargs=...)`: MAF's `Workflow.run` takes no such keyword. The run fails
    as it starts saying so, and the check reports it, where both raised `TypeError`."""
    registry.register(
        "asking_with_middleware",
        input_model=Fumble,
        start_message=lambda typed: typed.text,
        run_kwargs=lambda typed, services: {"middleware": [], "client_kwargs": {}},
    )(asking)
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'run.db'}")
    await seed(settings.database_url)
    async with open_parts(settings, local_worker=False) as parts:
        run = await parts.runtime.start("asking_with_middleware", {"text": "x"}, actor="sam")
        await parts.worker.run_until_idle()
        ended = await parts.runtime.get(run.id)
        asked = await parts.requests.list(RequestFilter(run_id=run.id))

    report = await check_workflow("asking_with_middleware", run_input={"text": "x"})

    said = (
        "register(run_kwargs=...) gives middleware, which MAF's Workflow.run does not take (it "
        "takes client_kwargs, function_invocation_kwargs, include_status_events, tools): give an "
        "agent's own run options (its middleware, its options) to the agent the builder makes"
    )
    assert (ended.status, ended.error) == ("failed", f"RunKwargsRefused: {said}")
    assert asked.items == []
    assert report.failures == [said]
    assert report.final_state == "FAILED"


async def test_an_agent_s_structured_reply_held_for_review_pauses_durably() -> None:
    """The pause's checkpoint holds the parsed reply (`AgentResponse.value`), a model only the
    agent's `response_format` names: it is allow-listed, so the pause is durable."""
    registry.load("tests.fixtures.rated_review")

    report = await check_workflow("rated_review", answers={"rater": [True]})

    assert report.clean, report.lines()
    assert report.pauses == 1
    assert report.not_durable == []


async def test_a_sub_workflow_s_tools_get_the_run_s_kwargs_after_a_restore_as_on_a_drive() -> None:
    """The check restores what a drive stores (no run kwargs, a sub-workflow's neither), so it
    sees what a drive does: MAF's `sub_workflow_kwargs.py`, its data agent sent back by a person,
    calls its tools again with the kwargs (Baton hands a sub-workflow its share on an answer)."""
    registry.load("tests.samples.sub_workflow_kwargs")

    report = await check_workflow(
        "sub_workflow_kwargs",
        answers={"AgentExecutorResponse": ["also call the orders service", True]},
    )

    assert report.clean, report.lines()
    assert str(report.outputs[-1]).endswith(
        "Called service 'orders' at https://api.example.com/v1/orders"
    ), report.outputs


async def test_a_class_attribute_a_paused_run_changes_is_named_lost_to_a_restart() -> None:
    """MAF's `composition/sub_workflow_basics.py` (its empty text asked of a person): its
    orchestrator collects results in a class attribute, which no checkpoint carries, so the
    answer given in another process finds it empty and the run ends with no output (as on MAF
    alone restored from a `FileCheckpointStorage` in a new process)."""
    from tests.samples.sub_workflow_basics import TextProcessingOrchestrator

    registry.load("tests.samples.sub_workflow_basics")
    TextProcessingOrchestrator.results.clear()  # as a new process has it
    report = await check_workflow("sub_workflow_basics", answers={"TextProcessingRequest": "a b"})
    TextProcessingOrchestrator.results.clear()

    [line] = report.findings()
    assert "class attribute results changed during the run ([] before," in line
    assert line.endswith(
        "it is one object for every instance and every run a process drives, and no checkpoint "
        "carries it: a pause answered in another process finds it as built ([]) — set it on the "
        "instance (in __init__)"
    )
