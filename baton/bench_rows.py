"""What Baton's statements and commits cost without its layers: the bench's `baton_rows`.

A minimal cycle that makes, at the database, what a Baton minimal cycle makes: the same
statements in the same order, in the same transactions at the same durability, on a file
Baton's own migrations made (the demo seeded); and drives the same MAF workflow
(`baton.bench.bare_workflow`) as Baton drives it: one kept instance reset after each drive, no
checkpoint storage, one snapshot at the pause (encoded and compressed as Baton's), restored to
resume. With nothing between: no runtime, worker, service, store or adapter, one event loop, no
thread. So `baton_rows`' cycle is MAF's work, the snapshot and its restore, and Baton's statements;
Baton's cycle less this one is what its layers cost.

The transactions, as Baton's (`human.store.transactions`; SQL fragments imported from there):

1. the start (`synchronous=NORMAL`): the run, its `run.started` event, its start job leased;
2. the pause (FULL, in a `SAVEPOINT` as the writer thread runs it): the run waiting on its
   checkpoint, the checkpoint, the answer schema, the request, its `request.created` event, two
   transcript entries, the start job done;
3. a read: the run's first page of pending requests, as a person lists them;
4. a read: the request and its run, as the service checks an answer before it records it;
5. the answer (FULL, in a `SAVEPOINT`): the request read, the answer, its `request.answered`
   event, the request answered, the resume job leased, the request's timers dropped, and what
   the resume needs read in the same transaction (the run, its requests in play, their answers,
   the checkpoint);
6. the end (NORMAL): the run completed, its checkpoint pruned, the request resumed, the
   `run.resumed` and `run.completed` events, a transcript entry, its open requests and timers
   closed, the resume job done;
7. a read: the run, ended.

What it leaves out is Baton's Python around them: the runtime, the worker and the service, their
checks (access, routing, the answer validated against its kind and schema), the records built
from rows and the rows from records, the hand-offs of the pause and the answer to the writer
thread (here they commit on the event loop's thread), and the proof that the pause's checkpoint
decodes under the allow-list. `tests/benchmarks/test_bench_rows.py` holds it to Baton's cycle:
the same statements (their SQL as written, each on a connection at the same durability) in the
same order, with values of about the same sizes (through SQLite's trace), and the same rows left,
of the same total size in every table.

`python -m baton.bench_peers minimal baton_rows CYCLES FOLDER` runs it as a child of the bench.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import sqlite3
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final, TypeVar, cast

from agent_framework import Workflow, WorkflowCheckpoint
from agent_framework._workflows._checkpoint_encoding import (
    decode_checkpoint_value,
    encode_checkpoint_value,
)

from baton.bench import BARE_TYPES, BareAnswer, BareAsk, bare_workflow
from baton.bench_peers import paused
from baton.demo import seed_demo
from human.kinds import KINDS
from human.store.base import utcnow
from human.store.rows import dumps
from human.store.sqlite import SqliteStore
from human.store.transactions import (
    _DROP_REQUEST_TIMERS,
    _ENDED,
    _FLAGS,
    _REQUEST_COLUMNS,
    _REQUESTS_FROM,
    _UNDELIVERED,
    DRIVE,
    OPEN,
    schema_key,
)
from human.typed import schema_of_type
from workflows.platform.engine import without_run_kwargs
from workflows.platform.state import install

ALLOWED: Final = frozenset(BARE_TYPES)
TEAM: Final = "support-leads"
TITLE: Final = "Approve 120.0"
REASON: Final = (  # `BareAsk`'s docstring, then its step, as a typed request without a prompt says
    "The bare workflow's request: what a person would be asked. The gate step waits for your "
    "answer before it goes on."
)
ANSWER_SCHEMA: Final = schema_of_type(BareAnswer)
REQUEST_SCHEMA: Final = KINDS["input"].response_schema({"answer": ANSWER_SCHEMA})
"""The request's answer schema, kept once in `schemas` under its hash, as Baton's store keeps it."""
SCHEMA_HASH: Final = schema_key(dumps(REQUEST_SCHEMA))
ANSWER: Final = {"decision": "answer", "answer": {"decision": "approve"}}
INPUT: Final = {"amount": 120.0}
WORKFLOW: Final = "bench_minimal"
T = TypeVar("T")


def _now() -> str:
    return utcnow().isoformat(timespec="microseconds")


def _request_payload(maf_request_id: str) -> dict[str, Any]:
    """A request's payload as Baton's typed-inputs adapter writes it for the bare workflow."""
    kind = {"class": "baton.bench:BareAnswer"}
    return {
        "data": INPUT,
        "request_type": "baton.bench:BareAsk",
        "answer_type": kind,
        "origin": {
            "adapter": "typed_inputs",
            "input": {
                "title": TITLE,
                "reason": REASON,
                "context": INPUT,
                "team": TEAM,
                "priority": "normal",
                "approvals_required": 1,
                "expires_in_s": None,
                "escalation": [],
                "policy_rule": None,
                "data": INPUT,
                "request_type": "baton.bench:BareAsk",
                "answer_schema": ANSWER_SCHEMA,
                "answer_type": kind,
            },
            "maf_request_id": maf_request_id,
        },
    }


_AUDIT: Final = (
    "INSERT INTO audit_events (type, at, run_id, request_id, actor, data)"
    " VALUES (:type, :at, :run_id, :request_id, :actor, :data)"
)
_TRANSCRIPT: Final = (
    "INSERT INTO run_transcript (run_id, seq, entry, at) VALUES (:run_id, "
    "(SELECT COALESCE(MAX(seq), 0) + 1 FROM run_transcript WHERE run_id = :run_id), :entry, :at)"
)
_QUEUE_DRIVE: Final = (  # a drive job, leased to this process at once (`_queue_drive`)
    "INSERT INTO jobs (kind, run_id, available_at, payload, lease_owner, lease_until, attempts)"
    " SELECT :kind, :run_id, baton_clock(), :payload, :owner, baton_clock() + :seconds, 1"
    f" WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE run_id = :run_id AND kind IN {DRIVE}"
    " AND lease_until >= baton_clock()) RETURNING id"
)
_LISTED: Final = (  # a person's first page of the run's pending requests (`list_requests`)
    f"SELECT r.*, {_FLAGS} FROM (SELECT {_REQUEST_COLUMNS} {_REQUESTS_FROM} WHERE 1=1"
    " AND r.status = :status AND r.run_id = :run_id ORDER BY r.seq DESC LIMIT :limit) r"
    " ORDER BY r.seq DESC"
)
_ONE_REQUEST: Final = f"SELECT {_REQUEST_COLUMNS}, {_FLAGS} {_REQUESTS_FROM} WHERE r.id = :id"
_IN_PLAY: Final = (  # the run's requests a drive delivers or still waits on (`_in_play`)
    f"SELECT {_REQUEST_COLUMNS}, {_FLAGS} {_REQUESTS_FROM} WHERE r.run_id = :run_id AND"
    f" (r.status IN {OPEN} OR {_UNDELIVERED}) ORDER BY r.seq"
)
_PROGRESS: Final = (  # a drive's progress on its run, from the checkpoint it began at
    "UPDATE runs SET status = :status, output = :output, error = :error,"
    " checkpoint_id = :checkpoint_id, updated_at = :at WHERE id = :id"
    f" AND checkpoint_id IS :expected AND status NOT IN {_ENDED}"
)
_LEASE_S: Final = 30.0


def _event(
    kind: str, at: str, run_id: str, request_id: str | None, actor: str, data: Any
) -> dict[str, Any]:
    """An audit event's parameters."""
    return {
        "type": kind,
        "at": at,
        "run_id": run_id,
        "request_id": request_id,
        "actor": actor,
        "data": dumps(data),
    }


