"""PostgreSQL backend (asyncpg): the same contract as SQLite, for several processes on one database.

Each atomic method is one transaction on a pooled connection; the transactions themselves are
`human.store.transactions`, written once for every backend, which lock the rows they decide on
(`FOR UPDATE`). What is PostgreSQL's own: the pool, leasing jobs with `FOR UPDATE SKIP LOCKED`
(a drive job also locks its run's row, which is how two workers never drive one run at once),
LISTEN for `watch` and `wait_for_jobs`, migrations under an advisory lock, and the size query.
Job times are read off the database's clock, so hosts whose clocks differ agree on who holds a
lease. Audit inserts `NOTIFY baton_audit`, heard by one listening connection per process.

A queued job wakes one worker, not all of them: a process that waits for jobs LISTENs on a
channel of its own and keeps a `job_listeners` row alive; a job queued unleased NOTIFYs the live
listener woken longest ago (see the `0011_job_listeners` migration), or `baton_jobs` when there
is none. The job itself stays unleased, so a listener that died (its row outlives it by up to
`LISTENER_LIVE_S`) strands nothing: another worker's poll takes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final, TypeAlias, TypeVar

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from baton.errors import StoreError, StoreUnavailable
from human.records import AuditEvent, Job, JobLane
from human.store.base import utcnow
from human.store.dialect import POSTGRES
from human.store.rows import event_of, job_of, plan_lease
from human.store.schema import migrations
from human.store.transactions import DRIVE, SqlStore, TxFn, lane_filter

T = TypeVar("T")

logger = logging.getLogger(__name__)

_MIGRATION_LOCK: Final = 0x6261746F6E  # "baton": one migrator at a time, across processes
_NOW: Final = POSTGRES.clock
LISTENER_BEAT_S: Final = 5.0
"""How often a process waiting for jobs renews its `job_listeners` row."""
LISTENER_LIVE_S: Final = 3 * LISTENER_BEAT_S
"""How long a listener row stays live unrenewed: queued jobs stop waking a process this long
after it died (its jobs are polled for meanwhile)."""

Conn: TypeAlias = "asyncpg.Connection[asyncpg.Record] | PoolConnectionProxy[asyncpg.Record]"

# What the driver raises: PostgreSQL's errors, and the socket's (refused, reset, timed out).
_DRIVER_ERRORS: Final = (asyncpg.PostgresError, OSError, TimeoutError)
# What asyncpg raises when a connection the server ended is used on (or rolled back on).
_CLIENT_ERRORS: Final = (asyncpg.InterfaceError, asyncpg.exceptions.InternalClientError)
# The database's condition, not the call's (SQLSTATE classes and codes): the connection failed
# (08), resources ran out (53: disk full, too many connections), the server is shutting down or
# starting (57P), the database or the session is read-only (25006), a lock outwaited its timeout
# (55P03). The same call may succeed once it passes.
_UNAVAILABLE: Final = ("08", "53", "57P", "25006", "55P03")


def _stale(exc: BaseException | None) -> bool:
    """Whether a write failed for its session's sake: read-only since it began, or ended."""
    if isinstance(exc, _CLIENT_ERRORS):
        return True  # raised as unavailable only when the connection was lost
    state = str(getattr(exc, "sqlstate", "") or "")
    return state == "25006" or state.startswith(("08", "57P01"))


def _lost(conn: Conn) -> bool:
    """Whether a pooled connection is closed (or was handed back to the pool when it closed)."""
    try:
        return conn.is_closed()
    except asyncpg.InterfaceError:
        return True


def _failure(exc: Exception) -> StoreError:
    """A driver error as Baton's: `StoreUnavailable` for the database's condition."""
    state = str(getattr(exc, "sqlstate", "") or "")
    if not isinstance(exc, asyncpg.PostgresError) or state.startswith(_UNAVAILABLE):
        what = f"{type(exc).__name__}: {exc}" if not state else str(exc)
        return StoreUnavailable(f"postgresql: the database is unavailable ({what}); try again")
    return StoreError(f"postgresql: {exc}")


async def _keep_session(_conn: object) -> None:
    """What a connection going back to the pool needs beyond asyncpg's own rollback: nothing.

    asyncpg's default reset sends `RESET ALL; CLOSE ALL; UNLISTEN *; pg_advisory_unlock_all()`
    on every release: one more round trip for each transaction and each lone statement. Baton's
    pooled sessions change nothing it would undo: settings are `SET LOCAL`, the advisory lock is
    the transaction's, cursors are not held, and LISTEN has connections of its own. asyncpg
    still rolls back a transaction left open before this runs.
    """


