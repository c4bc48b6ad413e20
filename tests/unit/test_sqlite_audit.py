"""SQLite keeps audit history append-only even against a raw connection (its triggers)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from human.records import NewEvent, Run
from human.store import open_store

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


async def test_audit_events_refuse_update_and_delete_through_a_raw_connection(
    tmp_path: Path,
) -> None:
    path = tmp_path / "x.db"
    store = await open_store(f"sqlite:///{path}")
    try:
        run = Run(
            id="run_1", workflow="refund", input={}, status="running", created_at=T0, updated_at=T0
        )
        await store.create_run(run, [NewEvent(type="run.started", run_id=run.id, actor="sam")])
        before = await store.list_events(run_id=run.id)
    finally:
        await store.close()

    conn = sqlite3.connect(path)
    try:
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            conn.execute("UPDATE audit_events SET actor = 'mallory'")
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            conn.execute("DELETE FROM audit_events")
        conn.execute(
            "INSERT INTO audit_events (type, at, run_id, actor, data) "
            "VALUES ('run.cancelled', ?, 'run_1', 'ada', '{}')",
            (T0.isoformat(),),
        )
        conn.commit()
    finally:
        conn.close()

    store = await open_store(f"sqlite:///{path}")
    try:
        after = await store.list_events(run_id=run.id)
    finally:
        await store.close()
    assert after[:1] == before
    assert [e.type for e in after] == ["run.started", "run.cancelled"]
