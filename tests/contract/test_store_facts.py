"""`Store.request_facts`: what the dashboard counts, as stored, on every backend."""

from __future__ import annotations

from datetime import timedelta

from human.store.base import Store
from tests.contract.test_store import T0, a_request, an_answer, final_of, paused, started


async def test_facts_hold_each_recent_or_open_request_of_the_teams_asked_with_its_decision(
    store: Store,
) -> None:
    run = await started(store)
    old = a_request(run.id, team="finance", at=T0 - timedelta(days=40))
    old_open = a_request(run.id, team="finance", at=T0 - timedelta(days=40))
    answered = a_request(run.id, team="finance", at=T0)
    other_team = a_request(run.id, team="legal", at=T0)
    await paused(store, run.id, [old, old_open, answered, other_team])
    ten_minutes = T0 + timedelta(minutes=10)
    for request, at in ((old, T0 - timedelta(days=39)), (answered, ten_minutes)):
        answer = an_answer(request.id, "fay", "reject", at=at, reason="no")
        outcome = await store.record_answer(answer, final=final_of(answer))
        assert outcome.result == "closed"

    facts = await store.request_facts(since=T0 - timedelta(days=30), teams=["finance"])

    got = sorted((f.created_at, f.status, f.decision, f.answered_at) for f in facts)
    assert got == [
        (T0 - timedelta(days=40), "pending", None, None),  # old, but still open
        (T0, "answered", "reject", ten_minutes),
    ]
    assert {f.team for f in facts} == {"finance"}
    every_team = await store.request_facts(since=T0 - timedelta(days=30), teams=None)
    assert sorted(f.team for f in every_team) == ["finance", "finance", "legal"]
    assert await store.request_facts(since=T0, teams=[]) == []
