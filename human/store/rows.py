"""What every SQL backend shares: rows to records, JSON, cursors, and the rules of an answer.

A row is whatever the driver returns that is indexed by column name (`sqlite3.Row`,
`asyncpg.Record`). JSON columns arrive as text on both; times as ISO text (SQLite) or aware
datetimes (PostgreSQL).
"""

from __future__ import annotations

import json
import logging
import secrets
import typing
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Literal, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from baton.errors import Invalid
from baton.telemetry import correlation_id
from human.records import (
    AnswerRecord,
    ApiToken,
    AuditEvent,
    HumanRequest,
    Job,
    NewEvent,
    Notification,
    Page,
    Run,
)
from human.store.base import RequestFact, failure_of

logger = logging.getLogger(__name__)

AnswerResult = Literal["closed", "partial", "repeated", "not_open"]
DRIVE_KINDS: Final = ("start", "resume")


class Row(Protocol):
    """A database row read by column name."""

    def __getitem__(self, key: str) -> Any:
        """The value of a column."""
        ...


_ENCODER: Final = json.JSONEncoder(separators=(",", ":"), default=str)


def dumps(value: Any) -> str:
    """Compact JSON text for a JSON column."""
    return _ENCODER.encode(value)


def loads(value: str | None) -> Any:
    """A JSON column's value; NULL stays None."""
    return None if value is None else json.loads(value)


R = TypeVar("R", bound=BaseModel)


class Columns:
    """A row's JSON columns read one by one: one that does not parse is noted, not raised.

    A record is read whatever an older version, a hand edit or a bug left in a column: what
    cannot be read is left out (its field's default, or an empty value), named in the record's
    `faults`, and the rest of the record, its page and its list are shown as ever.
    """

    def __init__(self, row: Row, what: str) -> None:
        self.row, self.what = row, what
        self.faults: list[str] = []

    def json(self, name: str) -> Any:
        """A JSON column's value, or `Columns.UNREAD` noted as a fault."""
        try:
            return loads(self.row[name])
        except (ValueError, TypeError) as exc:
            self.faults.append(f"{name}: not valid JSON ({str(exc)[:80]})")
            return Columns.UNREAD

    UNREAD: Final = object()

    def record(self, cls: type[R], values: dict[str, Any]) -> R:
        """`cls` from `values`; a field that does not validate is left out, named in `faults`."""
        values = {k: _fallback(cls, k) if v is Columns.UNREAD else v for k, v in values.items()}
        values = {k: v for k, v in values.items() if v is not Columns.UNREAD}
        for _ in range(len(cls.model_fields)):
            try:
                found = cls.model_validate(values | {"faults": self.faults})
            except ValidationError as exc:
                names = {str(e["loc"][0]) for e in exc.errors() if e["loc"]}
                if not names or not names <= set(values) - {"faults"}:
                    raise
                for e in exc.errors():
                    self.faults.append(f"{e['loc'][0]}: {e['msg'][:120]}")
                for name in names:
                    del values[name]
                    fallback = _fallback(cls, name)
                    if fallback is not Columns.UNREAD:
                        values[name] = fallback
                continue
            if self.faults:
                logger.warning(
                    "a stored record could not be read whole",
                    extra={"record": self.what, "id": values.get("id"), "faults": self.faults},
                )
            return found
        raise AssertionError("unreachable: each round leaves a field out")


def _fallback(cls: type[BaseModel], name: str) -> Any:
    """What stands in for a field that could not be read: empty if required and a container."""
    field = cls.model_fields[name]
    if not field.is_required():
        return Columns.UNREAD  # its default
    origin = typing.get_origin(field.annotation) or field.annotation
    if origin is dict:
        return {}
    return [] if origin is list else Columns.UNREAD


def when(value: str | datetime | None) -> datetime | None:
    """A time column's value as an aware datetime."""
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(value)


def at(value: str | datetime) -> datetime:
    """A NOT NULL time column's value."""
    found = when(value)
    assert found is not None
    return found


def job_payload() -> str:
    """A queued job carries the correlation id of the call that queued it."""
    return dumps({"correlation_id": correlation_id.get()})


def cursor_seq(cursor: str) -> int:
    """The sequence number a keyset cursor stands for; 422 for one this API did not issue."""
    digits = cursor.removeprefix("s")
    if not digits.isdigit() or len(digits) > 18:  # a sequence number fits in 64 bits
        raise Invalid(
            "cursor is not one this API issued",
            [{"loc": ["cursor"], "msg": "invalid cursor"}],
        )
    return int(digits)


