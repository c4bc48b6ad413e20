"""RunCheckpointStorage over a real SQLite file, and the pause that fails closed."""

from __future__ import annotations

import json
import zlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from agent_framework import WorkflowCheckpoint
from agent_framework.exceptions import WorkflowCheckpointException

from baton.errors import PauseNotDurable
from human.kinds import ApprovalRequest, ProposedAction
from human.policy import load_policy
from human.records import Run
from human.service import RequestService
from human.store import open_store
from human.store.base import NewCheckpoint, Progress, RequestFilter, Store
from tests.fixtures.unlisted_workflow import Parcel, Shipment
from workflows.platform import registry
from workflows.platform.checkpoints import RunCheckpointStorage
from workflows.platform.runtime import Runtime
from workflows.platform.worker import Worker
from workflows.shipped import POLICIES

FIXTURE = "tests.fixtures.unlisted_workflow"
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    opened = await open_store(f"sqlite:///{tmp_path / 'x.db'}")
    try:
        yield opened
    finally:
        await opened.close()


def allowed(workflow: str) -> frozenset[str]:
    registry.load(FIXTURE)
    return registry.get(workflow).allowed_types


def a_checkpoint(value: object) -> WorkflowCheckpoint:
    return WorkflowCheckpoint(
        workflow_name="listed",
        graph_signature_hash="graph-1",
        state={"pending": value, "plain": {"count": 3}},
        iteration_count=2,
        metadata={"superstep": 2},
    )


def an_approval(context: dict[str, object]) -> ApprovalRequest:
    return ApprovalRequest(
        title="Ship X-1",
        reason="heavy",
        team="support-leads",
        context=context,
        proposed_action=ProposedAction(tool="ship", arguments={"sku": "X-1"}),
    )


async def committable(storage: RunCheckpointStorage, checkpoint: WorkflowCheckpoint) -> bytes:
    """Save a checkpoint as MAF does, then take the body Baton would commit."""
    await storage.save(checkpoint)
    return storage.draft(checkpoint.checkpoint_id).body


async def a_run_at(store: Store, body: NewCheckpoint) -> Run:
    run = Run(
        id="run_1", workflow="listed", input={}, status="running", created_at=T0, updated_at=T0
    )
    await store.create_run(run, [])
    committed = await store.record_progress(
        Progress(
            run_id=run.id,
            expected_checkpoint_id=None,
            job_id=None,
            status="waiting",
            checkpoint=body,
        )
    )
    assert committed
    return run


# the storage --------------------------------------------------------------------------------


async def test_a_checkpoint_holding_a_type_outside_the_allow_list_is_never_committable(
    store: Store,
) -> None:
    storage = RunCheckpointStorage(store, "run_1", allowed("unlisted"))
    shipment = Shipment(parcel=Parcel(sku="X-1"), weight_kg=31.5)

    with pytest.raises((WorkflowCheckpointException, PauseNotDurable), match="Shipment"):
        await committable(storage, a_checkpoint(an_approval({"shipment": shipment})))


async def test_a_nested_type_must_be_allow_listed_too(store: Store) -> None:
    only_outer = allowed("unlisted") | {f"{Shipment.__module__}:{Shipment.__qualname__}"}
    storage = RunCheckpointStorage(store, "run_1", only_outer)
    shipment = Shipment(parcel=Parcel(sku="X-1"), weight_kg=31.5)

    with pytest.raises((WorkflowCheckpointException, PauseNotDurable), match="Parcel"):
        await committable(storage, a_checkpoint(shipment))


async def test_a_committed_body_is_compressed_and_loads_back_in_a_fresh_storage(
    store: Store,
) -> None:
    approval = an_approval({"shipment": Shipment(parcel=Parcel(sku="X-1"), weight_kg=31.5)})
    checkpoint = a_checkpoint(approval)
    writer = RunCheckpointStorage(store, "run_1", allowed("listed"))
    await writer.save(checkpoint)
    draft = writer.draft(checkpoint.checkpoint_id)
    assert draft.id == checkpoint.checkpoint_id
    encoded = json.loads(zlib.decompress(draft.body))
    assert len(draft.body) < len(json.dumps(encoded, separators=(",", ":")))
    run = await a_run_at(store, draft)

    reader = RunCheckpointStorage(store, run.id, allowed("listed"))
    loaded = await reader.load(checkpoint.checkpoint_id)

    assert loaded == checkpoint
    assert type(loaded.state["pending"]) is ApprovalRequest
    assert loaded.state["pending"] == approval


