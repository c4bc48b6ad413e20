"""Every transaction of the store, written once against a `Tx` and its database's `Dialect`.

`SqlStore` implements the store Protocols (`human.store.base`) for any backend that can run an
`async` function of a `Tx` as one write transaction (`_write_tx`) or one consistent read
(`_read_tx`). The decisions inside a transaction are pure functions (`rows.plan_answer`,
`human.routing.plan_claim`, `plan_timer`, …), so only reading and writing rows is left here. A
backend adds what is its own: its connections, leasing jobs, `watch`, `wait_for_jobs` and set-up.

An atomic method is one call of `_write_tx`: a drive's progress (`record_progress`: a pause or a
run's end, with the drive's effects), an answer (`record_answer`), a run's creation and
cancellation, a timer's firing and a delivery attempt. On PostgreSQL a transaction locks the rows
it decides on (`Dialect.lock`); on SQLite the one writer (`BEGIN IMMEDIATE`) already orders them.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Coroutine, Sequence
from datetime import UTC, datetime
from typing import Any, Final, Literal, TypeVar

from baton import failpoints
from baton.errors import StoreError
from human.access import FOUR_EYES_KINDS
from human.attachments import Kept
from human.records import (
    DELIVERY_KINDS,
    LANES,
    OPEN_STATUSES,
    TERMINAL_RUN,
    AnswerRecord,
    ApiToken,
    AuditEvent,
    HumanRequest,
    Job,
    JobLane,
    NewEvent,
    Notification,
    Page,
    Retrying,
    Run,
    Team,
    TeamsCard,
    TeamsConversation,
    User,
)
from human.routing import (
    RequestChange,
    escalates_at,
    plan_claim,
    plan_reassign,
    plan_release,
    plan_timer,
    unclaimed_status,
)
from human.store.base import (
    Actor,
    AnswerOutcome,
    ClaimOutcome,
    EffectLookup,
    InPlay,
    KeyTaken,
    Lease,
    NewEffect,
    NewNotification,
    NewTimer,
    Progress,
    RequestFact,
    RequestFilter,
    RunBrief,
    RunKey,
    TimerOutcome,
    Viewer,
)
from human.store.dialect import Dialect, Tx
from human.store.rows import (
    NO_DEADLINE,
    URGENCY_SQL,
    AnswerResult,
    Row,
    at,
    cancelled_events,
    claim_blocks,
    counts_approvals,
    cursor_seq,
    dumps,
    effect_event,
    event_of,
    fact_of,
    job_payload,
    loads,
    new_notification_id,
    new_token_id,
    notification_of,
    notify_payload,
    page,
    plan_answer,
    plan_delivery,
    requests_of,
    run_of,
    timer_payload,
    token_of,
    urgency_cursor,
    urgent_page,
)

T = TypeVar("T")
TxFn = Callable[[Tx], Coroutine[Any, Any, T]]
PlanChange = Callable[[HumanRequest, datetime], tuple[str, RequestChange | None]]

DRIVE: Final = "('start', 'resume')"
_DELIVERY: Final = "(" + ", ".join(f"'{kind}'" for kind in DELIVERY_KINDS) + ")"
OPEN: Final = "('pending', 'claimed', 'escalated')"
_ENDED: Final = "('completed', 'failed', 'cancelled')"
_EFFECT_EVENTS: Final = "('effect.executed', 'effect.uncertain', 'effect.failed')"

_REQUEST_COLUMNS: Final = """r.seq, r.id, r.run_id, r.maf_request_id, r.kind, r.title, r.reason,
    r.context, r.proposed_action, r.payload, r.allowed_decisions, s.body AS response_schema, r.team,
    r.assignee, r.priority, r.status, r.created_at, r.expires_at, r.approvals_required,
    r.policy_rule, r.answer, r.answered_by, r.answered_at, r.claimed_by, r.claimed_until,
    r.escalation, r.escalation_level, r.executor_id, a.body AS arguments_schema, r.escalates_at,
    r.attachments"""
# Whether a request has answers and outbox rows (read with it: `_requests_of` reads those only
# for the requests that have some). Worked out for each row a query returns, and, where a sort
# comes first, for each row it sorts: a page puts them on its own rows (`list_requests`).
_FLAGS: Final = """EXISTS (SELECT 1 FROM answers x WHERE x.request_id = r.id) AS has_answers,
    EXISTS (SELECT 1 FROM notifications x WHERE x.request_id = r.id) AS has_notifications"""
# A request's schemas are kept once each in `schemas`: the answer's, and its proposed action's
# arguments' (none for most kinds, and for requests stored before migration 0010).
_REQUESTS_FROM: Final = (
    "FROM human_requests r JOIN schemas s ON s.hash = r.schema_hash "
    "LEFT JOIN schemas a ON a.hash = r.arguments_schema_hash"
)
_SELECT_REQUESTS: Final = f"SELECT {_REQUEST_COLUMNS} {_REQUESTS_FROM}"
_SELECT_FLAGGED_REQUESTS: Final = f"SELECT {_REQUEST_COLUMNS}, {_FLAGS} {_REQUESTS_FROM}"
# A run's requests answered (or expired) and not yet delivered to it, and those still open.
_UNDELIVERED: Final = "(r.status = 'answered' OR (r.status = 'expired' AND r.delivered_at IS NULL))"
# Most urgent first: priority, the nearest of an earlier escalation and the deadline (none last),
# the newest (human.store.rows).
_URGENCY: Final = URGENCY_SQL
_DUE: Final = "COALESCE(r.escalates_at, r.expires_at, :far)"
_URGENT_SORT: Final = f"{_URGENCY} DESC, {_DUE} ASC, r.seq DESC"
_SELECT_TOKENS: Final = """SELECT t.id, t.label, t.hint, t.created_at, t.revoked_at,
    u.name AS user_name FROM api_tokens t JOIN users u ON u.id = t.user_id"""
# A closed request's timers have nothing left to do: the jobs table keeps only work in flight.
_DROP_REQUEST_TIMERS: Final = "DELETE FROM jobs WHERE kind = 'timer' AND request_id = :request_id"


class SqlStore:
    """The store's transactions; a backend subclass supplies connections and its own parts."""

    dialect: Dialect
    _clock: Callable[[], datetime]
    wrap_writes: Callable[[Tx], Tx] | None = None
    """Tests only: what every write transaction's `Tx` goes through, where a test injects a fault
    (a statement that fails, a database that fills up) or counts statements. None in Baton."""

    def _writing(self, tx: Tx) -> Tx:
        """A write transaction's `Tx`, through `wrap_writes` where a test set it."""
        return tx if self.wrap_writes is None else self.wrap_writes(tx)

    # what a backend supplies ----------------------------------------------------------------

    async def _write_tx(self, fn: TxFn[T], *, durable: bool = True) -> T:
        """Run `fn` as one write transaction: all of it commits, or none of it.

        `durable=False` commits without waiting for the disk (SQLite `synchronous=NORMAL`,
        PostgreSQL `synchronous_commit=off`): a crash of the process keeps it, a crash of the
        machine (or of the database server) may not, until the next durable commit, which makes
        every earlier one durable too. Only a write whose loss a restart repairs is so: a run's
        start (its pause follows, durable) and a drive's end (lost, its job drives it again).
        """
        raise NotImplementedError

    async def _read_tx(self, fn: TxFn[T]) -> T:
        """Run `fn`'s reads on one consistent view of the database."""
        raise NotImplementedError

    async def _all(self, sql: str, /, **params: Any) -> Sequence[Row]:
        """The rows of one read statement."""
        return await self._read_tx(lambda tx: tx.all(sql, **params))

    async def _one(self, sql: str, /, **params: Any) -> Row | None:
        """The first row of one read statement."""
        return await self._read_tx(lambda tx: tx.one(sql, **params))

    # runs and checkpoints -------------------------------------------------------------------

    async def create_run(
        self,
        run: Run,
        events: Sequence[NewEvent],
        *,
        lease: Lease | None = None,
        key: RunKey | None = None,
    ) -> Job | None:
        """Store a new run, its audit events and its start job in one transaction.

        With `lease`, the start job is leased to that worker at once and returned. With `key`,
        the creator's idempotency key is claimed first: `KeyTaken` if it is theirs already.
        """
        payload = job_payload()

        async def write(tx: Tx) -> Job | None:
            if key is not None:
                taken = await tx.one(
                    "SELECT run_id FROM run_idempotency WHERE created_by = :by AND key = :key",
                    by=run.created_by,
                    key=key.key,
                )
                if taken is not None:
                    raise KeyTaken(key.key)
            await tx.run(
                "INSERT INTO runs (id, seq, workflow, input, status, created_by, created_at, "
                f"updated_at, continues) VALUES (:id, {tx.dialect.new_run_seq}, :workflow, "
                ":input, :status, :created_by, :created_at, :updated_at, :continues)",
                id=run.id,
                continues=run.continues,
                workflow=run.workflow,
                input=dumps(run.input),
                status=run.status,
                created_by=run.created_by,
                created_at=run.created_at,
                updated_at=run.updated_at,
            )
            if key is not None:
                await tx.run(
                    "INSERT INTO run_idempotency (created_by, key, digest, run_id) "
                    "VALUES (:by, :key, :digest, :run_id)",
                    by=run.created_by,
                    key=key.key,
                    digest=key.digest,
                    run_id=run.id,
                )
            await _events(tx, events, run.created_at)
            return await _queue_drive(tx, "start", run.id, payload, lease, new_run=True)

        return await self._write_tx(write, durable=False)  # made durable by the pause

    async def run_of_key(self, created_by: str, key: str) -> RunKey | None:
        """The run a person's idempotency key started, with the digest of what it asked."""
        row = await self._one(
            "SELECT run_id, digest FROM run_idempotency WHERE created_by = :by AND key = :key",
            by=created_by,
            key=key,
        )
        return RunKey(key=str(row["run_id"]), digest=str(row["digest"])) if row else None

    async def get_run(self, run_id: str) -> Run | None:
        """A run by id."""
        row = await self._one("SELECT * FROM runs WHERE id = :id", id=run_id)
        return run_of(row) if row else None

    async def runs_continuing(self, run_id: str) -> list[str]:
        """The ids of the runs that continue `run_id`'s conversation, oldest first."""
        found = await self._all(
            "SELECT id FROM runs WHERE continues = :run_id ORDER BY seq", run_id=run_id
        )
        return [str(r["id"]) for r in found]

    async def run_retrying(self, run_id: str) -> Retrying | None:
        """The run's drive job with a failed try on record."""
        return (await self.runs_retrying([run_id])).get(run_id)

    async def runs_retrying(self, run_ids: Sequence[str]) -> dict[str, Retrying]:
        """Of `run_ids`, each run's drive job with a failed try on record (its oldest), by run."""
        if not run_ids:
            return {}
        found = await self._all(
            "SELECT run_id, kind, attempts, last_error, available_at FROM jobs WHERE "
            f"{self.dialect.any_of('run_id', 'ids')} AND kind IN {DRIVE} "
            "AND last_error IS NOT NULL ORDER BY id DESC",
            ids=list(run_ids),
        )
        return {
            row["run_id"]: Retrying(
                kind=row["kind"],
                attempts=row["attempts"],
                error=row["last_error"],
                next_attempt_at=datetime.fromtimestamp(float(row["available_at"]), UTC),
            )
            for row in found  # newest first: the oldest of a run's is the one kept
        }

    async def run_briefs(self, run_ids: Sequence[str]) -> dict[str, RunBrief]:
        """Of `run_ids`, each run's requests (oldest first) and effect events, in one read.

        Three statements at most, however many runs: the requests, the answers of those that
        have some, their outbox rows where they have some; and one for the events.
        """
        if not run_ids:
            return {}
        ids = list(dict.fromkeys(run_ids))

        async def read(tx: Tx) -> dict[str, RunBrief]:
            found = await tx.all(
                f"{_SELECT_FLAGGED_REQUESTS} WHERE {tx.dialect.any_of('r.run_id', 'ids')} "
                "ORDER BY r.seq",
                ids=ids,
            )
            requests = await _requests_of(tx, found)
            events = await tx.all(
                f"SELECT * FROM audit_events WHERE {tx.dialect.any_of('run_id', 'ids')} "
                f"AND type IN {_EFFECT_EVENTS} ORDER BY id",
                ids=ids,
            )
            briefs: dict[str, tuple[list[HumanRequest], list[AuditEvent]]] = {
                run_id: ([], []) for run_id in ids
            }
            for request in requests:
                briefs[request.run_id][0].append(request)
            for row in events:
                briefs[row["run_id"]][1].append(event_of(row))
            return {
                run_id: RunBrief(requests=asked, effect_events=done)
                for run_id, (asked, done) in briefs.items()
            }

        return await self._read_tx(read)

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
        params: dict[str, Any] = {"limit": limit + 1}
        if status:
            where.append("status = :status")
            params["status"] = status
        if workflow:
            where.append("workflow = :workflow")
            params["workflow"] = workflow
        if visible_to is not None:
            where.append(_visible(self.dialect, "runs.id", visible_to, params))
        if cursor:
            where.append("seq < :cursor")
            params["cursor"] = cursor_seq(cursor)
        found = await self._all(
            f"SELECT * FROM runs WHERE {' AND '.join(where)} ORDER BY seq DESC LIMIT :limit",
            **params,
        )
        return page(found, [run_of(r) for r in found[:limit]], limit)

    async def teams_of_run(self, run_id: str) -> frozenset[str]:
        """The teams owning the run's requests."""
        found = await self._all(
            "SELECT DISTINCT team FROM human_requests WHERE run_id = :run_id", run_id=run_id
        )
        return frozenset(row["team"] for row in found)

    async def record_progress(self, progress: Progress) -> bool:
        """Commit one drive: run, checkpoint, requests, deliveries, audit, job; or nothing."""
        now = self._clock()
        run_id = progress.run_id

        async def write(tx: Tx) -> bool:
            d = tx.dialect
            moved = await tx.run(
                "UPDATE runs SET status = :status, output = :output, error = :error, "
                "checkpoint_id = :checkpoint_id, updated_at = :now WHERE id = :run_id "
                f"AND checkpoint_id {d.same} :expected AND status NOT IN {_ENDED}",
                status=progress.status,
                output=None if progress.output is None else dumps(progress.output),
                error=progress.error,
                checkpoint_id=progress.checkpoint.id if progress.checkpoint else None,
                now=now,
                run_id=run_id,
                expected=progress.expected_checkpoint_id,
            )
            if moved == 0:
                return False
            if progress.expected_checkpoint_id is not None:
                await tx.run(
                    "DELETE FROM checkpoints WHERE id = :id", id=progress.expected_checkpoint_id
                )
            if progress.checkpoint is not None:
                await tx.run(
                    "INSERT INTO checkpoints (id, run_id, body, created_at) "
                    "VALUES (:id, :run_id, :body, :now)",
                    id=progress.checkpoint.id,
                    run_id=run_id,
                    body=progress.checkpoint.body,
                    now=now,
                )
            for request in progress.new_requests:
                await _insert_request(tx, request)
            await _keep_attachments(tx, progress.attachments, now)
            await _insert_timers(tx, progress.timers)
            await _insert_notifications(tx, progress.notifications, now)
            if progress.delivered_request_ids:
                # an answered request is resumed; an expired one keeps its status, delivered
                await tx.run(
                    "UPDATE human_requests SET "
                    "status = CASE WHEN status = 'answered' THEN 'resumed' ELSE status END, "
                    "delivered_at = CASE WHEN status = 'expired' THEN :now ELSE delivered_at END "
                    f"WHERE {d.any_of('id', 'ids')} AND status IN ('answered', 'expired')",
                    ids=list(progress.delivered_request_ids),
                    now=now,
                )
            for effect in progress.effects:
                await _insert_effect(tx, effect, now)
                if effect.started:  # (a record deferred: its start ends here)
                    await tx.run("DELETE FROM effect_starts WHERE key = :key", key=effect.key)
            await _events(tx, progress.events, now)
            await _append_transcript(tx, run_id, progress.transcript, now)
            if progress.status in TERMINAL_RUN:
                await _close_open_requests(
                    tx, run_id, "system", now, notify=progress.closing_channels
                )
            if progress.job_id is not None:
                await tx.run("DELETE FROM jobs WHERE id = :id", id=progress.job_id)
            return True

        if progress.effects:  # the called systems acted; their records are not yet stored
            failpoints.hit("effect.before_commit")
        # A drive's end need not wait for the disk, with its effects: lost with the machine, its
        # job is still there (the answer's durable commit queued it) and drives the run again
        # from the pause; the ledger finds no record, calls again with the same keys, and the
        # called systems, which dedupe on them, return their first results without acting twice.
        committed = await self._write_tx(write, durable=progress.status not in TERMINAL_RUN)
        if committed and progress.effects:
            failpoints.hit("effect.after_commit")
        return committed

    async def cancel_run(
        self, run_id: str, actor: str, *, notify: Sequence[str] = (), reason: str | None = None
    ) -> Run | None:
        """Cancel an unfinished run, its open requests and queued work; `notify` told of each."""
        why = {"reason": reason} if reason else {}
        now = self._clock()

        async def write(tx: Tx) -> bool:
            run = await tx.one(
                f"SELECT checkpoint_id FROM runs WHERE id = :run_id AND status NOT IN {_ENDED}"
                + tx.dialect.lock(),
                run_id=run_id,
            )
            if run is None:
                return False
            await tx.run("DELETE FROM checkpoints WHERE id = :id", id=run["checkpoint_id"])
            await tx.run(
                "UPDATE runs SET status = 'cancelled', updated_at = :now, checkpoint_id = NULL "
                "WHERE id = :run_id",
                now=now,
                run_id=run_id,
            )
            await _close_open_requests(tx, run_id, actor, now, notify=notify, data=why)
            cancelled = NewEvent(type="run.cancelled", run_id=run_id, actor=actor, data=why)
            await _events(tx, [cancelled], now)
            await tx.run(
                f"DELETE FROM jobs WHERE run_id = :run_id AND kind IN {DRIVE} "
                "AND lease_owner IS NULL",
                run_id=run_id,
            )
            return True

        if not await self._write_tx(write):
            return None
        return await self.get_run(run_id)

    async def load_checkpoint(self, checkpoint_id: str) -> bytes | None:
        """An encoded checkpoint body."""
        row = await self._one("SELECT body FROM checkpoints WHERE id = :id", id=checkpoint_id)
        return bytes(row["body"]) if row else None

    async def list_transcript(self, run_id: str) -> list[dict[str, Any]]:
        """A run's conversation entries, in order."""
        return await self._read_tx(lambda tx: _transcript_in(tx, run_id))

    # requests and answers -------------------------------------------------------------------

    async def get_request(self, request_id: str) -> HumanRequest | None:
        """A request with its answers."""
        return await self._read_tx(lambda tx: _request_in(tx, request_id))

    async def request_with_run(self, request_id: str) -> tuple[HumanRequest, Run] | None:
        """A request with its answers, and its run, read in one transaction (None: no request)."""

        async def read(tx: Tx) -> tuple[HumanRequest, Run] | None:
            request = await _request_in(tx, request_id)
            if request is None:
                return None
            row = await tx.one("SELECT * FROM runs WHERE id = :id", id=request.run_id)
            return (request, run_of(row)) if row else None

        return await self._read_tx(read)

    async def load_attachment(self, attachment_id: str) -> Kept | None:
        """A kept file by its id (the SHA-256 of its bytes); None when none is kept so."""
        row = await self._one(
            "SELECT media_type, data FROM attachments WHERE id = :id", id=attachment_id
        )
        return Kept(attachment_id, row["media_type"], bytes(row["data"])) if row else None

    async def list_requests(self, flt: RequestFilter) -> Page:
        """Requests, newest or most urgent first, keyset-paginated (`RequestFilter.sort`)."""
        where, params = _request_where(self.dialect, flt, with_status=True)

        async def read(tx: Tx) -> Page:
            sort = _URGENT_SORT if flt.sort == "urgent" else "r.seq DESC"
            found = await tx.all(
                # the page's rows first, then their flags (a sort would work them out for all)
                f"SELECT r.*, {_FLAGS} FROM ({_SELECT_REQUESTS} WHERE {where} "
                f"ORDER BY {sort} LIMIT :limit) r ORDER BY {sort}",
                **params,
                limit=flt.limit + 1,
            )
            items = await _requests_of(tx, found[: flt.limit])
            if flt.sort == "urgent":
                return urgent_page(found, items, flt.limit)
            return page(found, items, flt.limit)

        return await self._read_tx(read)

    async def count_requests(self, flt: RequestFilter) -> dict[str, int]:
        """How many requests match per status."""
        where, params = _request_where(self.dialect, flt, with_status=False)
        found = await self._all(
            "SELECT r.status AS status, COUNT(*) AS n FROM human_requests r "
            f"WHERE {where} GROUP BY r.status",
            **params,
        )
        return {row["status"]: int(row["n"]) for row in found}

    async def request_facts(
        self, *, since: datetime, teams: Sequence[str] | None
    ) -> list[RequestFact]:
        """The facts of every request created since `since` and every open one (of `teams`)."""
        where = f"(r.created_at >= :since OR r.status IN {OPEN})"
        params: dict[str, Any] = {"since": since}
        if teams is not None:
            where += " AND " + self.dialect.any_of("r.team", "teams")
            params["teams"] = list(teams)
        found = await self._all(
            "SELECT r.team, r.status, r.policy_rule, r.created_at, r.answered_at, r.expires_at, "
            f"r.escalation_level, r.answer FROM human_requests r WHERE {where}",
            **params,
        )
        return [fact_of(row) for row in found]

    async def run_in_play(self, run_id: str) -> InPlay | None:
        """A run, its open and answered-undelivered requests and (for a resume) its checkpoint.

        One read transaction: what a drive needs before it runs the workflow.
        """
        return await self._read_tx(lambda tx: _in_play(tx, run_id))

    async def record_answer(
        self,
        answer: AnswerRecord,
        *,
        final: dict[str, Any],
        lease: Lease | None = None,
        audit: dict[str, Any] | None = None,
        notifications: Sequence[NewNotification] = (),
    ) -> AnswerOutcome:
        """First answer wins; approvals of a multi-approver request are counted per person.

        `final` is the answer delivered to the workflow if this answer closes the request. With
        `lease`, the resume job is leased to that worker at once, unless another drive of the run
        holds a lease: then it queues behind it. The request's row is locked (or the one writer
        holds the database), so concurrent answers apply one by one.
        """
        payload = job_payload()
        now = self._clock()
        request_id = answer.request_id

        async def write(tx: Tx) -> _Answered:
            result, job = await answer_in(tx)
            if job is not None and job.run_id is not None:
                # This process drives the run next: what that drive reads, read here, where the
                # request is read anyway (the one answered is among the run's undelivered).
                state = await _in_play(tx, job.run_id)
                answered = (
                    next((r for r in state.answered if r.id == request_id), None) if state else None
                )
                if answered is not None:
                    return result, job, answered, state
            # the request as this transaction leaves it, without a read of its own afterwards
            return result, job, await _request_in(tx, request_id), None

        async def answer_in(tx: Tx) -> tuple[AnswerResult | Literal["claimed"], Job | None]:
            row = await tx.one(
                "SELECT run_id, status, approvals_required, claimed_by, claimed_until, "
                "escalation_level FROM human_requests WHERE id = :id" + tx.dialect.lock(),
                id=request_id,
            )
            if row is None or row["status"] not in OPEN_STATUSES:
                return "not_open", None
            if claim_blocks(row, answer.actor, now):
                return "claimed", None
            approvers: set[str] = set()
            if counts_approvals(answer, row["approvals_required"]):
                approvers = {
                    r["actor"]
                    for r in await tx.all(
                        "SELECT actor FROM answers WHERE request_id = :id AND decision = 'approve'",
                        id=request_id,
                    )
                }
            result, event = plan_answer(
                answer,
                run_id=row["run_id"],
                approvals_required=row["approvals_required"],
                approvers=approvers,
                audit=audit,
            )
            if event is None:
                return result, None
            await tx.run(
                "INSERT INTO answers (request_id, actor, decision, body, at) "
                "VALUES (:id, :actor, :decision, :body, :at)",
                id=request_id,
                actor=answer.actor,
                decision=answer.decision,
                body=dumps(answer.body),
                at=answer.at,
            )
            await _events(tx, [event], answer.at)
            await _insert_notifications(tx, notifications, now)
            job = None
            if result == "closed":
                await tx.run(
                    "UPDATE human_requests SET status = 'answered', answer = :answer, "
                    f"answered_by = :actor, answered_at = :at WHERE id = :id AND status IN {OPEN}",
                    answer=dumps(final),
                    actor=answer.actor,
                    at=answer.at,
                    id=request_id,
                )
                job = await _queue_drive(tx, "resume", row["run_id"], payload, lease)
                await tx.run(_DROP_REQUEST_TIMERS, request_id=request_id)
            elif row["status"] == "claimed" and row["claimed_by"] == answer.actor:
                # The holder's part of a several-approver request is done: others may now act.
                await tx.run(
                    "UPDATE human_requests SET status = :status, claimed_by = NULL, "
                    "claimed_until = NULL WHERE id = :id",
                    status=unclaimed_status(row["escalation_level"]),
                    id=request_id,
                )
            return result, job

        result, job, request, state = await self._write_tx(write)
        if request is None:
            raise StoreError(f"request {request_id} vanished")
        return AnswerOutcome(result=result, request=request, job=job, in_play=state)

    async def claim_request(self, request_id: str, actor: str, *, until: datetime) -> ClaimOutcome:
        """Claim for `actor` until `until`: someone else's live claim wins."""
        return await self._change(
            request_id, lambda r, now: plan_claim(r, actor, until=until, now=now)
        )

    async def release_request(
        self, request_id: str, actor: str, *, holder: str | None
    ) -> ClaimOutcome:
        """End a live claim (only `holder`'s unless None)."""
        return await self._change(
            request_id, lambda r, now: plan_release(r, actor, holder=holder, now=now)
        )

    async def reassign_request(
        self,
        request_id: str,
        actor: str,
        *,
        team: str | None,
        assignee: str | None,
        channels: Sequence[str] = (),
    ) -> ClaimOutcome:
        """Move an open request to another team and/or person, telling `channels` about it."""
        return await self._change(
            request_id,
            lambda r, now: plan_reassign(
                r, actor, team=team, assignee=assignee, now=now, channels=channels
            ),
        )

    async def _change(self, request_id: str, plan: PlanChange) -> ClaimOutcome:
        """Apply what `plan` decides from the request as it is, under its lock."""
        now = self._clock()

        async def write(tx: Tx) -> str:
            request = await _request_in(tx, request_id, lock=True)
            if request is None:
                raise StoreError(f"request {request_id} vanished")
            result, change = plan(request, now)
            if change is not None:
                await _apply(tx, request, change, self._clock())
            return result

        result = await self._write_tx(write)
        request = await self.get_request(request_id)
        assert request is not None
        return ClaimOutcome(result=result, request=request)

    # jobs -----------------------------------------------------------------------------------

    async def jobs_due(self, lane: JobLane | None = None) -> bool:
        """Whether any job (of `lane`, if given) is due and unleased: one read statement.

        It reads the `jobs_due` index outside any write transaction. An idle worker's poll asks
        it, and each backend's `lease_jobs` asks it first (unless told the answer), so a lease
        round that finds nothing costs one read.
        """
        row = await self._one(
            f"SELECT 1 FROM jobs j WHERE {self._due()} {lane_filter(lane)} LIMIT 1",
            now=self._clock().timestamp(),
        )
        return row is not None

    async def lanes_due(self) -> frozenset[JobLane]:
        """The lanes that have a job due and unleased: `jobs_due` of every lane in one read.

        A worker's lease round asks it once for all its lanes, then leases only in those due.
        """
        row = await self._one(
            "SELECT "
            + ", ".join(
                f"EXISTS (SELECT 1 FROM jobs j WHERE {self._due()} {lane_filter(lane)}) AS {lane}"
                for lane in LANES
            ),
            now=self._clock().timestamp(),
        )
        return frozenset(lane for lane in LANES if row is not None and row[lane])

    def _due(self) -> str:
        """The condition on `jobs j` of a job due and unleased (`:now` is Baton's clock)."""
        clock = self.dialect.clock
        return (
            f"j.available_at <= {clock} AND (j.lease_until IS NULL OR j.lease_until < {clock}) "
            "AND (j.due_at IS NULL OR j.due_at <= :now)"
        )

    async def renew_leases(
        self, owner: str, job_ids: Sequence[int], *, lease_s: float
    ) -> list[int]:
        """Extend this owner's leases; the drives among them whose run was cancelled meanwhile.

        A cancellation deletes the run's drive jobs nobody holds; a held one is left to its
        holder, whose drive this tells to stop (`Worker`): a cancel in another process reaches it
        here. Other jobs of the run (the notices the cancel queued, say) go on.
        """
        if not job_ids:
            return []

        async def write(tx: Tx) -> list[int]:
            await tx.run(
                f"UPDATE jobs SET lease_until = {tx.dialect.clock} + :lease_s "
                f"WHERE {tx.dialect.any_of('id', 'ids')} AND lease_owner = :owner",
                lease_s=lease_s,
                ids=list(job_ids),
                owner=owner,
            )
            rows = await tx.all(
                "SELECT j.id FROM jobs j JOIN runs r ON r.id = j.run_id "
                f"WHERE {tx.dialect.any_of('j.id', 'ids')} AND j.lease_owner = :owner "
                f"AND j.kind IN {DRIVE} AND r.status = 'cancelled'",
                ids=list(job_ids),
                owner=owner,
            )
            return [int(row["id"]) for row in rows]

        return await self._write_tx(write)

    async def finish_job(self, job_id: int, owner: str) -> None:
        """Delete a finished job this owner holds."""
        await self._write_tx(
            lambda tx: tx.run(
                "DELETE FROM jobs WHERE id = :id AND lease_owner = :owner", id=job_id, owner=owner
            )
        )

    async def retry_job(
        self, job_id: int, owner: str, *, delay_s: float, error: str, counted: bool = True
    ) -> None:
        """Give a failed job back for a later attempt; `counted=False` gives its attempt back.

        Its lease counted the attempt; one the store failed (not the job) should not count
        toward the job's abandonment.
        """
        await self._write_tx(
            lambda tx: _retry(tx, job_id, owner, delay_s=delay_s, error=error, counted=counted)
        )

    # effects --------------------------------------------------------------------------------

    async def get_effect(self, key: str) -> dict[str, Any] | None:
        """The recorded effect for an idempotency key."""
        row = await self._one("SELECT key, tool, result FROM effects WHERE key = :key", key=key)
        return None if row is None else _effect_of(row)

    async def effect_in_run(self, key: str, run_id: str) -> EffectLookup:
        """The recorded effect for `key` and the status of run `run_id`: one statement."""
        row = await self._one(
            "SELECT (SELECT status FROM runs WHERE id = :run_id) AS run_status, "
            "(SELECT COUNT(*) FROM effect_starts WHERE key = :key) AS started, "
            "e.key, e.tool, e.result FROM (SELECT 1 AS one) o "
            "LEFT JOIN effects e ON e.key = :key",
            key=key,
            run_id=run_id,
        )
        assert row is not None  # one row, whatever is stored
        recorded = None if row["key"] is None else _effect_of(row)
        started = bool(row["started"])
        return EffectLookup(recorded=recorded, run_status=row["run_status"], started=started)

    async def start_effect(self, effect: NewEffect) -> bool:
        """Note durably that a keyless call is about to run; False if a start was there."""
        now = self._clock()
        inserted = await self._write_tx(
            lambda tx: tx.run(
                "INSERT INTO effect_starts (key, run_id, tool, arguments, at) "
                "VALUES (:key, :run_id, :tool, :arguments, :now) ON CONFLICT DO NOTHING",
                key=effect.key,
                run_id=effect.run_id,
                tool=effect.tool,
                arguments=dumps(effect.arguments),
                now=now,
            )
        )
        failpoints.hit("effect.started")
        return bool(inserted)

    async def record_effect(
        self, effect: NewEffect, *, uncertain: bool = False, replaces: Any = None
    ) -> None:
        """Record an effect now, durably, with its event; nothing if its key is recorded.

        But for a record whose result is `replaces`: the effect's result replaces it.
        """
        now = self._clock()

        async def write(tx: Tx) -> None:
            inserted = await _insert_effect(tx, effect, now, uncertain=uncertain)
            if not inserted and replaces is not None:
                replaced = await tx.run(
                    "UPDATE effects SET result = :result "
                    "WHERE key = :key AND CAST(result AS TEXT) = :replaces",
                    key=effect.key,
                    result=dumps(effect.result),
                    replaces=dumps(replaces),
                )
                if replaced:
                    await _events(tx, [_effect_event(effect)], now)
            await tx.run("DELETE FROM effect_starts WHERE key = :key", key=effect.key)

        await self._write_tx(write)
        failpoints.hit("effect.recorded")

    # people and sign-in ---------------------------------------------------------------------

    async def add_team(
        self, name: str, description: str = "", *, events: Sequence[NewEvent] = ()
    ) -> bool:
        """Create a team if missing, with `events` (written only if it was created)."""
        now = self._clock()

        async def write(tx: Tx) -> bool:
            created = await tx.run(
                "INSERT INTO teams (name, description) VALUES (:name, :description) "
                "ON CONFLICT DO NOTHING",
                name=name,
                description=description,
            )
            if created:
                await _events(tx, events, now)
            return bool(created)

        return await self._write_tx(write)

    async def add_user(
        self,
        name: str,
        *,
        role: str,
        teams: Sequence[str],
        password_hash: str | None = None,
        email: str | None = None,
        slack_id: str | None = None,
        entra_id: str | None = None,
        time_zone: str | None = None,
        events: Sequence[NewEvent] = (),
    ) -> User:
        """Create or update a user, creating missing teams, and set exactly these memberships.

        `email`, `slack_id`, `entra_id` and `time_zone` left None keep what is stored; "" clears
        them.
        """
        now = self._clock()

        async def write(tx: Tx) -> None:
            row = await tx.one(
                "INSERT INTO users (id, name, role, password_hash, created_at) "
                "VALUES (:id, :name, :role, :password_hash, :now) ON CONFLICT (name) DO UPDATE "
                "SET role = :role, password_hash = COALESCE(:password_hash, users.password_hash) "
                "RETURNING id",
                id=f"u_{secrets.token_hex(8)}",
                name=name,
                role=role,
                password_hash=password_hash,
                now=now,
            )
            assert row is not None
            user_id = row["id"]
            for column, value in (
                ("email", email),
                ("slack_id", slack_id),
                ("entra_id", entra_id),
                ("time_zone", time_zone),
            ):
                if value is not None:
                    await tx.run(
                        f"UPDATE users SET {column} = NULLIF(:value, '') WHERE id = :id",
                        value=value,
                        id=user_id,
                    )
            await tx.run("DELETE FROM memberships WHERE user_id = :id", id=user_id)
            for team in teams:
                await tx.run(
                    "INSERT INTO teams (name) VALUES (:team) ON CONFLICT DO NOTHING", team=team
                )
                await tx.run("INSERT INTO memberships VALUES (:id, :team)", id=user_id, team=team)
            await _events(tx, events, now)

        await self._write_tx(write)
        user = await self.get_user(name)
        assert user is not None
        return user

    async def keep_time_zone(self, name: str, time_zone: str) -> bool:
        """Give `name` this time zone if they have none (their browser's, at sign-in)."""

        async def write(tx: Tx) -> bool:
            kept = await tx.run(
                "UPDATE users SET time_zone = :zone WHERE name = :name AND time_zone IS NULL",
                zone=time_zone,
                name=name,
            )
            return bool(kept)

        return await self._write_tx(write)

    async def get_user(self, name: str) -> User | None:
        """A user by name, with their teams."""
        return await self._user_where("u.name = :name", name=name)

    async def list_users(self) -> list[User]:
        """Every user, by name."""
        return await self._users_where("1=1")

    async def list_teams(self) -> list[Team]:
        """Every team with its members, by name: a row per membership, in one statement."""
        found = await self._all(
            "SELECT t.name, t.description, u.name AS member FROM teams t "
            "LEFT JOIN memberships m ON m.team = t.name LEFT JOIN users u ON u.id = m.user_id "
            "ORDER BY t.name, u.name"
        )
        teams: dict[str, tuple[str, list[str]]] = {}
        for r in found:
            _, members = teams.setdefault(r["name"], (r["description"], []))
            if r["member"] is not None:
                members.append(r["member"])
        return [
            Team(name=name, description=description, members=tuple(members))
            for name, (description, members) in teams.items()
        ]

    async def team_members(self, team: str) -> list[User]:
        """The users in a team, by name."""
        return await self._users_where(
            "u.id IN (SELECT user_id FROM memberships WHERE team = :team)", team=team
        )

    async def user_for_slack_id(self, slack_id: str) -> User | None:
        """The user whose Slack user id this is."""
        return await self._user_where("u.slack_id = :slack_id", slack_id=slack_id)

    async def user_for_entra_id(self, entra_id: str) -> User | None:
        """The user whose Entra object id this is (ids compared in lower case, as Entra's are)."""
        return await self._user_where("lower(u.entra_id) = lower(:entra_id)", entra_id=entra_id)

    async def user_for_email(self, email: str) -> User | None:
        """The user with this email address, compared without regard to case (first by name)."""
        return await self._user_where("lower(u.email) = lower(:email)", email=email)

    async def _user_where(self, clause: str, /, **params: Any) -> User | None:
        found = await self._users_where(clause, **params)
        return found[0] if found else None

    async def _users_where(self, clause: str, /, **params: Any) -> list[User]:
        """Users and their teams: a row per membership, in one statement, grouped here."""
        found = await self._all(
            "SELECT u.id, u.name, u.role, u.email, u.slack_id, u.entra_id, u.time_zone, m.team "
            "FROM users u "
            f"LEFT JOIN memberships m ON m.user_id = u.id WHERE {clause} ORDER BY u.name, m.team",
            **params,
        )
        users: dict[str, tuple[Row, list[str]]] = {}
        for r in found:
            _, teams = users.setdefault(r["id"], (r, []))
            if r["team"] is not None:
                teams.append(r["team"])
        return [
            User(
                id=u["id"],
                name=u["name"],
                role=u["role"],
                teams=tuple(teams),
                email=u["email"],
                slack_id=u["slack_id"],
                entra_id=u["entra_id"],
                time_zone=u["time_zone"],
            )
            for u, teams in users.values()
        ]

    async def credentials(self, name: str) -> tuple[User, str | None] | None:
        """A user and their password hash."""
        user = await self.get_user(name)
        if user is None:
            return None
        row = await self._one("SELECT password_hash FROM users WHERE id = :id", id=user.id)
        return user, row["password_hash"] if row else None

    async def sign_in_streak(self, name: str, *, window_s: float) -> tuple[int, float] | None:
        """The failures in a row for the name tried within `window_s`, and the last one's age."""
        now = self._clock().timestamp()
        row = await self._one(
            "SELECT failures, last_failed_at FROM sign_in_failures "
            "WHERE name = :name AND last_failed_at >= :since",
            name=name,
            since=now - window_s,
        )
        return (row["failures"], now - row["last_failed_at"]) if row else None

    async def note_failed_sign_in(self, name: str, *, window_s: float) -> int:
        """One more failure for the name tried; the streak's length."""
        at = self._clock().timestamp()

        async def write(tx: Tx) -> int:
            await tx.run(
                "DELETE FROM sign_in_failures WHERE last_failed_at < :since", since=at - window_s
            )
            row = await tx.one(
                "INSERT INTO sign_in_failures (name, failures, last_failed_at) "
                "VALUES (:name, 1, :at) ON CONFLICT (name) DO UPDATE "
                "SET failures = sign_in_failures.failures + 1, "
                "last_failed_at = EXCLUDED.last_failed_at RETURNING failures",
                name=name,
                at=at,
            )
            assert row is not None
            return int(row["failures"])

        return await self._write_tx(write)

    async def clear_failed_sign_ins(self, name: str) -> None:
        """End the name's streak."""
        await self._write_tx(
            lambda tx: tx.run("DELETE FROM sign_in_failures WHERE name = :name", name=name)
        )

    async def end_session(self, session_id: str, *, keep_s: float) -> None:
        """Note a browser session signed out; forget those ended over `keep_s` ago."""
        now = self._clock().timestamp()

        async def write(tx: Tx) -> None:
            await tx.run("DELETE FROM ended_sessions WHERE ended_at < :old", old=now - keep_s)
            await tx.run(
                "INSERT INTO ended_sessions (id, ended_at) VALUES (:id, :now) "
                "ON CONFLICT (id) DO NOTHING",
                id=session_id,
                now=now,
            )

        await self._write_tx(write)

    async def session_ended(self, session_id: str) -> bool:
        """Whether a browser session was signed out."""
        row = await self._one("SELECT 1 AS ended FROM ended_sessions WHERE id = :id", id=session_id)
        return row is not None

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
        now = self._clock()
        public_id = token_id or new_token_id()

        async def write(tx: Tx) -> str:
            await tx.run(
                "INSERT INTO api_tokens (hash, user_id, label, created_at, id, hint) "
                "VALUES (:hash, :user_id, :label, :now, :id, :hint)",
                hash=token_hash,
                user_id=user_id,
                label=label,
                now=now,
                id=public_id,
                hint=hint,
            )
            await _events(tx, events, now)
            return public_id

        return await self._write_tx(write)

    async def user_for_token(self, token_hash: str) -> User | None:
        """The user of an unrevoked token."""
        return await self._user_where(
            "u.id = (SELECT user_id FROM api_tokens WHERE hash = :hash AND revoked_at IS NULL)",
            hash=token_hash,
        )

    async def list_tokens(self, user_id: str | None = None) -> list[ApiToken]:
        """API tokens, newest first."""
        where = "t.user_id = :user_id" if user_id else "1=1"
        found = await self._all(
            f"{_SELECT_TOKENS} WHERE {where} ORDER BY t.created_at DESC, t.id", user_id=user_id
        )
        return [token_of(r) for r in found]

    async def get_token(self, token_id: str) -> ApiToken | None:
        """An API token by its public id."""
        row = await self._one(f"{_SELECT_TOKENS} WHERE t.id = :id", id=token_id)
        return token_of(row) if row else None

    async def revoke_token(
        self, token_id: str, *, events: Sequence[NewEvent] = ()
    ) -> ApiToken | None:
        """Revoke a token once; `events` are written only by the call that revoked it."""
        now = self._clock()

        async def write(tx: Tx) -> ApiToken | None:
            revoked = await tx.run(
                "UPDATE api_tokens SET revoked_at = :now WHERE id = :id AND revoked_at IS NULL",
                now=now,
                id=token_id,
            )
            if revoked:
                await _events(tx, events, now)
            row = await tx.one(f"{_SELECT_TOKENS} WHERE t.id = :id", id=token_id)
            return token_of(row) if row else None

        return await self._write_tx(write)

    # outbox and timers ----------------------------------------------------------------------

    async def fire_timer(
        self,
        job: Job,
        owner: str,
        *,
        channels: Sequence[str],
        answer_channels: Sequence[str] = (),
    ) -> TimerOutcome:
        """Apply a due timer and delete its job in one transaction; at most once."""
        now = self._clock()

        async def write(tx: Tx) -> str:
            held = await tx.run(
                "DELETE FROM jobs WHERE id = :id AND lease_owner = :owner", id=job.id, owner=owner
            )
            if not held:
                return "lost"
            request = await _request_in(tx, job.request_id, lock=True) if job.request_id else None
            change = (
                plan_timer(
                    request,
                    job.payload,
                    now=now,
                    channels=channels,
                    answer_channels=answer_channels,
                )
                if request
                else None
            )
            if request is None or change is None:
                return "dropped"
            await _apply(tx, request, change, self._clock())
            return change.outcome

        result = await self._write_tx(write)
        request = await self.get_request(job.request_id) if job.request_id else None
        return TimerOutcome(result=result, request=request)

    async def get_notification(self, notification_id: str) -> Notification | None:
        """An outbox row."""
        row = await self._one("SELECT * FROM notifications WHERE id = :id", id=notification_id)
        return notification_of(row) if row else None

    async def record_delivery(
        self,
        notification_id: str,
        *,
        job_id: int,
        owner: str,
        outcome: Literal["sent", "retrying", "failed", "skipped"],
        error: str | None = None,
        retry_in_s: float = 0.0,
        parts_sent: Sequence[str] = (),
    ) -> Notification | None:
        """Record an attempt, its `request.notified` event, and finish or delay the job."""
        now = self._clock()

        async def write(tx: Tx) -> Notification | None:
            lock = tx.dialect.lock()
            held = await tx.one(
                f"SELECT id FROM jobs WHERE id = :id AND lease_owner = :owner{lock}",
                id=job_id,
                owner=owner,
            )
            if held is None:
                return None
            row = await tx.one(
                f"SELECT * FROM notifications WHERE id = :id{lock}", id=notification_id
            )
            if row is None:
                return None
            note = notification_of(row)
            attempt, status, event = plan_delivery(
                note, outcome=outcome, error=error, parts_sent=parts_sent
            )
            parts = [*note.parts_sent, *(p for p in parts_sent if p not in note.parts_sent)]
            updated = await tx.one(
                "UPDATE notifications SET status = :status, attempts = :attempts, "
                "last_error = COALESCE(:error, last_error), parts_sent = :parts, "
                "updated_at = :now WHERE id = :id RETURNING *",
                status=status,
                attempts=attempt,
                error=error,
                parts=dumps(parts) if parts else None,
                now=now,
                id=notification_id,
            )
            await _events(tx, [event], now)
            if outcome == "retrying":
                await _retry(tx, job_id, owner, delay_s=retry_in_s, error=error or "")
            else:
                await tx.run(
                    "DELETE FROM jobs WHERE id = :id AND lease_owner = :owner",
                    id=job_id,
                    owner=owner,
                )
            assert updated is not None
            return notification_of(updated)

        return await self._write_tx(write)

    # Microsoft Teams --------------------------------------------------------------------------

    async def link_teams_conversation(
        self, link: TeamsConversation, *, events: Sequence[NewEvent] = ()
    ) -> None:
        """Post `link.team`'s requests to this conversation from now on, with `events`."""

        async def write(tx: Tx) -> None:
            await tx.run(
                "INSERT INTO teams_conversations (team, service_url, conversation_id, tenant_id, "
                "linked_by, linked_at) VALUES (:team, :service_url, :conversation_id, :tenant_id, "
                ":linked_by, :linked_at) ON CONFLICT (team) DO UPDATE SET "
                "service_url = excluded.service_url, conversation_id = excluded.conversation_id, "
                "tenant_id = excluded.tenant_id, linked_by = excluded.linked_by, "
                "linked_at = excluded.linked_at",
                **link.model_dump(),
            )
            await _events(tx, events, link.linked_at)

        await self._write_tx(write)

    async def teams_conversation(self, team: str) -> TeamsConversation | None:
        """The conversation a team's requests are posted to, if one is linked."""
        row = await self._one(
            "SELECT team, service_url, conversation_id, tenant_id, linked_by, linked_at "
            "FROM teams_conversations WHERE team = :team",
            team=team,
        )
        if row is None:
            return None
        return TeamsConversation(
            team=row["team"],
            service_url=row["service_url"],
            conversation_id=row["conversation_id"],
            tenant_id=row["tenant_id"],
            linked_by=row["linked_by"],
            linked_at=at(row["linked_at"]),
        )

    async def add_teams_card(self, card: TeamsCard) -> None:
        """Remember a card the bot posted (the same card twice is kept once)."""
        now = self._clock()

        async def write(tx: Tx) -> None:
            await tx.run(
                "INSERT INTO teams_cards (request_id, service_url, conversation_id, activity_id, "
                "posted_at) VALUES (:request_id, :service_url, :conversation_id, :activity_id, "
                ":now) ON CONFLICT DO NOTHING",
                now=now,
                **card.model_dump(),
            )

        await self._write_tx(write)

    async def teams_cards(self, request_id: str) -> list[TeamsCard]:
        """The cards the bot posted about a request, oldest first."""
        found = await self._all(
            "SELECT request_id, service_url, conversation_id, activity_id FROM teams_cards "
            "WHERE request_id = :request_id ORDER BY posted_at, activity_id",
            request_id=request_id,
        )
        return [
            TeamsCard(
                request_id=r["request_id"],
                service_url=r["service_url"],
                conversation_id=r["conversation_id"],
                activity_id=r["activity_id"],
            )
            for r in found
        ]

    # audit ----------------------------------------------------------------------------------

    async def list_events(
        self, *, run_id: str | None = None, request_id: str | None = None
    ) -> list[AuditEvent]:
        """Audit events in the order they were written."""
        column, value = ("request_id", request_id) if request_id else ("run_id", run_id)
        found = await self._all(
            f"SELECT * FROM audit_events WHERE {column} = :value ORDER BY id", value=value
        )
        return [event_of(r) for r in found]

    async def last_event_id(self) -> int:
        """The id of the newest audit event (0 if none)."""
        row = await self._one("SELECT COALESCE(MAX(id), 0) AS id FROM audit_events")
        return int(row["id"]) if row else 0


