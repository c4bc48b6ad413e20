"""Faults for a store's write transactions, injected through `SqlStore.wrap_writes`.

`Statements` counts the statements (and transactions) the store writes with, and can fail the
transaction right after its n-th statement, as a crash or a driver error between two statements
would. `Prelude` runs statements of the test's at the start of every write transaction, on the
store's own connection: the real database's ways of refusing writes (SQLite's `max_page_count`
and `query_only`, PostgreSQL's `SET TRANSACTION READ ONLY` and `lock_timeout`), which are
settings of a connection and so can only be set from inside it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from human.store.dialect import Dialect, Tx
from human.store.rows import Row
from tests.harness import sql

# SQLite: no page beyond those the file has (a full disk); writes refused (a read-only file).
SQLITE_FULL: Final = ("PRAGMA max_page_count = 1",)  # clamped to the file's current size
SQLITE_READ_ONLY: Final = ("PRAGMA query_only = 1",)
SQLITE_BUSY_SOON: Final = ("PRAGMA busy_timeout = 50",)  # takes effect from the next BEGIN
SQLITE_RECOVERED: Final = (
    "PRAGMA max_page_count = 4294967294",
    "PRAGMA query_only = 0",
    "PRAGMA busy_timeout = 30000",
)
# PostgreSQL: the transaction is read-only, or waits for a row lock at most 50 ms.
PG_READ_ONLY: Final = ("SET TRANSACTION READ ONLY",)
PG_LOCK_SOON: Final = ("SET LOCAL lock_timeout = '50ms'",)


# PostgreSQL: end every other session on the database (as a failover or a restart would).
PG_END_SESSIONS: Final = (
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
)


def pg_read_only(db_url: str, server_url: str, *, on: bool) -> None:
    """An operator makes a database read-only (with a failover), or writable again.

    `ALTER DATABASE … SET default_transaction_read_only` holds for sessions begun after it (run
    on the server's maintenance database, `server_url`), so making it read-only also ends the
    sessions open on it. Making it writable again ends none: those begun meanwhile stay
    read-only, and the store must not keep using them.
    """
    name = db_url.rsplit("/", 1)[1]
    if not on:
        sql(server_url, f'ALTER DATABASE "{name}" RESET default_transaction_read_only')
        return
    sql(server_url, f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
    sql(db_url, PG_END_SESSIONS)


class InjectedFault(Exception):
    """The failure `Statements` raises after the statement it was told to fail after."""


class Statements:
    """Counts write statements and transactions; with `fail_after`, fails after that statement.

    A `many` (one statement for several rows) counts once. Counting runs on across the
    transactions written while it is set, so `transactions` tells how many one call wrote.
    """

    def __init__(self, fail_after: int | None = None) -> None:
        self.fail_after = fail_after
        self.count = 0
        self.transactions = 0

    def __call__(self, tx: Tx) -> Tx:
        self.transactions += 1
        return _CountedTx(tx, self)

    def counted(self) -> None:
        self.count += 1
        if self.count == self.fail_after:
            raise InjectedFault(f"injected after write statement {self.count}")


class _CountedTx:
    def __init__(self, tx: Tx, statements: Statements) -> None:
        self._tx = tx
        self._statements = statements

    @property
    def dialect(self) -> Dialect:
        return self._tx.dialect

    async def one(self, sql: str, /, **params: Any) -> Row | None:
        row = await self._tx.one(sql, **params)
        self._statements.counted()
        return row

    async def all(self, sql: str, /, **params: Any) -> Sequence[Row]:
        rows = await self._tx.all(sql, **params)
        self._statements.counted()
        return rows

    async def run(self, sql: str, /, **params: Any) -> int:
        changed = await self._tx.run(sql, **params)
        self._statements.counted()
        return changed

    async def many(self, sql: str, rows: Sequence[Mapping[str, Any]], /) -> None:
        await self._tx.many(sql, rows)
        self._statements.counted()


class Prelude:
    """Runs `statements` first in each write transaction: a fault set on the store's connection.

    With `when`, only transactions whose first statement starts so are concerned (e.g. a drive's
    commit, `UPDATE runs SET status`). With `times`, only the first `times` of them get the
    statements; the one after gets `then` (to undo a setting that outlives its transaction, as
    SQLite's pragmas do) and later ones nothing.
    """

    def __init__(
        self, *statements: str, times: int | None = None, then: Sequence[str] = (), when: str = ""
    ) -> None:
        self.statements = statements
        self.times = times
        self.then = tuple(then)
        self.when = when
        self.transactions = 0

    def __call__(self, tx: Tx) -> Tx:
        return _PreludeTx(tx, self)

    def first(self, sql: str) -> Sequence[str]:
        """What to run before a transaction's first statement, `sql`."""
        if not sql.lstrip().startswith(self.when):
            return ()
        self.transactions += 1
        if self.times is None or self.transactions <= self.times:
            return self.statements
        return self.then if self.transactions == self.times + 1 else ()

    @property
    def spent(self) -> bool:
        """Whether it refused all it was told to and a transaction after went through."""
        return self.times is not None and self.transactions > self.times


def recovered(dialect: Dialect) -> Prelude:
    """What ends a `Prelude`'s fault: the next write undoes what outlives a transaction."""
    return Prelude(times=0, then=SQLITE_RECOVERED if dialect.name == "sqlite" else ())


class _PreludeTx:
    def __init__(self, tx: Tx, prelude: Prelude) -> None:
        self._tx = tx
        self._prelude: Prelude | None = prelude

    @property
    def dialect(self) -> Dialect:
        return self._tx.dialect

    async def _first(self, sql: str) -> None:
        if self._prelude is not None:
            statements, self._prelude = self._prelude.first(sql), None
            for statement in statements:
                await self._tx.run(statement)

    async def one(self, sql: str, /, **params: Any) -> Row | None:
        await self._first(sql)
        return await self._tx.one(sql, **params)

    async def all(self, sql: str, /, **params: Any) -> Sequence[Row]:
        await self._first(sql)
        return await self._tx.all(sql, **params)

    async def run(self, sql: str, /, **params: Any) -> int:
        await self._first(sql)
        return await self._tx.run(sql, **params)

    async def many(self, sql: str, rows: Sequence[Mapping[str, Any]], /) -> None:
        await self._first(sql)
        await self._tx.many(sql, rows)
