"""The bench's `baton_rows` cycle writes what Baton's minimal cycle writes, and nothing less.

`baton_rows` stands for Baton's rows and commits without its layers (`baton.bench_rows`), so its
figures mean something only while it writes Baton's rows: the same rows in every table Baton
writes, byte for byte the same size. When Baton's minimal cycle comes to write another row (an audit
event, a transcript entry, a job), this fails until `baton_rows` writes it too.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

from baton.bench import MINIMAL_ANSWER, register_minimal
from baton.bench_peers import baton_cycle
from baton.bench_rows import rows_cycle
from baton.demo import seed_demo
from baton.settings import Settings
from baton.wiring import open_parts

CYCLES = 3
TABLES = (
    "runs",
    "human_requests",
    "answers",
    "audit_events",
    "run_transcript",
    "checkpoints",
    "jobs",
    "schemas",
    "notifications",
    "effects",
)


Tables = dict[str, tuple[int, int]]


def _tables(path: Path) -> Tables:
    """Each table's rows and bytes (every column's length summed)."""
    conn = sqlite3.connect(path)
    try:
        tables: Tables = {}
        for table in TABLES:
            columns = [c[1] for c in conn.execute(f"PRAGMA table_info({table})")]
            length = " + ".join(f"COALESCE(LENGTH({c}), 0)" for c in columns)
            count, size = conn.execute(f"SELECT COUNT(*), SUM({length}) FROM {table}").fetchone()
            tables[table] = (count, size or 0)
        return tables
    finally:
        conn.close()


def _written(path: Path, before: Tables) -> tuple[dict[str, int], dict[str, int], Counter[str]]:
    """Rows and bytes each table gained since `before`, and the audit events by type."""
    after = _tables(path)
    rows = {t: after[t][0] - before[t][0] for t in TABLES}
    sizes = {t: after[t][1] - before[t][1] for t in TABLES}
    conn = sqlite3.connect(path)
    try:
        events = Counter(t for (t,) in conn.execute("SELECT type FROM audit_events"))
    finally:
        conn.close()
    return rows, sizes, events


async def test_the_rows_cycle_writes_what_batons_minimal_cycle_writes(tmp_path: Path) -> None:
    register_minimal()
    baton_db = tmp_path / "baton" / "baton.db"
    settings = Settings(database_url=f"sqlite:///{baton_db}")
    async with open_parts(settings) as parts:
        await seed_demo(parts.store, settings.database_url)
        approver = await parts.store.get_user("lee")
        assert approver is not None
        seeded = _tables(baton_db)
        syncs = parts.store.durable_syncs  # type: ignore[attr-defined]
        for _ in range(CYCLES):
            done = await baton_cycle(
                parts, approver, "bench_minimal", {"amount": 120}, dict(MINIMAL_ANSWER)
            )
            assert done.status == "completed"
        # the pause and the answer wait for the disk; the start and the end ride on them
        assert parts.store.durable_syncs - syncs == 2 * CYCLES  # type: ignore[attr-defined]
    baton_rows, baton_sizes, baton_events = _written(baton_db, seeded)

    rows_folder = tmp_path / "rows"
    rows_folder.mkdir()
    async with rows_cycle(rows_folder) as cycle:
        seeded = _tables(rows_folder / "baton.db")
        for _ in range(CYCLES):
            await cycle()
    rows_rows, rows_sizes, rows_events = _written(rows_folder / "baton.db", seeded)

    assert rows_rows == baton_rows
    assert baton_rows["runs"] == baton_rows["human_requests"] == baton_rows["answers"] == CYCLES
    assert baton_rows["checkpoints"] == baton_rows["jobs"] == 0  # pruned and done as they end
    assert rows_events == baton_events
    assert rows_sizes == baton_sizes  # byte for byte: ids and times are of fixed lengths
