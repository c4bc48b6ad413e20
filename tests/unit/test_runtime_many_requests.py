"""Several pending requests of one run: answered in any order, delivered in answer order."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from human.policy import load_policy
from human.records import HumanRequest, Run, User
from human.service import RequestService
from human.store import open_store
from human.store.base import RequestFilter, Store
from tests.harness import seed
from workflows.platform import registry
from workflows.platform.runtime import Runtime
from workflows.platform.worker import Worker
from workflows.shipped import POLICIES


@dataclass
class Twin:
    store: Store
    runtime: Runtime
    worker: Worker
    service: RequestService
    ada: User

    async def paused(self, item: str) -> tuple[Run, dict[str, HumanRequest]]:
        run = await self.runtime.start("twin", {"item": item}, actor="sam")
        await self.worker.run_until_idle()
        pending = await self.service.list(RequestFilter(run_id=run.id, status="pending"))
        return run, {r.team: r for r in pending.items}


@pytest.fixture
async def twin(db_url: str) -> AsyncIterator[Twin]:
    await seed(db_url)
    store = await open_store(db_url)
    registry.load("tests.fixtures.twin_workflow")
    runtime = Runtime(store, policy=load_policy(POLICIES))
    ada = await store.get_user("ada")
    assert ada is not None
    yield Twin(store, runtime, Worker(store, runtime), RequestService(store), ada)
    await store.close()


async def test_two_pending_requests_are_delivered_in_answer_order(twin: Twin) -> None:
    run, by_team = await twin.paused("laptop")
    assert sorted(by_team) == ["finance", "legal"]
    assert (await twin.runtime.get(run.id)).status == "waiting"

    await twin.service.respond(by_team["finance"].id, {"decision": "approve"}, responder=twin.ada)
    reject = {"decision": "reject", "reason": "no"}
    await twin.service.respond(by_team["legal"].id, reject, responder=twin.ada)
    await twin.worker.run_until_idle()

    done = await twin.runtime.get(run.id)
    assert done.status == "completed", done.error
    assert done.output == ["finance:approve", "legal:reject"]
    events = await twin.store.list_events(run_id=run.id)
    resumed = [e.request_id for e in events if e.type == "run.resumed"]
    assert resumed == [by_team["finance"].id, by_team["legal"].id]


async def test_one_answer_of_two_keeps_the_run_waiting_on_the_other(twin: Twin) -> None:
    run, by_team = await twin.paused("desk")
    first_checkpoint = (await twin.runtime.get(run.id)).checkpoint_id

    await twin.service.respond(by_team["legal"].id, {"decision": "approve"}, responder=twin.ada)
    await twin.worker.run_until_idle()

    after = await twin.runtime.get(run.id)
    assert after.status == "waiting"
    assert after.checkpoint_id not in (None, first_checkpoint)
    assert (await twin.service.get(by_team["finance"].id)).status == "pending"
    assert (await twin.service.get(by_team["legal"].id)).status == "resumed"
