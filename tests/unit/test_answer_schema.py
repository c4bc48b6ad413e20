"""An answer's JSON Schema read for people (human/answer_schema.py): labels, words, examples."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field, TypeAdapter

from human.answer_schema import (
    bounds,
    choices,
    describe,
    echoed,
    example,
    label,
    option_label,
    with_defaults,
)


class Parcel(BaseModel):
    weight_kg: Annotated[float, Field(gt=0, lt=30)]
    sizes: dict[str, int] = Field(default_factory=dict)
    code: str = Field(min_length=5, max_length=5, pattern=r"^\d{5}$", title="Postal code")
    kind: int | str = 1


def schema(tp: Any) -> dict[str, Any]:
    return TypeAdapter(tp).json_schema()


@pytest.mark.parametrize(
    ("name", "title", "said"),
    [
        ("due_in_days", "Due In Days", "Due in days"),  # pydantic's made-up title
        ("order_id", "Order Id", "Order ID"),
        ("callbackUrl", None, "Callback URL"),
        ("code", "Postal code", "Postal code"),  # the author's own title
    ],
)
def test_a_field_is_called_by_its_title_or_its_name_in_words(
    name: str, title: str | None, said: str
) -> None:
    assert label(name, title) == said


def test_values_are_called_in_words_where_they_are_words() -> None:
    assert [option_label(v) for v in ("needs_care", "go", "XL", "A-1", 3, True, False)] == [
        "Needs care",
        "Go",
        "XL",
        "A-1",
        "3",
        "Yes",
        "No",
    ]


def test_limits_in_words() -> None:
    assert bounds({"minimum": 1, "maximum": 5}) == "from 1 to 5"
    assert bounds({"exclusiveMinimum": 0, "exclusiveMaximum": 30}) == "more than 0 and less than 30"
    assert bounds({"minimum": 0.5}) == "at least 0.5"
    assert bounds({}) == ""


def test_what_an_answer_must_be_in_words() -> None:
    assert describe(schema(Parcel)) == [
        "an object with these fields:",
        "  weight_kg (required): a number more than 0 and less than 30",
        "  sizes: an object whose values are each a whole number",
        "  code (required): text of 5 characters matching ^\\d{5}$",
        "  kind: a whole number or text (default: 1)",
    ]
    assert describe(schema(Literal["go", "wait"])) == ['one of "go", "wait"']
    assert describe(schema(list[bool] | None)) == ["null, or a list of true or false values"]


def test_an_example_has_the_required_fields_each_at_its_simplest() -> None:
    assert example(schema(Parcel)) == {"weight_kg": 1, "code": "text"}
    assert example(schema(Annotated[int, Field(gt=3)])) == 4
    assert example(schema(bool)) is True


def test_only_a_few_values_make_choices() -> None:
    assert choices(schema(bool)) == [(True, "Yes"), (False, "No")]
    assert choices(schema(Literal["a", "b", "c", "d", "e"])) == [(v, v.upper()) for v in "abcde"]
    assert choices(schema(Literal["a", "b", "c", "d", "e", "f"])) == []
    assert choices(schema(Parcel)) == []
    assert choices(schema(int)) == []


class Verdict(BaseModel):
    request_id: str
    round: int
    approved: bool
    score: float = 0.5
    note: str


def _verdict() -> dict[str, Any]:
    return TypeAdapter(Verdict).json_schema()


def test_an_answer_repeats_what_its_request_holds_by_name_filled_in_and_no_longer_required() -> (
    None
):
    data = {"agent_request": {"request_id": "r-7", "draft": "..."}, "round": 2, "note": None}

    schema = echoed(_verdict(), data)

    assert schema["properties"]["request_id"]["default"] == "r-7"  # one level down
    assert schema["properties"]["round"]["default"] == 2
    assert "default" not in schema["properties"]["note"]  # no plain value to repeat
    assert "default" not in schema["properties"]["approved"]
    assert schema["required"] == _verdict()["required"]  # the workflow still needs each
    assert schema["properties"]["request_id"]["description"] == "Filled in from the request."
    assert schema["properties"]["request_id"]["readOnly"] is True  # a form shows it, fixed
    assert "readOnly" not in schema["properties"]["note"]
    assert with_defaults(schema, {"approved": True, "note": "ok"}) == {
        "request_id": "r-7",
        "round": 2,
        "score": 0.5,
        "approved": True,
        "note": "ok",
    }
    assert (
        with_defaults(schema, {"request_id": "mine", "approved": True, "note": ""})["request_id"]
        == "mine"
    )  # a value given stands


@pytest.mark.parametrize(
    "data",
    [
        {"round": "2"},  # text for a number
        {"round": True},  # yes/no for a number
        {"approved": 1},  # a number for yes/no
        {"a": {"round": 1}, "b": {"round": 2}},  # two values under one name
        {"deep": {"deeper": {"round": 2}}},  # two levels down
        {"score": 0.9},  # the type's own default stands
        ["round", 2],  # no fields at all
    ],
)
def test_nothing_is_filled_in_that_is_not_the_field_s_own_plain_value(data: Any) -> None:
    assert echoed(_verdict(), data) == _verdict()


def test_an_answer_that_is_no_object_is_left_as_it_is() -> None:
    assert echoed({"type": "string"}, {"request_id": "r-7"}) == {"type": "string"}
    assert with_defaults({"type": "string"}, "text") == "text"
