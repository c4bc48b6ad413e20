"""An `input` request past its deadline: its run fails saying so, never with a made-up answer."""

from __future__ import annotations

from datetime import timedelta

from human.policy import parse_policy
from human.store import open_store
from human.store.base import RequestFilter
from human.timers import TimerRunner
from tests.harness import seed
from tests.unit.test_purchase import MovableClock
from workflows.platform import registry
from workflows.platform.runtime import Runtime
from workflows.platform.worker import Worker

POLICY = """version: 1
rules: []
requests:
  - {id: visas.fast, workflow: foreign, team: legal, deadline: 60s}
"""


async def test_an_expired_input_request_fails_its_run_naming_the_request(db_url: str) -> None:
    registry.load("tests.fixtures.foreign_workflow")
    await seed(db_url)
    clock = MovableClock()
    store = await open_store(db_url, clock=clock)
    try:
        runtime = Runtime(store, clock=clock, policy=parse_policy(POLICY))
        worker = Worker(store, runtime, handlers={"timer": TimerRunner(store).handle})
        run = await runtime.start("foreign", {"country": "NZ"}, actor="sam")
        await worker.run_until_idle()
        (request,) = (await store.list_requests(RequestFilter(run_id=run.id))).items

        clock.offset = timedelta(seconds=61)
        await worker.run_until_idle()

        failed = await runtime.get(run.id)
        expired = await store.get_request(request.id)
    finally:
        await store.close()

    assert (request.kind, request.team, request.policy_rule) == ("input", "legal", "visas.fast")
    assert expired is not None
    assert expired.status == "expired"
    assert failed.status == "failed"
    assert failed.error is not None
    assert f"request {request.id} (Visa from consulate) expired" in failed.error
    assert failed.output is None