async def test_a_committed_body_is_decoded_only_through_the_allow_list(store: Store) -> None:
    checkpoint = a_checkpoint(an_approval({}))
    writer = RunCheckpointStorage(store, "run_1", allowed("listed"))
    run = await a_run_at(store, NewCheckpoint(id="cp", body=await committable(writer, checkpoint)))
    current = await store.get_run(run.id)
    assert current is not None
    assert current.checkpoint_id is not None

    stranger = RunCheckpointStorage(store, run.id, frozenset())

    with pytest.raises(WorkflowCheckpointException, match="blocked"):
        await stranger.load(current.checkpoint_id)


async def test_loading_a_checkpoint_nobody_committed_fails(store: Store) -> None:
    storage = RunCheckpointStorage(store, "run_1", allowed("listed"))

    with pytest.raises(WorkflowCheckpointException):
        await storage.load("cp-nobody")
    with pytest.raises(WorkflowCheckpointException):
        storage.draft("cp-nobody")


# the pause fails closed ---------------------------------------------------------------------


async def test_a_pause_whose_checkpoint_cannot_be_restored_fails_the_run(store: Store) -> None:
    registry.load(FIXTURE)
    runtime = Runtime(store, policy=load_policy(POLICIES))
    worker = Worker(store, runtime)

    run = await runtime.start("unlisted", {"sku": "X-1"}, actor="sam")
    await worker.run_until_idle()

    ended = await runtime.get(run.id)
    assert ended.status == "failed"
    assert ended.error is not None
    assert "checkpoint" in ended.error
    assert ended.checkpoint_id is None
    assert (await store.list_requests(RequestFilter(run_id=run.id))).items == []
    events = await store.list_events(run_id=run.id)
    assert [e.type for e in events] == ["run.started", "run.failed"]
    assert "checkpoint" in events[-1].data["error"]
    assert await store.lease_jobs("check", limit=10, lease_s=60) == []


async def test_the_same_pause_with_its_types_allow_listed_waits_and_resumes(
    store: Store,
) -> None:
    registry.load(FIXTURE)
    runtime = Runtime(store, policy=load_policy(POLICIES))
    worker = Worker(store, runtime)
    lee = await store.add_user("lee", role="responder", teams=["support-leads"])

    run = await runtime.start("listed", {"sku": "X-1"}, actor="sam")
    await worker.run_until_idle()
    paused = await runtime.get(run.id)
    [request] = (await store.list_requests(RequestFilter(run_id=run.id))).items
    await RequestService(store).respond(request.id, {"decision": "approve"}, responder=lee)
    await worker.run_until_idle()
    done = await runtime.get(run.id)

    assert paused.status == "waiting", paused.error
    assert paused.checkpoint_id is not None
    assert request.context["shipment"] == {"parcel": {"sku": "X-1"}, "weight_kg": 31.5}
    assert (done.status, done.output) == ("completed", "X-1: approve")
    types = [e.type for e in await store.list_events(run_id=run.id)]
    assert types == [
        "run.started",
        "request.created",
        "request.answered",
        "run.resumed",
        "run.completed",
    ]


async def test_a_pause_whose_checkpoint_cannot_be_saved_fails_the_run(store: Store) -> None:
    registry.load(FIXTURE)
    runtime = Runtime(store, policy=load_policy(POLICIES))
    worker = Worker(store, runtime)

    run = await runtime.start("unsaveable", {"sku": "X-1"}, actor="sam")
    await worker.run_until_idle()

    ended = await runtime.get(run.id)
    assert ended.status == "failed"
    assert ended.error is not None
    assert "PauseNotDurable" in ended.error
    assert (await store.list_requests(RequestFilter(run_id=run.id))).items == []
    assert [e.type for e in await store.list_events(run_id=run.id)] == ["run.started", "run.failed"]