# the statements transactions share ----------------------------------------------------------


def lane_filter(lane: JobLane | None) -> str:
    """The `AND ...` that keeps a lease of `jobs j` to one lane's jobs (empty: every job).

    Each backend's `lease_jobs` leases the lanes apart, so that due notifications cannot take
    the places in a lease that due drives need (and the other way round).
    """
    if lane is None:
        return ""
    return f"AND j.kind {'IN' if lane == 'delivery' else 'NOT IN'} {_DELIVERY}"


async def _events(tx: Tx, events: Sequence[NewEvent], at: datetime) -> None:
    if events:
        await tx.many(
            "INSERT INTO audit_events (type, at, run_id, request_id, actor, data) "
            "VALUES (:type, :at, :run_id, :request_id, :actor, :data)",
            [
                {
                    "type": e.type,
                    "at": at,
                    "run_id": e.run_id,
                    "request_id": e.request_id,
                    "actor": e.actor,
                    "data": dumps(e.data),
                }
                for e in events
            ],
        )


async def _insert_effect(
    tx: Tx, effect: NewEffect, at: datetime, *, uncertain: bool = False
) -> bool:
    """Record an effect and its single event, unless its key is recorded (False).

    The event is `effect.executed`, `effect.failed` for a failure (`failure_of`), or
    `effect.uncertain` for a call started and never recorded.
    """
    inserted = await tx.run(
        "INSERT INTO effects (key, run_id, tool, arguments, result, at) "
        "VALUES (:key, :run_id, :tool, :arguments, :result, :now) ON CONFLICT DO NOTHING",
        key=effect.key,
        run_id=effect.run_id,
        tool=effect.tool,
        arguments=dumps(effect.arguments),
        result=dumps(effect.result),
        now=at,
    )
    if inserted:
        await _events(tx, [_effect_event(effect, uncertain=uncertain)], at)
    return bool(inserted)