PRIORITY_RANK: Final = {"urgent": 3, "high": 2, "normal": 1, "low": 0}
"""How urgent each priority is (an unknown one counts as normal)."""

URGENCY_SQL: Final = (
    "CASE r.priority "
    + " ".join(f"WHEN '{p}' THEN {n}" for p, n in PRIORITY_RANK.items())
    + " ELSE 1 END"
)
NO_DEADLINE: Final = datetime(9999, 12, 31, tzinfo=UTC)
"""Where a request without a deadline sorts among deadlines: last."""


def urgency_cursor(cursor: str) -> tuple[int, datetime, int]:
    """The (priority rank, deadline, seq) an urgency cursor stands for; 422 for another."""
    parts = cursor.removeprefix("u").split(".")
    if (
        not cursor.startswith("u")
        or len(parts) != 3
        or not all(p.isdigit() and len(p) <= 18 for p in parts)
    ):
        raise Invalid(
            "cursor is not one this API issued",
            [{"loc": ["cursor"], "msg": "invalid cursor"}],
        )
    rank, micros, seq = (int(p) for p in parts)
    try:
        due = datetime.fromtimestamp(0, UTC) + timedelta(microseconds=micros)
    except OverflowError as exc:
        raise Invalid(
            "cursor is not one this API issued",
            [{"loc": ["cursor"], "msg": "invalid cursor"}],
        ) from exc
    return rank, due, seq


def urgent_page(rows: Sequence[Row], items: list[HumanRequest], limit: int) -> Page:
    """A keyset page from `limit + 1` rows ordered most urgent first (see `urgency_cursor`)."""
    if len(rows) <= limit:
        return Page(items=items, next_cursor=None)
    last = items[limit - 1]
    due = when(rows[limit - 1]["escalates_at"]) or last.expires_at or NO_DEADLINE
    micros = (due - datetime.fromtimestamp(0, UTC)) // timedelta(microseconds=1)
    rank = PRIORITY_RANK.get(last.priority, 1)
    return Page(items=items[:limit], next_cursor=f"u{rank}.{micros}.{rows[limit - 1]['seq']}")


def page(rows: Sequence[Row], items: list[Any], limit: int) -> Page:
    """A keyset page from `limit + 1` rows ordered by `seq` descending."""
    more = len(rows) > limit
    return Page(items=items[:limit], next_cursor=f"s{rows[limit - 1]['seq']}" if more else None)


def run_of(row: Row) -> Run:
    """A `runs` row."""
    cols = Columns(row, "run")
    return cols.record(
        Run,
        {
            "id": row["id"],
            "workflow": row["workflow"],
            "input": cols.json("input"),
            "status": row["status"],
            "output": cols.json("output"),
            "error": row["error"],
            "created_by": row["created_by"],
            "created_at": at(row["created_at"]),
            "updated_at": at(row["updated_at"]),
            "checkpoint_id": row["checkpoint_id"],
            "continues": row["continues"],
        },
    )


def answer_of(row: Row) -> AnswerRecord:
    """An `answers` row."""
    cols = Columns(row, "answer")
    return cols.record(
        AnswerRecord,
        {
            "request_id": row["request_id"],
            "actor": row["actor"],
            "decision": row["decision"],
            "body": cols.json("body"),
            "at": at(row["at"]),
        },
    )


def requests_of(
    rows: Iterable[Row], answers: Iterable[Row], notifications: Iterable[Row] = ()
) -> list[HumanRequest]:
    """Request rows (joined with their schemas), and their answers and outbox rows."""
    by_request: dict[str, list[AnswerRecord]] = {}
    for a in answers:
        by_request.setdefault(a["request_id"], []).append(answer_of(a))
    sent: dict[str, list[Notification]] = {}
    for n in notifications:
        sent.setdefault(n["request_id"], []).append(notification_of(n))
    return [_request_of(r, by_request.get(r["id"], []), sent.get(r["id"], [])) for r in rows]


def fact_of(r: Row) -> RequestFact:
    """A request row's facts for the dashboard; an answer that does not read has no decision."""
    answer = Columns(r, "request").json("answer")
    decision = answer.get("decision") if isinstance(answer, dict) else None
    return RequestFact(
        team=r["team"],
        status=r["status"],
        policy_rule=r["policy_rule"],
        created_at=at(r["created_at"]),
        answered_at=when(r["answered_at"]),
        expires_at=when(r["expires_at"]),
        escalation_level=r["escalation_level"],
        decision=decision if isinstance(decision, str) else None,
    )


