"""The store contract, continued: what the web pages ask of it (the executor that asked)."""

from __future__ import annotations

from human.store.base import RequestFilter, Store
from tests.contract.conftest import in_play
from tests.contract.test_store import a_request, paused, started


async def test_a_request_keeps_the_executor_that_asked_it(store: Store) -> None:
    run = await started(store)
    asked = a_request(run.id).model_copy(update={"executor_id": "refund_agent"})
    legacy = a_request(run.id, team="finance")  # stored without one, as before migration 0005
    await paused(store, run.id, [asked, legacy])

    found = await store.get_request(asked.id)
    assert found is not None
    assert found.executor_id == "refund_agent"
    assert found == asked
    listed = {r.id: r.executor_id for r in (await store.list_requests(RequestFilter())).items}
    assert listed == {asked.id: "refund_agent", legacy.id: None}
    assert [r.executor_id for r in (await in_play(store, run.id)).open] == ["refund_agent", None]
