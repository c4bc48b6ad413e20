"""PostgreSQL backend (asyncpg): the same contract as SQLite, for several processes on one database.

Each atomic method is one transaction on a pooled connection. Jobs are leased with
`FOR UPDATE SKIP LOCKED`, so workers never wait on each other; a drive job also locks its run's
row, which is how two workers never drive one run at once. Job times are read off the database's
clock, so hosts whose clocks differ agree on who holds a lease. Audit inserts `NOTIFY
baton_audit` and queued jobs `NOTIFY baton_jobs` (see the migration), heard by one listening
connection per process.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import secrets
from collections.abc import AsyncGenerator, Callable, Sequence
from datetime import datetime
from typing import Any, Final, Literal, TypeAlias, TypeVar

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from baton.errors import StoreError
from human.records import (
    OPEN_STATUSES,
    TERMINAL_RUN,
    AnswerRecord,
    ApiToken,
    AuditEvent,
    HumanRequest,
    Job,
    NewEvent,
    Notification,
    Page,
    Run,
    Team,
    User,
)
from human.routing import RequestChange, plan_timer, unclaimed_status
from human.store import rows as shared
from human.store.base import (
    AnswerOutcome,
    ClaimOutcome,
    Lease,
    NewNotification,
    NewTimer,
    Progress,
    RequestFilter,
    TimerOutcome,
    Viewer,
    utcnow,
)
from human.store.demo_back_office import PostgresBackOffice
from human.store.schema import migrations

logger = logging.getLogger(__name__)
T = TypeVar("T")

_MIGRATION_LOCK: Final = 0x6261746F6E  # "baton": one migrator at a time, across processes
_NOW: Final = "extract(epoch from clock_timestamp())"
_DRIVE: Final = "('start', 'resume')"
_OPEN: Final = "('pending', 'claimed', 'escalated')"
_INSERT_EVENT: Final = """INSERT INTO audit_events (type, at, run_id, request_id, actor, data)
    VALUES ($1, $2, $3, $4, $5, $6)"""
_REQUEST_COLUMNS: Final = """r.seq, r.id, r.run_id, r.maf_request_id, r.kind, r.title, r.reason,
    r.context, r.proposed_action, r.payload, r.allowed_decisions, s.body AS response_schema, r.team,
    r.assignee, r.priority, r.status, r.created_at, r.expires_at, r.approvals_required,
    r.policy_rule, r.answer, r.answered_by, r.answered_at, r.claimed_by, r.claimed_until,
    r.escalation, r.escalation_level, r.executor_id"""
# A closed request's timers have nothing left to do: the jobs table keeps only work in flight.
_DROP_REQUEST_TIMERS: Final = "DELETE FROM jobs WHERE kind = 'timer' AND request_id = $1"
_DROP_RUN_TIMERS: Final = "DELETE FROM jobs WHERE kind = 'timer' AND run_id = $1"
_SELECT_TOKENS: Final = """SELECT t.id, t.label, t.hint, t.created_at, t.revoked_at,
    u.name AS user_name FROM api_tokens t JOIN users u ON u.id = t.user_id"""
_SELECT_REQUESTS: Final = (
    f"SELECT {_REQUEST_COLUMNS} FROM human_requests r JOIN schemas s ON s.hash = r.schema_hash"
)

Conn: TypeAlias = "asyncpg.Connection[asyncpg.Record] | PoolConnectionProxy[asyncpg.Record]"


def _dsn(url: str) -> str:
    return "postgresql://" + url.split("://", 1)[1]


async def _events(conn: Conn, events: Sequence[NewEvent], at: datetime) -> None:
    if events:
        await conn.executemany(
            _INSERT_EVENT,
            [(e.type, at, e.run_id, e.request_id, e.actor, shared.dumps(e.data)) for e in events],
        )


async def _queue_drive(
    conn: Conn, kind: str, run_id: str, payload: str, lease: Lease | None
) -> Job | None:
    """Queue a drive job; leased to `lease.owner` at once unless another drive of the run is.

    The run's row lock orders this against `lease_jobs` in other processes.
    """
    if lease is not None:
        await conn.execute("SELECT 1 FROM runs WHERE id = $1 FOR UPDATE", run_id)
        busy = await conn.fetchval(
            f"SELECT 1 FROM jobs WHERE run_id = $1 AND kind IN {_DRIVE} AND lease_until >= {_NOW}",
            run_id,
        )
        if busy is None:
            job_id = await conn.fetchval(
                "INSERT INTO jobs (kind, run_id, available_at, payload, lease_owner, lease_until, "
                f"attempts) VALUES ($1, $2, {_NOW}, $3, $4, {_NOW} + $5, 1) RETURNING id",
                kind,
                run_id,
                payload,
                lease.owner,
                lease.seconds,
            )
            return Job(id=job_id, kind=kind, run_id=run_id, payload=json.loads(payload), attempts=1)
    await conn.execute(
        f"INSERT INTO jobs (kind, run_id, available_at, payload) VALUES ($1, $2, {_NOW}, $3) "
        "ON CONFLICT DO NOTHING",
        kind,
        run_id,
        payload,
    )
    return None


async def _requests_of(conn: Conn, rows: Sequence[asyncpg.Record]) -> list[HumanRequest]:
    if not rows:
        return []
    ids = [r["id"] for r in rows]
    answers = await conn.fetch(
        "SELECT * FROM answers WHERE request_id = ANY($1::text[]) ORDER BY id", ids
    )
    notifications = await conn.fetch(
        "SELECT * FROM notifications WHERE request_id = ANY($1::text[]) ORDER BY created_at, id",
        ids,
    )
    return shared.requests_of(rows, answers, notifications)


async def _request_in(conn: Conn, request_id: str, *, lock: bool = False) -> HumanRequest | None:
    rows = await conn.fetch(
        f"{_SELECT_REQUESTS} WHERE r.id = $1" + (" FOR UPDATE OF r" if lock else ""), request_id
    )
    found = await _requests_of(conn, rows)
    return found[0] if found else None


def _column_value(value: Any) -> Any:
    return shared.dumps(value) if isinstance(value, dict | list) else value


async def _insert_timers(conn: Conn, timers: Sequence[NewTimer]) -> None:
    """Timer jobs: leasable now by the database's clock, due by Baton's (`due_at`)."""
    if timers:
        await conn.executemany(
            "INSERT INTO jobs (kind, run_id, request_id, available_at, due_at, payload) "
            f"VALUES ('timer', $1, $2, {_NOW}, $3, $4)",
            [
                (
                    t.run_id,
                    t.request_id,
                    t.due_at.timestamp(),
                    shared.timer_payload(t.action, t.step),
                )
                for t in timers
            ],
        )


async def _insert_notifications(
    conn: Conn, notifications: Sequence[NewNotification], at: datetime
) -> None:
    """Outbox rows, each with the notify job that delivers it."""
    for n in notifications:
        notification_id = shared.new_notification_id()
        await conn.execute(
            "INSERT INTO notifications (id, request_id, run_id, channel, event, status, "
            "created_at, updated_at) VALUES ($1, $2, $3, $4, $5, 'queued', $6, $6)",
            notification_id,
            n.request_id,
            n.run_id,
            n.channel,
            n.event,
            at,
        )
        await conn.execute(
            "INSERT INTO jobs (kind, run_id, request_id, available_at, payload) "
            f"VALUES ('notify', $1, $2, {_NOW}, $3)",
            n.run_id,
            n.request_id,
            shared.notify_payload(notification_id),
        )


class _Listener:
    """One connection per process LISTENing on a channel, fanning out to subscribers' queues."""

    def __init__(self, dsn: str, channel: str) -> None:
        self._dsn = dsn
        self._channel = channel
        self._conn: Conn | None = None
        self._queues: set[asyncio.Queue[str]] = set()
        self._lock = asyncio.Lock()

    def _heard(self, _conn: object, _pid: int, _channel: str, payload: object) -> None:
        for queue in self._queues:
            queue.put_nowait(str(payload))

    async def subscribe(self) -> asyncio.Queue[str]:
        """A queue that gets every payload notified from now on."""
        queue: asyncio.Queue[str] = asyncio.Queue()
        async with self._lock:
            if self._conn is None or self._conn.is_closed():
                self._conn = await asyncpg.connect(self._dsn)
                await self._conn.add_listener(self._channel, self._heard)
            self._queues.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[str]) -> None:
        """Stop feeding a queue."""
        self._queues.discard(queue)

    async def close(self) -> None:
        """Close the listening connection."""
        if self._conn is not None and not self._conn.is_closed():
            await self._conn.close()
        self._conn = None


