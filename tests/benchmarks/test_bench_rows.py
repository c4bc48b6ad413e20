"""The bench's `baton_rows` cycle makes the statements Baton's minimal cycle makes, and its rows.

`baton_rows` stands for Baton's rows and commits without its layers (`baton.bench_rows`), so its
figures mean something only while it does what Baton's cycle does at the database: the same
statements in the same order, in the same transactions, with values of the same sizes, leaving
the same rows. When Baton's minimal cycle comes to make another statement (an audit event, a
read, a job), or to drop one, this fails until `baton_rows` does so too.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from baton.bench import MINIMAL_ANSWER, register_minimal
from baton.bench_peers import baton_cycle
from baton.bench_rows import rows_cycle
from baton.demo import seed_demo
from baton.settings import Settings
from baton.wiring import open_parts

WARM = 2  # cycles before the one traced: caches, the answer schema kept once
CYCLES = 3

Tables = dict[str, tuple[int, int]]


class Trace:
    """Every statement SQLite runs on the connections opened while it is installed."""

    def __init__(self) -> None:
        self.on = False
        self.statements: list[str] = []

    def heard(self, sql: str) -> None:
        if self.on:
            self.statements.append(sql)


@contextmanager
def traced(monkeypatch: pytest.MonkeyPatch) -> Iterator[Trace]:
    trace = Trace()
    connect = sqlite3.connect

    def connect_traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = connect(*args, **kwargs)
        conn.set_trace_callback(trace.heard)
        return conn

    with monkeypatch.context() as patch:
        patch.setattr(sqlite3, "connect", connect_traced)
        yield trace


def plain(sql: str) -> str:
    """A statement with its spacing made plain (the store lays some out on several lines)."""
    return re.sub(r"\s*([(),])\s*", r"\1", re.sub(r"\s+", " ", sql)).strip()


def shape(sql: str) -> str:
    """A statement with its values taken out, its spacing made plain."""
    sql = re.sub(r"x'[0-9a-fA-F]*'", "?", sql)
    sql = re.sub(r"'(?:[^']|'')*'", "?", sql)
    return plain(re.sub(r"\b\d+(?:\.\d+)?\b", "?", sql))


def tables(path: Path) -> Tables:
    """Each table's rows and bytes (every column's length summed)."""
    conn = sqlite3.connect(path)
    try:
        names = [
            n
            for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not n.startswith("sqlite_")
        ]
        found: Tables = {}
        for table in names:
            columns = [c[1] for c in conn.execute(f"PRAGMA table_info({table})")]
            length = " + ".join(f"COALESCE(LENGTH({c}), 0)" for c in columns)
            count, size = conn.execute(f"SELECT COUNT(*), SUM({length}) FROM {table}").fetchone()
            found[table] = (count, size or 0)
        return found
    finally:
        conn.close()


def gained(path: Path, before: Tables) -> Tables:
    after = tables(path)
    return {t: (after[t][0] - before[t][0], after[t][1] - before[t][1]) for t in after}


def events(path: Path) -> Counter[str]:
    conn = sqlite3.connect(path)
    try:
        return Counter(t for (t,) in conn.execute("SELECT type FROM audit_events"))
    finally:
        conn.close()


async def cycles_of(
    cycle: Callable[[], Awaitable[object]], trace: Trace, path: Path
) -> tuple[list[str], Tables]:
    """The statements of one cycle after `WARM`, and the rows `CYCLES` more left, with sizes."""
    for _ in range(WARM):
        await cycle()
    trace.on = True
    await cycle()
    trace.on = False
    before = tables(path)
    for _ in range(CYCLES):
        await cycle()
    return trace.statements, gained(path, before)


async def test_the_rows_cycle_makes_batons_statements_and_leaves_its_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    register_minimal()
    baton_db = tmp_path / "baton" / "baton.db"
    settings = Settings(database_url=f"sqlite:///{baton_db}")
    with traced(monkeypatch) as trace:
        async with open_parts(settings) as parts:
            await seed_demo(parts.store, settings.database_url)
            approver = await parts.store.get_user("lee")
            assert approver is not None
            syncs = parts.store.durable_syncs  # type: ignore[attr-defined]

            async def baton() -> None:
                done = await baton_cycle(
                    parts, approver, "bench_minimal", {"amount": 120}, dict(MINIMAL_ANSWER)
                )
                assert done.status == "completed"

            baton_said, baton_left = await cycles_of(baton, trace, baton_db)
            # the pause and the answer wait for the disk; the start and the end ride on them
            synced = parts.store.durable_syncs - syncs  # type: ignore[attr-defined]
            assert synced == 2 * (WARM + 1 + CYCLES)

    rows_db = tmp_path / "rows" / "baton.db"
    rows_db.parent.mkdir()
    with traced(monkeypatch) as trace:
        async with rows_cycle(rows_db.parent) as cycle:
            rows_said, rows_left = await cycles_of(cycle, trace, rows_db)

    # the same statements in the same order: Baton's two connections' and its writer's SAVEPOINTs
    assert [shape(s) for s in rows_said] == [shape(s) for s in baton_said]
    assert sum(s.startswith("BEGIN IMMEDIATE") for s in rows_said) == 4  # its write transactions
    # with values of about the same sizes (the checkpoint compressed, a lease owner's name)
    for mine, batons in zip(rows_said, baton_said, strict=True):
        size, expected = len(plain(mine)), len(plain(batons))
        assert abs(size - expected) <= 0.02 * expected + 8, (plain(mine), plain(batons))
    # and the same rows left, byte for byte the same size: ids and times are of fixed lengths
    assert rows_left == baton_left
    assert [rows_left[t][0] for t in ("runs", "human_requests", "answers")] == [CYCLES] * 3
    assert rows_left["checkpoints"][0] == rows_left["jobs"][0] == 0  # pruned, done as they end
    assert events(rows_db) == events(baton_db)
