"""The store contract, continued: what the web pages ask of it (the executor that asked)."""

from __future__ import annotations

from human.records import NewEvent
from human.store.base import Progress, RequestFilter, Store
from tests.contract.conftest import in_play, statements_read
from tests.contract.test_store import a_request, an_answer, final_of, paused, started


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


async def test_a_page_of_runs_is_read_with_its_requests_and_effects_in_a_few_statements(
    store: Store,
) -> None:
    asked, did, quiet = await started(store), await started(store), await started(store)
    first, second = a_request(asked.id), a_request(asked.id, team="finance")
    await paused(store, asked.id, [first, second])
    no = an_answer(first.id, "lee", "reject", reason="not ours")
    assert (await store.record_answer(no, final=final_of(no))).result == "closed"
    effects = [
        NewEvent(type=kind, run_id=did.id, data={"tool": tool, "idempotency_key": key})
        for kind, tool, key in (
            ("effect.executed", "issue_refund", "k1"),
            ("run.noted", "none", "k0"),  # not an effect's event: left out
            ("effect.uncertain", "send_note", "k2"),
        )
    ]
    progress = Progress(
        run_id=did.id, expected_checkpoint_id=None, job_id=None, status="completed", events=effects
    )
    assert await store.record_progress(progress)

    async with statements_read(store) as one_read:
        alone = await store.run_briefs([quiet.id])
    async with statements_read(store) as page_read:
        briefs = await store.run_briefs([asked.id, did.id, quiet.id, "run_missing"])

    assert alone[quiet.id].requests == alone[quiet.id].effect_events == []
    assert [r.id for r in briefs[asked.id].requests] == [first.id, second.id]  # oldest first
    assert briefs[asked.id].requests[0] == await store.get_request(first.id)  # answers and all
    assert [(e.type, e.data["tool"]) for e in briefs[did.id].effect_events] == [
        ("effect.executed", "issue_refund"),
        ("effect.uncertain", "send_note"),
    ]
    assert (briefs[quiet.id].requests, briefs["run_missing"].effect_events) == ([], [])
    assert await store.run_briefs([]) == {}
    # however many runs: their requests, the answers of those answered, their events
    assert len(one_read) == 2, one_read
    assert len(page_read) == 3, page_read
