"""The shipped demos' back office (orders, refunds, customers, messages), kept out of Baton's store.

These are not Baton's: they stand in for the systems the demo agents' tools call. They live in this
one file, a mixin per backend that the backend inherits for now, so that they can leave the store
whole (this file, and the two mixins in the backends' bases) once the demos have a back office of
their own. Each method is its backend's code as it was, on that backend's own plumbing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    import sqlite3

    import asyncpg

T = TypeVar("T")


def _key_id(prefix: str, idempotency_key: str) -> str:
    """The id the back office gives an effect: the same for the same idempotency key."""
    return prefix + hashlib.sha256(idempotency_key.encode()).hexdigest()[:10].upper()


class BackOfficeStore(Protocol):
    """The demo back office the refund and support agents' tools call."""

    async def seed_orders(self, orders: Sequence[dict[str, Any]]) -> None:
        """Insert demo orders if missing."""
        ...

    async def get_order(self, order_id: str) -> dict[str, Any] | None:
        """A demo order."""
        ...

    async def issue_refund(
        self, *, idempotency_key: str, order_id: str, amount: float
    ) -> dict[str, Any]:
        """Refund once per idempotency key; a repeat returns the first refund."""
        ...

    async def list_refunds(self) -> list[dict[str, Any]]:
        """All refunds, oldest first."""
        ...

    async def seed_customers(self, customers: Sequence[dict[str, Any]]) -> None:
        """Insert demo customers (`id`, `name`, `email`) if missing."""
        ...

    async def get_customer(self, customer_id: str) -> dict[str, Any] | None:
        """A demo customer with the ids of their orders."""
        ...

    async def close_account(self, *, idempotency_key: str, customer_id: str) -> dict[str, Any]:
        """Close a customer's account once per idempotency key; a repeat returns the first."""
        ...

    async def send_customer_message(
        self, *, idempotency_key: str, customer_id: str, subject: str, body: str
    ) -> dict[str, Any]:
        """Send a message to a customer once per idempotency key; a repeat returns the first."""
        ...

    async def list_customer_messages(self) -> list[dict[str, Any]]:
        """Every message sent to customers, oldest first."""
        ...

    async def list_account_closures(self) -> list[dict[str, Any]]:
        """Every account closure, oldest first."""
        ...


