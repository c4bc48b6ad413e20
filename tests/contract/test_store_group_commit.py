"""SQLite group commit: writes queued together share one FULL commit, each still all or nothing.

The store's writer thread takes every write transaction queued when it looks and commits them
under one `synchronous=FULL` COMMIT (one fsync of the WAL), each in a SAVEPOINT of its own. The
tests hold the writer on a first transaction (a `wrap_writes` gate on its thread) until the
others are queued, so that what makes a batch is the queue, never timing; then they count the
store's durable syncs exactly, and fail one transaction inside a batch.

A write that need not wait for the disk (a start, a drive's end) runs on the caller's thread
when no other write is queued or under way; the last tests show where each write ran, and that
one meeting the write lock taken by another connection waits on the writer, not the event loop.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Sequence
from pathlib import Path
from typing import TypeVar

import pytest

from baton.bench import MINIMAL_ANSWER, register_minimal
from baton.demo import seed_demo
from baton.errors import StoreError, StoreUnavailable
from baton.settings import Settings
from baton.wiring import Parts, open_parts
from human.records import NewEvent, Run, User
from human.service import RespondResult
from human.store.base import RequestFilter
from human.store.dialect import Tx
from human.store.sqlite import SqliteStore
from tests.contract.test_store import a_run, started
from tests.faults import InjectedFault, Statements

T = TypeVar("T")
RUNS = 32
REPO = Path(__file__).resolve().parents[2]


def begun(run: Run) -> list[NewEvent]:
    return [NewEvent(type="run.started", run_id=run.id, actor="sam")]


class Gate:
    """`wrap_writes` that holds the writer thread in the first transaction until `open()`.

    Counts the transactions it sees; with `fail` set, the transaction numbered so (from 1)
    fails after its first statement, as `tests.faults.Statements` does.
    """

    def __init__(self, *, fail: int | None = None) -> None:
        self.transactions = 0
        self.entered = threading.Event()
        self._opened = threading.Event()
        self._fail = fail

    def open(self) -> None:
        self._opened.set()

    def __call__(self, tx: Tx) -> Tx:
        self.transactions += 1
        if self.transactions == 1:
            self.entered.set()
            self._opened.wait(timeout=60)
        if self.transactions == self._fail:
            return Statements(fail_after=1)(tx)
        return tx


async def held_then_queued(
    store: SqliteStore, gate: Gate, first: Awaitable[T], rest: Sequence[Awaitable[T]]
) -> list[T | BaseException]:
    """`first` holds the writer in `gate` while all of `rest` queue behind it; then all run.

    Nothing is timed: the test waits for the gate to be entered, then for the queue to hold
    every other write, and only then lets the writer go on.
    """
    held = asyncio.ensure_future(first)
    await asyncio.to_thread(gate.entered.wait, 60)
    others = [asyncio.ensure_future(write) for write in rest]
    while store.writes_queued < len(others):
        await asyncio.sleep(0.001)
    gate.open()
    done = await asyncio.gather(held, *others, return_exceptions=True)
    store.wrap_writes = None
    return done


@pytest.fixture
async def parts(tmp_path: Path) -> AsyncIterator[Parts]:
    register_minimal()
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'baton.db'}")
    async with open_parts(settings, local_worker=False) as opened:  # runs driven when told
        await seed_demo(opened.store, settings.database_url)
        yield opened


async def test_answers_given_at_once_share_one_durable_sync(parts: Parts) -> None:
    store = parts.store
    assert isinstance(store, SqliteStore)
    approver = await store.get_user("lee")
    assert isinstance(approver, User)
    runs = [
        await parts.runtime.start("bench_minimal", {"amount": n}, actor="sam") for n in range(RUNS)
    ]
    await parts.worker.run_until_idle()
    pending = (await parts.requests.list(RequestFilter(status="pending", limit=100))).items
    assert len(pending) == RUNS

    gate = Gate()
    store.wrap_writes = gate
    syncs = store.durable_syncs
    answers = [
        parts.requests.respond(r.id, dict(MINIMAL_ANSWER), responder=approver) for r in pending
    ]
    outcomes = await held_then_queued(store, gate, answers[0], answers[1:])

    assert gate.transactions == RUNS  # one write transaction per answer
    assert store.durable_syncs - syncs == 2  # the first alone, then the other 31 as one
    assert all(isinstance(o, RespondResult) and o.changed for o in outcomes)
    await parts.worker.run_until_idle()
    assert {(await parts.runtime.get(run.id)).status for run in runs} == {"completed"}


async def test_a_transaction_failing_inside_a_batch_is_absent_and_the_others_commit(
    tmp_path: Path,
) -> None:
    store = await SqliteStore.open(f"sqlite:///{tmp_path / 'batch.db'}")
    try:
        gate = Gate(fail=3)  # the first holds the writer; the third fails within the batch
        store.wrap_writes = gate
        syncs = store.durable_syncs
        wanted = [a_run() for _ in range(5)]
        writes = [store.create_run(run, begun(run)) for run in wanted]
        # A team's write waits for the disk, so it goes to the writer thread, where the gate
        # holds it; the starts, which need not wait, queue behind it rather than run at once.
        [held, *done] = await held_then_queued(store, gate, store.add_team("holder"), writes)

        assert held is True
        assert [type(d) for d in done].count(InjectedFault) == 1
        [failed] = [run for run, d in zip(wanted, done, strict=True) if isinstance(d, Exception)]
        assert await store.get_run(failed.id) is None  # wholly absent: no row of it
        assert await store.list_events(run_id=failed.id) == []
        for run in wanted:
            if run is not failed:
                assert await store.get_run(run.id) is not None
                assert len(await store.list_events(run_id=run.id)) == 1
        # The team alone, then the starts as one batch at NORMAL (a start's pause syncs it).
        assert store.durable_syncs - syncs == 1

        # The batch's own connection goes on: the next write commits on it as before.
        await started(store)
    finally:
        await store.close()


async def test_an_error_of_one_transaction_in_a_batch_stays_its_own(tmp_path: Path) -> None:
    store = await SqliteStore.open(f"sqlite:///{tmp_path / 'dup.db'}")
    try:
        run = await started(store)
        gate = Gate()
        store.wrap_writes = gate
        syncs = store.durable_syncs
        done = await held_then_queued(
            store,
            gate,
            store.add_team("first"),
            [store.add_team("second"), store.create_run(run, []), store.add_team("third")],
        )

        assert isinstance(done[2], StoreError)  # the duplicate key: the call's own error
        assert not isinstance(done[2], StoreUnavailable)
        assert done[:2] + done[3:] == [True, True, True]
        assert {"first", "second", "third"} <= {team.name for team in await store.list_teams()}
        assert store.durable_syncs - syncs == 2  # the first alone, then the batch as one
    finally:
        await store.close()


async def test_closing_waits_for_the_writes_queued_and_takes_no_more(tmp_path: Path) -> None:
    store = await SqliteStore.open(f"sqlite:///{tmp_path / 'close.db'}")
    gate = Gate()
    store.wrap_writes = gate
    names = ["first", "second", "third"]
    closing: list[asyncio.Future[None]] = []

    async def then_close() -> bool:
        closing.append(asyncio.ensure_future(store.close()))
        await asyncio.sleep(0)  # the close queues its last work
        return await store.add_team("third")

    writes = [store.add_team("second"), then_close()]
    done = await held_then_queued(store, gate, store.add_team("first"), writes)

    assert done[:2] == [True, True]
    assert isinstance(done[2], RuntimeError)  # queued after the close: refused, not lost
    await closing[0]
    reopened = await SqliteStore.open(f"sqlite:///{tmp_path / 'close.db'}")
    try:
        assert {t.name for t in await reopened.list_teams()} >= set(names[:2])
    finally:
        await reopened.close()


async def test_a_write_whose_caller_is_cancelled_while_queued_is_not_begun(tmp_path: Path) -> None:
    store = await SqliteStore.open(f"sqlite:///{tmp_path / 'cancel.db'}")
    try:
        gate = Gate()
        store.wrap_writes = gate
        held = asyncio.ensure_future(store.add_team("first"))
        await asyncio.to_thread(gate.entered.wait, 60)
        queued = [asyncio.ensure_future(store.add_team(n)) for n in ("second", "gone", "third")]
        while store.writes_queued < len(queued):
            await asyncio.sleep(0.001)
        queued[1].cancel()  # its caller goes away while the writer is held
        gate.open()
        done = await asyncio.gather(held, *queued, return_exceptions=True)

        assert [done[0], done[1], done[3]] == [True, True, True]
        assert isinstance(done[2], asyncio.CancelledError)
        assert gate.transactions == 3  # "gone" never ran
        names = {team.name for team in await store.list_teams()}
        assert {"first", "second", "third"} <= names
        assert "gone" not in names
    finally:
        await store.close()


class Threads:
    """`wrap_writes` noting the thread each write transaction runs on, in order."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def __call__(self, tx: Tx) -> Tx:
        self.names.append(threading.current_thread().name)
        return tx