def _proposed_action(cols: Columns) -> Any:
    """The proposed action, its arguments schema put back from `schemas` where it was kept."""
    action = cols.json("proposed_action")
    if cols.row["arguments_schema"] is None or not isinstance(action, dict):
        return action
    schema = cols.json("arguments_schema")
    return action if schema is Columns.UNREAD else action | {"arguments_schema": schema}


def _request_of(r: Row, answers: list[AnswerRecord], sent: list[Notification]) -> HumanRequest:
    cols = Columns(r, "request")
    return cols.record(
        HumanRequest,
        {
            "id": r["id"],
            "run_id": r["run_id"],
            "maf_request_id": r["maf_request_id"],
            "kind": r["kind"],
            "title": r["title"],
            "reason": r["reason"],
            "context": cols.json("context"),
            "proposed_action": _proposed_action(cols),
            "payload": cols.json("payload"),
            "allowed_decisions": cols.json("allowed_decisions"),
            "response_schema": cols.json("response_schema"),
            "team": r["team"],
            "assignee": r["assignee"],
            "priority": r["priority"],
            "status": r["status"],
            "created_at": at(r["created_at"]),
            "expires_at": when(r["expires_at"]),
            "approvals_required": r["approvals_required"],
            "policy_rule": r["policy_rule"],
            "answer": cols.json("answer"),
            "answered_by": r["answered_by"],
            "answered_at": when(r["answered_at"]),
            "answers": answers,
            "claimed_by": r["claimed_by"],
            "claimed_until": when(r["claimed_until"]),
            "escalation": cols.json("escalation"),
            "escalation_level": r["escalation_level"],
            "notifications": sent,
            "executor_id": r["executor_id"],
            "attachments": [] if r["attachments"] is None else cols.json("attachments"),
        },
    )


def event_of(row: Row) -> AuditEvent:
    """An `audit_events` row."""
    cols = Columns(row, "event")
    return cols.record(
        AuditEvent,
        {
            "id": row["id"],
            "type": row["type"],
            "at": at(row["at"]),
            "run_id": row["run_id"],
            "request_id": row["request_id"],
            "actor": row["actor"],
            "data": cols.json("data"),
        },
    )


def job_of(row: Row, *, attempts: int) -> Job:
    """A `jobs` row as leased, with its attempt count after the lease."""
    return Job(
        id=row["id"],
        kind=row["kind"],
        run_id=row["run_id"],
        request_id=row["request_id"],
        payload=loads(row["payload"]),
        attempts=attempts,
    )


def cancelled_events(
    run_id: str, request_ids: Iterable[str], actor: str, data: dict[str, Any] | None = None
) -> list[NewEvent]:
    """The `request.cancelled` events of a run's requests closed with it (`data`: its why)."""
    return [
        NewEvent(
            type="request.cancelled", run_id=run_id, request_id=i, actor=actor, data=data or {}
        )
        for i in request_ids
    ]


def effect_event(
    *,
    run_id: str,
    tool: str,
    key: str,
    arguments: dict[str, Any],
    result: Any,
    uncertain: bool = False,
) -> NewEvent:
    """The single event of an effect: `effect.executed`, `effect.failed` or `effect.uncertain`.

    `effect.failed`: the call raised, its `result` the error (`failure_of`); `effect.uncertain`:
    a call started and never recorded; its `result` is what the model was told instead of a
    second call.
    """
    failed = failure_of(result) is not None
    return NewEvent(
        type="effect.uncertain" if uncertain else "effect.failed" if failed else "effect.executed",
        run_id=run_id,
        data={"tool": tool, "idempotency_key": key, "arguments": arguments, "result": result},
    )


def plan_answer(
    answer: AnswerRecord,
    *,
    run_id: str,
    approvals_required: int,
    approvers: set[str],
    audit: dict[str, Any] | None,
) -> tuple[AnswerResult, NewEvent | None]:
    """What an answer to an open request does: first answer wins, approvals counted per person.

    `approvers` are the people who approved before (read only when counting). Returns the result
    and the `request.answered` event to write (none when the answer repeats an approval).
    """
    counting = counts_approvals(answer, approvals_required)
    data = {"decision": answer.decision, **answer.body, **(audit or {})}
    if counting:
        if answer.actor in approvers:
            return "repeated", None
        count = len(approvers) + 1
        if count < approvals_required:
            data |= {"approvals": count, "approvals_required": approvals_required}
            result: AnswerResult = "partial"
        else:
            result = "closed"
    else:
        result = "closed"
    event = NewEvent(
        type="request.answered",
        run_id=run_id,
        request_id=answer.request_id,
        actor=answer.actor,
        data=data,
    )
    return result, event


