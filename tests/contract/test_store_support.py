"""The Store contract for a run's conversation and the support demo's back office, every backend."""

from __future__ import annotations

from baton.demo import CUSTOMERS, ORDERS
from human.store.base import Progress, Store
from tests.contract.test_store import a_request, checkpoint, started


def progress(run_id: str, **fields: object) -> Progress:
    return Progress.model_validate(
        {"run_id": run_id, "expected_checkpoint_id": None, "job_id": None, **fields}
    )


async def test_a_runs_conversation_grows_with_each_committed_progress_in_order(
    store: Store,
) -> None:
    run = await started(store, workflow="support")
    other = await started(store, workflow="support")
    first = [{"type": "message", "role": "user", "text": "hello"}, {"type": "handoff", "to": "b"}]
    assert await store.record_progress(
        progress(
            run.id,
            status="waiting",
            checkpoint=checkpoint("cp-a"),
            new_requests=[a_request(run.id)],
            transcript=first,
        )
    )
    assert await store.record_progress(
        progress(other.id, status="completed", transcript=[{"type": "message", "text": "other"}])
    )
    second = [{"type": "tool_result", "result": "ok", "nested": {"n": [1, 2]}}]
    assert await store.record_progress(
        progress(run.id, expected_checkpoint_id="cp-a", status="completed", transcript=second)
    )

    assert await store.list_transcript(run.id) == [*first, *second]
    assert await store.list_transcript(other.id) == [{"type": "message", "text": "other"}]
    assert await store.list_transcript("run_unknown") == []


async def test_a_fenced_off_progress_adds_nothing_to_the_conversation(store: Store) -> None:
    run = await started(store, workflow="support")
    stale = progress(
        run.id,
        expected_checkpoint_id="cp-elsewhere",
        status="completed",
        transcript=[{"type": "message", "text": "lost"}],
    )

    assert await store.record_progress(stale) is False
    assert await store.list_transcript(run.id) == []


async def test_customers_are_seeded_once_with_their_orders(store: Store) -> None:
    await store.seed_orders(ORDERS)
    await store.seed_customers(CUSTOMERS)
    await store.seed_customers(CUSTOMERS)

    customer = await store.get_customer("customer-03")
    assert customer == {
        "id": "customer-03",
        "name": "Customer 03",
        "email": "customer-03@example.com",
        "status": "active",
        "orders": ["A-1003"],
    }
    assert await store.get_customer("customer-99") is None


async def test_an_account_closes_once_per_idempotency_key(store: Store) -> None:
    await store.seed_customers(CUSTOMERS)
    first = await store.close_account(idempotency_key="bk_1", customer_id="customer-04")
    again = await store.close_account(idempotency_key="bk_1", customer_id="customer-04")

    assert first == again
    assert first["closure_id"].startswith("X-")
    assert [c["idempotency_key"] for c in await store.list_account_closures()] == ["bk_1"]
    customer = await store.get_customer("customer-04")
    assert customer is not None
    assert customer["status"] == "closed"


async def test_a_customer_message_is_sent_once_per_idempotency_key(store: Store) -> None:
    sent = await store.send_customer_message(
        idempotency_key="bk_2", customer_id="customer-05", subject="Hi", body="first"
    )
    again = await store.send_customer_message(
        idempotency_key="bk_2", customer_id="customer-05", subject="Hi", body="a replay"
    )
    other = await store.send_customer_message(
        idempotency_key="bk_3", customer_id="customer-05", subject="Re", body="second"
    )

    assert again == sent
    assert sent["body"] == "first"
    listed = [m["message_id"] for m in await store.list_customer_messages()]
    assert sorted(listed) == sorted([sent["message_id"], other["message_id"]])
