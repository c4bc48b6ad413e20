"""What may be stored: every text Unicode, every number finite, every value shallow and bounded."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baton.errors import InvalidAnswer, InvalidInput
from human import text
from human.records import HumanRequest
from human.service import validate_answer
from workflows.platform import registry
from workflows.platform.runtime import typed_input

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.text() | st.binary())
def test_any_text_is_parsed_or_refused_by_name_never_anything_else(raw: str | bytes) -> None:
    refused: text.NotJson | None = None
    try:
        value = text.parse(raw)
    except text.NotJson as exc:
        refused = exc
    if refused is not None:
        assert refused.problems, "a refusal names what is wrong"
        return
    assert text.problems(value) == []
    json.dumps(value, allow_nan=False).encode("utf-8")  # storable as it is


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES)
def test_a_value_without_problems_round_trips_through_storage(value: Any) -> None:
    found = text.problems(value)
    if found:
        assert all(isinstance(loc, list) and msg for loc, msg in found)
        return
    stored = json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
    assert text.parse(stored) == value


@pytest.mark.parametrize(
    ("value", "loc", "words"),
    [
        ({"a": "x\ud800"}, ["a"], "lone surrogate"),
        ({"a": ["ok", "\x00"]}, ["a", "1"], "NUL"),
        ({"a": float("inf")}, ["a"], "finite"),
        ({"a": "x" * 70_000}, ["a"], "longer than"),
    ],
)
def test_each_problem_is_named_where_it_is(value: Any, loc: list[str], words: str) -> None:
    ((found_loc, msg),) = text.problems(value)

    assert found_loc == loc
    assert words in msg


def _approval() -> HumanRequest:
    from datetime import UTC, datetime

    from human.kinds import KINDS

    return HumanRequest(
        id="req_1",
        run_id="run_1",
        maf_request_id="m",
        kind="approval",
        title="t",
        reason="r",
        allowed_decisions=["approve", "edit", "reject"],
        response_schema=KINDS["approval"].response_schema(),
        team="support-leads",
        status="pending",
        created_at=datetime.now(UTC),
    )


def test_an_answer_from_any_channel_with_a_lone_surrogate_is_refused_before_the_store() -> None:
    with pytest.raises(InvalidAnswer) as refused:
        validate_answer(_approval(), {"decision": "reject", "reason": "no \udc80"})

    assert refused.value.errors[0]["loc"] == ["reason"]


def test_a_run_input_with_an_unknown_field_or_a_nul_is_refused_naming_it() -> None:
    registry.load("workflows.shipped")
    spec = registry.get("refund")
    good = {"order_id": "A-1005", "amount": 5, "reason": "x"}

    with pytest.raises(InvalidInput) as unknown:
        typed_input(spec, {**good, "surprise": 1})
    with pytest.raises(InvalidInput) as nul:
        typed_input(spec, {**good, "reason": "a\x00b"})

    assert unknown.value.errors == [{"loc": ["input", "surprise"], "msg": "unknown field"}]
    assert nul.value.errors[0]["loc"] == ["input", "reason"]
    assert typed_input(spec, good).model_dump()["order_id"] == "A-1005"