def counts_approvals(answer: AnswerRecord, approvals_required: int) -> bool:
    """Whether this answer is one approval among several needed (so prior approvers matter)."""
    return answer.decision == "approve" and approvals_required > 1


def notification_of(row: Row) -> Notification:
    """A `notifications` row."""
    return Notification(
        id=row["id"],
        request_id=row["request_id"],
        run_id=row["run_id"],
        channel=row["channel"],
        event=row["event"],
        status=row["status"],
        attempts=row["attempts"],
        last_error=row["last_error"],
        parts_sent=loads(row["parts_sent"]) or [],
        created_at=at(row["created_at"]),
        updated_at=at(row["updated_at"]),
    )


def token_of(row: Row) -> ApiToken:
    """An `api_tokens` row joined with its user's name."""
    return ApiToken(
        id=row["id"],
        user=row["user_name"],
        label=row["label"],
        hint=row["hint"],
        created_at=at(row["created_at"]),
        revoked_at=when(row["revoked_at"]),
    )


def claim_blocks(row: Row, actor: str, now: datetime) -> bool:
    """Whether a request row is held by a live claim of someone other than `actor`."""
    until = when(row["claimed_until"])
    return (
        row["status"] == "claimed"
        and row["claimed_by"] not in (None, actor)
        and until is not None
        and until > now
    )


def timer_payload(action: str, step: int | None) -> str:
    """A timer job's payload: what it does, and the correlation id of the call that set it."""
    payload: dict[str, Any] = {"action": action, "correlation_id": correlation_id.get()}
    if step is not None:
        payload["step"] = step
    return dumps(payload)


def notify_payload(notification_id: str) -> str:
    """A notify job's payload: the outbox row it delivers."""
    return dumps({"notification_id": notification_id, "correlation_id": correlation_id.get()})


def delivery_event(
    notification: Notification,
    *,
    outcome: str,
    attempt: int,
    error: str | None,
    parts_sent: Sequence[str] = (),
) -> NewEvent:
    """The `request.notified` event of one delivery attempt (and the parts it handed over)."""
    data: dict[str, Any] = {
        "channel": notification.channel,
        "event": notification.event,
        "outcome": outcome,
        "attempt": attempt,
        "notification_id": notification.id,
    }
    if error:
        data["error"] = error
    if parts_sent:
        data["parts_sent"] = list(parts_sent)
    return NewEvent(
        type="request.notified",
        run_id=notification.run_id,
        request_id=notification.request_id,
        data=data,
    )


def delivered_status(outcome: str) -> str:
    """The outbox row's status after an attempt with this outcome."""
    return {"sent": "sent", "retrying": "queued", "failed": "failed", "skipped": "skipped"}[outcome]


def plan_delivery(
    notification: Notification, *, outcome: str, error: str | None, parts_sent: Sequence[str] = ()
) -> tuple[int, str, NewEvent]:
    """What one delivery attempt writes: the attempt count, the row's status, the audit event.

    A skipped delivery (nothing to send) is not an attempt.
    """
    attempt = notification.attempts + (0 if outcome == "skipped" else 1)
    event = delivery_event(
        notification, outcome=outcome, attempt=attempt, error=error, parts_sent=parts_sent
    )
    return attempt, delivered_status(outcome), event


def plan_lease(candidates: Iterable[Row], *, busy: set[str], limit: int) -> list[Row]:
    """Which due jobs to lease, oldest first: at most `limit`, and one drive job per run.

    `busy` are the runs whose drive job another worker holds: they get none. Start and resume
    jobs of one run drive the same workflow, so two at once would race on its checkpoint.
    """
    taken: list[Row] = []
    driven = set(busy)
    for row in sorted(candidates, key=lambda r: int(r["id"])):
        if row["kind"] in DRIVE_KINDS:
            if row["run_id"] in driven:
                continue
            driven.add(row["run_id"])
        taken.append(row)
        if len(taken) >= limit:
            break
    return taken


def new_token_id() -> str:
    """A public id for an API token."""
    return f"tok_{secrets.token_hex(8)}"


def new_notification_id() -> str:
    """An outbox row's id: also the delivery id receivers dedupe on."""
    return f"ntf_{secrets.token_hex(8)}"