def _effect_event(effect: NewEffect, *, uncertain: bool = False) -> NewEvent:
    return effect_event(
        run_id=effect.run_id,
        tool=effect.tool,
        key=effect.key,
        arguments=effect.arguments,
        result=effect.result,
        uncertain=uncertain,
    )


def _effect_of(row: Row) -> dict[str, Any]:
    """An effect's record as the ledger replays it: its key, tool and result."""
    return {"key": row["key"], "tool": row["tool"], "result": loads(row["result"])}


async def _queue_drive(
    tx: Tx, kind: str, run_id: str, payload: str, lease: Lease | None, *, new_run: bool = False
) -> Job | None:
    """Queue a drive job; leased to `lease.owner` at once unless another drive of the run is.

    Where rows are locked, the run's row lock orders this against `lease_jobs` in other processes;
    a `new_run`, inserted by this transaction, is seen by no other process before it commits.
    """
    d = tx.dialect
    if lease is not None:
        if d.row_locks and not new_run:
            await tx.run(f"SELECT 1 FROM runs WHERE id = :run_id{d.lock()}", run_id=run_id)
        # leased at once unless a drive of the run holds a lease: then queued behind it, below
        row = await tx.one(
            "INSERT INTO jobs (kind, run_id, available_at, payload, lease_owner, lease_until, "
            f"attempts) SELECT :kind, :run_id, {d.clock}, :payload, :owner, "
            f"{d.clock} + :seconds, 1 WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE "
            f"run_id = :run_id AND kind IN {DRIVE} AND lease_until >= {d.clock}) RETURNING id",
            kind=kind,
            run_id=run_id,
            payload=payload,
            owner=lease.owner,
            seconds=lease.seconds,
        )
        if row is not None:
            return Job(id=row["id"], kind=kind, run_id=run_id, payload=loads(payload), attempts=1)
    await tx.run(
        "INSERT INTO jobs (kind, run_id, available_at, payload) "
        f"VALUES (:kind, :run_id, {d.clock}, :payload) ON CONFLICT DO NOTHING",
        kind=kind,
        run_id=run_id,
        payload=payload,
    )
    return None


