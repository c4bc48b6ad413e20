"""The bench's `baton_rows` cycle makes the statements Baton's minimal cycle makes, and its rows.

`baton_rows` stands for Baton's statements and commits without its layers (`baton.bench_rows`),
so its figures mean something only while it does what Baton's cycle does at the database: the
same statements, as written, in the same order and transactions, each on a connection as
durable as Baton's, with values of about the same sizes, leaving the same rows. When Baton's
minimal cycle comes to make another statement (an audit event, a read, a job), or to drop one,
this fails until `baton_rows` does so too.
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


class Recorder:
    """What the connections opened while it is installed run, as written and as SQLite ran it.

    `said`: each `execute` and `executemany` of a traced cycle, its SQL as written (placeholders
    aside) beside the durability of the connection it ran on (its last `PRAGMA synchronous`).
    `ran`: SQLite's trace of the same, each statement with its values in it (for their sizes).
    """

    def __init__(self) -> None:
        self.on = False
        self.said: list[tuple[str | None, str]] = []
        self.ran: list[str] = []


RECORDER: Recorder | None = None


class Recording(sqlite3.Connection):
    """A connection that tells the installed `Recorder` what it is asked to run."""

    level: str | None = None

    def _note(self, sql: str) -> None:
        if found := re.match(r"PRAGMA synchronous=(\w+)", sql):
            self.level = found[1]
        if RECORDER is not None and RECORDER.on:
            RECORDER.said.append((self.level, re.sub(r":\w+", ":?", plain(sql))))

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        self._note(sql)
        return super().execute(sql, *args)

    def executemany(self, sql: str, *args: Any) -> sqlite3.Cursor:
        self._note(sql)
        return super().executemany(sql, *args)


@contextmanager
def recorded(monkeypatch: pytest.MonkeyPatch) -> Iterator[Recorder]:
    global RECORDER
    recorder = RECORDER = Recorder()
    connect = sqlite3.connect

    def connect_recorded(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = connect(*args, factory=Recording, **kwargs)
        conn.set_trace_callback(lambda sql: recorder.ran.append(sql) if recorder.on else None)
        return conn

    try:
        with monkeypatch.context() as patch:
            patch.setattr(sqlite3, "connect", connect_recorded)
            yield recorder
    finally:
        RECORDER = None


def plain(sql: str) -> str:
    """A statement with its spacing made plain (the store lays some out on several lines)."""
    return re.sub(r"\s*([(),])\s*", r"\1", re.sub(r"\s+", " ", sql)).strip()


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
    cycle: Callable[[], Awaitable[object]], recorder: Recorder, path: Path
) -> Tables:
    """One cycle recorded after `WARM`; the rows `CYCLES` more leave, with their sizes."""
    for _ in range(WARM):
        await cycle()
    recorder.on = True
    await cycle()
    recorder.on = False
    before = tables(path)
    for _ in range(CYCLES):
        await cycle()
    return gained(path, before)


async def test_the_rows_cycle_makes_batons_statements_and_leaves_its_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    register_minimal()
    baton_db = tmp_path / "baton" / "baton.db"
    settings = Settings(database_url=f"sqlite:///{baton_db}")
    with recorded(monkeypatch) as baton:
        async with open_parts(settings) as parts:
            await seed_demo(parts.store, settings.database_url)
            approver = await parts.store.get_user("lee")
            assert approver is not None
            syncs = parts.store.durable_syncs  # type: ignore[attr-defined]

            async def baton_one() -> None:
                done = await baton_cycle(
                    parts, approver, "bench_minimal", {"amount": 120}, dict(MINIMAL_ANSWER)
                )
                assert done.status == "completed"

            baton_left = await cycles_of(baton_one, baton, baton_db)
            # the pause and the answer wait for the disk; the start and the end ride on them
            synced = parts.store.durable_syncs - syncs  # type: ignore[attr-defined]
            assert synced == 2 * (WARM + 1 + CYCLES)

    rows_db = tmp_path / "rows" / "baton.db"
    rows_db.parent.mkdir()
    with recorded(monkeypatch) as rows:
        async with rows_cycle(rows_db.parent) as cycle:
            rows_left = await cycles_of(cycle, rows, rows_db)

    # The same statements, as written, in the same order, each on a connection as durable as
    # Baton's: the start and the end NORMAL, the pause and the answer (in their SAVEPOINTs) FULL.
    pairs = enumerate(zip(rows.said, baton.said, strict=False))
    differ = [(n, *pair) for n, pair in pairs if len(set(pair)) > 1]
    assert not differ, differ[:5]  # (where, baton_rows', Baton's): all of them, to mend at once
    assert len(rows.said) == len(baton.said)
    commits = [level for level, sql in rows.said if sql == "COMMIT"]
    assert commits == ["NORMAL", "FULL", "FULL", "FULL", "FULL", "NORMAL", "FULL"]  # 3 reads
    # with values of about the same sizes (a compressed checkpoint, a lease owner's name)
    assert len(rows.ran) == len(baton.ran)
    for mine, batons in zip(rows.ran, baton.ran, strict=True):
        size, expected = len(plain(mine)), len(plain(batons))
        assert abs(size - expected) <= 0.02 * expected + 8, (plain(mine), plain(batons))
    # and the same rows left, every table of the same total size: ids and times are fixed lengths
    assert rows_left == baton_left
    assert [rows_left[t][0] for t in ("runs", "human_requests", "answers")] == [CYCLES] * 3
    assert rows_left["checkpoints"][0] == rows_left["jobs"][0] == 0  # pruned, done as they end
    assert events(rows_db) == events(baton_db)