class RowsCycle:
    """One database's three connections (as Baton's: NORMAL and FULL writes, reads) and a workflow.

    Each transaction runs the statements Baton's makes, in its order (`human.store.transactions`,
    seen through SQLite's trace in `tests/benchmarks/test_bench_rows.py`), on this thread.
    """

    def __init__(
        self,
        normal: sqlite3.Connection,
        full: sqlite3.Connection,
        reader: sqlite3.Connection,
        workflow: Workflow,
        pristine: WorkflowCheckpoint,
    ) -> None:
        """`pristine`: `workflow`'s checkpoint as built, which each reset restores."""
        self._normal = normal
        self._full = full
        self._reader = reader
        self._workflow = workflow
        self._pristine = pristine
        self._owner = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"

    async def _reset(self) -> None:
        """The kept workflow back as built, as Baton's pool resets an instance after a drive."""
        await self._workflow._runner.restore_checkpoint(self._pristine)

    async def __call__(self) -> None:
        """Start, pause, list, answer, resume and end one run; raises if it did not complete."""
        run_id, start_job = self.start()
        request_id, checkpoint_id = await self.pause(run_id, start_job)
        listed = self._read(
            lambda c: c.execute(
                _LISTED, {"status": "pending", "run_id": run_id, "limit": 51}
            ).fetchall()
        )
        if [row["id"] for row in listed] != [request_id]:
            raise RuntimeError(f"run {run_id} lists {len(listed)} pending requests, not one")
        paused()
        resume_job, body, maf_request_id = self.answer(run_id, request_id, checkpoint_id)
        output = await self._resume(body, maf_request_id)
        self.end(run_id, request_id, checkpoint_id, output, resume_job)
        ended = self._read(
            lambda c: c.execute("SELECT * FROM runs WHERE id = :id", {"id": run_id}).fetchall()
        )
        if ended[0]["status"] != "completed":
            raise RuntimeError(f"run {run_id} ended {ended[0]['status']}")

    def _write(self, conn: sqlite3.Connection, write: Callable[[], T], *, savepoint: bool) -> T:
        """One write transaction; `savepoint`: in one, as Baton's writer thread runs each."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            if savepoint:
                conn.execute("SAVEPOINT baton_tx")
            done = write()
            if savepoint:
                conn.execute("RELEASE baton_tx")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return done

    def _read(self, read: Callable[[sqlite3.Connection], T]) -> T:
        conn = self._reader
        conn.execute("BEGIN")
        try:
            return read(conn)
        finally:
            conn.execute("COMMIT")

    def start(self) -> tuple[str, int]:
        """The run, its event and its start job (NORMAL); its id and the job's."""
        run_id = "run_" + secrets.token_urlsafe(12)
        at = _now()
        conn = self._normal

        def write() -> int:
            conn.execute(
                "INSERT INTO runs (id, seq, workflow, input, status, created_by, created_at,"
                " updated_at, continues) VALUES (:id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM"
                " runs), :workflow, :input, :status, :by, :at, :at, :continues)",
                {
                    "id": run_id,
                    "workflow": WORKFLOW,
                    "input": dumps(INPUT),
                    "status": "running",
                    "by": "sam",
                    "at": at,
                    "continues": None,
                },
            )
            started = {"workflow": WORKFLOW, "input": INPUT}
            conn.execute(_AUDIT, _event("run.started", at, run_id, None, "sam", started))
            return self._queue_drive(conn, "start", run_id)

        return run_id, self._write(conn, write, savepoint=False)

    def _queue_drive(self, conn: sqlite3.Connection, kind: str, run_id: str) -> int:
        row = conn.execute(
            _QUEUE_DRIVE,
            {
                "kind": kind,
                "run_id": run_id,
                "payload": dumps({"correlation_id": "-"}),
                "owner": self._owner,
                "seconds": _LEASE_S,
            },
        ).fetchone()
        if row is None:
            raise RuntimeError(f"run {run_id} has a drive leased already")
        return int(row["id"])

    async def pause(self, run_id: str, start_job: int) -> tuple[str, str]:
        """The drive to the pause, its snapshot and the pause's rows (FULL); request, checkpoint."""
        asked = await self._workflow.run(BareAsk(amount=INPUT["amount"]))
        [event] = asked.get_request_info_events()
        maf_request_id = str(event.request_id)
        snapshot = without_run_kwargs(await self._workflow._runner.build_checkpoint())
        body = zlib.compress(dumps(encode_checkpoint_value(snapshot.to_dict())).encode(), 6)
        await self._reset()
        request_id = "req_" + secrets.token_urlsafe(16)
        at = _now()
        created = {"kind": "input", "team": TEAM, "title": TITLE, "policy_rule": None}
        entries: list[dict[str, Any]] = [
            {"type": "input", "input": INPUT},
            {
                "type": "request",
                "request_id": request_id,
                "kind": "input",
                "team": TEAM,
                "title": TITLE,
            },
        ]
        conn = self._full

        def write() -> None:
            conn.execute(
                _PROGRESS,
                {
                    "status": "waiting",
                    "output": None,
                    "error": None,
                    "checkpoint_id": snapshot.checkpoint_id,
                    "at": at,
                    "id": run_id,
                    "expected": None,
                },
            )
            conn.execute(
                "INSERT INTO checkpoints (id, run_id, body, created_at)"
                " VALUES (:id, :run_id, :body, :at)",
                {"id": snapshot.checkpoint_id, "run_id": run_id, "body": body, "at": at},
            )
            conn.execute(
                "INSERT INTO schemas (hash, body) VALUES (:hash, :body) ON CONFLICT DO NOTHING",
                {"hash": SCHEMA_HASH, "body": dumps(REQUEST_SCHEMA)},
            )
            conn.execute(
                "INSERT INTO human_requests (id, run_id, maf_request_id, kind, title, reason,"
                " context, proposed_action, payload, allowed_decisions, schema_hash, team,"
                " assignee, priority, status, created_at, expires_at, approvals_required,"
                " policy_rule, escalation, executor_id, arguments_schema_hash, escalates_at,"
                " attachments)"
                " VALUES (:id, :run_id, :maf_request_id, :kind, :title, :reason, :context,"
                " :proposed_action, :payload, :decisions, :schema_hash, :team, :assignee,"
                " :priority, :status, :at, :expires_at, :approvals, :policy_rule, :escalation,"
                " :executor_id, :arguments_schema_hash, :escalates_at, :attachments)",
                {
                    "id": request_id,
                    "run_id": run_id,
                    "maf_request_id": maf_request_id,
                    "kind": "input",
                    "title": TITLE,
                    "reason": REASON,
                    "context": dumps(INPUT),
                    "proposed_action": None,
                    "payload": dumps(_request_payload(maf_request_id)),
                    "decisions": dumps(["answer"]),
                    "schema_hash": SCHEMA_HASH,
                    "team": TEAM,
                    "assignee": None,
                    "priority": "normal",
                    "status": "pending",
                    "at": at,
                    "expires_at": None,
                    "approvals": 1,
                    "policy_rule": None,
                    "escalation": "[]",
                    "executor_id": "gate",
                    "arguments_schema_hash": None,
                    "escalates_at": None,
                    "attachments": None,
                },
            )
            conn.execute(
                _AUDIT, _event("request.created", at, run_id, request_id, "system", created)
            )
            conn.executemany(
                _TRANSCRIPT,
                [
                    {"run_id": run_id, "entry": dumps(entry), "at": at if n == 0 else None}
                    for n, entry in enumerate(entries)
                ],
            )
            conn.execute("DELETE FROM jobs WHERE id = :id", {"id": start_job})

        self._write(conn, write, savepoint=True)
        return request_id, snapshot.checkpoint_id

    def answer(self, run_id: str, request_id: str, checkpoint_id: str) -> tuple[int, bytes, str]:
        """The service's read, then the answer's rows and what the resume needs (FULL)."""

        def checked(c: sqlite3.Connection) -> sqlite3.Row:
            request = c.execute(_ONE_REQUEST, {"id": request_id}).fetchone()
            c.execute("SELECT * FROM runs WHERE id = :id", {"id": run_id}).fetchone()
            return cast(sqlite3.Row, request)

        request = self._read(checked)
        if request["status"] != "pending":
            raise RuntimeError(f"request {request_id} is {request['status']}, not pending")
        at = _now()
        conn = self._full

        def write() -> tuple[int, bytes]:
            conn.execute(
                "SELECT run_id, status, approvals_required, claimed_by, claimed_until,"
                " escalation_level FROM human_requests WHERE id = :id",
                {"id": request_id},
            ).fetchone()
            conn.execute(
                "INSERT INTO answers (request_id, actor, decision, body, at)"
                " VALUES (:request_id, :actor, :decision, :body, :at)",
                {
                    "request_id": request_id,
                    "actor": "lee",
                    "decision": "answer",
                    "body": dumps({"answer": ANSWER["answer"]}),
                    "at": at,
                },
            )
            answered = _event("request.answered", at, run_id, request_id, "lee", ANSWER)
            conn.execute(_AUDIT, answered)
            conn.execute(
                "UPDATE human_requests SET status = 'answered', answer = :answer,"
                " answered_by = :by, answered_at = :at WHERE id = :id"
                f" AND status IN {OPEN}",
                {"answer": dumps(ANSWER), "by": "lee", "at": at, "id": request_id},
            )
            job = self._queue_drive(conn, "resume", run_id)
            conn.execute(_DROP_REQUEST_TIMERS, {"request_id": request_id})
            conn.execute("SELECT * FROM runs WHERE id = :id", {"id": run_id}).fetchone()
            conn.execute(_IN_PLAY, {"run_id": run_id}).fetchall()
            conn.execute(
                "SELECT * FROM answers WHERE request_id IN (SELECT value FROM json_each(:ids))"
                " ORDER BY id",
                {"ids": dumps([request_id])},
            ).fetchall()
            (stored,) = conn.execute(
                "SELECT body FROM checkpoints WHERE id = :id", {"id": checkpoint_id}
            ).fetchone()
            conn.execute(  # the conversation so far, for what the resume asks people
                "SELECT entry FROM run_transcript WHERE run_id = :run_id ORDER BY seq",
                {"run_id": run_id},
            ).fetchall()
            return job, stored

        job, body = self._write(conn, write, savepoint=True)
        return job, body, str(request["maf_request_id"])

    async def _resume(self, body: bytes, maf_request_id: str) -> Any:
        """The checkpoint restored and the workflow run to its end with the answer."""
        encoded = json.loads(zlib.decompress(body))
        checkpoint = WorkflowCheckpoint.from_dict(
            decode_checkpoint_value(encoded, allowed_types=ALLOWED)
        )
        await self._workflow._runner.restore_checkpoint(checkpoint)
        done = await self._workflow.run(responses={maf_request_id: BareAnswer(decision="approve")})
        [output] = done.get_outputs()
        await self._reset()
        return output

    def end(
        self, run_id: str, request_id: str, checkpoint_id: str, output: Any, resume_job: int
    ) -> None:
        """The run completed, its checkpoint pruned, its request resumed (NORMAL)."""
        at = _now()
        said = {
            "type": "answer",
            "request_id": request_id,
            "kind": "input",
            "by": "lee",
            "decision": "answer",
            "text": ANSWER["answer"],
        }
        conn = self._normal

        def write() -> None:
            conn.execute(
                _PROGRESS,
                {
                    "status": "completed",
                    "output": dumps(output),
                    "error": None,
                    "checkpoint_id": None,
                    "at": at,
                    "id": run_id,
                    "expected": checkpoint_id,
                },
            )
            conn.execute("DELETE FROM checkpoints WHERE id = :id", {"id": checkpoint_id})
            conn.execute(
                "UPDATE human_requests SET status = CASE WHEN status = 'answered' THEN 'resumed'"
                " ELSE status END, delivered_at = CASE WHEN status = 'expired' THEN :at ELSE"
                " delivered_at END WHERE id IN (SELECT value FROM json_each(:ids))"
                " AND status IN ('answered', 'expired')",
                {"at": at, "ids": dumps([request_id])},
            )
            conn.executemany(
                _AUDIT,
                [
                    _event("run.resumed", at, run_id, request_id, "system", {"decision": "answer"}),
                    _event("run.completed", at, run_id, None, "system", {"output": output}),
                ],
            )
            conn.execute(_TRANSCRIPT, {"run_id": run_id, "entry": dumps(said), "at": at})
            conn.execute(
                "UPDATE human_requests SET status = 'cancelled' WHERE run_id = :run_id AND status"
                " IN ('pending', 'claimed', 'escalated', 'answered') RETURNING id",
                {"run_id": run_id},
            ).fetchall()
            conn.execute(
                "DELETE FROM jobs WHERE kind = 'timer' AND run_id = :run_id", {"run_id": run_id}
            )
            conn.execute("DELETE FROM jobs WHERE id = :id", {"id": resume_job})

        self._write(conn, write, savepoint=False)


@asynccontextmanager
async def rows_cycle(folder: Path) -> AsyncIterator[Callable[[], Awaitable[None]]]:
    """A `RowsCycle` on a new database in `folder`, made and seeded as the bench's Baton's."""
    path = folder / "baton.db"
    store = await SqliteStore.open(f"sqlite:///{path}")
    try:
        await seed_demo(store, f"sqlite:///{path}")
        # The store's own connections: WAL, the same pragmas; NORMAL, FULL, and one to read on.
        normal, full, reader = store._connect(here=True), store._connect(), store._connect()
    finally:
        await store.close()
    workflow = bare_workflow()
    install(workflow)
    pristine = await workflow._runner.build_checkpoint()
    try:
        yield RowsCycle(normal, full, reader, workflow, pristine)
    finally:
        for conn in (normal, full, reader):
            conn.close()
