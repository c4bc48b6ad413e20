"""Several pending requests of one run: answered in any order, delivered in answer order."""

from __future__ import annotations

from human.service import RequestService
from human.store import open_store
from human.store.base import RequestFilter
from tests.harness import seed
from workflows.runtime import Runtime
from workflows.worker import Worker


async def test_two_pending_requests_are_delivered_in_answer_order(db_url: str) -> None:
    await seed(db_url)
    store = await open_store(db_url)
    try:
        runtime = Runtime(store, workflow_modules="tests.fixtures.twin_workflow")
        worker = Worker(store, runtime)
        service = RequestService(store)
        ada = await store.get_user("ada")
        assert ada is not None

        run = await runtime.start("twin", {"item": "laptop"}, actor="sam")
        await worker.run_until_idle()
        pending = (await service.list(RequestFilter(run_id=run.id, status="pending"))).items
        by_team = {r.team: r for r in pending}
        assert sorted(by_team) == ["finance", "legal"]
        assert (await runtime.get(run.id)).status == "waiting"

        await service.respond(by_team["finance"].id, {"decision": "approve"}, responder=ada)
        await service.respond(
            by_team["legal"].id, {"decision": "reject", "reason": "no"}, responder=ada
        )
        await worker.run_until_idle()

        done = await runtime.get(run.id)
        events = await store.list_events(run_id=run.id)
    finally:
        await store.close()

    assert done.status == "completed", done.error
    assert done.output == ["finance:approve", "legal:reject"]
    resumed = [e.request_id for e in events if e.type == "run.resumed"]
    assert resumed == [by_team["finance"].id, by_team["legal"].id]


async def test_one_answer_of_two_keeps_the_run_waiting_on_the_other(db_url: str) -> None:
    await seed(db_url)
    store = await open_store(db_url)
    try:
        runtime = Runtime(store, workflow_modules="tests.fixtures.twin_workflow")
        worker = Worker(store, runtime)
        service = RequestService(store)
        ada = await store.get_user("ada")
        assert ada is not None
        run = await runtime.start("twin", {"item": "desk"}, actor="sam")
        await worker.run_until_idle()
        legal = (await service.list(RequestFilter(run_id=run.id, team="legal"))).items[0]
        first_checkpoint = (await runtime.get(run.id)).checkpoint_id

        await service.respond(legal.id, {"decision": "approve"}, responder=ada)
        await worker.run_until_idle()
        after = await runtime.get(run.id)
        finance = (await service.list(RequestFilter(run_id=run.id, team="finance"))).items[0]
        legal_after = await service.get(legal.id)
    finally:
        await store.close()

    assert after.status == "waiting"
    assert after.checkpoint_id not in (None, first_checkpoint)
    assert finance.status == "pending"
    assert legal_after.status == "resumed"
