"""SQLite backend: WAL, `synchronous=FULL`, one writer thread, group commit, one hop per write.

All statements of a write transaction run in one function, on the store's writer thread for a
write that waits for the disk, so a pause or an answer costs one hop and at most one fsync'd
commit however many rows it writes, and the event loop is free while the disk syncs (a write that
waits for no disk may run on the caller's thread, below). Reads are short indexed lookups that
WAL never blocks: they run on the event loop's own connection, which costs less than a thread
hop. Several processes may share the file: writers take `BEGIN IMMEDIATE` and wait on
`busy_timeout`.

**Group commit.** Callers queue their transactions; the writer thread takes every transaction
queued when it looks and runs them as one batch: one `BEGIN IMMEDIATE`, each transaction in a
`SAVEPOINT` of its own, one COMMIT, at `synchronous=FULL` if any of them is durable (NORMAL if
none is). So concurrent pauses and answers share one fsync of the WAL, and a single write alone
commits exactly as before. Each caller's future is resolved only after that COMMIT returns, a
failure too (it may rest on an earlier transaction of the batch, say a key taken, which its
caller then reads). The queue fills by itself while the last batch syncs; when the last batch
held more than one transaction (several writers are active), the writer also waits
`batch_window_s` (0.5 ms) for more before it begins. Measured with 32 runs in flight
(`baton.bench_concurrent`, interleaved, load 11 on 2 cores): 0.42-0.45 fsyncs per cycle with the
window against 0.51-0.54 without, and no fewer cycles per second (1 ms gave no more). A lone
writer never waits: its batches hold one transaction.

Why savepoints in one transaction rather than a NORMAL commit per transaction closed by one
FULL commit: with savepoints there is exactly one commit, so there is no window in which a
transaction is visible to other connections (and readable by other processes) while its caller
would still be told it failed. Each transaction keeps its own atomicity: one that raises (its
own error, a constraint) is rolled back to its savepoint alone, and the others of its batch
commit. Isolation is the serial order of the batch, as one writer at a time always gave. If the
COMMIT fails, nothing of the batch is in the database and every caller of it gets the error
(`StoreUnavailable` for the file's condition): none is told durable. If a transaction meets the
file unavailable (full, read-only, I/O error) or SQLite rolls the whole transaction back, those of
the batch already run went with it and fail (`StoreUnavailable`, try again); those not yet run are
run next on a fresh connection. A batch is made of what is already queued, never of what arrives
during it, so a transaction waits at most one batch behind another.

**A write that need not wait for the disk runs on the caller's thread** when no other write of this
process is queued or under way and the writer's last batch held at most one: a run's start and a
drive's end (`durable=False`) cost no hop. Where several callers write at once, they go to the
writer thread as before, and keep sharing its batches and their fsyncs. Such a write takes a
connection of its own, at `synchronous=NORMAL` for good (no pragma switched per commit), that never
waits for the write lock: if another process holds it, the write goes to the writer thread, which
waits on `busy_timeout` in the event loop's stead. One lock keeps this store's writes one at a time,
so they still commit in one serial order. A write that waits for the disk always goes to the writer
thread, so its fsync never holds the event loop; a write here syncs only the log's header, when it
is the first to write after a checkpoint emptied the log (SQLite does so at NORMAL: at most once a
checkpoint, about 170 minimal cycles), and the connection checkpoints only past four times the
writer's threshold, which the writer's commits reach first. Measured in ten alternated pairs of
children of 2,000 minimal cycles (load 0.6 to 1.7), a cycle took 8 % less CPU (the median; nine
pairs of ten less), and a refund cycle about 4 % less (the median of twelve pairs of 800 cycles,
eight less); with 32 runs in flight the durable commits a cycle stayed as they were (0.209).

The transactions themselves are `human.store.transactions`, written once for every backend as
`async` functions of a `Tx`. Here a `Tx` calls sqlite3 at once and never suspends, so a whole
transaction runs, in one go, on the thread that starts it (`_finish`). What is SQLite's own:
connections and the writer thread, leasing jobs under the one writer, polling for `watch` and
`wait_for_jobs` (no other process can signal this one), migrations and the file's size.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
import time
from collections import deque
from collections.abc import AsyncGenerator, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final, Generic, TypeVar

from baton.errors import StoreError, StoreUnavailable
from human.records import AuditEvent, Job, JobLane
from human.store.base import utcnow
from human.store.dialect import SQLITE
from human.store.rows import event_of, job_of, plan_lease
from human.store.schema import migrations
from human.store.transactions import DRIVE, SqlStore, TxFn, lane_filter

T = TypeVar("T")

WATCH_POLL_S: Final = 0.2
WAL_CHECKPOINT_PAGES: Final = 8192

# The file's condition, not the call's: full, read-only, locked past the busy timeout, not openable,
# failing I/O. The same call may succeed once it passes.
_UNAVAILABLE: Final = frozenset(
    {
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_IOERR,
    }
)


def _unavailable(exc: BaseException) -> bool:
    """Whether a sqlite3 error is the file's condition rather than the call's (by its code)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in _UNAVAILABLE