async def test_a_write_that_need_not_wait_runs_on_the_callers_thread_one_that_waits_on_the_writer(
    tmp_path: Path,
) -> None:
    store = await SqliteStore.open(f"sqlite:///{tmp_path / 'here.db'}")
    try:
        store.wrap_writes = seen = Threads()
        syncs = store.durable_syncs
        run = await started(store)  # a start: its pause will make it durable
        await store.add_team("leads")  # waits for the disk
        run_again = await started(store)

        here = threading.current_thread().name
        assert seen.names == [here, "baton-sqlite", here]
        assert store.durable_syncs - syncs == 1  # the team's alone
        assert await store.get_run(run.id) is not None
        assert await store.get_run(run_again.id) is not None
        assert "leads" in {team.name for team in await store.list_teams()}
    finally:
        await store.close()


async def test_a_write_here_that_fails_leaves_nothing_and_the_next_goes_on(tmp_path: Path) -> None:
    store = await SqliteStore.open(f"sqlite:///{tmp_path / 'here-fails.db'}")
    try:
        store.wrap_writes = Statements(fail_after=2)  # after the run's row, before its event
        run = a_run()
        with pytest.raises(InjectedFault):
            await store.create_run(run, begun(run))
        store.wrap_writes = None
        assert await store.get_run(run.id) is None
        assert await store.list_events(run_id=run.id) == []

        again = await started(store)
        with pytest.raises(StoreError) as refused:  # its id taken: the call's own error
            await store.create_run(again, [])
        assert not isinstance(refused.value, StoreUnavailable)
        assert len(await store.list_events(run_id=again.id)) == 1
    finally:
        await store.close()


