"""The tiny query interface every transaction is written against, and what differs per database.

A transaction (`human.store.transactions`) is written once, as an `async` function of a `Tx`, with
named parameters (`:run_id`). Where SQLite and PostgreSQL spell a thing differently, the statement
asks the `Dialect`: its placeholders, row locks, the null-safe comparison, the clock job times are
read from, a list parameter, a new run's sequence number, and how a time is stored. Everything
else (`ON CONFLICT DO NOTHING`, `RETURNING`, JSON as text) both databases speak alike.

This is the split SQLAlchemy Core makes between a statement and its dialect, kept to the few
things Baton's SQL needs; and LangGraph's checkpoint backends make between their shared `base.py`
and each driver's connection handling.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal, Protocol

from human.store.rows import Row, dumps

_NAMED = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


class Tx(Protocol):
    """Statements in one transaction (or one consistent read) on one connection.

    Parameters are named (`:name`) whatever the driver's style; a `datetime` is bound as the
    dialect stores times, and a list or tuple is a list parameter (see `Dialect.any_of`). JSON
    columns are bound as text (`rows.dumps`): both drivers exchange JSON as text.
    """

    @property
    def dialect(self) -> Dialect:
        """How this connection's database spells what differs."""
        ...

    async def one(self, sql: str, /, **params: Any) -> Row | None:
        """The first row of a statement (None if it has none)."""
        ...

    async def all(self, sql: str, /, **params: Any) -> Sequence[Row]:
        """Every row of a statement."""
        ...

    async def run(self, sql: str, /, **params: Any) -> int:
        """Execute a statement; how many rows it inserted, changed or deleted."""
        ...

    async def many(self, sql: str, rows: Sequence[Mapping[str, Any]], /) -> None:
        """Execute a statement once per parameter set."""
        ...


_AS_IS: Final = frozenset({str, int, float, bool, bytes, type(None)})
"""Parameter types every driver takes as they are."""


@dataclass(frozen=True)
class Dialect:
    """What a database spells its own way, as the shared transactions need it.

    Attributes:
        name: The backend's name, also its migrations' folder (`sql/<name>/`).
        paramstyle: How the driver takes parameters: by name (sqlite3) or by number (asyncpg).
        row_locks: Whether rows are locked for update; without, one writer at a time serialises
            every write transaction (SQLite's `BEGIN IMMEDIATE`).
        same: The operator that is true for two NULLs (`IS`; PostgreSQL's `IS` takes no value).
        clock: SQL for now, in epoch seconds of the database host's clock: when jobs become
            available and leases end, so that every worker on one database agrees.
        list_in: A list parameter's membership test, with `{column}` and `{param}` slots.
        lists_as_json: Whether a list parameter is bound as JSON text (SQLite binds no arrays).
        new_run_seq: The value a new run's `seq` is inserted with.
        times_as_text: Whether times are stored as ISO text (SQLite has no time type).
    """

    name: str
    paramstyle: Literal["named", "numeric"]
    row_locks: bool
    same: str
    clock: str
    list_in: str
    lists_as_json: bool
    new_run_seq: str
    times_as_text: bool

    def lock(self, of: str = "") -> str:
        """A `FOR UPDATE` suffix (of one table of a join), where rows are locked."""
        if not self.row_locks:
            return ""
        return f" FOR UPDATE OF {of}" if of else " FOR UPDATE"

    def any_of(self, column: str, param: str) -> str:
        """`column` is one of the list parameter `param`."""
        return self.list_in.format(column=column, param=param)

    def bind(self, sql: str, params: Mapping[str, Any]) -> tuple[str, Any]:
        """The statement in the driver's placeholders, and its parameters in the driver's form."""
        if self.paramstyle == "named":
            return sql, {name: self.value(value) for name, value in params.items()}
        text, names = _numbered(sql)
        return text, [self.value(params[name]) for name in names]

    def bind_many(self, sql: str, rows: Sequence[Mapping[str, Any]]) -> tuple[str, list[Any]]:
        """`bind` for a statement executed once per parameter set."""
        if self.paramstyle == "named":
            return sql, [{n: self.value(v) for n, v in row.items()} for row in rows]
        text, names = _numbered(sql)
        return text, [[self.value(row[n]) for n in names] for row in rows]

    def value(self, value: Any) -> Any:
        """A parameter as the database stores it."""
        if type(value) in _AS_IS:
            return value
        if isinstance(value, datetime) and self.times_as_text:
            return value.isoformat(timespec="microseconds")
        if isinstance(value, list | tuple) and self.lists_as_json:
            return dumps(list(value))
        if isinstance(value, tuple):
            return list(value)
        return value


@functools.lru_cache(maxsize=512)
def _numbered(sql: str) -> tuple[str, tuple[str, ...]]:
    """`:name` placeholders as `$1`, `$2`, …, and the parameter names in number order."""
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in names:
            names.append(name)
        return f"${names.index(name) + 1}"

    return _NAMED.sub(number, sql), tuple(names)


SQLITE = Dialect(
    name="sqlite",
    paramstyle="named",
    row_locks=False,
    same="IS",
    # The machine's clock, as `time.time()`: a function each connection registers.
    clock="baton_clock()",
    # A list parameter arrives as JSON text: one statement, whatever the list's length.
    list_in="{column} IN (SELECT value FROM json_each(:{param}))",
    lists_as_json=True,
    new_run_seq="(SELECT COALESCE(MAX(seq), 0) + 1 FROM runs)",
    times_as_text=True,
)

POSTGRES = Dialect(
    name="postgres",
    paramstyle="numeric",
    row_locks=True,
    same="IS NOT DISTINCT FROM",
    clock="extract(epoch from clock_timestamp())",
    list_in="{column} = ANY(:{param})",
    lists_as_json=False,
    new_run_seq="DEFAULT",
    times_as_text=False,
)