async def _retry(
    tx: Tx, job_id: int, owner: str, *, delay_s: float, error: str, counted: bool = True
) -> int:
    """Give a job back for another attempt in `delay_s` (by the database host's clock)."""
    return await tx.run(
        f"UPDATE jobs SET lease_until = NULL, available_at = {tx.dialect.clock} + :delay_s, "
        "last_error = :error, attempts = attempts - :uncount "
        "WHERE id = :id AND lease_owner = :owner",
        delay_s=delay_s,
        error=error[:2000],
        uncount=0 if counted else 1,
        id=job_id,
        owner=owner,
    )


async def _close_open_requests(
    tx: Tx,
    run_id: str,
    actor: str,
    at: datetime,
    *,
    notify: Sequence[str] = (),
    data: dict[str, Any] | None = None,
) -> None:
    """Cancel a run's open (and answered, undelivered) requests, each with its event (`data`).

    Each of `notify` (the channels that follow a request to its end) gets an outbox row per
    request cancelled, as for an answer.
    """
    closed = await tx.all(
        "UPDATE human_requests SET status = 'cancelled' WHERE run_id = :run_id AND status IN "
        "('pending', 'claimed', 'escalated', 'answered') RETURNING id",
        run_id=run_id,
    )
    ids = sorted(r["id"] for r in closed)
    await _events(tx, cancelled_events(run_id, ids, actor, data), at)
    told = [
        NewNotification(request_id=request_id, run_id=run_id, channel=channel, event="answered")
        for request_id in ids
        for channel in notify
    ]
    await _insert_notifications(tx, told, at)
    await tx.run("DELETE FROM jobs WHERE kind = 'timer' AND run_id = :run_id", run_id=run_id)


