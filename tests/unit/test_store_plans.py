"""The store's pure parts, without a database: how a dialect binds, and what a transaction decides.

The transactions (human/store/transactions.py) are tested on both databases by tests/contract/;
these are the pieces they ask, each a function of plain values.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from human.records import AnswerRecord, Notification
from human.store.dialect import POSTGRES, SQLITE
from human.store.rows import plan_answer, plan_delivery, plan_lease

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def test_postgres_numbers_named_parameters_in_order_of_first_use() -> None:
    sql, args = POSTGRES.bind(
        "UPDATE jobs SET a = :x, b = :y::text WHERE c = :x AND d = ANY(:ids)",
        {"ids": (1, 2), "y": "why", "x": T0},
    )

    assert sql == "UPDATE jobs SET a = $1, b = $2::text WHERE c = $1 AND d = ANY($3)"
    assert args == [T0, "why", [1, 2]]


def test_sqlite_keeps_names_and_binds_times_as_text_and_lists_as_json() -> None:
    sql, args = SQLITE.bind("SELECT :at, :ids, :n", {"at": T0, "ids": ["a", "b"], "n": 3})

    assert sql == "SELECT :at, :ids, :n"
    assert args == {"at": "2026-03-01T09:00:00.000000+00:00", "ids": '["a","b"]', "n": 3}


def test_a_dialect_locks_rows_only_where_it_has_row_locks() -> None:
    assert (POSTGRES.lock(), POSTGRES.lock("r")) == (" FOR UPDATE", " FOR UPDATE OF r")
    assert (SQLITE.lock(), SQLITE.lock("r")) == ("", "")


def job(job_id: int, kind: str, run_id: str | None) -> dict[str, Any]:
    return {"id": job_id, "kind": kind, "run_id": run_id}


def test_a_lease_takes_one_drive_job_per_run_and_none_of_a_busy_run() -> None:
    due = [
        job(5, "resume", "run_a"),
        job(1, "start", "run_a"),
        job(2, "timer", "run_a"),
        job(3, "resume", "run_b"),
        job(4, "notify", "run_b"),
    ]

    taken = plan_lease(due, busy={"run_b"}, limit=10)

    assert [r["id"] for r in taken] == [1, 2, 4]


def test_a_lease_takes_at_most_its_limit_oldest_first() -> None:
    due = [job(i, "timer", None) for i in (3, 1, 2)]

    assert [r["id"] for r in plan_lease(due, busy=set(), limit=2)] == [1, 2]


def note(attempts: int) -> Notification:
    return Notification(
        id="ntf_1",
        request_id="req_1",
        run_id="run_1",
        channel="email",
        event="created",
        status="queued",
        attempts=attempts,
        created_at=T0,
        updated_at=T0,
    )


def test_a_delivery_counts_its_attempt_but_a_skipped_one_is_none() -> None:
    attempt, status, event = plan_delivery(note(1), outcome="retrying", error="timeout")
    assert (attempt, status) == (2, "queued")
    assert event.type == "request.notified"
    assert (event.data["attempt"], event.data["outcome"], event.data["error"]) == (
        2,
        "retrying",
        "timeout",
    )

    attempt, status, event = plan_delivery(note(1), outcome="skipped", error=None)
    assert (attempt, status, "error" in event.data) == (1, "skipped", False)


def answer(actor: str, decision: str = "approve") -> AnswerRecord:
    return AnswerRecord(request_id="req_1", actor=actor, decision=decision, body={}, at=T0)


def test_two_approvers_are_counted_once_each() -> None:
    first = plan_answer(
        answer("fay"), run_id="run_1", approvals_required=2, approvers=set(), audit=None
    )
    again = plan_answer(
        answer("fay"), run_id="run_1", approvals_required=2, approvers={"fay"}, audit=None
    )
    second = plan_answer(
        answer("fin"), run_id="run_1", approvals_required=2, approvers={"fay"}, audit=None
    )

    assert first[0] == "partial"
    assert first[1] is not None
    assert first[1].data["approvals"] == 1
    assert again == ("repeated", None)
    assert second[0] == "closed"


def test_a_rejection_closes_a_request_that_needs_two_approvals() -> None:
    result, event = plan_answer(
        answer("fay", "reject"), run_id="run_1", approvals_required=2, approvers={"fin"}, audit=None
    )

    assert result == "closed"
    assert event is not None
    assert event.data["decision"] == "reject"