def _busy(exc: BaseException) -> bool:
    """Whether a sqlite3 error is the write lock (or the log's) held elsewhere."""
    return getattr(exc, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_BUSY


def _failure(exc: sqlite3.Error) -> StoreError:
    """A sqlite3 error as Baton's: `StoreUnavailable` for the file's condition."""
    if _unavailable(exc):
        return StoreUnavailable(f"sqlite: the database is unavailable ({exc}); try again")
    return StoreError(f"sqlite: {exc}")


def _close_quietly(conn: sqlite3.Connection | None) -> None:
    """Close `conn`, if there is one; a connection that fails to close is dropped all the same."""
    if conn is not None:
        with contextlib.suppress(sqlite3.Error):
            conn.close()


def _roll_back(conn: sqlite3.Connection) -> None:
    """Roll back what a failed transaction left open (a failed COMMIT leaves it open).

    After SQLITE_FULL, SQLITE_IOERR or SQLITE_BUSY SQLite may have rolled back by itself: then
    there is nothing to roll back, and a ROLLBACK would fail in place of the real error.
    """
    if conn.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


class _Tx:
    """A `Tx` on a sqlite3 connection: each statement runs when called."""

    dialect = SQLITE

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    async def one(self, sql: str, /, **params: Any) -> sqlite3.Row | None:
        cursor = self._conn.execute(*SQLITE.bind(sql, params))
        row: sqlite3.Row | None = cursor.fetchone()
        cursor.close()  # ends the statement (an INSERT … RETURNING one row included)
        return row

    async def all(self, sql: str, /, **params: Any) -> list[sqlite3.Row]:
        return self._conn.execute(*SQLITE.bind(sql, params)).fetchall()

    async def run(self, sql: str, /, **params: Any) -> int:
        return self._conn.execute(*SQLITE.bind(sql, params)).rowcount

    async def many(self, sql: str, rows: Sequence[Mapping[str, Any]], /) -> None:
        self._conn.executemany(*SQLITE.bind_many(sql, rows))


def _finish(transaction: Coroutine[Any, Any, T]) -> T:
    """Run a transaction to its end, here and now: it awaits only `_Tx` calls, none suspends."""
    try:
        transaction.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    transaction.close()
    raise RuntimeError("a SQLite transaction awaited something other than its Tx")


class SqliteStore(SqlStore):
    """The `Store` on one SQLite file."""

    dialect = SQLITE
    max_batch: int = 256
    """The most write transactions one batch takes: one batch holds the write lock briefly."""
    batch_window_s: float = 0.0005
    """How long the writer waits for more before a batch, when the last batch had more than one."""

    def __init__(self, path: Path, *, clock: Callable[[], datetime] = utcnow) -> None:
        self.path = path
        self._clock = clock
        self._reader: sqlite3.Connection | None = None
        self._queue: deque[_Work[Any]] = deque()
        self._queued = threading.Condition()
        self._writer: threading.Thread | None = None  # started by the first write
        self._closed = False
        self._conn_now: sqlite3.Connection | None = None  # the writer thread's alone
        self._conn_here: sqlite3.Connection | None = None  # non-durable writes' on the caller's
        self._one_writer = threading.Lock()  # held by whichever thread is writing
        self._last_batch = 0
        self._told: list[_Outcome] = []  # the writer's outcomes, told its callers after the lock
        self.durable_syncs = 0
        """FULL commits so far, each one fsync of the WAL (tests and benchmarks count them)."""

    @classmethod
    async def open(cls, url: str, *, clock: Callable[[], datetime] = utcnow) -> SqliteStore:
        """Open (creating) the file named by a `sqlite:///path` URL and migrate it."""
        path = Path(url.removeprefix("sqlite:///"))
        path.parent.mkdir(parents=True, exist_ok=True)
        store = cls(path, clock=clock)
        await store.setup()
        return store

    @property
    def writes_queued(self) -> int:
        """Write transactions waiting for the writer thread (the next batch, so far)."""
        return len(self._queue)

    # plumbing -------------------------------------------------------------------------------

    def _connect(self, *, here: bool = False) -> sqlite3.Connection:
        """A connection; `here`: for non-durable writes on the caller's thread (`_write_here`)."""
        conn = sqlite3.connect(
            self.path, isolation_level=None, timeout=0.0 if here else 30.0, check_same_thread=False
        )
        conn.row_factory = sqlite3.Row
        conn.create_function("baton_clock", 0, time.time)  # the dialect's clock
        try:
            conn.execute(f"PRAGMA busy_timeout={0 if here else 30000}")
            # Switching a fresh file to WAL while another process does can be refused at once
            # (SQLITE_BUSY without the busy handler); it succeeds once the other switch is done.
            # The caller's thread tries once (its write then goes to the writer thread).
            tries = 1 if here else 100
            for attempt in range(tries):
                try:
                    conn.execute("PRAGMA journal_mode=WAL")
                    break
                except sqlite3.OperationalError:
                    if attempt == tries - 1:
                        raise
                    time.sleep(0.05)
            conn.execute(f"PRAGMA synchronous={'NORMAL' if here else 'FULL'}")
            # A WAL checkpoint syncs the log and the file (two fsyncs): at SQLite's default of
            # every 1,000 pages that was a seventh of an fsync per cycle; every 8,192 pages (32 MB
            # of log) it is a fiftieth, and the log is cut back to that size after each. The
            # caller's connection leaves it to the writer's commits, and checkpoints only past
            # four times that, should a process write nothing durable for so long.
            pages = WAL_CHECKPOINT_PAGES * (4 if here else 1)
            conn.execute(f"PRAGMA wal_autocheckpoint={pages}")
            conn.execute(f"PRAGMA journal_size_limit={WAL_CHECKPOINT_PAGES * 4096}")
            conn.execute("PRAGMA foreign_keys=ON")
            # A write of the writer's batches runs in a SAVEPOINT, whose journal of the pages it
            # changes that existed before it spills to a file in SQLite's temporary folder past
            # 64 KiB (16 pages: many a minimal cycle's pause, once the file has grown). Kept in
            # memory, no write needs a writable /var/tmp (or /tmp, …), and none opens, fills and
            # deletes a file as it commits. Sorts and temporary tables stay in memory too:
            # Baton's reads are indexed and paged, but a migration that builds an index on a
            # large table sorts it in memory.
            conn.execute("PRAGMA temp_store=MEMORY")
        except BaseException:
            conn.close()
            raise
        return conn

    async def _run(
        self, fn: Callable[[sqlite3.Connection], T], *, write: bool, durable: bool = True
    ) -> T:
        # A connection that met the file unavailable, or could not roll back, is not used again:
        # a new one sees the file as it is then (a connection opened on a read-only file stays
        # read-only after the file is writable again).
        if not write:
            try:
                if self._reader is None:
                    self._reader = self._connect()
                return _in_transaction(self._reader, "BEGIN", fn)
            except sqlite3.Error as exc:
                if self._reader is not None and (self._reader.in_transaction or _unavailable(exc)):
                    self._reader.close()
                    self._reader = None
                raise _failure(exc) from exc
        if not durable:
            done = self._write_here(fn)
            if not isinstance(done, _ToWriter):
                return done
        return await self._on_writer(_Work(fn, durable=durable))

    def _write_here(self, fn: Callable[[sqlite3.Connection], T]) -> T | _ToWriter:
        """A write that need not wait for the disk, run now on this thread when it may be.

        Returns `_TO_WRITER`, having run nothing (or nothing that stayed), when other writes are
        queued or under way in this store (the writer thread takes them in turn), the writer's
        last batch held more than one (several callers are writing: this one joins their
        batches, and their fsyncs), the store is closing, or another process holds the write
        lock (the writer thread waits for it, the event loop must not).
        """
        if self._queue or self._last_batch > 1 or not self._one_writer.acquire(blocking=False):
            return _TO_WRITER
        try:
            if self._queue or self._closed:
                return _TO_WRITER
            try:
                if self._conn_here is None:
                    self._conn_here = self._connect(here=True)
                self._conn_here.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                if _busy(exc):
                    return _TO_WRITER
                self._close_conn_here()
                raise _failure(exc) from exc
            conn = self._conn_here
            try:
                result = fn(conn)
                conn.execute("COMMIT")
            except BaseException as exc:
                _roll_back(conn)
                if conn.in_transaction:  # not rolled back: closing the connection does it
                    self._close_conn_here()
                if not isinstance(exc, sqlite3.Error):
                    raise
                if _busy(exc):  # nothing of it stayed: the writer runs it afresh, waiting
                    return _TO_WRITER
                if _unavailable(exc):
                    self._close_conn_here()
                raise _failure(exc) from exc
            return result
        finally:
            self._one_writer.release()

    def _close_conn_here(self) -> None:
        _close_quietly(self._conn_here)
        self._conn_here = None

    async def _on_writer(self, work: _Work[T]) -> T:
        """`work` on the writer thread: one hop there and back, its sqlite3 errors as Baton's."""
        with self._queued:
            if self._closed:
                raise RuntimeError("the SQLite store is closed")
            if self._writer is None:
                self._writer = threading.Thread(
                    target=self._write_loop, name="baton-sqlite", daemon=True
                )
                self._writer.start()
            work.future = asyncio.get_running_loop().create_future()
            self._queue.append(work)
            self._closed = work.stop  # nothing is queued after the last work
            self._queued.notify()
        try:
            return await work.future  # a cancelled caller's future is cancelled: not begun
        except sqlite3.Error as exc:
            raise _failure(exc) from exc

    def _write_loop(self) -> None:
        """The writer thread: every transaction queued when it looks, committed as one batch."""
        while True:
            with self._queued:
                while not self._queue:
                    self._queued.wait()
                if self.batch_window_s and self._last_batch > 1:  # others were writing lately
                    until = time.monotonic() + self.batch_window_s
                    while (
                        len(self._queue) < self.max_batch and (left := until - time.monotonic()) > 0
                    ):
                        self._queued.wait(left)
                taken = [
                    self._queue.popleft() for _ in range(min(len(self._queue), self.max_batch))
                ]
                self._last_batch = len(taken)
            with self._one_writer:
                stopped = self._run_batches(taken)
            # Told only once the lock is free: a caller that goes on to a write that need not
            # wait finds no write under way, and runs it where it is.
            told, self._told = self._told, []
            _settle(told)
            if stopped:
                return

    def _run_batches(self, taken: list[_Work[Any]]) -> bool:
        """Run the works taken from the queue in order; True if the last one (`stop`) was run."""
        while taken:
            if self._told:  # an earlier batch's callers are told now, not after this one
                told, self._told = self._told, []
                _settle(told)
            first = taken[0]
            if first.stop:
                self._close_writer_conn()
                self._told.append((first, None, None))
                return True
            if not first.in_transaction:  # outside any transaction, alone
                taken.pop(0)
                if first.wanted:
                    try:
                        self._told.append((first, first.fn(self._writer_conn()), None))
                    except BaseException as exc:
                        self._told.append((first, None, exc))
                continue
            size = next((i for i, w in enumerate(taken) if not w.in_transaction), len(taken))
            batch, taken = taken[:size], taken[size:]
            batch = [w for w in batch if w.wanted]
            while batch:  # those a stopped batch did not reach, on a fresh connection
                batch = self._commit(batch)
        return False

    def _commit(self, batch: list[_Work[Any]]) -> list[_Work[Any]]:
        """Run `batch`, each in its own SAVEPOINT, under one COMMIT; settle each future after it.

        Returns the works not yet run when the batch had to stop (the file became unavailable,
        or SQLite rolled the whole transaction back): the loop runs them next, on a fresh
        connection. Those already run are failed (`StoreUnavailable`), since their rows, and the
        state their own outcome rested on, went with the transaction.
        """
        if not batch:
            return []
        durable = any(w.durable for w in batch)
        try:
            conn = self._writer_conn()
            if not durable:  # this commit alone: the WAL is synced by the next FULL one
                conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("BEGIN IMMEDIATE")
        except BaseException as exc:  # not begun (locked past the busy timeout, not openable)
            self._fail_all(batch, exc)
            return []
        # Outcomes wait for the COMMIT, failures too: a failure may rest on an earlier
        # transaction of the batch (a key it took), which its caller must be able to read.
        settled: list[_Outcome] = []
        for n, work in enumerate(batch):
            try:
                conn.execute("SAVEPOINT baton_tx")
                result = work.fn(conn)
                conn.execute("RELEASE baton_tx")
            except BaseException as exc:
                if _unavailable(exc) or not _undo_savepoint(conn):
                    # The file's condition, or the whole transaction gone: stop the batch.
                    self._told.append((work, None, exc))
                    self._fail_all([w for w, _, _ in settled], _rolled_back(exc))
                    return batch[n + 1 :]
                settled.append((work, None, exc))  # rolled back alone; the others go on
                continue
            settled.append((work, result, None))
        try:
            conn.execute("COMMIT")
        except BaseException as exc:
            # Nothing of the batch is committed: each caller hears so, none is told durable.
            self._fail_all([w for w, _, _ in settled], exc)
            return []
        if durable:
            self.durable_syncs += 1
        else:
            try:
                conn.execute("PRAGMA synchronous=FULL")
            except sqlite3.Error:  # a connection left at NORMAL is never used again
                self._close_writer_conn()
        self._told.extend(settled)
        return []

    def _fail_all(self, works: Sequence[_Work[Any]], exc: BaseException) -> None:
        """Fail `works` with `exc` and drop the connection: the batch met the file's condition."""
        if self._conn_now is not None:
            _roll_back(self._conn_now)
        self._close_writer_conn()
        self._told.extend([(work, None, exc) for work in works])

    def _writer_conn(self) -> sqlite3.Connection:
        """The writer thread's connection (a fresh one after a failure closed the last)."""
        if self._conn_now is None:
            self._conn_now = self._connect()
        return self._conn_now

    def _close_writer_conn(self) -> None:
        _close_quietly(self._conn_now)
        self._conn_now = None

    async def _write_tx(self, fn: TxFn[T], *, durable: bool = True) -> T:
        """One write transaction on the writer thread: one hop, one commit (see `SqlStore`)."""
        return await self._run(
            lambda conn: _finish(fn(self._writing(_Tx(conn)))), write=True, durable=durable
        )

    async def _read_tx(self, fn: TxFn[T]) -> T:
        """One read transaction on the event loop's connection (WAL never blocks it)."""
        return await self._run(lambda conn: _finish(fn(_Tx(conn))), write=False)

    async def setup(self) -> None:
        """Apply pending migrations under the write lock; running it twice changes nothing."""
        now = self._clock().isoformat(timespec="microseconds")

        def migrate(conn: sqlite3.Connection) -> None:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, "
                "name TEXT NOT NULL, applied_at TEXT NOT NULL)"
            )
            done = {row[0] for row in conn.execute("SELECT version FROM schema_version")}
            for version, name, sql in migrations("sqlite"):
                if version in done:
                    continue
                for statement in _split_sql(sql):
                    conn.execute(statement)
                conn.execute("INSERT INTO schema_version VALUES (?, ?, ?)", (version, name, now))

        await self._run(migrate, write=True)

    async def close(self) -> None:
        """Close the connections and stop the writer thread, once the writes queued are done."""
        if self._writer is not None and not self._closed:
            await self._on_writer(_Work(lambda conn: None, in_transaction=False, stop=True))
            self._writer.join()  # it ends as it resolves the last work
        self._closed = True
        if not self._one_writer.acquire(blocking=False):  # a write runs on it: wait, off the loop
            await asyncio.to_thread(self._one_writer.acquire)
        try:
            self._close_conn_here()
        finally:
            self._one_writer.release()
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    async def size_bytes(self) -> int:
        """Database bytes on disk, after a checkpoint of the WAL into the file."""

        def checkpoint_wal(conn: sqlite3.Connection) -> None:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

        def measure(conn: sqlite3.Connection) -> int:
            pages = conn.execute("PRAGMA page_count").fetchone()[0]
            free = conn.execute("PRAGMA freelist_count").fetchone()[0]
            size = conn.execute("PRAGMA page_size").fetchone()[0]
            return int((pages - free) * size)

        await self._on_writer(_Work(checkpoint_wal, in_transaction=False))
        return await self._run(measure, write=False)

    # audit ----------------------------------------------------------------------------------

    async def watch(self, *, after_id: int | None = None) -> AsyncGenerator[AuditEvent, None]:
        """Audit events as they commit, by polling the table (several processes share a file).

        One writer at a time allocates ids in its transaction, so ids are in commit order and
        polling for `id > last` misses nothing.
        """
        last = await self.last_event_id() if after_id is None else after_id
        while True:
            rows = await self._all(
                "SELECT * FROM audit_events WHERE id > :last ORDER BY id LIMIT 500", last=last
            )
            for row in rows:
                last = row["id"]
                yield event_of(row)
            if len(rows) < 500:
                await asyncio.sleep(WATCH_POLL_S)

    # jobs -----------------------------------------------------------------------------------

    async def wait_for_jobs(self, timeout_s: float) -> None:
        """SQLite has no cross-process signal: other processes' jobs are found by polling."""
        await asyncio.sleep(timeout_s)

    async def lease_jobs(
        self,
        owner: str,
        *,
        limit: int,
        lease_s: float,
        lane: JobLane | None = None,
        checked: bool = False,
    ) -> list[Job]:
        """Lease due jobs (of `lane` only, if given); a run with a live leased drive gets no second.

        The one writer orders leases: a read on the event loop first skips the hop when nothing
        is due, then one write transaction picks (`rows.plan_lease`) and leases.
        """
        baton_now = self._clock().timestamp()
        only = lane_filter(lane)
        if not checked and not await self.jobs_due(lane):
            return []

        def write(conn: sqlite3.Connection) -> list[Job]:
            now = time.time()
            rows = conn.execute(
                f"""SELECT j.* FROM jobs j
                   WHERE j.available_at <= :now AND (j.lease_until IS NULL OR j.lease_until < :now)
                     AND (j.due_at IS NULL OR j.due_at <= :baton_now) {only}
                     AND NOT (j.kind IN {DRIVE} AND EXISTS (
                         SELECT 1 FROM jobs o WHERE o.run_id = j.run_id AND o.id != j.id
                           AND o.kind IN {DRIVE} AND o.lease_until >= :now))
                   ORDER BY j.id LIMIT :limit""",
                {"now": now, "limit": limit * 4, "baton_now": baton_now},
            ).fetchall()
            taken = plan_lease(rows, busy=set(), limit=limit)
            conn.executemany(
                "UPDATE jobs SET lease_owner = ?, lease_until = ?, attempts = attempts + 1 "
                "WHERE id = ?",
                [(owner, now + lease_s, r["id"]) for r in taken],
            )
            return [job_of(r, attempts=r["attempts"] + 1) for r in taken]

        return await self._run(write, write=True)