async def _append_transcript(
    tx: Tx, run_id: str, entries: Sequence[dict[str, Any]], at: datetime
) -> None:
    if not entries:
        return
    # Each entry takes the run's next seq as it is inserted (each insert sees the one before).
    await tx.many(
        "INSERT INTO run_transcript (run_id, seq, entry, at) VALUES (:run_id, "
        "(SELECT COALESCE(MAX(seq), 0) + 1 FROM run_transcript WHERE run_id = :run_id), "
        ":entry, :at)",
        [
            # one commit's entries share its time: the first carries it (migration 0010)
            {"run_id": run_id, "entry": dumps(e), "at": at if i == 1 else None}
            for i, e in enumerate(entries, 1)
        ],
    )


async def _keep_attachments(tx: Tx, kept: Sequence[Kept], at: datetime) -> None:
    """Keep each file once: one kept already (the same bytes, another request's) stays."""
    if kept:
        await tx.many(
            "INSERT INTO attachments (id, media_type, data, created_at) "
            "VALUES (:id, :media_type, :data, :at) ON CONFLICT (id) DO NOTHING",
            [{"id": k.id, "media_type": k.media_type, "data": k.data, "at": at} for k in kept],
        )


async def _insert_request(tx: Tx, request: HumanRequest) -> None:
    schema_hash = await _keep_schema(tx, request.response_schema)
    action, arguments_schema_hash = request.proposed_action, None
    if action is not None and action.get("arguments_schema"):
        arguments_schema_hash = await _keep_schema(tx, action["arguments_schema"])
        action = {k: v for k, v in action.items() if k != "arguments_schema"}
    await tx.run(
        """INSERT INTO human_requests (id, run_id, maf_request_id, kind, title, reason, context,
             proposed_action, payload, allowed_decisions, schema_hash, team, assignee, priority,
             status, created_at, expires_at, approvals_required, policy_rule, escalation,
             executor_id, arguments_schema_hash, escalates_at, attachments)
           VALUES (:id, :run_id, :maf_request_id, :kind, :title, :reason, :context,
             :proposed_action, :payload, :allowed_decisions, :schema_hash, :team, :assignee,
             :priority, :status, :created_at, :expires_at, :approvals_required, :policy_rule,
             :escalation, :executor_id, :arguments_schema_hash, :escalates_at, :attachments)""",
        id=request.id,
        run_id=request.run_id,
        maf_request_id=request.maf_request_id,
        kind=request.kind,
        title=request.title,
        reason=request.reason,
        context=dumps(request.context),
        proposed_action=None if action is None else dumps(action),
        payload=dumps(request.payload),
        allowed_decisions=dumps(request.allowed_decisions),
        schema_hash=schema_hash,
        team=request.team,
        assignee=request.assignee,
        priority=request.priority,
        status=request.status,
        created_at=request.created_at,
        expires_at=request.expires_at,
        approvals_required=request.approvals_required,
        policy_rule=request.policy_rule,
        escalation=dumps(request.escalation),
        executor_id=request.executor_id,
        arguments_schema_hash=arguments_schema_hash,
        escalates_at=escalates_at(request),
        attachments=(
            dumps([a.model_dump(mode="json") for a in request.attachments])
            if request.attachments
            else None
        ),
    )