class PostgresStore(PostgresBackOffice, shared.HolderChanges):
    """The `Store` on one PostgreSQL database."""

    dialect = "postgres"

    def __init__(
        self, pool: asyncpg.Pool, dsn: str, *, clock: Callable[[], datetime] = utcnow
    ) -> None:
        self._pool = pool
        self._dsn = dsn
        self._clock = clock
        self._audit = _Listener(dsn, "baton_audit")
        self._jobs = _Listener(dsn, "baton_jobs")
        self._job_signals: asyncio.Queue[str] | None = None

    @classmethod
    async def open(cls, url: str, *, clock: Callable[[], datetime] = utcnow) -> PostgresStore:
        """Connect to the database a `postgresql://` URL names and migrate it."""
        dsn = _dsn(url)
        try:
            pool = await asyncpg.create_pool(dsn, min_size=1, max_size=10)
        except (OSError, asyncpg.PostgresError) as exc:
            raise StoreError(f"postgresql: cannot connect: {exc}") from exc
        store = cls(pool, dsn, clock=clock)
        await store.setup()
        return store

    # plumbing -------------------------------------------------------------------------------

    def _now(self) -> datetime:
        return self._clock()

    async def _write(self, fn: Callable[[Conn], Any]) -> T:
        try:
            async with self._pool.acquire() as conn, conn.transaction():
                result: T = await fn(conn)
                return result
        except asyncpg.PostgresError as exc:
            raise StoreError(f"postgresql: {exc}") from exc

    async def _read(self, fn: Callable[[Conn], Any]) -> T:
        try:
            async with (
                self._pool.acquire() as conn,
                conn.transaction(isolation="repeatable_read", readonly=True),
            ):
                result: T = await fn(conn)
                return result
        except asyncpg.PostgresError as exc:
            raise StoreError(f"postgresql: {exc}") from exc

    async def _fetch(self, sql: str, *args: Any) -> list[asyncpg.Record]:
        try:
            rows: list[asyncpg.Record] = await self._pool.fetch(sql, *args)
            return rows
        except asyncpg.PostgresError as exc:
            raise StoreError(f"postgresql: {exc}") from exc

    async def _fetchrow(self, sql: str, *args: Any) -> asyncpg.Record | None:
        try:
            row: asyncpg.Record | None = await self._pool.fetchrow(sql, *args)
            return row
        except asyncpg.PostgresError as exc:
            raise StoreError(f"postgresql: {exc}") from exc

    async def _close_open_requests(self, conn: Conn, run_id: str, actor: str, at: datetime) -> None:
        """Cancel a run's open (and answered, undelivered) requests, each with its event."""
        ids = [
            r["id"]
            for r in await conn.fetch(
                "UPDATE human_requests SET status = 'cancelled' WHERE run_id = $1 AND status IN "
                "('pending', 'claimed', 'escalated', 'answered') RETURNING id",
                run_id,
            )
        ]
        await _events(conn, shared.cancelled_events(run_id, sorted(ids), actor), at)
        await conn.execute(_DROP_RUN_TIMERS, run_id)

    async def setup(self) -> None:
        """Apply pending migrations under an advisory lock; running it twice changes nothing."""

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
                    "INSERT INTO schema_version VALUES ($1, $2, $3)", version, name, self._now()
                )

        await self._write(migrate)

    async def close(self) -> None:
        """Close the listeners and the pool."""
        await self._audit.close()
        await self._jobs.close()
        await self._pool.close()

    # runs -----------------------------------------------------------------------------------

    async def create_run(
        self, run: Run, events: Sequence[NewEvent], *, lease: Lease | None = None
    ) -> Job | None:
        """Store a new run, its audit events and its start job in one transaction."""
        payload = shared.job_payload()

        async def write(conn: Conn) -> Job | None:
            await conn.execute(
                "INSERT INTO runs (id, workflow, input, status, created_by, created_at, "
                "updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                run.id,
                run.workflow,
                shared.dumps(run.input),
                run.status,
                run.created_by,
                run.created_at,
                run.updated_at,
            )
            await _events(conn, events, run.created_at)
            return await _queue_drive(conn, "start", run.id, payload, lease)

        return await self._write(write)

    async def get_run(self, run_id: str) -> Run | None:
        """A run by id."""
        row = await self._fetchrow("SELECT * FROM runs WHERE id = $1", run_id)
        return shared.run_of(row) if row else None

    async def list_runs(
        self,
        *,
        status: str | None,
        workflow: str | None,
        cursor: str | None,
        limit: int,
        visible_to: Viewer | None = None,
    ) -> Page:
        """Runs, newest first."""
        where, args = _where({"status": status, "workflow": workflow}, cursor)
        if visible_to is not None:
            where += " AND " + _visible("runs.id", visible_to, args)
        rows = await self._fetch(
            f"SELECT * FROM runs WHERE {where} ORDER BY seq DESC LIMIT ${len(args) + 1}",
            *args,
            limit + 1,
        )
        return shared.page(rows, [shared.run_of(r) for r in rows[:limit]], limit)

    async def teams_of_run(self, run_id: str) -> frozenset[str]:
        """The teams owning the run's requests."""
        rows = await self._fetch(
            "SELECT DISTINCT team FROM human_requests WHERE run_id = $1", run_id
        )
        return frozenset(row[0] for row in rows)

    async def record_progress(self, progress: Progress) -> bool:
        """Commit one drive: run, checkpoint, requests, deliveries, audit, job; or nothing."""
        now = self._now()
        new_cp = progress.checkpoint.id if progress.checkpoint else None

        async def write(conn: Conn) -> bool:
            moved = await conn.fetchval(
                "UPDATE runs SET status = $1, output = $2, error = $3, checkpoint_id = $4, "
                "updated_at = $5 WHERE id = $6 AND checkpoint_id IS NOT DISTINCT FROM $7 "
                "AND status NOT IN ('completed', 'failed', 'cancelled') RETURNING 1",
                progress.status,
                None if progress.output is None else shared.dumps(progress.output),
                progress.error,
                new_cp,
                now,
                progress.run_id,
                progress.expected_checkpoint_id,
            )
            if moved is None:
                return False
            if progress.expected_checkpoint_id is not None:
                await conn.execute(
                    "DELETE FROM checkpoints WHERE id = $1", progress.expected_checkpoint_id
                )
            if progress.checkpoint is not None:
                await conn.execute(
                    "INSERT INTO checkpoints (id, run_id, body, created_at) "
                    "VALUES ($1, $2, $3, $4)",
                    progress.checkpoint.id,
                    progress.run_id,
                    progress.checkpoint.body,
                    now,
                )
            for request in progress.new_requests:
                await _insert_request(conn, request)
            await _insert_timers(conn, progress.timers)
            await _insert_notifications(conn, progress.notifications, now)
            if progress.delivered_request_ids:
                await conn.execute(
                    "UPDATE human_requests SET status = 'resumed' WHERE id = ANY($1::text[]) "
                    "AND status = 'answered'",
                    list(progress.delivered_request_ids),
                )
                await conn.execute(
                    "UPDATE human_requests SET delivered_at = $2 WHERE id = ANY($1::text[]) "
                    "AND status = 'expired'",
                    list(progress.delivered_request_ids),
                    now,
                )
            await _events(conn, progress.events, now)
            await _append_transcript(conn, progress.run_id, progress.transcript, now)
            if progress.status in TERMINAL_RUN:
                await self._close_open_requests(conn, progress.run_id, "system", now)
            if progress.job_id is not None:
                await conn.execute("DELETE FROM jobs WHERE id = $1", progress.job_id)
            return True

        return await self._write(write)

    async def cancel_run(self, run_id: str, actor: str) -> Run | None:
        """Cancel an unfinished run, its open requests and queued work."""
        now = self._now()

        async def write(conn: Conn) -> bool:
            checkpoint = await conn.fetchrow(
                "SELECT checkpoint_id FROM runs WHERE id = $1 "
                "AND status NOT IN ('completed', 'failed', 'cancelled') FOR UPDATE",
                run_id,
            )
            if checkpoint is None:
                return False
            await conn.execute("DELETE FROM checkpoints WHERE id = $1", checkpoint[0])
            await conn.execute(
                "UPDATE runs SET status = 'cancelled', updated_at = $1, checkpoint_id = NULL "
                "WHERE id = $2",
                now,
                run_id,
            )
            await self._close_open_requests(conn, run_id, actor, now)
            await _events(conn, [NewEvent(type="run.cancelled", run_id=run_id, actor=actor)], now)
            await conn.execute(
                f"DELETE FROM jobs WHERE run_id = $1 AND kind IN {_DRIVE} AND lease_owner IS NULL",
                run_id,
            )
            return True

        if not await self._write(write):
            return None
        return await self.get_run(run_id)

    async def load_checkpoint(self, checkpoint_id: str) -> bytes | None:
        """An encoded checkpoint body."""
        row = await self._fetchrow("SELECT body FROM checkpoints WHERE id = $1", checkpoint_id)
        return bytes(row[0]) if row else None

    # requests -------------------------------------------------------------------------------

    async def get_request(self, request_id: str) -> HumanRequest | None:
        """A request with its answers."""
        found = await self._requests_where("r.id = $1", request_id)
        return found[0] if found else None

    async def list_requests(self, flt: RequestFilter) -> Page:
        """Requests, newest first, keyset-paginated on their sequence number."""
        where, args = _request_where(flt, with_status=True)
        sql = f"{_SELECT_REQUESTS} WHERE {where} ORDER BY r.seq DESC LIMIT ${len(args) + 1}"

        async def read(conn: Conn) -> Page:
            rows = await conn.fetch(sql, *args, flt.limit + 1)
            return shared.page(rows, await _requests_of(conn, rows[: flt.limit]), flt.limit)

        return await self._read(read)

    async def count_requests(self, flt: RequestFilter) -> dict[str, int]:
        """How many requests match per status."""
        where, args = _request_where(flt, with_status=False)
        rows = await self._fetch(
            f"SELECT r.status, COUNT(*) FROM human_requests r WHERE {where} GROUP BY r.status",
            *args,
        )
        return {row[0]: int(row[1]) for row in rows}

    async def _requests_where(self, sql: str, *args: Any) -> list[HumanRequest]:
        async def read(conn: Conn) -> list[HumanRequest]:
            return await _requests_of(
                conn, await conn.fetch(f"{_SELECT_REQUESTS} WHERE {sql}", *args)
            )

        return await self._read(read)

    async def answered_requests(self, run_id: str) -> list[HumanRequest]:
        """A run's requests answered but not yet delivered, in answer order."""
        return await self._requests_where(
            "r.run_id = $1 AND (r.status = 'answered' OR (r.status = 'expired' AND "
            "r.delivered_at IS NULL)) ORDER BY r.answered_at, r.seq",
            run_id,
        )

    async def open_requests(self, run_id: str) -> list[HumanRequest]:
        """A run's requests still waiting for a person."""
        return await self._requests_where(
            f"r.run_id = $1 AND r.status IN {_OPEN} ORDER BY r.seq", run_id
        )

    async def record_answer(
        self,
        answer: AnswerRecord,
        *,
        final: dict[str, Any],
        lease: Lease | None = None,
        audit: dict[str, Any] | None = None,
    ) -> AnswerOutcome:
        """First answer wins; approvals of a multi-approver request are counted per person.

        The request's row is locked for the transaction, so concurrent answers apply one by one.
        """
        payload = shared.job_payload()
        job: Job | None = None
        now = self._clock()

        async def write(conn: Conn) -> shared.AnswerResult | Literal["claimed"]:
            nonlocal job
            row = await conn.fetchrow(
                "SELECT run_id, status, approvals_required, claimed_by, claimed_until, "
                "escalation_level FROM human_requests WHERE id = $1 FOR UPDATE",
                answer.request_id,
            )
            if row is None or row["status"] not in OPEN_STATUSES:
                return "not_open"
            if shared.claim_blocks(row, answer.actor, now):
                return "claimed"
            approvers: set[str] = set()
            if shared.counts_approvals(answer, row["approvals_required"]):
                approvers = {
                    r[0]
                    for r in await conn.fetch(
                        "SELECT actor FROM answers WHERE request_id = $1 AND decision = 'approve'",
                        answer.request_id,
                    )
                }
            result, event = shared.plan_answer(
                answer,
                run_id=row["run_id"],
                approvals_required=row["approvals_required"],
                approvers=approvers,
                audit=audit,
            )
            if event is None:
                return result
            await conn.execute(
                "INSERT INTO answers (request_id, actor, decision, body, at) "
                "VALUES ($1, $2, $3, $4, $5)",
                answer.request_id,
                answer.actor,
                answer.decision,
                shared.dumps(answer.body),
                answer.at,
            )
            await _events(conn, [event], answer.at)
            if result == "closed":
                await conn.execute(
                    "UPDATE human_requests SET status = 'answered', answer = $1, answered_by = $2, "
                    "answered_at = $3 WHERE id = $4",
                    shared.dumps(final),
                    answer.actor,
                    answer.at,
                    answer.request_id,
                )
                job = await _queue_drive(conn, "resume", row["run_id"], payload, lease)
                await conn.execute(_DROP_REQUEST_TIMERS, answer.request_id)
            elif row["status"] == "claimed" and row["claimed_by"] == answer.actor:
                # The holder's part of a several-approver request is done: others may now act.
                await conn.execute(
                    "UPDATE human_requests SET status = $1, claimed_by = NULL, "
                    "claimed_until = NULL WHERE id = $2",
                    unclaimed_status(row["escalation_level"]),
                    answer.request_id,
                )
            return result

        result: shared.AnswerResult | Literal["claimed"] = await self._write(write)
        request = await self.get_request(answer.request_id)
        if request is None:
            raise StoreError(f"request {answer.request_id} vanished")
        return AnswerOutcome(result=result, request=request, job=job)

    # audit ----------------------------------------------------------------------------------

    async def list_events(
        self, *, run_id: str | None = None, request_id: str | None = None
    ) -> list[AuditEvent]:
        """Audit events in the order they were written."""
        column, value = ("request_id", request_id) if request_id else ("run_id", run_id)
        rows = await self._fetch(
            f"SELECT * FROM audit_events WHERE {column} = $1 ORDER BY id", value
        )
        return [shared.event_of(r) for r in rows]

    async def watch(self, *, after_id: int | None = None) -> AsyncGenerator[AuditEvent, None]:
        """Every audit event committed from now on (after `after_id` first, if given).

        Events come in commit order as each process's transaction commits.
        """
        queue = await self._audit.subscribe()
        try:
            sent: set[int] = set()
            if after_id is not None:
                for row in await self._fetch(
                    "SELECT * FROM audit_events WHERE id > $1 ORDER BY id", after_id
                ):
                    sent.add(row["id"])
                    yield shared.event_of(row)
            while True:
                ids = [int(await queue.get())]
                while not queue.empty():
                    ids.append(int(queue.get_nowait()))
                ids = [i for i in ids if i not in sent]
                rows = await self._fetch(
                    "SELECT * FROM audit_events WHERE id = ANY($1::bigint[])", ids
                )
                by_id = {r["id"]: r for r in rows}
                for event_id in ids:
                    if event_id in by_id:
                        yield shared.event_of(by_id[event_id])
        finally:
            self._audit.unsubscribe(queue)

    async def last_event_id(self) -> int:
        """The id of the newest audit event (0 if none)."""
        row = await self._fetchrow("SELECT COALESCE(MAX(id), 0) FROM audit_events")
        return int(row[0]) if row else 0

    async def wait_for_jobs(self, timeout_s: float) -> None:
        """Return when a job is queued in any process (NOTIFY baton_jobs), or after `timeout_s`.

        The subscription lives as long as the store, so a job queued between two waits still
        ends the next one at once.
        """
        if self._job_signals is None:
            self._job_signals = await self._jobs.subscribe()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._job_signals.get(), timeout_s)
        while not self._job_signals.empty():
            self._job_signals.get_nowait()

    # jobs -----------------------------------------------------------------------------------

    async def lease_jobs(self, owner: str, *, limit: int, lease_s: float) -> list[Job]:
        """Lease due jobs with SKIP LOCKED; a run with a live leased drive job gets no second one.

        A drive job is taken with its run's row locked; who holds that lock then re-reads (in a new
        snapshot) whether another drive of the run is leased, so two workers that race for one
        run's jobs cannot both win.
        """
        baton_now = self._clock().timestamp()

        async def write(conn: Conn) -> list[Job]:
            rows = await conn.fetch(
                f"""SELECT j.* FROM jobs j JOIN runs r ON r.id = j.run_id
                    WHERE j.kind IN {_DRIVE} AND j.available_at <= {_NOW}
                      AND (j.lease_until IS NULL OR j.lease_until < {_NOW})
                    ORDER BY j.id LIMIT $1 FOR UPDATE OF j, r SKIP LOCKED""",
                limit * 4,
            )
            rows += await conn.fetch(
                f"""SELECT j.* FROM jobs j WHERE j.kind NOT IN {_DRIVE}
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
                    f"SELECT run_id FROM jobs WHERE run_id = ANY($1::text[]) AND kind IN {_DRIVE} "
                    f"AND lease_until >= {_NOW} AND id <> ALL($2::bigint[])",
                    [r["run_id"] for r in rows if r["run_id"]],
                    [r["id"] for r in rows],
                )
            }
            taken: list[asyncpg.Record] = []
            for r in sorted(rows, key=lambda row: row["id"]):
                if r["kind"] in ("start", "resume"):
                    if r["run_id"] in busy:
                        continue
                    busy.add(r["run_id"])
                taken.append(r)
                if len(taken) >= limit:
                    break
            if taken:
                await conn.execute(
                    f"UPDATE jobs SET lease_owner = $1, lease_until = {_NOW} + $2, "
                    "attempts = attempts + 1 WHERE id = ANY($3::bigint[])",
                    owner,
                    lease_s,
                    [r["id"] for r in taken],
                )
            return [shared.job_of(r, attempts=r["attempts"] + 1) for r in taken]

        return await self._write(write)

    async def renew_leases(self, owner: str, job_ids: Sequence[int], *, lease_s: float) -> None:
        """Extend this owner's leases."""
        if job_ids:
            await self._write(
                lambda c: c.execute(
                    f"UPDATE jobs SET lease_until = {_NOW} + $1 "
                    "WHERE id = ANY($2::bigint[]) AND lease_owner = $3",
                    lease_s,
                    list(job_ids),
                    owner,
                )
            )

    async def finish_job(self, job_id: int, owner: str) -> None:
        """Delete a finished job this owner holds."""
        await self._write(
            lambda c: c.execute(
                "DELETE FROM jobs WHERE id = $1 AND lease_owner = $2", job_id, owner
            )
        )

    async def retry_job(self, job_id: int, owner: str, *, delay_s: float, error: str) -> None:
        """Give a failed job back for a later attempt."""
        await self._write(
            lambda c: c.execute(
                f"UPDATE jobs SET lease_until = NULL, available_at = {_NOW} + $1, last_error = $2 "
                "WHERE id = $3 AND lease_owner = $4",
                delay_s,
                error[:2000],
                job_id,
                owner,
            )
        )

    # effects --------------------------------------------------------------------------------

    async def get_effect(self, key: str) -> dict[str, Any] | None:
        """The recorded effect for an idempotency key."""
        row = await self._fetchrow("SELECT * FROM effects WHERE key = $1", key)
        if row is None:
            return None
        return {"key": row["key"], "tool": row["tool"], "result": json.loads(row["result"])}

    async def record_effect(
        self, *, key: str, run_id: str, tool: str, arguments: dict[str, Any], result: Any
    ) -> bool:
        """Record an effect and its single `effect.executed` event."""
        now = self._now()

        async def write(conn: Conn) -> bool:
            inserted = await conn.fetchval(
                "INSERT INTO effects (key, run_id, tool, arguments, result, at) "
                "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING RETURNING 1",
                key,
                run_id,
                tool,
                shared.dumps(arguments),
                shared.dumps(result),
                now,
            )
            if inserted is None:
                return False
            event = shared.effect_event(
                run_id=run_id, tool=tool, key=key, arguments=arguments, result=result
            )
            await _events(conn, [event], now)
            return True

        return await self._write(write)

    # people ---------------------------------------------------------------------------------

    async def add_team(
        self, name: str, description: str = "", *, events: Sequence[NewEvent] = ()
    ) -> bool:
        """Create a team if missing, with `events` (written only if it was created)."""
        now = self._now()

        async def write(conn: Conn) -> bool:
            created = await conn.fetchval(
                "INSERT INTO teams (name, description) VALUES ($1, $2) ON CONFLICT DO NOTHING "
                "RETURNING 1",
                name,
                description,
            )
            if created:
                await _events(conn, events, now)
            return created is not None

        return await self._write(write)

    async def add_user(
        self,
        name: str,
        *,
        role: str,
        teams: Sequence[str],
        password_hash: str | None = None,
        email: str | None = None,
        slack_id: str | None = None,
        events: Sequence[NewEvent] = (),
    ) -> User:
        """Create or update a user, creating missing teams, and set exactly these memberships.

        `email` and `slack_id` left None keep what is stored; "" clears them.
        """
        now = self._now()

        async def write(conn: Conn) -> None:
            user_id = await conn.fetchval(
                "INSERT INTO users (id, name, role, password_hash, created_at) "
                "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (name) DO UPDATE SET role = $3, "
                "password_hash = COALESCE($4, users.password_hash) RETURNING id",
                f"u_{secrets.token_hex(8)}",
                name,
                role,
                password_hash,
                now,
            )
            for column, value in (("email", email), ("slack_id", slack_id)):
                if value is not None:
                    await conn.execute(
                        f"UPDATE users SET {column} = NULLIF($1, '') WHERE id = $2", value, user_id
                    )
            await conn.execute("DELETE FROM memberships WHERE user_id = $1", user_id)
            for team in teams:
                await conn.execute(
                    "INSERT INTO teams (name) VALUES ($1) ON CONFLICT DO NOTHING", team
                )
                await conn.execute("INSERT INTO memberships VALUES ($1, $2)", user_id, team)
            await _events(conn, events, now)

        await self._write(write)
        user = await self.get_user(name)
        assert user is not None
        return user

    async def get_user(self, name: str) -> User | None:
        """A user by name, with their teams."""
        return await self._user_where("u.name = $1", name)

    async def _user_where(self, clause: str, value: str) -> User | None:
        found = await self._users_where(clause, value)
        return found[0] if found else None

    async def _users_where(self, clause: str, *args: Any) -> list[User]:
        rows = await self._fetch(
            "SELECT u.id, u.name, u.role, u.email, u.slack_id, "
            "COALESCE(array_agg(m.team ORDER BY m.team) "
            "FILTER (WHERE m.team IS NOT NULL), '{}') AS teams FROM users u "
            f"LEFT JOIN memberships m ON m.user_id = u.id WHERE {clause} GROUP BY u.id "
            "ORDER BY u.name",
            *args,
        )
        return [
            User(
                id=row["id"],
                name=row["name"],
                role=row["role"],
                teams=tuple(row["teams"]),
                email=row["email"],
                slack_id=row["slack_id"],
            )
            for row in rows
        ]

    async def credentials(self, name: str) -> tuple[User, str | None] | None:
        """A user and their password hash."""
        user = await self.get_user(name)
        if user is None:
            return None
        row = await self._fetchrow("SELECT password_hash FROM users WHERE id = $1", user.id)
        return user, row[0] if row else None

    async def sign_in_streak(self, name: str, *, window_s: float) -> tuple[int, float] | None:
        """The failures in a row for the name tried within `window_s`, and the last one's age."""
        now = self._now().timestamp()
        row = await self._fetchrow(
            "SELECT failures, last_failed_at FROM sign_in_failures "
            "WHERE name = $1 AND last_failed_at >= $2",
            name,
            now - window_s,
        )
        return (row[0], now - row[1]) if row else None

    async def note_failed_sign_in(self, name: str, *, window_s: float) -> int:
        """One more failure for the name tried; the streak's length."""
        at = self._now().timestamp()

        async def write(conn: Conn) -> int:
            await conn.execute(
                "DELETE FROM sign_in_failures WHERE last_failed_at < $1", at - window_s
            )
            failures = await conn.fetchval(
                "INSERT INTO sign_in_failures (name, failures, last_failed_at) VALUES ($1, 1, $2) "
                "ON CONFLICT (name) DO UPDATE SET failures = sign_in_failures.failures + 1, "
                "last_failed_at = EXCLUDED.last_failed_at RETURNING failures",
                name,
                at,
            )
            return int(failures)

        result: int = await self._write(write)
        return result

    async def clear_failed_sign_ins(self, name: str) -> None:
        """End the name's streak."""
        await self._write(
            lambda conn: conn.execute("DELETE FROM sign_in_failures WHERE name = $1", name)
        )

    async def add_token(
        self,
        user_id: str,
        token_hash: str,
        label: str = "",
        *,
        token_id: str | None = None,
        hint: str = "",
        events: Sequence[NewEvent] = (),
    ) -> str:
        """Store an API token's hash (the token itself is never stored); its public id."""
        now = self._now()
        public_id = token_id or shared.new_token_id()

        async def write(conn: Conn) -> str:
            await conn.execute(
                "INSERT INTO api_tokens (hash, user_id, label, created_at, id, hint) "
                "VALUES ($1, $2, $3, $4, $5, $6)",
                token_hash,
                user_id,
                label,
                now,
                public_id,
                hint,
            )
            await _events(conn, events, now)
            return public_id

        return await self._write(write)

    async def user_for_token(self, token_hash: str) -> User | None:
        """The user of an unrevoked token."""
        return await self._user_where(
            "u.id = (SELECT user_id FROM api_tokens WHERE hash = $1 AND revoked_at IS NULL)",
            token_hash,
        )

    async def size_bytes(self) -> int:
        """Bytes the tables and indexes take (the database's own catalog not counted)."""
        row = await self._fetchrow(
            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'm')"
        )
        return int(row[0]) if row else 0

    # claims ---------------------------------------------------------------------------------

    async def _apply(self, conn: Conn, request: HumanRequest, change: RequestChange) -> None:
        """Write a planned change of a request: its columns, events, timers, outbox, resume."""
        now = self._now()
        columns = change.columns
        sets = ", ".join(f"{c} = ${i}" for i, c in enumerate(columns, start=2))
        await conn.execute(
            f"UPDATE human_requests SET {sets} WHERE id = $1",
            request.id,
            *(_column_value(v) for v in columns.values()),
        )
        await _events(conn, change.events, now)
        await _insert_timers(conn, change.timers)
        await _insert_notifications(conn, change.notifications, now)
        if change.outcome == "expired":
            await conn.execute(_DROP_REQUEST_TIMERS, request.id)
        if change.resume:
            await _queue_drive(conn, "resume", request.run_id, shared.job_payload(), None)

    async def _change(
        self,
        request_id: str,
        plan: shared.PlanChange,
    ) -> ClaimOutcome:
        now = self._clock()

        async def write(conn: Conn) -> str:
            request = await _request_in(conn, request_id, lock=True)
            if request is None:
                raise StoreError(f"request {request_id} vanished")
            result, change = plan(request, now)
            if change is not None:
                await self._apply(conn, request, change)
            return result

        result: str = await self._write(write)
        request = await self.get_request(request_id)
        assert request is not None
        return ClaimOutcome(result=result, request=request)

    # timers ---------------------------------------------------------------------------------

    async def fire_timer(self, job: Job, owner: str, *, channels: Sequence[str]) -> TimerOutcome:
        """Apply a due timer and delete its job in one transaction; at most once."""
        now = self._clock()

        async def write(conn: Conn) -> str:
            held = await conn.fetchval(
                "DELETE FROM jobs WHERE id = $1 AND lease_owner = $2 RETURNING 1", job.id, owner
            )
            if held is None:
                return "lost"
            request = await _request_in(conn, job.request_id, lock=True) if job.request_id else None
            change = (
                plan_timer(request, job.payload, now=now, channels=channels) if request else None
            )
            if request is None or change is None:
                return "dropped"
            await self._apply(conn, request, change)
            return change.outcome

        result: str = await self._write(write)
        request = await self.get_request(job.request_id) if job.request_id else None
        return TimerOutcome(result=result, request=request)

    # notifications --------------------------------------------------------------------------

    async def get_notification(self, notification_id: str) -> Notification | None:
        """An outbox row."""
        row = await self._fetchrow("SELECT * FROM notifications WHERE id = $1", notification_id)
        return shared.notification_of(row) if row else None

    async def record_delivery(
        self,
        notification_id: str,
        *,
        job_id: int,
        owner: str,
        outcome: Literal["sent", "retrying", "failed", "skipped"],
        error: str | None = None,
        retry_in_s: float = 0.0,
    ) -> Notification | None:
        """Record an attempt, its `request.notified` event, and finish or delay the job."""
        now = self._now()

        async def write(conn: Conn) -> Notification | None:
            held = await conn.fetchval(
                "SELECT 1 FROM jobs WHERE id = $1 AND lease_owner = $2 FOR UPDATE", job_id, owner
            )
            if held is None:
                return None
            row = await conn.fetchrow(
                "SELECT * FROM notifications WHERE id = $1 FOR UPDATE", notification_id
            )
            if row is None:
                return None
            note = shared.notification_of(row)
            attempt = note.attempts + (0 if outcome == "skipped" else 1)
            updated = await conn.fetchrow(
                "UPDATE notifications SET status = $1, attempts = $2, "
                "last_error = COALESCE($3, last_error), updated_at = $4 WHERE id = $5 RETURNING *",
                shared.delivered_status(outcome),
                attempt,
                error,
                now,
                notification_id,
            )
            event = shared.delivery_event(note, outcome=outcome, attempt=attempt, error=error)
            await _events(conn, [event], now)
            if outcome == "retrying":
                await conn.execute(
                    f"UPDATE jobs SET lease_until = NULL, available_at = {_NOW} + $1, "
                    "last_error = $2 WHERE id = $3 AND lease_owner = $4",
                    retry_in_s,
                    (error or "")[:2000],
                    job_id,
                    owner,
                )
            else:
                await conn.execute(
                    "DELETE FROM jobs WHERE id = $1 AND lease_owner = $2", job_id, owner
                )
            assert updated is not None
            return shared.notification_of(updated)

        return await self._write(write)

    # people ---------------------------------------------------------------------------------

    async def list_users(self) -> list[User]:
        """Every user, by name."""
        return await self._users_where("TRUE")

    async def list_teams(self) -> list[Team]:
        """Every team with its members, by name."""
        rows = await self._fetch(
            "SELECT t.name, t.description, COALESCE(array_agg(u.name ORDER BY u.name) "
            "FILTER (WHERE u.name IS NOT NULL), '{}') AS members FROM teams t "
            "LEFT JOIN memberships m ON m.team = t.name LEFT JOIN users u ON u.id = m.user_id "
            "GROUP BY t.name ORDER BY t.name"
        )
        return [
            Team(name=r["name"], description=r["description"], members=tuple(r["members"]))
            for r in rows
        ]

    async def team_members(self, team: str) -> list[User]:
        """The users in a team, by name."""
        return await self._users_where(
            "u.id IN (SELECT user_id FROM memberships WHERE team = $1)", team
        )

    async def user_for_slack_id(self, slack_id: str) -> User | None:
        """The user whose Slack user id this is."""
        return await self._user_where("u.slack_id = $1", slack_id)

    async def list_tokens(self, user_id: str | None = None) -> list[ApiToken]:
        """API tokens, newest first."""
        if user_id:
            rows = await self._fetch(
                f"{_SELECT_TOKENS} WHERE t.user_id = $1 ORDER BY t.created_at DESC, t.id", user_id
            )
        else:
            rows = await self._fetch(f"{_SELECT_TOKENS} ORDER BY t.created_at DESC, t.id")
        return [shared.token_of(r) for r in rows]

    async def get_token(self, token_id: str) -> ApiToken | None:
        """An API token by its public id."""
        row = await self._fetchrow(f"{_SELECT_TOKENS} WHERE t.id = $1", token_id)
        return shared.token_of(row) if row else None

    async def revoke_token(
        self, token_id: str, *, events: Sequence[NewEvent] = ()
    ) -> ApiToken | None:
        """Revoke a token once; `events` are written only by the call that revoked it."""
        now = self._now()

        async def write(conn: Conn) -> ApiToken | None:
            revoked = await conn.fetchval(
                "UPDATE api_tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL "
                "RETURNING 1",
                now,
                token_id,
            )
            if revoked:
                await _events(conn, events, now)
            row = await conn.fetchrow(f"{_SELECT_TOKENS} WHERE t.id = $1", token_id)
            return shared.token_of(row) if row else None

        return await self._write(write)

    # conversations ---------------------------------------------------------------------------

    async def list_transcript(self, run_id: str) -> list[dict[str, Any]]:
        """A run's conversation entries, in order."""
        rows = await self._fetch(
            "SELECT entry FROM run_transcript WHERE run_id = $1 ORDER BY seq", run_id
        )
        return [json.loads(r["entry"]) for r in rows]