@dataclass(eq=False)
class _Work(Generic[T]):
    """One function for the writer thread, and the future its caller awaits."""

    fn: Callable[[sqlite3.Connection], T]
    durable: bool = True
    in_transaction: bool = True  # False: run alone, outside any transaction (a WAL checkpoint)
    stop: bool = False  # the last work (never in a transaction): close the connection, end
    future: asyncio.Future[T] | None = None  # set on the caller's loop as it is queued

    @property
    def wanted(self) -> bool:
        """Whether its caller still waits (a cancelled one is not begun; a race only runs it)."""
        return self.future is not None and not self.future.cancelled()


_Outcome = tuple[_Work[Any], Any, BaseException | None]


class _ToWriter:
    """What `_write_here` returns when the write must go to the writer thread instead."""


_TO_WRITER: Final = _ToWriter()


def _settle(outcomes: Sequence[_Outcome]) -> None:
    """Tell each caller its outcome on its own loop: one hop back per loop, not per work."""
    by_loop: dict[asyncio.AbstractEventLoop, list[_Outcome]] = {}
    for outcome in outcomes:
        future = outcome[0].future
        if future is not None:
            by_loop.setdefault(future.get_loop(), []).append(outcome)
    for loop, these in by_loop.items():
        with contextlib.suppress(RuntimeError):  # its loop closed: nobody is left to tell
            loop.call_soon_threadsafe(_resolve, these)


