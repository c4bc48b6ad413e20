"""Rows to records: a column that cannot be read is left out and named, never raised."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from human.store.rows import answer_of, event_of, run_of

AT = "2026-12-04T08:00:00+00:00"


def test_an_event_whose_data_is_not_json_is_read_without_it_and_says_so() -> None:
    row = {"id": 7, "type": "request.answered", "at": AT, "run_id": "r", "request_id": "q"}
    event = event_of(row | {"actor": "lee", "data": '{"cut'})
    assert event.data == {}
    assert len(event.faults) == 1
    assert event.faults[0].startswith("data: not valid JSON (")
    assert event_of(row | {"actor": "lee", "data": '{"a": 1}'}).faults == []


def test_a_value_of_the_wrong_shape_is_left_out_and_named() -> None:
    answer = answer_of(
        {"request_id": "q", "actor": "lee", "decision": "approve", "body": "[1, 2]", "at": AT}
    )
    assert answer.body == {}
    assert [f.split(":")[0] for f in answer.faults] == ["body"]


def test_a_run_keeps_what_it_can_and_a_status_it_cannot_stand_in_for_still_fails() -> None:
    row = {
        "id": "run_1",
        "workflow": "refund",
        "input": "not json",
        "status": "waiting",
        "output": "{}",
        "error": None,
        "created_by": "sam",
        "created_at": AT,
        "updated_at": AT,
        "checkpoint_id": None,
        "continues": None,
    }
    run = run_of(row)
    assert (run.input, run.output, run.status) == ({}, {}, "waiting")
    assert [f.split(":")[0] for f in run.faults] == ["input"]
    # nothing sensible stands in for an unknown status: that is an error, not a guess
    with pytest.raises(ValidationError):
        run_of(row | {"status": "teleported"})