async def _append_transcript(
    conn: Conn, run_id: str, entries: Sequence[dict[str, Any]], at: datetime
) -> None:
    if not entries:
        return
    base = await conn.fetchval(
        "SELECT COALESCE(MAX(seq), 0) FROM run_transcript WHERE run_id = $1", run_id
    )
    await conn.executemany(
        "INSERT INTO run_transcript (run_id, seq, entry, at) VALUES ($1, $2, $3, $4)",
        [(run_id, base + i, shared.dumps(e), at) for i, e in enumerate(entries, 1)],
    )


def _request_where(flt: RequestFilter, *, with_status: bool) -> tuple[str, list[Any]]:
    columns = {c: getattr(flt, c) for c in ("status", "team", "kind", "run_id", "assignee")}
    if not with_status:
        columns.pop("status")
    where, args = _where(columns, flt.cursor if with_status else None, prefix="r.")
    if flt.workflow:
        args.append(flt.workflow)
        where += f" AND r.run_id IN (SELECT id FROM runs WHERE workflow = ${len(args)})"
    if flt.teams is not None:
        args.append(list(flt.teams))
        where += f" AND r.team = ANY(${len(args)}::text[])"
    if flt.overdue_at is not None:
        args.append(flt.overdue_at)
        where += f" AND r.status IN {_OPEN} AND r.expires_at < ${len(args)}"
    if flt.visible_to is not None:
        where += " AND " + _visible("r.run_id", flt.visible_to, args)
    return where, args


