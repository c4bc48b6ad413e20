"""SQLite backend: WAL, `synchronous=FULL`, one writer, one thread hop per write transaction.

All statements of a write transaction run in one function on the store's writer thread, so a pause
or an answer costs one hop and one fsync'd commit however many rows it writes, and the event loop
is free while the disk syncs. Reads are short indexed lookups that WAL never blocks: they run on
the event loop's own connection, which costs less than a thread hop. Several processes may share
the file: writers take `BEGIN IMMEDIATE` and wait on `busy_timeout`.

The transactions themselves are `human.store.transactions`, written once for every backend as
`async` functions of a `Tx`. Here a `Tx` calls sqlite3 at once and never suspends, so a whole
transaction runs, in one go, on the thread that starts it (`_finish`). What is SQLite's own:
connections and the writer thread, leasing jobs under the one writer, polling for `watch` and
`wait_for_jobs` (no other process can signal this one), migrations and the file's size.
"""

from __future__ import annotations

import asyncio
import functools
import json
import secrets
import sqlite3
import threading
import time
from collections.abc import AsyncGenerator, Callable, Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any, Final, TypeVar

from baton.errors import StoreError
from human.records import ApiToken, AuditEvent, Job, NewEvent, Team, User
from human.store import rows as shared
from human.store.base import utcnow
from human.store.demo_back_office import SqliteBackOffice
from human.store.dialect import SQLITE
from human.store.schema import migrations
from human.store.transactions import SqlStore, TxFn

T = TypeVar("T")

WATCH_POLL_S: Final = 0.2

_dumps = shared.dumps

_SELECT_TOKENS: Final = """SELECT t.id, t.label, t.hint, t.created_at, t.revoked_at,
    u.name AS user_name FROM api_tokens t JOIN users u ON u.id = t.user_id"""
_INSERT_EVENT: Final = """INSERT INTO audit_events (type, at, run_id, request_id, actor, data)
    VALUES (?, ?, ?, ?, ?, ?)"""


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


class SqliteStore(SqliteBackOffice, SqlStore):
    """The `Store` on one SQLite file."""

    dialect = SQLITE

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
        conn.create_function("baton_clock", 0, time.time)  # the dialect's clock
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

    async def _write_tx(self, fn: TxFn[T]) -> T:
        """One write transaction on the writer thread: one hop, one commit."""
        return await self._run(lambda conn: _finish(fn(_Tx(conn))), write=True)

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

    async def wait_for_jobs(self, timeout_s: float) -> None:
        """SQLite has no cross-process signal: other processes' jobs are found by polling."""
        await asyncio.sleep(timeout_s)

    # audit, jobs, effects and people: not yet written once ------------------------------------

    def _now(self) -> str:
        return _iso(self._clock())

    def _events(self, conn: sqlite3.Connection, events: Sequence[NewEvent], at: str) -> None:
        conn.executemany(
            _INSERT_EVENT,
            [(e.type, at, e.run_id, e.request_id, e.actor, _dumps(e.data)) for e in events],
        )

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


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="microseconds")


def _events_after(conn: sqlite3.Connection, *, last: int) -> list[sqlite3.Row]:
    return conn.execute(
        "SELECT * FROM audit_events WHERE id > ? ORDER BY id LIMIT 500", (last,)
    ).fetchall()