async def test_a_start_meeting_the_write_lock_held_waits_on_the_writer_and_the_loop_goes_on(
    tmp_path: Path,
) -> None:
    path = tmp_path / "locked.db"
    store = await SqliteStore.open(f"sqlite:///{path}")
    other = sqlite3.connect(path, isolation_level=None)  # as another process's connection
    try:
        store.wrap_writes = seen = Threads()
        await started(store)  # opens the connection of the writes that need not wait
        assert store._conn_here is not None
        # It waits for no lock and no disk (synchronous=NORMAL is 1).
        assert store._conn_here.execute("PRAGMA busy_timeout").fetchone()[0] == 0
        assert store._conn_here.execute("PRAGMA synchronous").fetchone()[0] == 1

        other.execute("BEGIN IMMEDIATE")
        run = a_run()
        loop = asyncio.get_running_loop()
        began = loop.time()
        write = asyncio.ensure_future(store.create_run(run, begun(run)))
        for _ in range(20):  # had the start waited for the lock here, nothing else would run
            await asyncio.sleep(0.005)
        assert loop.time() - began < 10  # far under the writer's 30 s wait for the lock
        assert not write.done()
        other.execute("COMMIT")
        await write

        here = threading.current_thread().name
        assert seen.names == [here, "baton-sqlite"]
        assert await store.get_run(run.id) is not None
        await started(store)  # the lock free, a start runs here again
        assert seen.names == [here, "baton-sqlite", here]
    finally:
        other.close()
        await store.close()