class SqliteBackOffice:
    """The demo back office on the SQLite store's file (its writer thread and reader)."""

    if TYPE_CHECKING:
        _clock: Callable[[], datetime]

        async def _run(self, fn: Callable[[sqlite3.Connection], T], *, write: bool) -> T: ...

    def _stamp(self) -> str:
        return self._clock().isoformat(timespec="microseconds")

    async def seed_orders(self, orders: Sequence[dict[str, Any]]) -> None:
        """Insert demo orders if missing."""
        await self._run(
            lambda c: c.executemany(
                "INSERT OR IGNORE INTO orders (id, customer, total, currency) "
                "VALUES (:id, :customer, :total, :currency)",
                orders,
            ),
            write=True,
        )

    async def get_order(self, order_id: str) -> dict[str, Any] | None:
        """A demo order."""
        row = await self._run(
            lambda c: c.execute("SELECT * FROM orders WHERE id = ?", (order_id,)).fetchone(),
            write=False,
        )
        return dict(row) if row else None

    async def issue_refund(
        self, *, idempotency_key: str, order_id: str, amount: float
    ) -> dict[str, Any]:
        """Refund once per key: the back office dedupes on the key it is given."""
        refund_id = _key_id("R-", idempotency_key)

        def write(conn: sqlite3.Connection) -> dict[str, Any]:
            conn.execute(
                "INSERT OR IGNORE INTO refunds (idempotency_key, refund_id, order_id, amount, "
                "created_at) VALUES (?, ?, ?, ?, ?)",
                (idempotency_key, refund_id, order_id, amount, self._stamp()),
            )
            row = conn.execute(
                "SELECT refund_id, order_id, amount FROM refunds WHERE idempotency_key = ?",
                (idempotency_key,),
            ).fetchone()
            return dict(row)

        return await self._run(write, write=True)

    async def list_refunds(self) -> list[dict[str, Any]]:
        """All refunds, oldest first."""
        rows = await self._run(
            lambda c: c.execute("SELECT * FROM refunds ORDER BY created_at").fetchall(),
            write=False,
        )
        return [dict(r) for r in rows]

    async def seed_customers(self, customers: Sequence[dict[str, Any]]) -> None:
        """Insert demo customers if missing."""
        await self._run(
            lambda c: c.executemany(
                "INSERT OR IGNORE INTO customers (id, name, email) VALUES (:id, :name, :email)",
                customers,
            ),
            write=True,
        )

    async def get_customer(self, customer_id: str) -> dict[str, Any] | None:
        """A demo customer with the ids of their orders."""

        def read(conn: sqlite3.Connection) -> dict[str, Any] | None:
            row = conn.execute("SELECT * FROM customers WHERE id = ?", (customer_id,)).fetchone()
            if row is None:
                return None
            orders = conn.execute(
                "SELECT id FROM orders WHERE customer = ? ORDER BY id", (customer_id,)
            ).fetchall()
            return dict(row) | {"orders": [o[0] for o in orders]}

        return await self._run(read, write=False)

    async def close_account(self, *, idempotency_key: str, customer_id: str) -> dict[str, Any]:
        """Close an account once per key: the back office dedupes on the key it is given."""
        closure_id = _key_id("X-", idempotency_key)

        def write(conn: sqlite3.Connection) -> dict[str, Any]:
            conn.execute(
                "INSERT OR IGNORE INTO account_closures (idempotency_key, closure_id, "
                "customer_id, created_at) VALUES (?, ?, ?, ?)",
                (idempotency_key, closure_id, customer_id, self._stamp()),
            )
            conn.execute("UPDATE customers SET status = 'closed' WHERE id = ?", (customer_id,))
            row = conn.execute(
                "SELECT closure_id, customer_id FROM account_closures WHERE idempotency_key = ?",
                (idempotency_key,),
            ).fetchone()
            return dict(row)

        return await self._run(write, write=True)

    async def send_customer_message(
        self, *, idempotency_key: str, customer_id: str, subject: str, body: str
    ) -> dict[str, Any]:
        """Send once per key: the mail system dedupes on the key it is given."""
        message_id = _key_id("M-", idempotency_key)

        def write(conn: sqlite3.Connection) -> dict[str, Any]:
            conn.execute(
                "INSERT OR IGNORE INTO customer_messages (idempotency_key, message_id, "
                "customer_id, subject, body, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                (idempotency_key, message_id, customer_id, subject, body, self._stamp()),
            )
            row = conn.execute(
                "SELECT message_id, customer_id, subject, body FROM customer_messages "
                "WHERE idempotency_key = ?",
                (idempotency_key,),
            ).fetchone()
            return dict(row)

        return await self._run(write, write=True)

    async def list_customer_messages(self) -> list[dict[str, Any]]:
        """Every message sent to customers, oldest first."""
        rows = await self._run(
            lambda c: c.execute(
                "SELECT * FROM customer_messages ORDER BY created_at, message_id"
            ).fetchall(),
            write=False,
        )
        return [dict(r) for r in rows]

    async def list_account_closures(self) -> list[dict[str, Any]]:
        """Every account closure, oldest first."""
        rows = await self._run(
            lambda c: c.execute(
                "SELECT * FROM account_closures ORDER BY created_at, closure_id"
            ).fetchall(),
            write=False,
        )
        return [dict(r) for r in rows]


def _plain(row: asyncpg.Record) -> dict[str, Any]:
    """A row as a dict, times as ISO text as the SQLite backend gives them."""
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in row.items()}


