"""The shipped workflows' back office: a stand-in for the systems a real deployment's tools call.

Orders, refunds, customers, account closures and messages to customers live in tables of its own,
made by its own migrations (`sql/<dialect>/NNNN_<what>.sql`, recorded in `back_office_schema`), by
default in Baton's database. Baton's store knows none of it: the agents' tools reach it through
`BackOffice` alone, as they would reach a payment or mail system. Every effect is keyed by the
idempotency key Baton's effect ledger hands the tool, and a repeat returns the first result, as
such a system dedupes.

Statements are written once with `$n` parameters and `ON CONFLICT DO NOTHING`, which SQLite and
PostgreSQL both understand (SQLite reads `$n` as `?n`); the two connections differ only in how a
transaction runs (`_SqliteDb`, `_PostgresDb`).
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import resources
from typing import Any, Protocol

import asyncpg

Step = tuple[str, Sequence[Any]]
"""One statement and its parameters."""

SQLITE_CHECKPOINT_PAGES = 8192
"""When this connection checkpoints a SQLite file's write-ahead log: as Baton's own writer does.

The back office shares Baton's file by default, and each connection checkpoints at its own
threshold: at SQLite's default of 1,000 pages its commits checkpointed the file (two fsyncs)
about every fourteen refunds, 0.14 fsyncs a refund cycle beyond the three it needs.
"""

ORDERS = [
    {
        "id": f"A-{1000 + n}",
        "customer": f"customer-{n:02d}",
        "total": 2000.0 + 75 * n,
        "currency": "EUR",
    }
    for n in range(1, 21)
]
"""The demo's orders: `A-1001` … `A-1020`, each worth over 2,000."""

CUSTOMERS = [
    {
        "id": f"customer-{n:02d}",
        "name": f"Customer {n:02d}",
        "email": f"customer-{n:02d}@example.com",
    }
    for n in range(1, 21)
]
"""The demo's customers, each with the order of the same number."""


class _Db(Protocol):
    dialect: str

    def now(self) -> Any:
        """A timestamp as this database stores it."""
        ...

    async def transaction(self, steps: Sequence[Step]) -> list[list[dict[str, Any]]]:
        """Run `steps` in one transaction; the rows each returned."""
        ...

    async def close(self) -> None:
        """Let go of the connections."""
        ...


class _SqliteDb:
    """One connection of its own (Baton's writer thread is not ours): writes on a worker thread.

    A write waits for the file's write lock (Baton's writer may hold it) and for its fsync, so it
    runs off the event loop; a read, which WAL never makes wait, runs on it, as Baton's own do.
    """

    dialect = "sqlite"

    def __init__(self, path: str) -> None:
        self._path = path
        self._conn: sqlite3.Connection | None = None
        self._lock = (
            asyncio.Lock()
        )  # one transaction of ours at a time; Baton's wait on busy_timeout

    def now(self) -> Any:
        return datetime.now(UTC).isoformat()

    async def transaction(self, steps: Sequence[Step]) -> list[list[dict[str, Any]]]:
        # a read takes no write lock: only a transaction that writes waits for Baton's writer
        writes = any(not sql.lstrip().upper().startswith("SELECT") for sql, _ in steps)

        def run() -> list[list[dict[str, Any]]]:
            if self._conn is None:
                self._conn = sqlite3.connect(
                    self._path, timeout=30, isolation_level=None, check_same_thread=False
                )
                self._conn.row_factory = sqlite3.Row
                self._conn.execute("PRAGMA synchronous=FULL")  # a refund is the durable effect
                self._conn.execute(f"PRAGMA wal_autocheckpoint={SQLITE_CHECKPOINT_PAGES}")
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE" if writes else "BEGIN")
            try:
                out = [
                    [dict(r) for r in conn.execute(sqlite_sql(sql), args)] for sql, args in steps
                ]
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return out

        async with self._lock:
            if not writes:  # WAL never makes a read wait for a writer: no thread hop for it
                return run()
            work = asyncio.ensure_future(asyncio.to_thread(run))
            try:
                return await asyncio.shield(work)
            finally:
                # A caller cancelled while the thread writes: the connection is the thread's until
                # its transaction ends, so the next transaction does not meet it half done.
                if not work.done():
                    await asyncio.wait([work])
                    work.exception()  # heard: a failed write rolled back, its caller gone

    async def close(self) -> None:
        async with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