def _resolve(outcomes: Sequence[_Outcome]) -> None:
    """On the caller's loop: each future its result or error, unless it was cancelled."""
    for work, result, error in outcomes:
        future = work.future
        if future is None or future.done():
            continue
        if error is None:
            future.set_result(result)
        else:
            future.set_exception(error)


def _undo_savepoint(conn: sqlite3.Connection) -> bool:
    """Undo the failed transaction's savepoint alone; False if the whole transaction is gone."""
    if not conn.in_transaction:
        return False
    try:
        conn.execute("ROLLBACK TO baton_tx")
        conn.execute("RELEASE baton_tx")
    except sqlite3.Error:
        return False
    return True


def _rolled_back(exc: BaseException) -> StoreUnavailable:
    """What a batch's earlier writes hear when a later one took the whole transaction down."""
    return StoreUnavailable(f"sqlite: this write's batch was rolled back ({exc}); try again")


def _in_transaction(
    conn: sqlite3.Connection, begin: str, fn: Callable[[sqlite3.Connection], T]
) -> T:
    """`fn` in one transaction: committed, or rolled back on any failure (a failed COMMIT too)."""
    conn.execute(begin)
    try:
        result = fn(conn)
        conn.execute("COMMIT")
    except BaseException:
        _roll_back(conn)
        raise
    return result


def _split_sql(sql: str) -> list[str]:
    statements, buffer = [], ""
    for line in sql.splitlines(keepends=True):
        if line.lstrip().startswith("--") and not buffer.strip():
            continue
        buffer += line
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        statements.append(buffer.strip())
    return statements
