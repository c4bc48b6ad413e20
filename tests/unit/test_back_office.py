"""The shipped workflows' back office on both databases: own tables, each effect once per key."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator

import pytest

from executors.shipped.back_office import CUSTOMERS, ORDERS, BackOffice
from human.store import open_store
from human.store.sqlite import WAL_CHECKPOINT_PAGES
from tests.harness import sql


@pytest.fixture
async def office(db_url: str) -> AsyncIterator[BackOffice]:
    opened = await BackOffice.open(db_url)
    try:
        yield opened
    finally:
        await opened.close()


async def test_issue_refund_is_idempotent_on_its_key(office: BackOffice) -> None:
    await office.seed_orders([{"id": "A-1", "customer": "Kim", "total": 200.0, "currency": "EUR"}])

    first = await office.issue_refund(idempotency_key="bk_1", order_id="A-1", amount=120.0)
    replay = await office.issue_refund(idempotency_key="bk_1", order_id="A-1", amount=999.0)
    other = await office.issue_refund(idempotency_key="bk_2", order_id="A-1", amount=20.0)

    assert replay == first
    assert first["amount"] == 120.0
    assert other["refund_id"] != first["refund_id"]
    refunds = await office.list_refunds()
    assert [(r["refund_id"], r["amount"]) for r in refunds] == [
        (first["refund_id"], 120.0),
        (other["refund_id"], 20.0),
    ]


async def test_seed_orders_twice_keeps_one_copy(office: BackOffice) -> None:
    order = {"id": "A-1", "customer": "Kim", "total": 200.0, "currency": "EUR"}

    await office.seed_orders([order])
    await office.seed_orders([order | {"total": 1.0}])

    assert await office.get_order("A-1") == order
    assert await office.get_order("A-404") is None


async def test_customers_are_seeded_once_with_their_orders(office: BackOffice) -> None:
    await office.seed_orders(ORDERS)
    await office.seed_customers(CUSTOMERS)
    await office.seed_customers(CUSTOMERS)

    customer = await office.get_customer("customer-03")
    assert customer == {
        "id": "customer-03",
        "name": "Customer 03",
        "email": "customer-03@example.com",
        "status": "active",
        "orders": ["A-1003"],
    }
    assert await office.get_customer("customer-99") is None


async def test_an_account_closes_once_per_idempotency_key(office: BackOffice) -> None:
    await office.seed_customers(CUSTOMERS)
    first = await office.close_account(idempotency_key="bk_1", customer_id="customer-04")
    again = await office.close_account(idempotency_key="bk_1", customer_id="customer-04")

    assert first == again
    assert first["closure_id"].startswith("X-")
    assert [c["idempotency_key"] for c in await office.list_closures()] == ["bk_1"]
    customer = await office.get_customer("customer-04")
    assert customer is not None
    assert customer["status"] == "closed"


async def test_a_customer_message_is_sent_once_per_idempotency_key(office: BackOffice) -> None:
    sent = await office.send_message(
        idempotency_key="bk_2", customer_id="customer-05", subject="Hi", body="first"
    )
    again = await office.send_message(
        idempotency_key="bk_2", customer_id="customer-05", subject="Hi", body="a replay"
    )
    other = await office.send_message(
        idempotency_key="bk_3", customer_id="customer-05", subject="Re", body="second"
    )

    assert again == sent
    assert sent["body"] == "first"
    listed = [m["message_id"] for m in await office.list_messages()]
    assert sorted(listed) == sorted([sent["message_id"], other["message_id"]])


async def test_its_tables_are_its_own_beside_batons(db_url: str, office: BackOffice) -> None:
    """Baton's migrations make none of the back office's tables; its own record its version."""
    store = await open_store(db_url)
    await store.close()
    again = await BackOffice.open(db_url)  # a second process opening: nothing applied twice
    await again.close()

    assert [tuple(r.values()) for r in sql(db_url, "SELECT * FROM back_office_schema")] == [
        (1, "orders_and_customers")
    ]
    baton_versions = [r["version"] for r in sql(db_url, "SELECT version FROM schema_version")]
    assert 2 in baton_versions  # the number once the back office's stays, empty


@pytest.mark.backends("sqlite")
async def test_on_sqlite_its_commits_are_full_and_checkpoint_as_rarely_as_batons_writer(
    db_url: str, office: BackOffice
) -> None:
    """Its connection shares Baton's file: at SQLite's default threshold (1,000 pages) its
    commits would checkpoint the file, two fsyncs each time, eight times as often as Baton's."""
    await office.seed_orders([{"id": "A-1", "customer": "Kim", "total": 200.0, "currency": "EUR"}])
    conn = office._db._conn  # type: ignore[attr-defined]  # its one connection, opened by use
    assert conn is not None

    assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == WAL_CHECKPOINT_PAGES
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL


ORDER = {"id": "A-1", "customer": "Kim", "total": 9.0, "currency": "EUR"}


@pytest.mark.backends("sqlite")
async def test_a_write_whose_caller_is_cancelled_keeps_the_connection_until_it_ends(
    db_url: str,
) -> None:
    # The write waits on the file's lock, held here as another process would; its caller is
    # cancelled meanwhile. A read after it waits for the write's transaction to end on their
    # shared connection, rather than meeting it half done (or blocking the event loop on it).
    office = await BackOffice.open(db_url)
    holder = sqlite3.connect(db_url.removeprefix("sqlite:///"), isolation_level=None)
    try:
        await office.seed_orders(
            [{"id": "A-1", "customer": "Kim", "total": 9.0, "currency": "EUR"}]
        )
        holder.execute("BEGIN IMMEDIATE")
        refund = asyncio.create_task(
            office.issue_refund(idempotency_key="bk_1", order_id="A-1", amount=5.0)
        )
        await asyncio.sleep(0.2)  # its thread waits for the lock
        refund.cancel()
        read = asyncio.create_task(office.get_order("A-1"))
        await asyncio.sleep(0.2)
        waited = not read.done()
        holder.execute("COMMIT")
        order = await read
    finally:
        holder.close()
        await office.close()

    assert waited
    assert order == ORDER
    with pytest.raises(asyncio.CancelledError):
        await refund