class _PostgresDb:
    """A small pool of our own on the same server."""

    dialect = "postgres"

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    def now(self) -> Any:
        return datetime.now(UTC)

    async def transaction(self, steps: Sequence[Step]) -> list[list[dict[str, Any]]]:
        if len(steps) == 1:  # one statement is atomic alone: no BEGIN and COMMIT round trips
            [(sql, args)] = steps
            return [[dict(r) for r in await self._pool.fetch(sql, *args)]]
        async with self._pool.acquire() as conn, conn.transaction():
            return [[dict(r) for r in await conn.fetch(sql, *args)] for sql, args in steps]

    async def close(self) -> None:
        await self._pool.close()


async def _session_kept(_conn: object) -> None:
    """A connection back in the pool needs no reset beyond asyncpg's own rollback."""


def _key_id(prefix: str, key: str) -> str:
    """A stable id for the effect an idempotency key names."""
    return prefix + "-" + hashlib.sha256(key.encode()).hexdigest()[:10].upper()


def refund_steps(idempotency_key: str, order_id: str, amount: float, now: Any) -> list[Step]:
    """A refund's statements, in one transaction: once per key, then the key's refund read back."""
    return [
        (
            "INSERT INTO refunds (idempotency_key, refund_id, order_id, amount, "
            "created_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
            (idempotency_key, _key_id("R", idempotency_key), order_id, amount, now),
        ),
        (
            "SELECT refund_id, order_id, amount FROM refunds WHERE idempotency_key = $1",
            (idempotency_key,),
        ),
    ]


def sqlite_sql(sql: str) -> str:
    """A statement written with PostgreSQL's `$1` parameters, with SQLite's `?1`."""
    return re.sub(r"\$(\d+)", r"?\1", sql)


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    """A row as JSON-ready values (PostgreSQL returns datetimes; SQLite stores ISO text)."""
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in row.items()}


