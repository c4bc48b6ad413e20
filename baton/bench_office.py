"""The refund workload's back office for the peers without one (LangGraph, bare MAF).

A SQLite file made by the shipped back office's migrations (`executors.shipped.back_office`),
seeded with the same orders, WAL and `synchronous=FULL` as Baton's file, read and written with
`BackOffice`'s statements on the thread that calls the tool (LangGraph's `ToolNode` and MAF run a
sync tool in a worker thread): a refund is one `BEGIN IMMEDIATE` transaction, an `INSERT ... ON
CONFLICT DO NOTHING` keyed by the call's idempotency key, then the refund read back. The same
durable write as Baton's back office makes.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from executors.shipped.back_office import ORDERS, BackOffice, refund_steps, sqlite_sql

Step = tuple[str, Sequence[Any]]


class OfficeFile:
    """The back office's file, on one connection of its own.

    Its transactions take turns (a lock): with runs in flight at once, the peers call their tools
    from threads of their own (LangGraph's `ToolNode` and MAF run a sync tool in a thread), and
    one connection holds one transaction at a time.
    """

    def __init__(self, path: Path) -> None:
        self._turn = threading.Lock()
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._conn.row_factory = sqlite3.Row
        self._conn.execute("PRAGMA journal_mode=WAL")  # as Baton's file, which its office shares
        self._conn.execute("PRAGMA synchronous=FULL")

    @classmethod
    async def made(cls, folder: Path) -> OfficeFile:
        """A new file in `folder`, made by the shipped migrations and seeded with their orders."""
        path = folder / "back_office.db"
        made = await BackOffice.open(f"sqlite:///{path}")
        await made.seed_orders(ORDERS)
        await made.close()
        return cls(path)

    def transaction(self, begin: str, steps: Sequence[Step]) -> list[Any]:
        """`steps` in one transaction, as `BackOffice`'s; the first row of each."""
        with self._turn:
            self._conn.execute(begin)
            try:
                rows = [self._conn.execute(sql, tuple(args)).fetchone() for sql, args in steps]
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
            return rows

    def lookup_order(self, order_id: str) -> dict[str, Any]:
        """The order's row, or an error the model reads."""
        [row] = self.transaction("BEGIN", [("SELECT * FROM orders WHERE id = ?", (order_id,))])
        return dict(row) if row is not None else {"error": f"no order {order_id}"}

    def issue_refund(self, key: str, order_id: str, amount: float) -> dict[str, Any]:
        """`BackOffice.issue_refund`'s statements: once per `key`; a repeat reads the first one."""
        now = datetime.now(UTC).isoformat()
        steps = [(sqlite_sql(sql), args) for sql, args in refund_steps(key, order_id, amount, now)]
        _, row = self.transaction("BEGIN IMMEDIATE", steps)
        return dict(row)

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()
