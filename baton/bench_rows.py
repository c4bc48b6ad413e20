"""What Baton's rows and commits cost without its layers: the `baton_rows` system of the bench.

A minimal cycle that writes what a Baton minimal cycle writes, in the same transactions, on a
database Baton's own migrations made (the demo seeded), at the same durability, and drives the
same MAF workflow (`baton.bench.bare_workflow`) as Baton drives it, with nothing between: no
runtime, worker, service, store or adapter, one event loop, no thread. So `baton_rows`' cycle is
MAF's work, the one snapshot of the pause (encoded and compressed as Baton does) and its restore,
and Baton's statements; Baton's cycle less this one is what its layers cost.

The transactions, as Baton's (`human.store.transactions`, `human.store.sqlite`):

1. the start (`synchronous=NORMAL`): the run, its `run.started` event, its start job;
2. the pause (FULL): the run waiting on its checkpoint, the checkpoint, the answer schema, the
   request, its `request.created` event, two transcript entries, the start job gone;
3. a read: the run's pending requests, as a person lists them;
4. the answer (FULL): the request still pending, the answer, the request answered, its
   `request.answered` event, the resume job;
5. a read: the run and its checkpoint; the checkpoint decoded and restored;
6. the end (NORMAL): the run completed, its checkpoint gone, the request resumed, the
   `run.resumed` and `run.completed` events, a transcript entry, the resume job gone;
7. a read: the run, ended.

What it leaves out is Baton's: the layers' checks (access, routing, the answer validated against
its kind and schema), the rows read back as records, the hand-offs to the writer thread, and the
proof that the pause's checkpoint decodes under the allow-list; and of the reads, those a drive
makes beyond the run and its checkpoint (the answers, the request with its run). A test
(`tests/benchmarks/test_bench_rows.py`) holds it to Baton's rows: the same rows in every table
Baton writes, byte for byte the same size, the same audit events.

`python -m baton.bench_peers minimal baton_rows CYCLES FOLDER` runs it as a child of the bench.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

from agent_framework import Workflow, WorkflowCheckpoint
from agent_framework._workflows._checkpoint_encoding import (
    decode_checkpoint_value,
    encode_checkpoint_value,
)

from baton.bench import BARE_TYPES, BareAnswer, BareAsk, bare_workflow
from baton.bench_peers import paused
from baton.demo import seed_demo
from human.store.base import utcnow
from human.store.sqlite import SqliteStore
from workflows.platform.state import install

ALLOWED: Final = frozenset(BARE_TYPES)
TEAM: Final = "support-leads"
TITLE: Final = "Approve 120.0"
REASON: Final = "The gate step waits for your answer before it goes on."
ANSWER_SCHEMA: Final = {
    "description": "The bare workflow's answer.",
    "properties": {"decision": {"title": "Decision", "type": "string"}},
    "required": ["decision"],
    "title": "BareAnswer",
    "type": "object",
}
REQUEST_SCHEMA: Final = {  # the request's answer schema, kept once in `schemas`
    "additionalProperties": False,
    "description": "An answer of the type the workflow asked for.",
    "properties": {
        "decision": {"enum": ["answer"], "title": "Decision", "type": "string"},
        "answer": ANSWER_SCHEMA | {"title": "Answer"},
    },
    "required": ["decision"],
    "title": "InputAnswer",
    "type": "object",
}
SCHEMA_HASH: Final = "85996605735569dd862043e7fb6f333e"
ANSWER: Final = {"decision": "answer", "answer": {"decision": "approve"}}
INPUT: Final = {"amount": 120.0}
NEXT_SEQ: Final = "(SELECT COALESCE(MAX(seq), 0) + 1 FROM {table}{where})"


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


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
    "INSERT INTO audit_events (type, at, run_id, request_id, actor, data) VALUES (?, ?, ?, ?, ?, ?)"
)
_TRANSCRIPT: Final = (
    "INSERT INTO run_transcript (run_id, seq, entry, at) VALUES (?, "
    + NEXT_SEQ.format(table="run_transcript", where=" WHERE run_id = ?")
    + ", ?, ?)"
)


class RowsCycle:
    """One database's two connections (NORMAL and FULL, as Baton's) and one kept workflow."""

    def __init__(
        self,
        normal: sqlite3.Connection,
        full: sqlite3.Connection,
        workflow: Workflow,
        pristine: WorkflowCheckpoint,
    ) -> None:
        """`pristine`: `workflow`'s checkpoint as built, which each reset restores."""
        self._normal = normal
        self._full = full
        self._workflow = workflow
        self._pristine = pristine

    async def _reset(self) -> None:
        """The kept workflow back as built, as Baton's pool resets an instance after a drive."""
        await self._workflow._runner.restore_checkpoint(self._pristine)

    async def __call__(self) -> None:
        """Start, pause, list, answer, resume and end one run; raises if it did not complete."""
        run_id, start_job = self._start()
        request_id, maf_request_id = await self._pause(run_id, start_job)
        listed = self._pending(run_id)
        if [row["id"] for row in listed] != [request_id]:
            raise RuntimeError(f"run {run_id} lists {len(listed)} pending requests, not one")
        paused()
        resume_job = self._answer(run_id, request_id)
        output, checkpoint_id = await self._resume(run_id, maf_request_id)
        self._end(run_id, request_id, checkpoint_id, output, resume_job)
        ended = self._read(lambda c: c.execute("SELECT * FROM runs WHERE id = ?", (run_id,)))
        if ended[0]["status"] != "completed":
            raise RuntimeError(f"run {run_id} ended {ended[0]['status']}")

    def _start(self) -> tuple[str, int]:
        run_id = "run_" + secrets.token_urlsafe(12)
        at = _now()
        conn = self._normal
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "INSERT INTO runs (id, seq, workflow, input, status, created_by, created_at,"
            f" updated_at) VALUES (?, {NEXT_SEQ.format(table='runs', where='')}, ?, ?,"
            " 'running', ?, ?, ?)",
            (run_id, "bench_minimal", _dumps(INPUT), "sam", at, at),
        )
        started = {"workflow": "bench_minimal", "input": INPUT}
        conn.execute(_AUDIT, ("run.started", at, run_id, None, "sam", _dumps(started)))
        job = conn.execute(
            "INSERT INTO jobs (kind, run_id, available_at, payload) VALUES ('start', ?, ?, '{}')",
            (run_id, time.time()),
        ).lastrowid
        conn.execute("COMMIT")
        assert job is not None
        return run_id, job

    async def _pause(self, run_id: str, start_job: int) -> tuple[str, str]:
        asked = await self._workflow.run(BareAsk(amount=INPUT["amount"]))
        [event] = asked.get_request_info_events()
        maf_request_id = str(event.request_id)
        snapshot = await self._workflow._runner.build_checkpoint()
        encoded = encode_checkpoint_value(snapshot.to_dict())
        body = zlib.compress(_dumps(encoded).encode(), 6)
        await self._reset()
        request_id = "req_" + secrets.token_urlsafe(16)
        at = _now()
        created = {"kind": "input", "team": TEAM, "title": TITLE, "policy_rule": None}
        entries = [
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
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "UPDATE runs SET status = 'waiting', output = NULL, error = NULL, checkpoint_id = ?,"
            " updated_at = ? WHERE id = ?",
            (snapshot.checkpoint_id, at, run_id),
        )
        conn.execute(
            "INSERT INTO checkpoints (id, run_id, body, created_at) VALUES (?, ?, ?, ?)",
            (snapshot.checkpoint_id, run_id, body, at),
        )
        conn.execute(
            "INSERT INTO schemas (hash, body) VALUES (?, ?) ON CONFLICT DO NOTHING",
            (SCHEMA_HASH, _dumps(REQUEST_SCHEMA)),
        )
        conn.execute(
            "INSERT INTO human_requests (id, run_id, maf_request_id, kind, title, reason, context,"
            " payload, allowed_decisions, schema_hash, team, priority, status, created_at,"
            " executor_id) VALUES (?, ?, ?, 'input', ?, ?, ?, ?, '[\"answer\"]', ?, ?, 'normal',"
            " 'pending', ?, 'gate')",
            (
                request_id,
                run_id,
                maf_request_id,
                TITLE,
                REASON,
                _dumps(INPUT),
                _dumps(_request_payload(maf_request_id)),
                SCHEMA_HASH,
                TEAM,
                at,
            ),
        )
        conn.execute(_AUDIT, ("request.created", at, run_id, request_id, "system", _dumps(created)))
        conn.executemany(
            _TRANSCRIPT,
            [
                (run_id, run_id, _dumps(entries[0]), at),
                (run_id, run_id, _dumps(entries[1]), None),
            ],
        )
        conn.execute("DELETE FROM jobs WHERE id = ?", (start_job,))
        conn.execute("COMMIT")
        return request_id, maf_request_id

    def _read(self, statement: Callable[[sqlite3.Connection], sqlite3.Cursor]) -> list[sqlite3.Row]:
        conn = self._normal
        conn.execute("BEGIN")
        try:
            return list(statement(conn).fetchall())
        finally:
            conn.execute("COMMIT")

    def _pending(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._read(
            lambda c: c.execute(
                "SELECT * FROM human_requests WHERE run_id = ? AND status = 'pending' ORDER BY seq",
                (run_id,),
            )
        )
        return [
            dict(row) | {key: json.loads(row[key]) for key in ("payload", "context")}
            for row in rows
        ]

    def _answer(self, run_id: str, request_id: str) -> int:
        at = _now()
        conn = self._full
        conn.execute("BEGIN IMMEDIATE")
        try:
            found = conn.execute(
                "SELECT status FROM human_requests WHERE id = ?", (request_id,)
            ).fetchone()
            if found is None or found["status"] != "pending":
                raise RuntimeError(f"request {request_id} is not pending")
            conn.execute(
                "INSERT INTO answers (request_id, actor, decision, body, at)"
                " VALUES (?, ?, ?, ?, ?)",
                (request_id, "lee", "answer", _dumps({"answer": ANSWER["answer"]}), at),
            )
            conn.execute(
                "UPDATE human_requests SET status = 'answered', answer = ?, answered_by = ?,"
                " answered_at = ? WHERE id = ?",
                (_dumps(ANSWER), "lee", at, request_id),
            )
            answered = ("request.answered", at, run_id, request_id, "lee", _dumps(ANSWER))
            conn.execute(_AUDIT, answered)
            job = conn.execute(
                "INSERT INTO jobs (kind, run_id, request_id, available_at, payload)"
                " VALUES ('resume', ?, ?, ?, '{}')",
                (run_id, request_id, time.time()),
            ).lastrowid
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        assert job is not None
        return job

    async def _resume(self, run_id: str, maf_request_id: str) -> tuple[Any, str]:
        def run_and_checkpoint(conn: sqlite3.Connection) -> sqlite3.Cursor:
            return conn.execute(
                "SELECT r.*, c.body FROM runs r JOIN checkpoints c ON c.id = r.checkpoint_id"
                " WHERE r.id = ?",
                (run_id,),
            )

        [row] = self._read(run_and_checkpoint)
        encoded = json.loads(zlib.decompress(row["body"]))
        checkpoint = WorkflowCheckpoint.from_dict(
            decode_checkpoint_value(encoded, allowed_types=ALLOWED)
        )
        await self._workflow._runner.restore_checkpoint(checkpoint)
        done = await self._workflow.run(responses={maf_request_id: BareAnswer(decision="approve")})
        [output] = done.get_outputs()
        await self._reset()
        return output, checkpoint.checkpoint_id

    def _end(
        self, run_id: str, request_id: str, checkpoint_id: str, output: Any, resume_job: int
    ) -> None:
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
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "UPDATE runs SET status = 'completed', output = ?, error = NULL, checkpoint_id = NULL,"
            " updated_at = ? WHERE id = ?",
            (_dumps(output), at, run_id),
        )
        conn.execute("DELETE FROM checkpoints WHERE id = ?", (checkpoint_id,))
        conn.execute(
            "UPDATE human_requests SET status = 'resumed' WHERE id = ? AND status = 'answered'",
            (request_id,),
        )
        conn.executemany(
            _AUDIT,
            [
                ("run.resumed", at, run_id, request_id, "system", _dumps({"decision": "answer"})),
                ("run.completed", at, run_id, None, "system", _dumps({"output": output})),
            ],
        )
        conn.execute(_TRANSCRIPT, (run_id, run_id, _dumps(said), at))
        conn.execute("DELETE FROM jobs WHERE id = ?", (resume_job,))
        conn.execute("COMMIT")


@asynccontextmanager
async def rows_cycle(folder: Path) -> AsyncIterator[Callable[[], Awaitable[None]]]:
    """A `RowsCycle` on a new database in `folder`, made and seeded as the bench's Baton's."""
    path = folder / "baton.db"
    store = await SqliteStore.open(f"sqlite:///{path}")
    try:
        await seed_demo(store, f"sqlite:///{path}")
        # The store's own connections: WAL, the same pragmas, NORMAL and FULL.
        normal, full = store._connect(here=True), store._connect()
    finally:
        await store.close()
    workflow = bare_workflow()
    install(workflow)
    pristine = await workflow._runner.build_checkpoint()
    try:
        yield RowsCycle(normal, full, workflow, pristine)
    finally:
        normal.close()
        full.close()
