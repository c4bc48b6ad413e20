"""The store contract, continued: what the inbox asks of it (filters, counts) and sign-in."""

from __future__ import annotations

from datetime import timedelta

from human.store.base import RequestFilter, Store
from tests.contract.test_store import T0, a_request, an_answer, final_of, paused, started


async def test_filters_by_workflow_assignee_and_overdue_and_counts_per_status(
    store: Store,
) -> None:
    refund = await started(store, workflow="refund")
    purchase = await started(store, workflow="purchase")
    late = a_request(refund.id, team="finance").model_copy(
        update={"expires_at": T0 + timedelta(hours=1)}
    )
    timely = a_request(refund.id, team="support-leads").model_copy(
        update={"expires_at": T0 + timedelta(days=2), "assignee": "lee"}
    )
    other = a_request(purchase.id, team="legal")
    await paused(store, refund.id, [late, timely], at=f"cp-{refund.id}")
    await paused(store, purchase.id, [other], at=f"cp-{purchase.id}")
    await store.record_answer(
        an_answer(other.id, "lee"), final=final_of(an_answer(other.id, "lee"))
    )

    def ids(page: list[object]) -> set[str]:
        return {r.id for r in page}  # type: ignore[attr-defined]

    by_workflow = await store.list_requests(RequestFilter(workflow="refund"))
    assert ids(by_workflow.items) == {late.id, timely.id}
    assigned = await store.list_requests(RequestFilter(assignee="lee"))
    assert ids(assigned.items) == {timely.id}
    overdue = await store.list_requests(RequestFilter(overdue_at=T0 + timedelta(hours=2)))
    assert ids(overdue.items) == {late.id}
    # Overdue means open and past its deadline: the answered one never is.
    later = await store.list_requests(RequestFilter(overdue_at=T0 + timedelta(days=30)))
    assert ids(later.items) == {late.id, timely.id}

    assert await store.count_requests(RequestFilter()) == {"pending": 2, "answered": 1}
    assert await store.count_requests(RequestFilter(status="answered")) == {
        "pending": 2,
        "answered": 1,
    }  # the status filter is what the counts are split by: ignored
    assert await store.count_requests(RequestFilter(teams=("finance", "legal"))) == {
        "pending": 1,
        "answered": 1,
    }
    assert await store.count_requests(RequestFilter(workflow="purchase")) == {"answered": 1}
    assert await store.count_requests(RequestFilter(teams=())) == {}


async def test_credentials_give_the_user_and_their_password_hash(store: Store) -> None:
    await store.add_user("lee", role="responder", teams=["support-leads"], password_hash="h1")
    await store.add_user("sam", role="responder", teams=["support-agents"])
    found = await store.credentials("lee")
    assert found is not None
    user, password_hash = found
    assert (user.name, user.teams, password_hash) == ("lee", ("support-leads",), "h1")
    assert (await store.credentials("sam")) is not None
    assert (await store.credentials("sam"))[1] is None  # type: ignore[index]
    assert await store.credentials("nobody") is None
    # Updating a user without a new password keeps the old one.
    await store.add_user("lee", role="admin", teams=["support-leads"])
    assert (await store.credentials("lee"))[1] == "h1"  # type: ignore[index]