class BackOffice:
    """Orders, refunds, customers and messages: what the shipped agents' tools act on."""

    def __init__(self, db: _Db) -> None:
        self._db = db

    @classmethod
    async def open(cls, database_url: str) -> BackOffice:
        """Connect to the database at `database_url` and apply the back office's migrations."""
        db: _Db
        if database_url.startswith("sqlite:///"):
            db = _SqliteDb(database_url.removeprefix("sqlite:///"))
        else:
            # Its sessions change no setting, hold no cursor or lock and LISTEN to nothing:
            # asyncpg's reset (a round trip each time a connection goes back) has nothing to undo.
            pool = await asyncpg.create_pool(
                database_url, min_size=1, max_size=4, reset=_session_kept
            )
            db = _PostgresDb(pool)
        office = cls(db)
        try:
            await office._migrate()
        except BaseException:
            await db.close()
            raise
        return office

    async def close(self) -> None:
        """Let go of the database."""
        await self._db.close()

    async def _migrate(self) -> None:
        """Apply the migrations not yet recorded; each must be idempotent (`IF NOT EXISTS`)."""
        lock: list[Step] = (
            [("SELECT pg_advisory_xact_lock(7261994)", ())]  # one migrating process at a time
            if self._db.dialect == "postgres"
            else []  # BEGIN IMMEDIATE already admits one writer
        )
        *_, rows = await self._db.transaction(
            [
                *lock,
                (
                    "CREATE TABLE IF NOT EXISTS back_office_schema "
                    "(version INTEGER PRIMARY KEY, name TEXT NOT NULL)",
                    (),
                ),
                ("SELECT version FROM back_office_schema", ()),
            ]
        )
        done = {row["version"] for row in rows}
        folder = resources.files(__name__) / "sql" / self._db.dialect
        for entry in sorted(folder.iterdir(), key=lambda f: f.name):
            number, _, name = entry.name.removesuffix(".sql").partition("_")
            if not entry.name.endswith(".sql") or int(number) in done:
                continue
            statements = [s.strip() for s in _statements(entry.read_text(encoding="utf-8"))]
            await self._db.transaction(
                [
                    *lock,
                    *((s, ()) for s in statements if s),
                    (
                        "INSERT INTO back_office_schema (version, name) VALUES ($1, $2) "
                        "ON CONFLICT DO NOTHING",
                        (int(number), name),
                    ),
                ]
            )

    # orders and refunds -----------------------------------------------------------------------

    async def seed_orders(self, orders: Sequence[dict[str, Any]]) -> None:
        """Add orders that are missing (`id`, `customer`, `total`, `currency`)."""
        await self._db.transaction(
            [
                (
                    "INSERT INTO orders (id, customer, total, currency) VALUES ($1, $2, $3, $4) "
                    "ON CONFLICT DO NOTHING",
                    (o["id"], o["customer"], o["total"], o["currency"]),
                )
                for o in orders
            ]
        )

    async def get_order(self, order_id: str) -> dict[str, Any] | None:
        """An order, or None."""
        [rows] = await self._db.transaction([("SELECT * FROM orders WHERE id = $1", (order_id,))])
        return rows[0] if rows else None

    async def issue_refund(
        self, *, idempotency_key: str, order_id: str, amount: float
    ) -> dict[str, Any]:
        """Refund once per idempotency key; a repeat returns the first refund."""
        _, [row] = await self._db.transaction(
            refund_steps(idempotency_key, order_id, amount, self._now())
        )
        return row

    async def list_refunds(self) -> list[dict[str, Any]]:
        """Every refund, oldest first."""
        [rows] = await self._db.transaction(
            [("SELECT * FROM refunds ORDER BY created_at, refund_id", ())]
        )
        return [_plain(r) for r in rows]

    # customers --------------------------------------------------------------------------------

    async def seed_customers(self, customers: Sequence[dict[str, Any]]) -> None:
        """Add customers that are missing (`id`, `name`, `email`)."""
        await self._db.transaction(
            [
                (
                    "INSERT INTO customers (id, name, email) VALUES ($1, $2, $3) "
                    "ON CONFLICT DO NOTHING",
                    (c["id"], c["name"], c["email"]),
                )
                for c in customers
            ]
        )

    async def get_customer(self, customer_id: str) -> dict[str, Any] | None:
        """A customer with the ids of their orders, or None."""
        found, orders = await self._db.transaction(
            [
                ("SELECT * FROM customers WHERE id = $1", (customer_id,)),
                ("SELECT id FROM orders WHERE customer = $1 ORDER BY id", (customer_id,)),
            ]
        )
        return found[0] | {"orders": [o["id"] for o in orders]} if found else None

    async def close_account(self, *, idempotency_key: str, customer_id: str) -> dict[str, Any]:
        """Close a customer's account once per idempotency key; a repeat returns the first."""
        *_, [row] = await self._db.transaction(
            [
                (
                    "INSERT INTO account_closures (idempotency_key, closure_id, customer_id, "
                    "created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                    (idempotency_key, _key_id("X", idempotency_key), customer_id, self._now()),
                ),
                ("UPDATE customers SET status = 'closed' WHERE id = $1", (customer_id,)),
                (
                    "SELECT closure_id, customer_id FROM account_closures "
                    "WHERE idempotency_key = $1",
                    (idempotency_key,),
                ),
            ]
        )
        return row

    async def send_message(
        self, *, idempotency_key: str, customer_id: str, subject: str, body: str
    ) -> dict[str, Any]:
        """Send a customer a message once per idempotency key; a repeat returns the first."""
        key_id = _key_id("M", idempotency_key)
        _, [row] = await self._db.transaction(
            [
                (
                    "INSERT INTO customer_messages (idempotency_key, message_id, customer_id, "
                    "subject, body, created_at) VALUES ($1, $2, $3, $4, $5, $6) "
                    "ON CONFLICT DO NOTHING",
                    (idempotency_key, key_id, customer_id, subject, body, self._now()),
                ),
                (
                    "SELECT message_id, customer_id, subject, body FROM customer_messages "
                    "WHERE idempotency_key = $1",
                    (idempotency_key,),
                ),
            ]
        )
        return row

    async def list_messages(self) -> list[dict[str, Any]]:
        """Every message sent to customers, oldest first."""
        [rows] = await self._db.transaction(
            [("SELECT * FROM customer_messages ORDER BY created_at, message_id", ())]
        )
        return [_plain(r) for r in rows]

    async def list_closures(self) -> list[dict[str, Any]]:
        """Every account closure, oldest first."""
        [rows] = await self._db.transaction(
            [("SELECT * FROM account_closures ORDER BY created_at, closure_id", ())]
        )
        return [_plain(r) for r in rows]

    async def seed_demo(self) -> None:
        """The demo's orders and customers, where missing."""
        await self.seed_orders(ORDERS)
        await self.seed_customers(CUSTOMERS)

    def _now(self) -> Any:
        return self._db.now()


def _statements(sql: str) -> list[str]:
    """The statements of a migration file (no `;` inside a statement in these files)."""
    lines = [line for line in sql.splitlines() if not line.lstrip().startswith("--")]
    return "\n".join(lines).split(";")