async def test_after_a_batch_of_several_a_start_goes_to_the_writer_till_one_writes_alone(
    tmp_path: Path,
) -> None:
    store = await SqliteStore.open(f"sqlite:///{tmp_path / 'several.db'}")
    try:
        gate = Gate()
        store.wrap_writes = gate
        teams = [store.add_team("second"), store.add_team("third")]
        assert await held_then_queued(store, gate, store.add_team("first"), teams) == [True] * 3

        store.wrap_writes = seen = Threads()
        await started(store)  # several wrote at once a moment ago: it joins the writer's batches
        await started(store)  # the writer's last batch held one: it runs here
        assert seen.names == ["baton-sqlite", threading.current_thread().name]
    finally:
        await store.close()


NO_NEW_FILE = """
import asyncio, os, resource, sys
from human.store.sqlite import SqliteStore

def no_new_file():
    # Every descriptor below the limit taken, the limit set there: no file can be opened more,
    # as no file can be made where every temporary folder is read-only.
    top = max(int(fd) for fd in os.listdir("/proc/self/fd"))
    held = [os.open(os.devnull, os.O_RDONLY)]
    while held[-1] < top:
        held.append(os.open(os.devnull, os.O_RDONLY))
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (held[-1] + 1, hard))
    try:
        os.open(os.devnull, os.O_RDONLY)
    except OSError:
        return
    raise AssertionError("a file could still be opened")

async def main(path):
    store = await SqliteStore.open(f"sqlite:///{path}")
    async def fill(tx):
        await tx.run("CREATE TABLE scratch (n INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        for _ in range(400):
            await tx.run("INSERT INTO scratch (body) VALUES (:body)", body="x" * 1000)
        return 400
    async def grow(tx):  # rewrites about a hundred pages in the writer's SAVEPOINT
        return await tx.run("UPDATE scratch SET body = body || 'y'")
    async def shrink(tx):
        return await tx.run("UPDATE scratch SET body = substr(body, 2)")
    async def one(tx):
        return await tx.run("UPDATE scratch SET body = body WHERE n = 1")
    try:
        filled = await store._write_tx(fill)
        await store._write_tx(one, durable=False)  # the caller's-thread connection opened
        no_new_file()
        print(filled, await store._write_tx(grow), await store._write_tx(shrink, durable=False))
    finally:
        await store.close()

asyncio.run(main(sys.argv[1]))
"""


def test_a_write_that_changes_many_pages_needs_no_temporary_file(tmp_path: Path) -> None:
    # Such a write's savepoint journal spilled past 64 KiB to a file in SQLite's temporary
    # folder, and failed the commit where none could be made (a read-only /var/tmp, /tmp, …).
    # The child stands for that by opening no file more once its store's connections are open.
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", NO_NEW_FILE, str(tmp_path / "no-temp.db")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["400", "400", "400"]


async def test_each_connection_of_the_store_keeps_temporary_data_in_memory(tmp_path: Path) -> None:
    store = await SqliteStore.open(f"sqlite:///{tmp_path / 'temp.db'}")
    try:
        await started(store)  # the caller's-thread connection
        await store.add_team("leads")  # the writer's
        await store.list_teams()  # the reader's
        connections = [store._conn_here, store._conn_now, store._reader]
        assert all(conn is not None for conn in connections)
        # 2: MEMORY (0 would be the build's default, a file)
        assert [c.execute("PRAGMA temp_store").fetchone()[0] for c in connections] == [2, 2, 2]
    finally:
        await store.close()