def _visible(run_id: str, viewer: Viewer, args: list[Any]) -> str:
    """Runs `viewer` started, or in which one of their teams owns a request (appends to args)."""
    args.extend([viewer.name, list(viewer.teams)])
    return (
        f"(EXISTS (SELECT 1 FROM runs v WHERE v.id = {run_id} AND v.created_by = ${len(args) - 1}) "
        f"OR EXISTS (SELECT 1 FROM human_requests t WHERE t.run_id = {run_id} "
        f"AND t.team = ANY(${len(args)}::text[])))"
    )


def _where(
    columns: dict[str, str | None], cursor: str | None, *, prefix: str = ""
) -> tuple[str, list[Any]]:
    """A WHERE clause of equalities on the given columns plus the keyset cursor."""
    where: list[str] = ["TRUE"]
    args: list[Any] = []
    for column, value in columns.items():
        if value:
            args.append(value)
            where.append(f"{prefix}{column} = ${len(args)}")
    if cursor:
        args.append(shared.cursor_seq(cursor))
        where.append(f"{prefix}seq < ${len(args)}")
    return " AND ".join(where), args


async def _insert_request(conn: Conn, request: HumanRequest) -> None:
    schema = shared.dumps(request.response_schema)
    schema_hash = hashlib.sha256(schema.encode()).hexdigest()[:32]
    await conn.execute(
        "INSERT INTO schemas (hash, body) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        schema_hash,
        schema,
    )
    await conn.execute(
        """INSERT INTO human_requests (id, run_id, maf_request_id, kind, title, reason, context,
             proposed_action, payload, allowed_decisions, schema_hash, team, assignee, priority,
             status, created_at, expires_at, approvals_required, policy_rule, escalation,
             executor_id)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
             $18, $19, $20, $21)""",
        request.id,
        request.run_id,
        request.maf_request_id,
        request.kind,
        request.title,
        request.reason,
        shared.dumps(request.context),
        None if request.proposed_action is None else shared.dumps(request.proposed_action),
        shared.dumps(request.payload),
        shared.dumps(request.allowed_decisions),
        schema_hash,
        request.team,
        request.assignee,
        request.priority,
        request.status,
        request.created_at,
        request.expires_at,
        request.approvals_required,
        request.policy_rule,
        shared.dumps(request.escalation),
        request.executor_id,
    )
