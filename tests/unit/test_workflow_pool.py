"""Built workflows kept per process (`register(reuse=True)`): reset between drives, never shared.

A run must see the same whether its drives ran on a kept instance or on one built for them: no
executor state, workflow state, conversation, effect or services of another run. A drive that
raises gives nothing back; a workflow not registered for reuse is built for every drive.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from baton.wiring import Parts
from human.attachments import Kept
from human.records import Run, User
from human.store.base import RequestFilter
from tests import supportkit
from tests.fixtures import reused_workflow
from tests.harness import sql
from workflows.platform import registry
from workflows.platform.pool import Built

registry.load("tests.fixtures.reused_workflow")


@pytest.fixture
def taken(parts: Parts, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Built]]:
    """Every instance the pool hands out, with the run it was handed out for."""
    handed: list[tuple[str, Built]] = []
    take = parts.runtime.pool.take

    async def noted(
        spec: registry.WorkflowSpec, run_id: str, run_input: dict[str, Any], by: str | None
    ) -> Built:
        built = await take(spec, run_id, run_input, by)
        handed.append((run_id, built))
        return built

    monkeypatch.setattr(parts.runtime.pool, "take", noted)
    return handed


async def _approver(parts: Parts) -> User:
    lee = await parts.store.get_user("lee")
    assert lee is not None
    return lee


async def _paused(parts: Parts, workflow: str, run_input: dict[str, Any]) -> tuple[Run, str]:
    run = await parts.runtime.start(workflow, run_input, actor="sam")
    await parts.worker.drain()
    page = await parts.requests.list(RequestFilter(run_id=run.id, status="pending"))
    [request] = page.items
    return run, request.id


async def _answer(parts: Parts, request_id: str, answer: dict[str, Any]) -> None:
    await parts.requests.respond(request_id, answer, responder=await _approver(parts))
    await parts.worker.drain()


async def _what_people_see(parts: Parts, run: Run) -> dict[str, Any]:
    """A run's end and conversation, without the ids made new for every run."""
    done = await parts.runtime.get(run.id)
    return {
        "status": done.status,
        "output": done.output,
        "transcript": [
            {k: v for k, v in e.items() if k not in ("call_id", "request_id")}
            for e in await parts.store.list_transcript(run.id)
        ],
    }


def _alike(kept: list[dict[str, Any]], rebuilt: list[dict[str, Any]]) -> None:
    """Assert runs on kept instances and runs built per drive came out alike, case by case."""
    office_ids = re.compile(r"[RX]-[0-9A-F]{10}")  # refunds' and closures' ids, new every time
    for one, other in zip(kept, rebuilt, strict=True):
        assert json.loads(office_ids.sub("-", json.dumps(one))) == json.loads(
            office_ids.sub("-", json.dumps(other))
        )