@contextlib.asynccontextmanager
async def _undurable(conn: Conn) -> AsyncIterator[None]:
    """A write transaction whose commit does not wait for the WAL flush, begun in one round trip.

    asyncpg's own transaction would send `BEGIN`, then `SET LOCAL` on its own: one round trip
    more. Rolled back when its block, or its `BEGIN`, raises (cancelled too), as asyncpg's is: a
    `BEGIN` cancelled may have begun the transaction all the same, and a ROLLBACK with none open
    is only a warning.
    """
    try:
        await conn.execute("BEGIN; SET LOCAL synchronous_commit TO OFF")
        yield
    except BaseException:
        if not conn.is_closed():
            with contextlib.suppress(*_DRIVER_ERRORS, *_CLIENT_ERRORS):
                await conn.execute("ROLLBACK")
        raise
    await conn.execute("COMMIT")


def _dsn(url: str) -> str:
    return "postgresql://" + url.split("://", 1)[1]


class _Tx:
    """A `Tx` on an asyncpg connection."""

    dialect = POSTGRES

    def __init__(self, conn: Conn) -> None:
        self._conn = conn

    async def one(self, sql: str, /, **params: Any) -> asyncpg.Record | None:
        text, args = POSTGRES.bind(sql, params)
        return await self._conn.fetchrow(text, *args)

    async def all(self, sql: str, /, **params: Any) -> list[asyncpg.Record]:
        text, args = POSTGRES.bind(sql, params)
        return await self._conn.fetch(text, *args)

    async def run(self, sql: str, /, **params: Any) -> int:
        text, args = POSTGRES.bind(sql, params)
        status = await self._conn.execute(text, *args)  # e.g. "UPDATE 2", "INSERT 0 1"
        count = status.rsplit(" ", 1)[-1]
        return int(count) if count.isdigit() else 0

    async def many(self, sql: str, rows: Sequence[Mapping[str, Any]], /) -> None:
        if rows:
            await self._conn.executemany(*POSTGRES.bind_many(sql, rows))


RECONNECTED: Final = ""
"""What a subscriber hears when the listening connection came back after it was lost: payloads
notified meanwhile were not heard, so whoever needs them reads what it missed."""


class _Listener:
    """One connection per process LISTENing on channels, fanning out to subscribers' queues.

    A connection the server ends (a restart, a failover, an operator's kill) is opened again in
    the background, retried with a backoff doubling to `MAX_BACKOFF_S`, as long as anyone
    listens; each subscriber then hears `RECONNECTED`.
    """

    MAX_BACKOFF_S: Final = 5.0

    def __init__(self, dsn: str, *channels: str) -> None:
        self._dsn = dsn
        self._channels = channels
        self._conn: Conn | None = None
        self._queues: set[asyncio.Queue[str]] = set()
        self._lock = asyncio.Lock()
        self._reconnecting: asyncio.Task[None] | None = None
        self._closed = False

    def _heard(self, _conn: object, _pid: int, _channel: str, payload: object) -> None:
        self._tell(str(payload))

    def _tell(self, payload: str) -> None:
        for queue in self._queues:
            queue.put_nowait(payload)

    def _lost(self, conn: object) -> None:
        if self._closed or conn is not self._conn or not self._queues:
            return
        if self._reconnecting is None or self._reconnecting.done():
            self._reconnecting = asyncio.get_running_loop().create_task(self._reconnect())

    async def _connect(self) -> None:
        conn = await asyncpg.connect(self._dsn)
        try:
            conn.add_termination_listener(self._lost)
            for channel in self._channels:
                await conn.add_listener(channel, self._heard)
        except BaseException:  # failed or cancelled half way: nobody else would close it
            conn.terminate()
            raise
        if self._closed:  # closed while it connected: `close` did not see this connection
            conn.terminate()
            return
        self._conn = conn

    async def _reconnect(self) -> None:
        wait = 0.1
        while not self._closed and self._queues:
            try:
                async with self._lock:
                    if self._conn is None or self._conn.is_closed():
                        await self._connect()
                self._tell(RECONNECTED)
                return
            except _DRIVER_ERRORS:
                await asyncio.sleep(wait)
                wait = min(wait * 2, self.MAX_BACKOFF_S)

    async def subscribe(self) -> asyncio.Queue[str]:
        """A queue that gets every payload notified from now on (and `RECONNECTED`)."""
        queue: asyncio.Queue[str] = asyncio.Queue()
        async with self._lock:
            if self._conn is None or self._conn.is_closed():
                await self._connect()
            self._queues.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[str]) -> None:
        """Stop feeding a queue."""
        self._queues.discard(queue)

    async def close(self) -> None:
        """Close the listening connection."""
        self._closed = True
        if self._reconnecting is not None:
            self._reconnecting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reconnecting
        if self._conn is not None and not self._conn.is_closed():
            await self._conn.close()
        self._conn = None