class PostgresBackOffice:
    """The demo back office on the PostgreSQL store's pool."""

    if TYPE_CHECKING:
        _clock: Callable[[], datetime]

        async def _write(self, fn: Callable[[Any], Any]) -> Any: ...

        async def _fetch(self, sql: str, *args: Any) -> list[asyncpg.Record]: ...

        async def _fetchrow(self, sql: str, *args: Any) -> asyncpg.Record | None: ...

    async def seed_orders(self, orders: Sequence[dict[str, Any]]) -> None:
        """Insert demo orders if missing."""
        await self._write(
            lambda c: c.executemany(
                "INSERT INTO orders (id, customer, total, currency) VALUES ($1, $2, $3, $4) "
                "ON CONFLICT DO NOTHING",
                [(o["id"], o["customer"], o["total"], o["currency"]) for o in orders],
            )
        )

    async def get_order(self, order_id: str) -> dict[str, Any] | None:
        """A demo order."""
        row = await self._fetchrow("SELECT * FROM orders WHERE id = $1", order_id)
        return dict(row) if row else None

    async def issue_refund(
        self, *, idempotency_key: str, order_id: str, amount: float
    ) -> dict[str, Any]:
        """Refund once per key: the back office dedupes on the key it is given."""
        refund_id = _key_id("R-", idempotency_key)

        async def write(conn: Any) -> dict[str, Any]:
            await conn.execute(
                "INSERT INTO refunds (idempotency_key, refund_id, order_id, amount, created_at) "
                "VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
                idempotency_key,
                refund_id,
                order_id,
                amount,
                self._clock(),
            )
            row = await conn.fetchrow(
                "SELECT refund_id, order_id, amount FROM refunds WHERE idempotency_key = $1",
                idempotency_key,
            )
            assert row is not None
            return dict(row)

        result: dict[str, Any] = await self._write(write)
        return result

    async def list_refunds(self) -> list[dict[str, Any]]:
        """All refunds, oldest first."""
        rows = await self._fetch("SELECT * FROM refunds ORDER BY created_at")
        return [_plain(r) for r in rows]

    async def seed_customers(self, customers: Sequence[dict[str, Any]]) -> None:
        """Insert demo customers if missing."""
        await self._write(
            lambda c: c.executemany(
                "INSERT INTO customers (id, name, email) VALUES ($1, $2, $3) "
                "ON CONFLICT DO NOTHING",
                [(c_["id"], c_["name"], c_["email"]) for c_ in customers],
            )
        )

    async def get_customer(self, customer_id: str) -> dict[str, Any] | None:
        """A demo customer with the ids of their orders."""
        row = await self._fetchrow("SELECT * FROM customers WHERE id = $1", customer_id)
        if row is None:
            return None
        orders = await self._fetch(
            "SELECT id FROM orders WHERE customer = $1 ORDER BY id", customer_id
        )
        return dict(row) | {"orders": [o["id"] for o in orders]}

    async def close_account(self, *, idempotency_key: str, customer_id: str) -> dict[str, Any]:
        """Close an account once per key: the back office dedupes on the key it is given."""
        closure_id = _key_id("X-", idempotency_key)

        async def write(conn: Any) -> dict[str, Any]:
            await conn.execute(
                "INSERT INTO account_closures (idempotency_key, closure_id, customer_id, "
                "created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                idempotency_key,
                closure_id,
                customer_id,
                self._clock(),
            )
            await conn.execute("UPDATE customers SET status = 'closed' WHERE id = $1", customer_id)
            row = await conn.fetchrow(
                "SELECT closure_id, customer_id FROM account_closures WHERE idempotency_key = $1",
                idempotency_key,
            )
            assert row is not None
            return dict(row)

        result: dict[str, Any] = await self._write(write)
        return result

    async def send_customer_message(
        self, *, idempotency_key: str, customer_id: str, subject: str, body: str
    ) -> dict[str, Any]:
        """Send once per key: the mail system dedupes on the key it is given."""
        message_id = _key_id("M-", idempotency_key)

        async def write(conn: Any) -> dict[str, Any]:
            await conn.execute(
                "INSERT INTO customer_messages (idempotency_key, message_id, customer_id, "
                "subject, body, created_at) VALUES ($1, $2, $3, $4, $5, $6) "
                "ON CONFLICT DO NOTHING",
                idempotency_key,
                message_id,
                customer_id,
                subject,
                body,
                self._clock(),
            )
            row = await conn.fetchrow(
                "SELECT message_id, customer_id, subject, body FROM customer_messages "
                "WHERE idempotency_key = $1",
                idempotency_key,
            )
            assert row is not None
            return dict(row)

        result: dict[str, Any] = await self._write(write)
        return result

    async def list_customer_messages(self) -> list[dict[str, Any]]:
        """Every message sent to customers, oldest first."""
        rows = await self._fetch("SELECT * FROM customer_messages ORDER BY created_at, message_id")
        return [_plain(r) for r in rows]

    async def list_account_closures(self) -> list[dict[str, Any]]:
        """Every account closure, oldest first."""
        rows = await self._fetch("SELECT * FROM account_closures ORDER BY created_at, closure_id")
        return [_plain(r) for r in rows]