async def _kept_then_rebuilt(
    workflow: str,
    scenario: Callable[[], Awaitable[list[dict[str, Any]]]],
    taken: list[tuple[str, Built]],
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """What `scenario` came to on one kept instance of `workflow`, then built for every drive."""
    kept = await scenario()
    assert len({id(built.workflow) for _, built in taken}) == 1
    spec = dataclasses.replace(registry.get(workflow), reuse=False)
    monkeypatch.setitem(registry._REGISTRY, workflow, spec)
    return kept, await scenario()


async def _interleaved(parts: Parts, workflow: str) -> dict[str, Run]:
    """Two runs paused at once, answered in the other order."""
    first, first_request = await _paused(parts, workflow, {"item": "first"})
    second, second_request = await _paused(parts, workflow, {"item": "second"})
    await _answer(parts, second_request, {"decision": "reject", "reason": "not this one"})
    await _answer(parts, first_request, {"decision": "approve"})
    return {
        "first": await parts.runtime.get(first.id),
        "second": await parts.runtime.get(second.id),
    }


async def test_interleaved_runs_on_one_kept_instance_see_only_their_own_state(
    parts: Parts, taken: list[tuple[str, Built]]
) -> None:
    builds = reused_workflow.BUILDS["tally_reused"]
    proof = 0 if registry.get("tally_reused").proven_stable else 1  # a second build, once

    done = await _interleaved(parts, "tally_reused")

    for item, run in done.items():
        assert run.status == "completed", run.error
        assert run.output == {
            "heard": [item],
            "items": [item],
            "run_id": run.id,
            "input": {"item": item, "fail": False},
            "decision": "approve" if item == "first" else "reject",
        }
    # four drives of two runs, one instance: kept, reset and pointed at each drive's run
    assert reused_workflow.BUILDS["tally_reused"] == builds + 1 + proof
    assert len({id(built.workflow) for _, built in taken}) == 1
    assert [run_id for run_id, _ in taken] == [
        done["first"].id,
        done["second"].id,
        done["second"].id,
        done["first"].id,
    ]
    assert len(parts.runtime.pool.idle("tally_reused")) == 1


async def test_nothing_of_a_paused_run_stays_in_memory_on_the_instance_kept(parts: Parts) -> None:
    run, _ = await _paused(parts, "tally_reused", {"item": "secret"})

    [kept] = parts.runtime.pool.idle("tally_reused")
    tally = kept.workflow.executors["tally"]
    assert isinstance(tally, reused_workflow.Tally)
    assert tally._heard == []
    assert kept.workflow._runner._state.get("items") is None
    assert await kept.workflow._runner_context.get_pending_request_info_events() == {}
    services = kept.services
    assert (services.run_id, services.run_input, services.started_by) == ("", {}, None)
    assert (services.transcript.entries, services.transcript.history, services.effects) == (
        [],
        [],
        [],
    )
    assert (await parts.runtime.get(run.id)).status == "waiting"


async def test_an_instance_whose_reset_fails_is_dropped_and_its_run_unharmed(
    parts: Parts, caplog: pytest.LogCaptureFixture
) -> None:
    for item in ("one", "two"):
        run = await parts.runtime.start("brittle_reused", {"item": item}, actor="sam")
        await parts.worker.drain()
        done = await parts.runtime.get(run.id)
        assert (done.status, done.output) == ("completed", [item])

    assert parts.runtime.pool.idle("brittle_reused") == []
    assert [r.message for r in caplog.records].count("a kept workflow could not be reset") == 2


async def test_a_workflow_not_registered_for_reuse_is_built_for_every_drive(
    parts: Parts, taken: list[tuple[str, Built]]
) -> None:
    builds = reused_workflow.BUILDS["tally_rebuilt"]
    proof = 0 if registry.get("tally_rebuilt").proven_stable else 1  # a second build, once

    done = await _interleaved(parts, "tally_rebuilt")

    assert [run.output["heard"] for run in done.values()] == [["first"], ["second"]]
    assert reused_workflow.BUILDS["tally_rebuilt"] == builds + 4 + proof
    assert len({id(built.workflow) for _, built in taken}) == 4
    assert parts.runtime.pool.idle("tally_rebuilt") == []


async def test_a_builder_s_checkpoint_storage_is_never_written_to(parts: Parts) -> None:
    # MAF's checkpoint samples build with `checkpoint_storage=...`, the workflow's and a
    # sub-workflow's: used, it would take a checkpoint after every superstep of every drive.
    run, request = await _paused(parts, "stored_by_builder", {"item": "one"})
    await _answer(parts, request, {"decision": "approve"})
    done = await parts.runtime.get(run.id)

    assert done.status == "completed", done.error
    assert done.output is not None
    assert (done.output["heard"], done.output["decision"]) == (["one"], "approve")
    for name in ("outer", "inner"):
        assert await reused_workflow.STORED.list_checkpoints(workflow_name=name) == [], name


async def test_a_drive_that_raises_gives_its_instance_back_to_nobody(
    parts: Parts, taken: list[tuple[str, Built]]
) -> None:
    run = await parts.runtime.start("tally_reused", {"item": "bad", "fail": True}, actor="sam")
    await parts.worker.drain()

    failed = await parts.runtime.get(run.id)
    assert failed.status == "failed"
    assert "asked to fail on bad" in (failed.error or "")
    assert parts.runtime.pool.idle("tally_reused") == []

    after, request_id = await _paused(parts, "tally_reused", {"item": "good"})
    await _answer(parts, request_id, {"decision": "approve"})
    assert (await parts.runtime.get(after.id)).output["heard"] == ["good"]
    assert taken[1][1] is not taken[0][1]  # built anew after the failure
    assert taken[2][1] is taken[1][1]


async def test_drives_at_once_get_instances_of_their_own_and_the_process_keeps_as_many_as_it_drives(
    parts: Parts,
) -> None:
    spec = registry.get("tally_reused")
    pool = parts.runtime.pool
    count = pool.keep + 4

    held = [await pool.take(spec, f"run_{n}", {"item": f"i{n}"}, None) for n in range(count)]
    assert len({id(built.workflow) for built in held}) == count
    assert len({id(built.services) for built in held}) == count
    assert [built.services.run_id for built in held] == [f"run_{n}" for n in range(count)]
    for n, built in enumerate(held):  # what a drive noted, and the files its entries held
        built.services.transcript.add({"type": "message", "role": "user", "text": f"i{n}"})
        built.services.transcript.kept[f"{n}"] = Kept(f"{n}", "image/png", b"run's own")
        await pool.give_back(spec, built)

    assert len(pool.idle("tally_reused")) == pool.keep == parts.settings.worker_concurrency
    again = await pool.take(spec, "run_again", {"item": "again"}, "sam")
    assert again in held
    assert (again.services.run_id, again.services.run_input) == ("run_again", {"item": "again"})
    assert again.services.started_by == "sam"
    kept_over = again.services.transcript  # nothing of another run, in memory or to commit
    assert (kept_over.history, kept_over.entries, kept_over.kept) == ([], [], {})


async def test_interleaved_refunds_on_a_kept_instance_match_refunds_built_per_drive(
    db_url: str, parts: Parts, taken: list[tuple[str, Built]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The refund agent (MAF agent, session, tools, transcript middleware): the same either way."""

    async def refunds() -> list[dict[str, Any]]:
        one, one_request = await _paused(
            parts, "refund", {"order_id": "A-1002", "amount": 120, "reason": "broken"}
        )
        two, two_request = await _paused(
            parts, "refund", {"order_id": "A-1004", "amount": 75, "reason": "late"}
        )
        await _answer(parts, two_request, {"decision": "approve"})
        await _answer(parts, one_request, {"decision": "reject", "reason": "used"})
        seen = []
        for run in (one, two):
            events = await parts.store.list_events(run_id=run.id)
            seen.append(
                await _what_people_see(parts, run)
                | {
                    "effects": [
                        (e.data["tool"], e.data["arguments"], e.data["idempotency_key"][:0])
                        for e in events
                        if e.type == "effect.executed"
                    ],
                    "effects_on_record_of_this_run": all(
                        sql(db_url, f"SELECT run_id FROM effects WHERE key = '{key}'")
                        == [{"run_id": run.id}]
                        for key in (
                            e.data["idempotency_key"] for e in events if e.type == "effect.executed"
                        )
                    ),
                }
            )
        return seen

    kept, rebuilt = await _kept_then_rebuilt("refund", refunds, taken, monkeypatch)

    _alike(kept, rebuilt)
    assert [r["status"] for r in kept] == ["completed", "completed"]
    assert kept[0]["effects"] == []
    assert [tool for tool, *_ in kept[1]["effects"]] == ["issue_refund"]
    assert kept[1]["effects_on_record_of_this_run"]
    said = [str(e.get("text", "")) for e in kept[1]["transcript"]]
    assert not any("A-1002" in text for text in said), said


async def test_runs_at_once_on_kept_instances_complete_alike(parts: Parts) -> None:
    """Drives of many runs interleaved by the event loop: each run ends with its own output."""
    paused = await asyncio.gather(
        *(_paused(parts, "tally_reused", {"item": f"c{n}"}) for n in range(6))
    )
    await asyncio.gather(
        *(_answer(parts, request_id, {"decision": "approve"}) for _, request_id in paused)
    )
    for n, (run, _) in enumerate(paused):
        done = await parts.runtime.get(run.id)
        assert done.output["heard"] == [f"c{n}"]
        assert done.output["run_id"] == run.id


async def test_interleaved_support_cases_on_a_kept_instance_match_cases_built_per_drive(
    parts: Parts, taken: list[tuple[str, Built]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The support desk: a MAF handoff orchestration of four agents, sessions and handoff tools."""

    async def cases() -> list[dict[str, Any]]:
        refund, refund_request = await _paused(parts, "support", supportkit.REFUND_120["input"])
        closing, closing_request = await _paused(
            parts, "support", supportkit.DELETE_ACCOUNT["input"] | {"customer_id": "customer-03"}
        )
        # refused, so that the second round meets the account as the first did
        await _answer(parts, closing_request, {"decision": "reject", "reason": "keep it"})
        await _answer(parts, refund_request, {"decision": "approve"})
        return [await _what_people_see(parts, run) for run in (refund, closing)]

    kept, rebuilt = await _kept_then_rebuilt("support", cases, taken, monkeypatch)

    _alike(kept, rebuilt)
    said = [json.dumps(e) for e in kept[1]["transcript"]]
    assert not any("A-1002" in text or "customer-02" in text for text in said), said
    assert [case["status"] for case in kept] == ["completed", "completed"], kept