class _Recent:
    """The ids of the last `size` events a watcher gave, to give none twice (a set that forgets)."""

    def __init__(self, size: int = 4096) -> None:
        self._ids: dict[int, None] = {}
        self._size = size
        self.newest = 0

    def __contains__(self, event_id: object) -> bool:
        return event_id in self._ids

    def add(self, event_id: int) -> None:
        self._ids[event_id] = None
        self.newest = max(self.newest, event_id)
        if len(self._ids) > self._size:
            del self._ids[next(iter(self._ids))]


class PostgresStore(SqlStore):
    """The `Store` on one PostgreSQL database."""

    dialect = POSTGRES

    def __init__(
        self, pool: asyncpg.Pool, dsn: str, *, clock: Callable[[], datetime] = utcnow
    ) -> None:
        self._pool = pool
        self._dsn = dsn
        self._clock = clock
        self._audit = _Listener(dsn, "baton_audit")
        self._wake_channel = f"baton_wake_{os.getpid()}_{secrets.token_hex(4)}"
        self._jobs = _Listener(dsn, self._wake_channel, "baton_jobs")
        self._job_signals: asyncio.Queue[str] | None = None
        self._listening: asyncio.Task[None] | None = None

    @classmethod
    async def open(cls, url: str, *, clock: Callable[[], datetime] = utcnow) -> PostgresStore:
        """Connect to the database a `postgresql://` URL names and migrate it."""
        dsn = _dsn(url)
        try:
            pool = await asyncpg.create_pool(dsn, min_size=1, max_size=10, reset=_keep_session)
        except _DRIVER_ERRORS as exc:
            raise _failure(exc) from exc
        store = cls(pool, dsn, clock=clock)
        await store.setup()
        return store

    # plumbing -------------------------------------------------------------------------------

    async def _write(self, fn: Callable[[Conn], Awaitable[T]]) -> T:
        """`fn` in one transaction on a pooled connection."""
        return await self._transaction(fn, readonly=False)

    async def _write_tx(self, fn: TxFn[T], *, durable: bool = True) -> T:
        """One transaction on a pooled connection (`durable`: see `SqlStore._write_tx`)."""
        return await self._transaction(
            lambda conn: fn(self._writing(_Tx(conn))), readonly=False, durable=durable
        )

    async def _read_tx(self, fn: TxFn[T]) -> T:
        """Reads on one snapshot (a read-only, repeatable-read transaction)."""
        return await self._transaction(lambda conn: fn(_Tx(conn)), readonly=True)

    async def _transaction(
        self, fn: Callable[[Conn], Awaitable[T]], *, readonly: bool, durable: bool = True
    ) -> T:
        """`fn` in one transaction; once more on a new session if the one it had was stale.

        A transaction that is not `durable` commits without waiting for the WAL to reach the
        disk (`synchronous_commit` off for it alone): the next durable commit flushes it.
        """
        try:
            return await self._on_a_connection(fn, readonly=readonly, durable=durable)
        except StoreUnavailable as exc:
            if not _stale(exc.__cause__):
                raise
        # The session was begun while the database was read-only, or the server ended it: the
        # pool's other sessions may be so too. New ones, and the call once more (it stored
        # nothing), so the first call after the database recovers succeeds.
        await self._pool.expire_connections()
        return await self._on_a_connection(fn, readonly=readonly, durable=durable)

    async def _on_a_connection(
        self, fn: Callable[[Conn], Awaitable[T]], *, readonly: bool, durable: bool
    ) -> T:
        connected = False
        try:
            async with self._pool.acquire() as conn:
                connected = True
                transaction: contextlib.AbstractAsyncContextManager[Any] = (
                    conn.transaction(isolation="repeatable_read", readonly=True)
                    if readonly
                    else conn.transaction()
                    if durable
                    else _undurable(conn)
                )
                try:
                    async with transaction:
                        return await fn(conn)
                except _CLIENT_ERRORS as exc:
                    if not _lost(conn):
                        raise
                    raise StoreUnavailable(
                        f"postgresql: the connection to the database was lost ({exc}); try again"
                    ) from exc
        except _DRIVER_ERRORS as exc:
            if not connected:  # whatever keeps a new session from starting, the database is away
                raise StoreUnavailable(
                    f"postgresql: cannot connect to the database ({type(exc).__name__}: {exc}); "
                    "try again"
                ) from exc
            raise _failure(exc) from exc

    async def _all(self, sql: str, /, **params: Any) -> list[asyncpg.Record]:
        """One statement needs no transaction: the pool runs it on any connection."""
        text, args = POSTGRES.bind(sql, params)
        return await self._fetch(text, *args)

    async def _one(self, sql: str, /, **params: Any) -> asyncpg.Record | None:
        """One statement needs no transaction: the pool runs it on any connection."""
        text, args = POSTGRES.bind(sql, params)
        return await self._fetchrow(text, *args)

    async def _fetch(self, sql: str, *args: Any) -> list[asyncpg.Record]:
        try:
            rows: list[asyncpg.Record] = await self._pool.fetch(sql, *args)
            return rows
        except _DRIVER_ERRORS as exc:
            raise _failure(exc) from exc

    async def _fetchrow(self, sql: str, *args: Any) -> asyncpg.Record | None:
        try:
            row: asyncpg.Record | None = await self._pool.fetchrow(sql, *args)
            return row
        except _DRIVER_ERRORS as exc:
            raise _failure(exc) from exc

    async def setup(self) -> None:
        """Apply pending migrations under an advisory lock; running it twice changes nothing."""
        now = self._clock()

        async def migrate(conn: Conn) -> None:
            await conn.execute("SELECT pg_advisory_xact_lock($1)", _MIGRATION_LOCK)
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, "
                "name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL)"
            )
            done = {r["version"] for r in await conn.fetch("SELECT version FROM schema_version")}
            for version, name, sql in migrations("postgres"):
                if version in done:
                    continue
                await conn.execute(sql)
                await conn.execute(
                    "INSERT INTO schema_version VALUES ($1, $2, $3)", version, name, now
                )

        await self._write(migrate)

    async def close(self) -> None:
        """Stop listening for jobs (dropping its `job_listeners` row); close listeners and pool."""
        if self._listening is not None:
            self._listening.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listening
            with contextlib.suppress(StoreError):
                await self._write(
                    lambda conn: conn.execute(
                        "DELETE FROM job_listeners WHERE channel = $1", self._wake_channel
                    )
                )
        await self._audit.close()
        await self._jobs.close()
        await self._pool.close()

    async def size_bytes(self) -> int:
        """Bytes the tables and indexes take (the database's own catalog not counted)."""
        row = await self._fetchrow(
            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'm')"
        )
        return int(row[0]) if row else 0

    # audit ----------------------------------------------------------------------------------

    async def watch(self, *, after_id: int | None = None) -> AsyncGenerator[AuditEvent, None]:
        """Every audit event committed from now on (after `after_id` first, if given).

        Events come in commit order as each process's transaction commits.
        """
        queue = await self._audit.subscribe()
        try:
            sent = _Recent()
            if after_id is None:  # where to read from, should the listening connection drop
                row = await self._fetchrow("SELECT COALESCE(MAX(id), 0) FROM audit_events")
                after_id = int(row[0]) if row else 0
            else:
                for row in await self._fetch(
                    "SELECT * FROM audit_events WHERE id > $1 ORDER BY id", after_id
                ):
                    sent.add(row["id"])
                    yield event_of(row)
            last = max(sent.newest, after_id)
            while True:
                heard = [await queue.get()]
                while not queue.empty():
                    heard.append(queue.get_nowait())
                if RECONNECTED in heard:  # notifications were lost: read what came meanwhile
                    rows = await self._fetch(
                        "SELECT * FROM audit_events WHERE id > $1 ORDER BY id", last
                    )
                else:
                    ids = [i for i in map(int, heard) if i not in sent]
                    found = await self._fetch(
                        "SELECT * FROM audit_events WHERE id = ANY($1::bigint[])", ids
                    )
                    by_id = {r["id"]: r for r in found}
                    rows = [by_id[i] for i in ids if i in by_id]
                for row in rows:
                    if row["id"] not in sent:
                        sent.add(row["id"])
                        last = max(last, row["id"])
                        yield event_of(row)
        finally:
            self._audit.unsubscribe(queue)

    # jobs -----------------------------------------------------------------------------------

    async def wait_for_jobs(self, timeout_s: float) -> None:
        """Return when a job queued in any process was given to this one, or after `timeout_s`.

        The first wait LISTENs on this process's channel, then registers it in `job_listeners`
        and keeps its row alive every `LISTENER_BEAT_S` while the store is open: from then on
        queued jobs take turns waking the live listeners, one listener per job (`baton_jobs`
        wakes all of them only when none is live). The subscription lives as long as the
        store, so a job given between two waits still ends the next one at once.
        """
        if self._job_signals is None:
            self._job_signals = await self._jobs.subscribe()
            # Registered after LISTEN, so no wake-up goes to a deaf channel (till then, a queued
            # job wakes everyone on `baton_jobs`).
            self._listening = asyncio.create_task(self._keep_listener())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._job_signals.get(), timeout_s)
        while not self._job_signals.empty():
            self._job_signals.get_nowait()

    async def _renew_listener(self) -> None:
        """Keep this process's `job_listeners` row live; rows dead a while are dropped."""

        async def renew(conn: Conn) -> None:
            await conn.execute(
                f"DELETE FROM job_listeners WHERE live_until < {_NOW} - $1", LISTENER_LIVE_S
            )
            await conn.execute(
                f"INSERT INTO job_listeners (channel, live_until) VALUES ($1, {_NOW} + $2) "
                "ON CONFLICT (channel) DO UPDATE SET live_until = EXCLUDED.live_until",
                self._wake_channel,
                LISTENER_LIVE_S,
            )

        await self._transaction(renew, readonly=False, durable=False)  # lost: renewed again

    async def _keep_listener(self) -> None:
        while True:
            try:
                await self._renew_listener()
            except StoreError:  # the database is away: jobs are polled for until it is back
                logger.warning("job listener not renewed", exc_info=True)
            await asyncio.sleep(LISTENER_BEAT_S)

    async def lease_jobs(
        self,
        owner: str,
        *,
        limit: int,
        lease_s: float,
        lane: JobLane | None = None,
        checked: bool = False,
    ) -> list[Job]:
        """Lease due jobs (of `lane` only, if given) with SKIP LOCKED; one live drive per run.

        A drive job is taken with its run's row locked; who holds that lock then re-reads (in a new
        snapshot) whether another drive of the run is leased, so two workers that race for one
        run's jobs cannot both win.
        """
        baton_now = self._clock().timestamp()
        only = lane_filter(lane)
        # A read first, outside any transaction: a lease round that finds nothing (most rounds
        # of a lane with little work) costs one round trip, not a transaction's three or more.
        if not checked and not await self.jobs_due(lane):
            return []

        async def write(conn: Conn) -> list[Job]:
            rows = []
            if lane != "delivery":
                rows += await conn.fetch(
                    f"""SELECT j.* FROM jobs j JOIN runs r ON r.id = j.run_id
                        WHERE j.kind IN {DRIVE} AND j.available_at <= {_NOW}
                          AND (j.lease_until IS NULL OR j.lease_until < {_NOW})
                        ORDER BY j.id LIMIT $1 FOR UPDATE OF j, r SKIP LOCKED""",
                    limit * 4,
                )
            rows += await conn.fetch(
                f"""SELECT j.* FROM jobs j WHERE j.kind NOT IN {DRIVE} {only}
                      AND j.available_at <= {_NOW}
                      AND (j.lease_until IS NULL OR j.lease_until < {_NOW})
                      AND (j.due_at IS NULL OR j.due_at <= $2)
                    ORDER BY j.id LIMIT $1 FOR UPDATE SKIP LOCKED""",
                limit,
                baton_now,
            )
            if not rows:
                return []
            busy = {
                r[0]
                for r in await conn.fetch(
                    f"SELECT run_id FROM jobs WHERE run_id = ANY($1::text[]) AND kind IN {DRIVE} "
                    f"AND lease_until >= {_NOW} AND id <> ALL($2::bigint[])",
                    [r["run_id"] for r in rows if r["run_id"]],
                    [r["id"] for r in rows],
                )
            }
            taken = plan_lease(rows, busy=busy, limit=limit)
            if taken:
                await conn.execute(
                    f"UPDATE jobs SET lease_owner = $1, lease_until = {_NOW} + $2, "
                    "attempts = attempts + 1 WHERE id = ANY($3::bigint[])",
                    owner,
                    lease_s,
                    [r["id"] for r in taken],
                )
            return [job_of(r, attempts=r["attempts"] + 1) for r in taken]

        return await self._write(write)