def schema_key(body: str) -> str:
    """The key a JSON schema's text is kept under in `schemas`."""
    return hashlib.sha256(body.encode()).hexdigest()[:32]


async def _keep_schema(tx: Tx, schema: dict[str, Any]) -> str:
    """Keep a JSON schema once in `schemas`; its hash."""
    body = dumps(schema)
    schema_hash = schema_key(body)
    await tx.run(
        "INSERT INTO schemas (hash, body) VALUES (:hash, :body) ON CONFLICT DO NOTHING",
        hash=schema_hash,
        body=body,
    )
    return schema_hash


async def _insert_timers(tx: Tx, timers: Sequence[NewTimer]) -> None:
    """Timer jobs: leasable now by the database host's clock, due by Baton's (`due_at`)."""
    if timers:
        await tx.many(
            "INSERT INTO jobs (kind, run_id, request_id, available_at, due_at, payload) "
            f"VALUES ('timer', :run_id, :request_id, {tx.dialect.clock}, :due_at, :payload)",
            [
                {
                    "run_id": t.run_id,
                    "request_id": t.request_id,
                    "due_at": t.due_at.timestamp(),
                    "payload": timer_payload(t.action, t.step),
                }
                for t in timers
            ],
        )


async def _insert_notifications(
    tx: Tx, notifications: Sequence[NewNotification], at: datetime
) -> None:
    """Outbox rows, each with the notify job that delivers it."""
    for n in notifications:
        notification_id = new_notification_id()
        await tx.run(
            "INSERT INTO notifications (id, request_id, run_id, channel, event, status, "
            "created_at, updated_at) VALUES (:id, :request_id, :run_id, :channel, :event, "
            "'queued', :at, :at)",
            id=notification_id,
            request_id=n.request_id,
            run_id=n.run_id,
            channel=n.channel,
            event=n.event,
            at=at,
        )
        await tx.run(
            "INSERT INTO jobs (kind, run_id, request_id, available_at, payload) "
            f"VALUES ('notify', :run_id, :request_id, {tx.dialect.clock}, :payload)",
            run_id=n.run_id,
            request_id=n.request_id,
            payload=notify_payload(notification_id),
        )


