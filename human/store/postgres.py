"""PostgreSQL backend (asyncpg): the same contract as SQLite, for several processes on one database.

Each atomic method is one transaction on a pooled connection; the transactions themselves are
`human.store.transactions`, written once for every backend, which lock the rows they decide on
(`FOR UPDATE`). What is PostgreSQL's own: the pool, leasing jobs with `FOR UPDATE SKIP LOCKED`
(a drive job also locks its run's row, which is how two workers never drive one run at once),
LISTEN for `watch` and `wait_for_jobs`, migrations under an advisory lock, and the size query.
Job times are read off the database's clock, so hosts whose clocks differ agree on who holds a
lease. Audit inserts `NOTIFY baton_audit` and queued jobs `NOTIFY baton_jobs` (see the
migration), heard by one listening connection per process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final, TypeAlias, TypeVar

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from baton.errors import StoreError
from human.records import ApiToken, AuditEvent, Job, NewEvent, Team, User
from human.store import rows as shared
from human.store.base import utcnow
from human.store.demo_back_office import PostgresBackOffice
from human.store.dialect import POSTGRES
from human.store.schema import migrations
from human.store.transactions import DRIVE, SqlStore, TxFn

T = TypeVar("T")

_MIGRATION_LOCK: Final = 0x6261746F6E  # "baton": one migrator at a time, across processes
_NOW: Final = POSTGRES.clock
_DRIVE: Final = DRIVE
_INSERT_EVENT: Final = """INSERT INTO audit_events (type, at, run_id, request_id, actor, data)
    VALUES ($1, $2, $3, $4, $5, $6)"""
_SELECT_TOKENS: Final = """SELECT t.id, t.label, t.hint, t.created_at, t.revoked_at,
    u.name AS user_name FROM api_tokens t JOIN users u ON u.id = t.user_id"""

Conn: TypeAlias = "asyncpg.Connection[asyncpg.Record] | PoolConnectionProxy[asyncpg.Record]"


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


class PostgresStore(PostgresBackOffice, SqlStore):
    """The `Store` on one PostgreSQL database."""

    dialect = POSTGRES

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

    async def _write(self, fn: Callable[[Conn], Awaitable[T]]) -> T:
        try:
            async with self._pool.acquire() as conn, conn.transaction():
                return await fn(conn)
        except asyncpg.PostgresError as exc:
            raise StoreError(f"postgresql: {exc}") from exc

    async def _write_tx(self, fn: TxFn[T]) -> T:
        """One transaction on a pooled connection."""
        return await self._write(lambda conn: fn(_Tx(conn)))

    async def _read_tx(self, fn: TxFn[T]) -> T:
        """Reads on one snapshot (a read-only, repeatable-read transaction)."""
        try:
            async with (
                self._pool.acquire() as conn,
                conn.transaction(isolation="repeatable_read", readonly=True),
            ):
                return await fn(_Tx(conn))
        except asyncpg.PostgresError as exc:
            raise StoreError(f"postgresql: {exc}") from exc

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
        except asyncpg.PostgresError as exc:
            raise StoreError(f"postgresql: {exc}") from exc

    async def _fetchrow(self, sql: str, *args: Any) -> asyncpg.Record | None:
        try:
            row: asyncpg.Record | None = await self._pool.fetchrow(sql, *args)
            return row
        except asyncpg.PostgresError as exc:
            raise StoreError(f"postgresql: {exc}") from exc

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
        """Close the listeners and the pool."""
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

    # audit, jobs, effects and people: not yet written once ------------------------------------

    def _now(self) -> datetime:
        return self._clock()

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


async def _events(conn: Conn, events: Sequence[NewEvent], at: datetime) -> None:
    if events:
        await conn.executemany(
            _INSERT_EVENT,
            [(e.type, at, e.run_id, e.request_id, e.actor, shared.dumps(e.data)) for e in events],
        )
