"""SQLite backend: WAL, `synchronous=FULL`, one writer, one thread hop per write transaction.

All statements of a write transaction run in one function on the store's writer thread, so a pause
or an answer costs one hop and one fsync'd commit however many rows it writes, and the event loop
is free while the disk syncs. Reads are short indexed lookups that WAL never blocks: they run on
the event loop's own connection, which costs less than a thread hop. Several processes may share
the file: writers take `BEGIN IMMEDIATE` and wait on `busy_timeout`.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import secrets
import sqlite3
import threading
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

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
from human.store.demo_back_office import SqliteBackOffice
from human.store.schema import migrations

T = TypeVar("T")

WATCH_POLL_S: Final = 0.2

_OPEN: Final = "('pending', 'claimed', 'escalated')"
_INSERT_EVENT: Final = """INSERT INTO audit_events (type, at, run_id, request_id, actor, data)
    VALUES (?, ?, ?, ?, ?, ?)"""
_QUEUE_DRIVE: Final = """INSERT OR IGNORE INTO jobs (kind, run_id, available_at, payload)
    VALUES (?, ?, ?, ?)"""
# A closed request's timers have nothing left to do: the jobs table keeps only work in flight.
_DROP_REQUEST_TIMERS: Final = "DELETE FROM jobs WHERE kind = 'timer' AND request_id = ?"
_DROP_RUN_TIMERS: Final = "DELETE FROM jobs WHERE kind = 'timer' AND run_id = ?"
_SELECT_TOKENS: Final = """SELECT t.id, t.label, t.hint, t.created_at, t.revoked_at,
    u.name AS user_name FROM api_tokens t JOIN users u ON u.id = t.user_id"""
_REQUEST_COLUMNS: Final = """r.seq, r.id, r.run_id, r.maf_request_id, r.kind, r.title, r.reason,
    r.context, r.proposed_action, r.payload, r.allowed_decisions, s.body AS response_schema, r.team,
    r.assignee, r.priority, r.status, r.created_at, r.expires_at, r.approvals_required,
    r.policy_rule, r.answer, r.answered_by, r.answered_at, r.claimed_by, r.claimed_until,
    r.escalation, r.escalation_level, r.executor_id"""


_dumps = shared.dumps


def _queue_drive(
    conn: sqlite3.Connection, kind: str, run_id: str, payload: str, lease: Lease | None
) -> Job | None:
    """Queue a drive job; leased to `lease.owner` at once if no other drive of the run is leased."""
    now = time.time()
    if lease is not None:
        busy = conn.execute(
            "SELECT 1 FROM jobs WHERE run_id = ? AND kind IN ('start', 'resume') "
            "AND lease_until >= ?",
            (run_id, now),
        ).fetchone()
        if busy is None:
            cursor = conn.execute(
                "INSERT INTO jobs (kind, run_id, available_at, payload, lease_owner, lease_until, "
                "attempts) VALUES (?, ?, ?, ?, ?, ?, 1)",
                (kind, run_id, now, payload, lease.owner, now + lease.seconds),
            )
            return Job(
                id=int(cursor.lastrowid or 0),
                kind=kind,
                run_id=run_id,
                payload=json.loads(payload),
                attempts=1,
            )
    conn.execute(_QUEUE_DRIVE, (kind, run_id, now, payload))
    return None


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="microseconds")


class SqliteStore(SqliteBackOffice, shared.HolderChanges):
    """The `Store` on one SQLite file."""

    def __init__(self, path: Path, *, clock: Callable[[], datetime] = utcnow) -> None:
        self.path = path
        self._clock = clock
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="baton-sqlite")
        self._local = threading.local()
        self._reader: sqlite3.Connection | None = None

    @classmethod
    async def open(cls, url: str, *, clock: Callable[[], datetime] = utcnow) -> SqliteStore:
        """Open (creating) the file named by a `sqlite:///path` URL and migrate it."""
        path = Path(url.removeprefix("sqlite:///"))
        path.parent.mkdir(parents=True, exist_ok=True)
        store = cls(path, clock=clock)
        await store.setup()
        return store

    # plumbing -------------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path, isolation_level=None, timeout=30.0, check_same_thread=False
        )
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA busy_timeout=30000")
        for attempt in range(100):
            # Switching a fresh file to WAL while another process does can be refused at once
            # (SQLITE_BUSY without the busy handler); it succeeds once the other switch is done.
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                break
            except sqlite3.OperationalError:
                if attempt == 99:
                    raise
                time.sleep(0.05)
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
        return conn

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._connect()
        return conn

    async def _run(self, fn: Callable[[sqlite3.Connection], T], *, write: bool) -> T:
        if not write:
            try:
                if self._reader is None:
                    self._reader = self._connect()
                self._reader.execute("BEGIN")
                try:
                    return fn(self._reader)
                finally:
                    self._reader.execute("COMMIT")
            except sqlite3.Error as exc:
                raise StoreError(f"sqlite: {exc}") from exc

        def body() -> T:
            conn = self._conn()
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = fn(conn)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return result

        try:
            return await asyncio.get_running_loop().run_in_executor(self._thread, body)
        except sqlite3.Error as exc:
            raise StoreError(f"sqlite: {exc}") from exc

    def _now(self) -> str:
        return _iso(self._clock())

    def _events(self, conn: sqlite3.Connection, events: Sequence[NewEvent], at: str) -> None:
        conn.executemany(
            _INSERT_EVENT,
            [(e.type, at, e.run_id, e.request_id, e.actor, _dumps(e.data)) for e in events],
        )

    def _close_open_requests(
        self, conn: sqlite3.Connection, run_id: str, actor: str, at: str
    ) -> None:
        """Cancel a run's open (and answered, undelivered) requests, each with its event."""
        ids = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM human_requests WHERE run_id = ? AND status IN "
                "('pending', 'claimed', 'escalated', 'answered')",
                (run_id,),
            )
        ]
        conn.executemany(
            "UPDATE human_requests SET status = 'cancelled' WHERE id = ?", [(i,) for i in ids]
        )
        self._events(conn, shared.cancelled_events(run_id, ids, actor), at)
        conn.execute(_DROP_RUN_TIMERS, (run_id,))

    async def setup(self) -> None:
        """Apply pending migrations under the write lock; running it twice changes nothing."""

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
                conn.execute(
                    "INSERT INTO schema_version VALUES (?, ?, ?)", (version, name, self._now())
                )

        await self._run(migrate, write=True)

    async def close(self) -> None:
        """Close the connection and stop the store's thread."""

        def shut() -> None:
            conn = getattr(self._local, "conn", None)
            if conn is not None:
                conn.close()
                self._local.conn = None

        await asyncio.get_running_loop().run_in_executor(self._thread, shut)
        self._thread.shutdown(wait=True)
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    # runs -----------------------------------------------------------------------------------

    async def create_run(
        self, run: Run, events: Sequence[NewEvent], *, lease: Lease | None = None
    ) -> Job | None:
        """Store a new run, its audit events and its start job in one transaction.

        With `lease`, the start job is leased to that worker at once and returned.
        """
        payload = shared.job_payload()

        def write(conn: sqlite3.Connection) -> Job | None:
            seq = conn.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM runs").fetchone()[0]
            conn.execute(
                "INSERT INTO runs (id, seq, workflow, input, status, created_by, created_at, "
                "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run.id,
                    seq,
                    run.workflow,
                    _dumps(run.input),
                    run.status,
                    run.created_by,
                    _iso(run.created_at),
                    _iso(run.updated_at),
                ),
            )
            self._events(conn, events, _iso(run.created_at))
            return _queue_drive(conn, "start", run.id, payload, lease)

        return await self._run(write, write=True)

    async def get_run(self, run_id: str) -> Run | None:
        """A run by id."""
        row = await self._run(
            lambda c: c.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone(),
            write=False,
        )
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
        where: list[str] = ["1=1"]
        args: list[Any] = []
        if status:
            where.append("status = ?")
            args.append(status)
        if workflow:
            where.append("workflow = ?")
            args.append(workflow)
        if visible_to is not None:
            clause, more = _visible("runs.id", visible_to)
            where.append(clause)
            args.extend(more)
        if cursor:
            where.append("seq < ?")
            args.append(shared.cursor_seq(cursor))
        sql = f"SELECT * FROM runs WHERE {' AND '.join(where)} ORDER BY seq DESC LIMIT ?"
        rows = await self._run(lambda c: c.execute(sql, [*args, limit + 1]).fetchall(), write=False)
        return shared.page(rows, [shared.run_of(r) for r in rows[:limit]], limit)

    async def teams_of_run(self, run_id: str) -> frozenset[str]:
        """The teams owning the run's requests."""
        rows = await self._run(
            lambda c: c.execute(
                "SELECT DISTINCT team FROM human_requests WHERE run_id = ?", (run_id,)
            ).fetchall(),
            write=False,
        )
        return frozenset(row[0] for row in rows)

    async def record_progress(self, progress: Progress) -> bool:
        """Commit one drive: run, checkpoint, requests, deliveries, audit, job; or nothing."""
        now = self._now()
        new_cp = progress.checkpoint.id if progress.checkpoint else None

        def write(conn: sqlite3.Connection) -> bool:
            moved = conn.execute(
                "UPDATE runs SET status = ?, output = ?, error = ?, checkpoint_id = ?, "
                "updated_at = ? WHERE id = ? AND checkpoint_id IS ? AND status NOT IN "
                "('completed', 'failed', 'cancelled')",
                (
                    progress.status,
                    None if progress.output is None else _dumps(progress.output),
                    progress.error,
                    new_cp,
                    now,
                    progress.run_id,
                    progress.expected_checkpoint_id,
                ),
            ).rowcount
            if moved == 0:
                return False
            if progress.expected_checkpoint_id is not None:
                conn.execute(
                    "DELETE FROM checkpoints WHERE id = ?", (progress.expected_checkpoint_id,)
                )
            if progress.checkpoint is not None:
                conn.execute(
                    "INSERT INTO checkpoints (id, run_id, body, created_at) VALUES (?, ?, ?, ?)",
                    (progress.checkpoint.id, progress.run_id, progress.checkpoint.body, now),
                )
            for request in progress.new_requests:
                _insert_request(conn, request)
            _insert_timers(conn, progress.timers)
            _insert_notifications(conn, progress.notifications, now)
            if progress.delivered_request_ids:
                conn.executemany(
                    "UPDATE human_requests SET status = 'resumed' WHERE id = ? "
                    "AND status = 'answered'",
                    [(rid,) for rid in progress.delivered_request_ids],
                )
                conn.executemany(
                    "UPDATE human_requests SET delivered_at = ? WHERE id = ? "
                    "AND status = 'expired'",
                    [(now, rid) for rid in progress.delivered_request_ids],
                )
            self._events(conn, progress.events, now)
            _append_transcript(conn, progress.run_id, progress.transcript, now)
            if progress.status in TERMINAL_RUN:
                self._close_open_requests(conn, progress.run_id, "system", now)
            if progress.job_id is not None:
                conn.execute("DELETE FROM jobs WHERE id = ?", (progress.job_id,))
            return True

        return await self._run(write, write=True)

    async def cancel_run(self, run_id: str, actor: str) -> Run | None:
        """Cancel an unfinished run, its open requests and queued work."""
        now = self._now()

        def write(conn: sqlite3.Connection) -> bool:
            conn.execute(
                "DELETE FROM checkpoints WHERE id = (SELECT checkpoint_id FROM runs WHERE id = ? "
                "AND status NOT IN ('completed', 'failed', 'cancelled'))",
                (run_id,),
            )
            moved = conn.execute(
                "UPDATE runs SET status = 'cancelled', updated_at = ?, checkpoint_id = NULL "
                "WHERE id = ? AND status NOT IN ('completed', 'failed', 'cancelled')",
                (now, run_id),
            ).rowcount
            if not moved:
                return False
            self._close_open_requests(conn, run_id, actor, now)
            self._events(conn, [NewEvent(type="run.cancelled", run_id=run_id, actor=actor)], now)
            conn.execute(
                "DELETE FROM jobs WHERE run_id = ? AND kind IN ('start', 'resume') "
                "AND lease_owner IS NULL",
                (run_id,),
            )
            return True

        if not await self._run(write, write=True):
            return None
        return await self.get_run(run_id)

    async def load_checkpoint(self, checkpoint_id: str) -> bytes | None:
        """An encoded checkpoint body."""
        row = await self._run(
            lambda c: c.execute(
                "SELECT body FROM checkpoints WHERE id = ?", (checkpoint_id,)
            ).fetchone(),
            write=False,
        )
        return bytes(row[0]) if row else None

    # requests -------------------------------------------------------------------------------

    async def get_request(self, request_id: str) -> HumanRequest | None:
        """A request with its answers."""
        return await self._run(functools.partial(_request_in, request_id=request_id), write=False)

    async def list_requests(self, flt: RequestFilter) -> Page:
        """Requests, newest first, keyset-paginated on their sequence number."""
        where, args = _request_where(flt, with_status=True)
        sql = (
            f"SELECT {_REQUEST_COLUMNS} FROM human_requests r JOIN schemas s "
            f"ON s.hash = r.schema_hash WHERE {where} ORDER BY r.seq DESC LIMIT ?"
        )

        def read(conn: sqlite3.Connection) -> Page:
            rows = conn.execute(sql, [*args, flt.limit + 1]).fetchall()
            return shared.page(rows, _requests_of(conn, rows[: flt.limit]), flt.limit)

        return await self._run(read, write=False)

    async def count_requests(self, flt: RequestFilter) -> dict[str, int]:
        """How many requests match per status."""
        where, args = _request_where(flt, with_status=False)
        rows = await self._run(
            lambda c: c.execute(
                f"SELECT r.status, COUNT(*) FROM human_requests r WHERE {where} GROUP BY r.status",
                args,
            ).fetchall(),
            write=False,
        )
        return {row[0]: int(row[1]) for row in rows}

    async def _requests_where(self, sql: str, args: Sequence[Any]) -> list[HumanRequest]:
        def read(conn: sqlite3.Connection) -> list[HumanRequest]:
            rows = conn.execute(
                f"SELECT {_REQUEST_COLUMNS} FROM human_requests r JOIN schemas s "
                f"ON s.hash = r.schema_hash WHERE {sql}",
                args,
            ).fetchall()
            return _requests_of(conn, rows)

        return await self._run(read, write=False)

    async def answered_requests(self, run_id: str) -> list[HumanRequest]:
        """A run's requests answered but not yet delivered, in answer order."""
        return await self._requests_where(
            "r.run_id = ? AND (r.status = 'answered' OR (r.status = 'expired' AND "
            "r.delivered_at IS NULL)) ORDER BY r.answered_at, r.seq",
            (run_id,),
        )

    async def open_requests(self, run_id: str) -> list[HumanRequest]:
        """A run's requests still waiting for a person."""
        return await self._requests_where(
            f"r.run_id = ? AND r.status IN {_OPEN} ORDER BY r.seq", (run_id,)
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

        `final` is the answer delivered to the workflow if this answer closes the request. With
        `lease`, the resume job is leased to that worker at once, unless another drive of the run
        holds a lease: then it queues behind it.
        """
        at = _iso(answer.at)
        payload = shared.job_payload()
        job: Job | None = None
        now = self._clock()

        def write(conn: sqlite3.Connection) -> shared.AnswerResult | Literal["claimed"]:
            nonlocal job
            row = conn.execute(
                "SELECT run_id, status, approvals_required, claimed_by, claimed_until, "
                "escalation_level FROM human_requests WHERE id = ?",
                (answer.request_id,),
            ).fetchone()
            if row is None or row["status"] not in OPEN_STATUSES:
                return "not_open"
            if shared.claim_blocks(row, answer.actor, now):
                return "claimed"
            approvers: set[str] = set()
            if shared.counts_approvals(answer, row["approvals_required"]):
                approvers = {
                    r[0]
                    for r in conn.execute(
                        "SELECT actor FROM answers WHERE request_id = ? AND decision = 'approve'",
                        (answer.request_id,),
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
            conn.execute(
                "INSERT INTO answers (request_id, actor, decision, body, at) "
                "VALUES (?, ?, ?, ?, ?)",
                (answer.request_id, answer.actor, answer.decision, _dumps(answer.body), at),
            )
            self._events(conn, [event], at)
            if result == "closed":
                conn.execute(
                    "UPDATE human_requests SET status = 'answered', answer = ?, answered_by = ?, "
                    f"answered_at = ? WHERE id = ? AND status IN {_OPEN}",
                    (_dumps(final), answer.actor, at, answer.request_id),
                )
                job = _queue_drive(conn, "resume", row["run_id"], payload, lease)
                conn.execute(_DROP_REQUEST_TIMERS, (answer.request_id,))
            elif row["status"] == "claimed" and row["claimed_by"] == answer.actor:
                # The holder's part of a several-approver request is done: others may now act.
                conn.execute(
                    "UPDATE human_requests SET status = ?, claimed_by = NULL, "
                    "claimed_until = NULL WHERE id = ?",
                    (unclaimed_status(row["escalation_level"]), answer.request_id),
                )
            return result

        result = await self._run(write, write=True)
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
        rows = await self._run(
            lambda c: c.execute(
                f"SELECT * FROM audit_events WHERE {column} = ? ORDER BY id", (value,)
            ).fetchall(),
            write=False,
        )
        return [shared.event_of(r) for r in rows]

    async def watch(self, *, after_id: int | None = None) -> AsyncGenerator[AuditEvent, None]:
        """Audit events as they commit, by polling the table (several processes share a file).

        One writer at a time allocates ids in its transaction, so ids are in commit order and
        polling for `id > last` misses nothing.
        """
        last = await self.last_event_id() if after_id is None else after_id
        while True:
            rows = await self._run(functools.partial(_events_after, last=last), write=False)
            for row in rows:
                last = row["id"]
                yield shared.event_of(row)
            if len(rows) < 500:
                await asyncio.sleep(WATCH_POLL_S)

    async def last_event_id(self) -> int:
        """The id of the newest audit event (0 if none)."""
        row = await self._run(
            lambda c: c.execute("SELECT COALESCE(MAX(id), 0) FROM audit_events").fetchone(),
            write=False,
        )
        return int(row[0])

    # jobs -----------------------------------------------------------------------------------

    async def wait_for_jobs(self, timeout_s: float) -> None:
        """SQLite has no cross-process signal: other processes' jobs are found by polling."""
        await asyncio.sleep(timeout_s)

    async def lease_jobs(self, owner: str, *, limit: int, lease_s: float) -> list[Job]:
        """Lease due jobs; a run with a live leased drive job gets no second one."""
        baton_now = self._clock().timestamp()
        due = await self._run(
            lambda c: c.execute(
                "SELECT 1 FROM jobs WHERE available_at <= ? AND "
                "(lease_until IS NULL OR lease_until < ?) AND (due_at IS NULL OR due_at <= ?) "
                "LIMIT 1",
                (time.time(), time.time(), baton_now),
            ).fetchone(),
            write=False,
        )
        if due is None:
            return []

        def write(conn: sqlite3.Connection) -> list[Job]:
            now = time.time()
            rows = conn.execute(
                """SELECT j.* FROM jobs j
                   WHERE j.available_at <= :now AND (j.lease_until IS NULL OR j.lease_until < :now)
                     AND (j.due_at IS NULL OR j.due_at <= :baton_now)
                     AND NOT (j.kind IN ('start', 'resume') AND EXISTS (
                         SELECT 1 FROM jobs o WHERE o.run_id = j.run_id AND o.id != j.id
                           AND o.kind IN ('start', 'resume') AND o.lease_until >= :now))
                   ORDER BY j.id LIMIT :limit""",
                {"now": now, "limit": limit * 4, "baton_now": baton_now},
            ).fetchall()
            taken: list[Job] = []
            runs: set[str] = set()
            for r in rows:
                drive = r["kind"] in ("start", "resume")
                if drive and r["run_id"] in runs:
                    continue
                conn.execute(
                    "UPDATE jobs SET lease_owner = ?, lease_until = ?, attempts = attempts + 1 "
                    "WHERE id = ?",
                    (owner, now + lease_s, r["id"]),
                )
                if drive:
                    runs.add(r["run_id"])
                taken.append(shared.job_of(r, attempts=r["attempts"] + 1))
                if len(taken) >= limit:
                    break
            return taken

        return await self._run(write, write=True)

    async def renew_leases(self, owner: str, job_ids: Sequence[int], *, lease_s: float) -> None:
        """Extend this owner's leases."""
        if not job_ids:
            return
        until = time.time() + lease_s
        await self._run(
            lambda c: c.executemany(
                "UPDATE jobs SET lease_until = ? WHERE id = ? AND lease_owner = ?",
                [(until, jid, owner) for jid in job_ids],
            ),
            write=True,
        )

    async def finish_job(self, job_id: int, owner: str) -> None:
        """Delete a finished job this owner holds."""
        await self._run(
            lambda c: c.execute(
                "DELETE FROM jobs WHERE id = ? AND lease_owner = ?", (job_id, owner)
            ),
            write=True,
        )

    async def retry_job(self, job_id: int, owner: str, *, delay_s: float, error: str) -> None:
        """Give a failed job back for a later attempt."""
        await self._run(
            lambda c: c.execute(
                "UPDATE jobs SET lease_until = NULL, available_at = ?, last_error = ? "
                "WHERE id = ? AND lease_owner = ?",
                (time.time() + delay_s, error[:2000], job_id, owner),
            ),
            write=True,
        )

    # effects --------------------------------------------------------------------------------

    async def get_effect(self, key: str) -> dict[str, Any] | None:
        """The recorded effect for an idempotency key."""
        row = await self._run(
            lambda c: c.execute("SELECT * FROM effects WHERE key = ?", (key,)).fetchone(),
            write=False,
        )
        if row is None:
            return None
        return {"key": row["key"], "tool": row["tool"], "result": json.loads(row["result"])}

    async def record_effect(
        self, *, key: str, run_id: str, tool: str, arguments: dict[str, Any], result: Any
    ) -> bool:
        """Record an effect and its single `effect.executed` event."""
        now = self._now()

        def write(conn: sqlite3.Connection) -> bool:
            inserted = conn.execute(
                "INSERT OR IGNORE INTO effects (key, run_id, tool, arguments, result, at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (key, run_id, tool, _dumps(arguments), _dumps(result), now),
            ).rowcount
            if inserted:
                event = shared.effect_event(
                    run_id=run_id, tool=tool, key=key, arguments=arguments, result=result
                )
                self._events(conn, [event], now)
            return bool(inserted)

        return await self._run(write, write=True)

    # people ---------------------------------------------------------------------------------

    async def add_team(
        self, name: str, description: str = "", *, events: Sequence[NewEvent] = ()
    ) -> bool:
        """Create a team if missing, with `events` (written only if it was created)."""
        now = self._now()

        def write(conn: sqlite3.Connection) -> bool:
            created = conn.execute(
                "INSERT OR IGNORE INTO teams (name, description) VALUES (?, ?)", (name, description)
            ).rowcount
            if created:
                self._events(conn, events, now)
            return bool(created)

        return await self._run(write, write=True)

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

        def write(conn: sqlite3.Connection) -> str:
            row = conn.execute("SELECT id FROM users WHERE name = ?", (name,)).fetchone()
            user_id = row[0] if row else f"u_{secrets.token_hex(8)}"
            if row:
                conn.execute(
                    "UPDATE users SET role = ?, password_hash = COALESCE(?, password_hash) "
                    "WHERE id = ?",
                    (role, password_hash, user_id),
                )
            else:
                conn.execute(
                    "INSERT INTO users (id, name, role, password_hash, created_at) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (user_id, name, role, password_hash, now),
                )
            for column, value in (("email", email), ("slack_id", slack_id)):
                if value is not None:
                    conn.execute(
                        f"UPDATE users SET {column} = NULLIF(?, '') WHERE id = ?", (value, user_id)
                    )
            conn.execute("DELETE FROM memberships WHERE user_id = ?", (user_id,))
            for team in teams:
                conn.execute("INSERT OR IGNORE INTO teams (name) VALUES (?)", (team,))
                conn.execute("INSERT INTO memberships VALUES (?, ?)", (user_id, team))
            self._events(conn, events, now)
            return user_id

        await self._run(write, write=True)
        user = await self.get_user(name)
        assert user is not None
        return user

    async def get_user(self, name: str) -> User | None:
        """A user by name, with their teams."""
        return await self._user_where("u.name = ?", name)

    async def _user_where(self, clause: str, value: str) -> User | None:
        found = await self._users_where(clause, (value,))
        return found[0] if found else None

    async def _users_where(self, clause: str, args: Sequence[Any]) -> list[User]:
        def read(conn: sqlite3.Connection) -> list[User]:
            rows = conn.execute(
                f"SELECT u.* FROM users u WHERE {clause} ORDER BY u.name", args
            ).fetchall()
            teams: dict[str, list[str]] = {}
            if rows:
                ids = [r["id"] for r in rows]
                for m in conn.execute(
                    "SELECT user_id, team FROM memberships WHERE user_id IN "
                    f"({','.join('?' * len(ids))}) ORDER BY team",
                    ids,
                ):
                    teams.setdefault(m[0], []).append(m[1])
            return [
                User(
                    id=r["id"],
                    name=r["name"],
                    role=r["role"],
                    teams=tuple(teams.get(r["id"], ())),
                    email=r["email"],
                    slack_id=r["slack_id"],
                )
                for r in rows
            ]

        return await self._run(read, write=False)

    async def credentials(self, name: str) -> tuple[User, str | None] | None:
        """A user and their password hash."""
        user = await self.get_user(name)
        if user is None:
            return None
        row = await self._run(
            lambda c: c.execute(
                "SELECT password_hash FROM users WHERE id = ?", (user.id,)
            ).fetchone(),
            write=False,
        )
        return user, row[0] if row else None

    async def sign_in_streak(self, name: str, *, window_s: float) -> tuple[int, float] | None:
        """The failures in a row for the name tried within `window_s`, and the last one's age."""
        now = self._clock().timestamp()
        since = now - window_s
        row = await self._run(
            lambda c: c.execute(
                "SELECT failures, last_failed_at FROM sign_in_failures "
                "WHERE name = ? AND last_failed_at >= ?",
                (name, since),
            ).fetchone(),
            write=False,
        )
        return (row[0], now - row[1]) if row else None

    async def note_failed_sign_in(self, name: str, *, window_s: float) -> int:
        """One more failure for the name tried; the streak's length."""
        at = self._clock().timestamp()

        def write(conn: sqlite3.Connection) -> int:
            conn.execute("DELETE FROM sign_in_failures WHERE last_failed_at < ?", (at - window_s,))
            row = conn.execute(
                "INSERT INTO sign_in_failures (name, failures, last_failed_at) VALUES (?, 1, ?) "
                "ON CONFLICT (name) DO UPDATE SET failures = failures + 1, "
                "last_failed_at = excluded.last_failed_at RETURNING failures",
                (name, at),
            ).fetchone()
            return int(row[0])

        return await self._run(write, write=True)

    async def clear_failed_sign_ins(self, name: str) -> None:
        """End the name's streak."""
        await self._run(
            lambda c: c.execute("DELETE FROM sign_in_failures WHERE name = ?", (name,)),
            write=True,
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

        def write(conn: sqlite3.Connection) -> str:
            conn.execute(
                "INSERT INTO api_tokens (hash, user_id, label, created_at, id, hint) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (token_hash, user_id, label, now, public_id, hint),
            )
            self._events(conn, events, now)
            return public_id

        return await self._run(write, write=True)

    async def user_for_token(self, token_hash: str) -> User | None:
        """The user of an unrevoked token."""
        return await self._user_where(
            "u.id = (SELECT user_id FROM api_tokens WHERE hash = ? AND revoked_at IS NULL)",
            token_hash,
        )

    async def size_bytes(self) -> int:
        """Database bytes on disk, after a checkpoint of the WAL into the file."""

        def checkpoint_wal() -> None:
            self._conn().execute("PRAGMA wal_checkpoint(TRUNCATE)")

        def measure(conn: sqlite3.Connection) -> int:
            pages = conn.execute("PRAGMA page_count").fetchone()[0]
            free = conn.execute("PRAGMA freelist_count").fetchone()[0]
            size = conn.execute("PRAGMA page_size").fetchone()[0]
            return int((pages - free) * size)

        await asyncio.get_running_loop().run_in_executor(self._thread, checkpoint_wal)
        return await self._run(measure, write=False)

    # claims ---------------------------------------------------------------------------------

    def _apply(
        self, conn: sqlite3.Connection, request: HumanRequest, change: RequestChange
    ) -> None:
        """Write a planned change of a request: its columns, events, timers, outbox, resume."""
        now = self._now()
        columns = change.columns
        conn.execute(
            f"UPDATE human_requests SET {', '.join(f'{c} = ?' for c in columns)} WHERE id = ?",
            [*(_column_value(v) for v in columns.values()), request.id],
        )
        self._events(conn, change.events, now)
        _insert_timers(conn, change.timers)
        _insert_notifications(conn, change.notifications, now)
        if change.outcome == "expired":
            conn.execute(_DROP_REQUEST_TIMERS, (request.id,))
        if change.resume:
            _queue_drive(conn, "resume", request.run_id, shared.job_payload(), None)

    async def _change(
        self,
        request_id: str,
        plan: shared.PlanChange,
    ) -> ClaimOutcome:
        now = self._clock()

        def write(conn: sqlite3.Connection) -> str:
            request = _request_in(conn, request_id)
            if request is None:
                raise StoreError(f"request {request_id} vanished")
            result, change = plan(request, now)
            if change is not None:
                self._apply(conn, request, change)
            return result

        result = await self._run(write, write=True)
        request = await self.get_request(request_id)
        assert request is not None
        return ClaimOutcome(result=result, request=request)

    # timers ---------------------------------------------------------------------------------

    async def fire_timer(self, job: Job, owner: str, *, channels: Sequence[str]) -> TimerOutcome:
        """Apply a due timer and delete its job in one transaction; at most once."""
        now = self._clock()

        def write(conn: sqlite3.Connection) -> str:
            held = conn.execute(
                "SELECT 1 FROM jobs WHERE id = ? AND lease_owner = ?", (job.id, owner)
            ).fetchone()
            if held is None:
                return "lost"
            conn.execute("DELETE FROM jobs WHERE id = ?", (job.id,))
            request = _request_in(conn, job.request_id) if job.request_id else None
            change = (
                plan_timer(request, job.payload, now=now, channels=channels) if request else None
            )
            if request is None or change is None:
                return "dropped"
            self._apply(conn, request, change)
            return change.outcome

        result = await self._run(write, write=True)
        request = await self.get_request(job.request_id) if job.request_id else None
        return TimerOutcome(result=result, request=request)

    # notifications --------------------------------------------------------------------------

    async def get_notification(self, notification_id: str) -> Notification | None:
        """An outbox row."""
        row = await self._run(
            lambda c: c.execute(
                "SELECT * FROM notifications WHERE id = ?", (notification_id,)
            ).fetchone(),
            write=False,
        )
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

        def write(conn: sqlite3.Connection) -> Notification | None:
            held = conn.execute(
                "SELECT 1 FROM jobs WHERE id = ? AND lease_owner = ?", (job_id, owner)
            ).fetchone()
            if held is None:
                return None
            row = conn.execute(
                "SELECT * FROM notifications WHERE id = ?", (notification_id,)
            ).fetchone()
            if row is None:
                return None
            note = shared.notification_of(row)
            attempt = note.attempts + (0 if outcome == "skipped" else 1)
            conn.execute(
                "UPDATE notifications SET status = ?, attempts = ?, "
                "last_error = COALESCE(?, last_error), updated_at = ? WHERE id = ?",
                (shared.delivered_status(outcome), attempt, error, now, notification_id),
            )
            event = shared.delivery_event(note, outcome=outcome, attempt=attempt, error=error)
            self._events(conn, [event], now)
            if outcome == "retrying":
                conn.execute(
                    "UPDATE jobs SET lease_until = NULL, available_at = ?, last_error = ? "
                    "WHERE id = ? AND lease_owner = ?",
                    (time.time() + retry_in_s, (error or "")[:2000], job_id, owner),
                )
            else:
                conn.execute("DELETE FROM jobs WHERE id = ? AND lease_owner = ?", (job_id, owner))
            found = conn.execute(
                "SELECT * FROM notifications WHERE id = ?", (notification_id,)
            ).fetchone()
            return shared.notification_of(found)

        return await self._run(write, write=True)

    # people ---------------------------------------------------------------------------------

    async def list_users(self) -> list[User]:
        """Every user, by name."""
        return await self._users_where("1=1", ())

    async def list_teams(self) -> list[Team]:
        """Every team with its members, by name."""

        def read(conn: sqlite3.Connection) -> list[Team]:
            members: dict[str, list[str]] = {}
            for m in conn.execute(
                "SELECT m.team, u.name FROM memberships m JOIN users u ON u.id = m.user_id "
                "ORDER BY u.name"
            ):
                members.setdefault(m[0], []).append(m[1])
            return [
                Team(
                    name=r["name"],
                    description=r["description"],
                    members=tuple(members.get(r["name"], ())),
                )
                for r in conn.execute("SELECT * FROM teams ORDER BY name")
            ]

        return await self._run(read, write=False)

    async def team_members(self, team: str) -> list[User]:
        """The users in a team, by name."""
        return await self._users_where(
            "u.id IN (SELECT user_id FROM memberships WHERE team = ?)", (team,)
        )

    async def user_for_slack_id(self, slack_id: str) -> User | None:
        """The user whose Slack user id this is."""
        return await self._user_where("u.slack_id = ?", slack_id)

    async def list_tokens(self, user_id: str | None = None) -> list[ApiToken]:
        """API tokens, newest first."""
        where, args = ("t.user_id = ?", (user_id,)) if user_id else ("1=1", ())
        rows = await self._run(
            lambda c: c.execute(
                f"{_SELECT_TOKENS} WHERE {where} ORDER BY t.created_at DESC, t.id", args
            ).fetchall(),
            write=False,
        )
        return [shared.token_of(r) for r in rows]

    async def get_token(self, token_id: str) -> ApiToken | None:
        """An API token by its public id."""
        row = await self._run(
            lambda c: c.execute(f"{_SELECT_TOKENS} WHERE t.id = ?", (token_id,)).fetchone(),
            write=False,
        )
        return shared.token_of(row) if row else None

    async def revoke_token(
        self, token_id: str, *, events: Sequence[NewEvent] = ()
    ) -> ApiToken | None:
        """Revoke a token once; `events` are written only by the call that revoked it."""
        now = self._now()

        def write(conn: sqlite3.Connection) -> ApiToken | None:
            revoked = conn.execute(
                "UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                (now, token_id),
            ).rowcount
            if revoked:
                self._events(conn, events, now)
            row = conn.execute(f"{_SELECT_TOKENS} WHERE t.id = ?", (token_id,)).fetchone()
            return shared.token_of(row) if row else None

        return await self._run(write, write=True)

    # conversations ---------------------------------------------------------------------------

    async def list_transcript(self, run_id: str) -> list[dict[str, Any]]:
        """A run's conversation entries, in order."""
        rows = await self._run(
            lambda c: c.execute(
                "SELECT entry FROM run_transcript WHERE run_id = ? ORDER BY seq", (run_id,)
            ).fetchall(),
            write=False,
        )
        return [json.loads(r[0]) for r in rows]


# rows -> records ----------------------------------------------------------------------------


def _append_transcript(
    conn: sqlite3.Connection, run_id: str, entries: Sequence[dict[str, Any]], at: str
) -> None:
    if not entries:
        return
    base = conn.execute(
        "SELECT COALESCE(MAX(seq), 0) FROM run_transcript WHERE run_id = ?", (run_id,)
    ).fetchone()[0]
    conn.executemany(
        "INSERT INTO run_transcript (run_id, seq, entry, at) VALUES (?, ?, ?, ?)",
        [(run_id, base + i, _dumps(e), at) for i, e in enumerate(entries, 1)],
    )


def _request_where(flt: RequestFilter, *, with_status: bool) -> tuple[str, list[Any]]:
    where: list[str] = ["1=1"]
    args: list[Any] = []
    for column in ("status", "team", "kind", "run_id", "assignee"):
        value = getattr(flt, column)
        if value and (with_status or column != "status"):
            where.append(f"r.{column} = ?")
            args.append(value)
    if flt.workflow:
        where.append("r.run_id IN (SELECT id FROM runs WHERE workflow = ?)")
        args.append(flt.workflow)
    if flt.teams is not None:
        where.append(f"r.team IN ({','.join('?' * len(flt.teams)) or 'NULL'})")
        args.extend(flt.teams)
    if flt.overdue_at is not None:
        where.append(f"r.status IN {_OPEN} AND r.expires_at < ?")
        args.append(_iso(flt.overdue_at))
    if flt.visible_to is not None:
        clause, more = _visible("r.run_id", flt.visible_to)
        where.append(clause)
        args.extend(more)
    if flt.cursor and with_status:
        where.append("r.seq < ?")
        args.append(shared.cursor_seq(flt.cursor))
    return " AND ".join(where), args


def _visible(run_id: str, viewer: Viewer) -> tuple[str, list[Any]]:
    """Runs `viewer` started, or in which one of their teams owns a request."""
    teams = ",".join("?" * len(viewer.teams)) or "NULL"
    return (
        f"(EXISTS (SELECT 1 FROM runs v WHERE v.id = {run_id} AND v.created_by = ?) "
        f"OR EXISTS (SELECT 1 FROM human_requests t WHERE t.run_id = {run_id} "
        f"AND t.team IN ({teams})))",
        [viewer.name, *viewer.teams],
    )


def _events_after(conn: sqlite3.Connection, *, last: int) -> list[sqlite3.Row]:
    return conn.execute(
        "SELECT * FROM audit_events WHERE id > ? ORDER BY id LIMIT 500", (last,)
    ).fetchall()


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


def _insert_request(conn: sqlite3.Connection, request: HumanRequest) -> None:
    schema = _dumps(request.response_schema)
    schema_hash = hashlib.sha256(schema.encode()).hexdigest()[:32]
    conn.execute("INSERT OR IGNORE INTO schemas (hash, body) VALUES (?, ?)", (schema_hash, schema))
    conn.execute(
        """INSERT INTO human_requests (id, run_id, maf_request_id, kind, title, reason, context,
             proposed_action, payload, allowed_decisions, schema_hash, team, assignee, priority,
             status, created_at, expires_at, approvals_required, policy_rule, escalation,
             executor_id)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (
            request.id,
            request.run_id,
            request.maf_request_id,
            request.kind,
            request.title,
            request.reason,
            _dumps(request.context),
            None if request.proposed_action is None else _dumps(request.proposed_action),
            _dumps(request.payload),
            _dumps(request.allowed_decisions),
            schema_hash,
            request.team,
            request.assignee,
            request.priority,
            request.status,
            _iso(request.created_at),
            None if request.expires_at is None else _iso(request.expires_at),
            request.approvals_required,
            request.policy_rule,
            _dumps(request.escalation),
            request.executor_id,
        ),
    )


def _requests_of(conn: sqlite3.Connection, rows: Sequence[sqlite3.Row]) -> list[HumanRequest]:
    if not rows:
        return []
    ids = [r["id"] for r in rows]
    marks = ",".join("?" * len(ids))
    answers = conn.execute(
        f"SELECT * FROM answers WHERE request_id IN ({marks}) ORDER BY id", ids
    ).fetchall()
    notifications = conn.execute(
        f"SELECT * FROM notifications WHERE request_id IN ({marks}) ORDER BY created_at, id", ids
    ).fetchall()
    return shared.requests_of(rows, answers, notifications)


def _request_in(conn: sqlite3.Connection, request_id: str) -> HumanRequest | None:
    row = conn.execute(
        f"SELECT {_REQUEST_COLUMNS} FROM human_requests r JOIN schemas s "
        "ON s.hash = r.schema_hash WHERE r.id = ?",
        (request_id,),
    ).fetchone()
    return _requests_of(conn, [row])[0] if row else None


def _column_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return _iso(value)
    if isinstance(value, dict | list):
        return _dumps(value)
    return value


def _insert_timers(conn: sqlite3.Connection, timers: Sequence[NewTimer]) -> None:
    """Timer jobs: leasable now by the machine's clock, due by Baton's (`due_at`)."""
    if timers:
        now = time.time()
        conn.executemany(
            "INSERT INTO jobs (kind, run_id, request_id, available_at, due_at, payload) "
            "VALUES ('timer', ?, ?, ?, ?, ?)",
            [
                (
                    t.run_id,
                    t.request_id,
                    now,
                    t.due_at.timestamp(),
                    shared.timer_payload(t.action, t.step),
                )
                for t in timers
            ],
        )


def _insert_notifications(
    conn: sqlite3.Connection, notifications: Sequence[NewNotification], at: str
) -> None:
    """Outbox rows, each with the notify job that delivers it."""
    for n in notifications:
        notification_id = shared.new_notification_id()
        conn.execute(
            "INSERT INTO notifications (id, request_id, run_id, channel, event, status, "
            "created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'queued', ?, ?)",
            (notification_id, n.request_id, n.run_id, n.channel, n.event, at, at),
        )
        conn.execute(
            "INSERT INTO jobs (kind, run_id, request_id, available_at, payload) "
            "VALUES ('notify', ?, ?, ?, ?)",
            (n.run_id, n.request_id, time.time(), shared.notify_payload(notification_id)),
        )