async def _requests_of(tx: Tx, found: Sequence[Row], *, flagged: bool = True) -> list[HumanRequest]:
    """Request rows as records, with their answers and outbox rows.

    `flagged` rows say whether they have answers and outbox rows (`_FLAGS`): those are read only
    for the requests that have some, so a page of pending requests nobody was told of is one
    statement. Rows without flags have both read for every one.
    """
    of_these = tx.dialect.any_of("request_id", "ids")
    answered = [r["id"] for r in found if not flagged or r["has_answers"]]
    told = [r["id"] for r in found if not flagged or r["has_notifications"]]
    answers = (
        await tx.all(f"SELECT * FROM answers WHERE {of_these} ORDER BY id", ids=answered)
        if answered
        else []
    )
    notifications = (
        await tx.all(
            f"SELECT * FROM notifications WHERE {of_these} ORDER BY created_at, id", ids=told
        )
        if told
        else []
    )
    return requests_of(found, answers, notifications)


_Answered = tuple[AnswerResult | Literal["claimed"], Job | None, HumanRequest | None, InPlay | None]
"""What an answer's transaction came to: its result, its job, the request, the run in play."""


async def _in_play(tx: Tx, run_id: str) -> InPlay | None:
    """What a drive of the run starts from (`Store.run_in_play`), read in `tx`."""
    row = await tx.one("SELECT * FROM runs WHERE id = :id", id=run_id)
    if row is None:
        return None
    found = await tx.all(
        f"{_SELECT_FLAGGED_REQUESTS} WHERE r.run_id = :run_id AND (r.status IN {OPEN} "
        f"OR {_UNDELIVERED}) ORDER BY r.seq",
        run_id=run_id,
    )
    requests = await _requests_of(tx, found)
    ranks = {r["id"]: (r["answered_at"] is None, r["answered_at"] or "") for r in found}
    answered = sorted(
        (r for r in requests if r.status not in OPEN_STATUSES),
        key=lambda r: ranks[r.id],  # answer order; a stable sort keeps seq order
    )
    body, transcript = None, None
    if answered and row["checkpoint_id"] is not None:  # a resume restores it: read it now
        found_body = await tx.one(
            "SELECT body FROM checkpoints WHERE id = :id", id=row["checkpoint_id"]
        )
        body = bytes(found_body["body"]) if found_body else None
        transcript = await _transcript_in(tx, run_id)  # (what its requests show people)
    return InPlay(
        run=run_of(row),
        open=[r for r in requests if r.status in OPEN_STATUSES],
        answered=answered,
        checkpoint=body,
        transcript=transcript,
    )


async def _transcript_in(tx: Tx, run_id: str) -> list[dict[str, Any]]:
    """A run's conversation entries, in order, read in `tx`."""
    found = await tx.all(
        "SELECT entry FROM run_transcript WHERE run_id = :run_id ORDER BY seq", run_id=run_id
    )
    return [loads(r["entry"]) for r in found]


async def _request_in(tx: Tx, request_id: str, *, lock: bool = False) -> HumanRequest | None:
    # A row lock waited for hands back the row as its holder left it, but a subquery of the same
    # statement sees the database as it was before the wait: no flags then, both read after.
    locked = lock and tx.dialect.row_locks
    select = _SELECT_REQUESTS if locked else _SELECT_FLAGGED_REQUESTS
    found = await tx.all(
        f"{select} WHERE r.id = :id" + (tx.dialect.lock("r") if locked else ""), id=request_id
    )
    requests = await _requests_of(tx, found, flagged=not locked)
    return requests[0] if requests else None


async def _apply(tx: Tx, request: HumanRequest, change: RequestChange, now: datetime) -> None:
    """Write a planned change of a request: its columns, events, timers, outbox, resume."""
    columns = {c: dumps(v) if isinstance(v, dict | list) else v for c, v in change.columns.items()}
    await tx.run(
        f"UPDATE human_requests SET {', '.join(f'{c} = :{c}' for c in columns)} "
        "WHERE id = :request_id",
        **columns,
        request_id=request.id,
    )
    await _events(tx, change.events, now)
    await _insert_timers(tx, change.timers)
    await _insert_notifications(tx, change.notifications, now)
    if change.outcome == "expired":
        await tx.run(_DROP_REQUEST_TIMERS, request_id=request.id)
    if change.resume:
        await _queue_drive(tx, "resume", request.run_id, job_payload(), None)


def _request_where(
    dialect: Dialect, flt: RequestFilter, *, with_status: bool
) -> tuple[str, dict[str, Any]]:
    where: list[str] = ["1=1"]
    params: dict[str, Any] = {}
    for column in ("status", "team", "kind", "run_id", "assignee"):
        value = getattr(flt, column)
        if value and (with_status or column != "status"):
            where.append(f"r.{column} = :{column}")
            params[column] = value
    if flt.workflow:
        where.append("r.run_id IN (SELECT id FROM runs WHERE workflow = :workflow)")
        params["workflow"] = flt.workflow
    if flt.teams is not None:
        where.append(dialect.any_of("r.team", "teams"))
        params["teams"] = list(flt.teams)
    if flt.overdue_at is not None:
        where.append(f"r.status IN {OPEN} AND r.expires_at < :overdue_at")
        params["overdue_at"] = flt.overdue_at
    if flt.visible_to is not None:
        where.append(_visible(dialect, "r.run_id", flt.visible_to, params))
    if flt.statuses is not None and with_status:
        where.append(dialect.any_of("r.status", "statuses"))
        params["statuses"] = list(flt.statuses)
    if flt.claimed_by:
        where.append("r.claimed_by = :claimed_by")
        params["claimed_by"] = flt.claimed_by
    if flt.answered_by:
        where.append(
            "EXISTS (SELECT 1 FROM answers a WHERE a.request_id = r.id AND a.actor = :answered_by)"
        )
        params["answered_by"] = flt.answered_by
    if flt.unassigned:
        where.append("r.assignee IS NULL AND r.claimed_by IS NULL")
    if flt.search:
        where.append(_SEARCHED)
        params |= {"search": f"%{_like(flt.search.strip().lower())}%", "search_id": flt.search}
    if flt.waiting_for is not None:
        where.append(
            f"({dialect.any_of('r.team', 'mine_teams')} OR r.assignee = :mine "
            "OR r.claimed_by = :mine)"
        )
        params |= {"mine": flt.waiting_for.name, "mine_teams": list(flt.waiting_for.teams)}
    if flt.actionable_by is not None:
        where.append(_actionable(dialect, flt.actionable_by, params))
    if flt.held_from is not None:
        where.append(f"NOT {_actionable(dialect, flt.held_from, params)}")
    if flt.cursor and with_status:
        if flt.sort == "urgent":
            rank, due, seq = urgency_cursor(flt.cursor)
            where.append(
                f"({_URGENCY} < :c_rank OR ({_URGENCY} = :c_rank AND ({_DUE} > :c_due "
                f"OR ({_DUE} = :c_due AND r.seq < :c_seq))))"
            )
            params |= {"c_rank": rank, "c_due": due, "c_seq": seq}
        else:
            where.append("r.seq < :cursor")
            params["cursor"] = cursor_seq(flt.cursor)
    if flt.sort == "urgent":
        params["far"] = NO_DEADLINE
    return " AND ".join(where), params


_SEARCHED: Final = (
    "(lower(r.title) LIKE :search ESCAPE '\\' OR lower(r.reason) LIKE :search ESCAPE '\\' "
    "OR lower(CAST(r.context AS TEXT)) LIKE :search ESCAPE '\\' "
    "OR r.id = :search_id OR r.run_id = :search_id)"
)
"""A request list's text search: its words in the title, the reason or the context (a scan of
the rows the other filters leave: an inbox's page, not a search engine), or its exact id."""


def _actionable(dialect: Dialect, actor: Actor, params: dict[str, Any]) -> str:
    """Requests `actor` may act on at `actor.at`, as `human.access.held_from` says (adds to params).

    Not while another person's claim is live; not an approval or review of a run they started
    (four-eyes); not one they approved already (it waits for another approver); nothing for one
    who answers nothing.
    """
    if not actor.answers:
        return "(1=0)"
    params |= {"act_name": actor.name, "act_at": actor.at, "four_eyes": list(FOUR_EYES_KINDS)}
    return (
        "((r.status <> 'claimed' OR r.claimed_by IS NULL OR r.claimed_by = :act_name "
        "OR r.claimed_until IS NULL OR r.claimed_until <= :act_at) "
        f"AND NOT ({dialect.any_of('r.kind', 'four_eyes')} AND EXISTS (SELECT 1 FROM runs s "
        "WHERE s.id = r.run_id AND s.created_by = :act_name)) "
        "AND NOT EXISTS (SELECT 1 FROM answers a WHERE a.request_id = r.id "
        "AND a.actor = :act_name AND a.decision = 'approve'))"
    )


def _like(text: str) -> str:
    """`text` for a LIKE pattern, its own percent, underscore and backslash taken literally."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _visible(dialect: Dialect, run_id: str, viewer: Viewer, params: dict[str, Any]) -> str:
    """Runs `viewer` started, or in which one of their teams owns a request (adds to params)."""
    params |= {"viewer": viewer.name, "viewer_teams": list(viewer.teams)}
    return (
        f"(EXISTS (SELECT 1 FROM runs v WHERE v.id = {run_id} AND v.created_by = :viewer) "
        f"OR EXISTS (SELECT 1 FROM human_requests t WHERE t.run_id = {run_id} "
        f"AND {dialect.any_of('t.team', 'viewer_teams')}))"
    )
