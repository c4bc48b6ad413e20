"""Any answer type written down as data, found again, and answers checked as that type."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from baton.errors import InvalidPolicy
from human import typed
from human.policy import Route, parse_policy


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass
class Inner:
    size: Annotated[int, Field(ge=1, le=9)]


@dataclass
class Outer:
    colour: Colour
    inner: Inner | None = None
    tags: list[str] = field(default_factory=list)


class Model(BaseModel):
    choice: Literal["a", "b"]
    ratio: float = 0.5


TYPES = [
    str,
    int,
    bool,
    Colour,
    Outer,
    Model,
    list[Outer],
    dict[str, Model],
    Outer | None,
    Literal["yes", "no"],
    tuple[int, ...],
]


@pytest.mark.parametrize("tp", TYPES, ids=repr)
def test_a_type_written_down_is_found_again(tp: object) -> None:
    assert typed.rebuild(typed.describe(tp)) == tp


def test_an_answer_is_checked_and_kept_in_its_canonical_form() -> None:
    description = typed.describe(Outer)
    schema = typed.schema_of_type(Outer)

    value, problems = typed.check(description, schema, {"colour": "red", "inner": {"size": "3"}})
    bad, found = typed.check(description, schema, {"colour": "green", "inner": {"size": 10}})

    assert problems == []
    assert value == {"colour": "red", "inner": {"size": 3}, "tags": []}
    assert typed.value_of(description, value) == Outer(Colour.RED, Inner(3))
    assert bad == {"colour": "green", "inner": {"size": 10}}
    assert [loc for loc, _ in found] == [["colour"], ["inner", "size"]]


def test_a_type_this_process_has_not_loaded_is_judged_by_its_stored_schema() -> None:
    description = {"class": "nowhere.loaded:Thing"}
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer", "maximum": 3}},
        "required": ["n", "m"],
    }

    _, problems = typed.check(description, schema, {"n": 5})

    assert sorted(loc for loc, _ in problems) == [["m"], ["n"]]
    with pytest.raises(typed.UnknownType):
        typed.rebuild(description)


@pytest.mark.parametrize(
    "description",
    [
        {"class": "os:system"},  # a function, not a class
        {"class": "builtins:eval"},
        {"origin": "exec", "args": []},
        ["not", "a", "description"],
        {"class": "subprocess:Popen.__init__"},
    ],
)
def test_a_description_names_only_classes_of_loaded_modules(description: object) -> None:
    with pytest.raises(typed.UnknownType):
        typed.rebuild(description)


def test_a_route_takes_what_it_leaves_unset_from_the_route_beneath() -> None:
    base = Route(team="editors", title="Review {title}", priority="low")

    over = Route(team="legal", deadline_s=60).over(base)

    assert (over.team, over.title, over.priority, over.deadline_s) == (
        "legal",
        "Review {title}",
        "low",
        60,
    )


def test_the_policies_file_routes_requests_and_names_the_line_of_a_mistake() -> None:
    text = """version: 1
rules: []
requests:
  - id: a
    request: Feedback
    team: players
    deadline: 2h
  - id: b
    workflow: game
    team: players
    deadline: soon
"""
    with pytest.raises(InvalidPolicy) as refused:
        parse_policy(text)
    policy = parse_policy(text.replace("deadline: soon", "priority: high"))

    assert refused.value.errors[0]["line"] == 11
    assert "not a duration" in refused.value.errors[0]["msg"]
    assert policy.route("game", "turn", "mod:Feedback") is not None
    assert policy.route("game", "turn", "mod:Feedback").id == "a"  # first match wins
    assert policy.route("game", "turn", "mod:Other").id == "b"
    assert policy.route("other", "turn", "mod:Other") is None


# request data pydantic has no schema for ------------------------------------------------------


class Opaque:
    """A framework's object: no schema, a `to_dict` of its own."""

    def __init__(self, said: str) -> None:
        self.said = said

    def to_dict(self) -> dict[str, str]:
        return {"said": self.said}

    def __str__(self) -> str:
        return f"<Opaque {self.said}>"


@dataclass
class Draft:
    prompt: str
    history: list[Opaque] = field(default_factory=list)


def test_data_with_a_field_of_a_class_pydantic_cannot_describe_is_shown_field_by_field() -> None:
    draft = Draft("Review the draft", [Opaque("hello")])

    assert typed.as_json(draft) == {"prompt": "Review the draft", "history": ["<Opaque hello>"]}
    assert typed.as_json(draft, fallback=lambda v: v.to_dict()) == {
        "prompt": "Review the draft",
        "history": [{"said": "hello"}],
    }
    assert typed.as_json(Opaque("x")) == "<Opaque x>"  # no fields to show: what it says
    assert typed.as_json(draft, fallback=lambda v: object()) == str(draft)  # nothing JSON made


def test_maf_s_messages_in_request_data_are_their_role_and_text() -> None:
    from agent_framework import Content, Message

    from executors.platform.shown import maf_value

    said = Message("assistant", ["Here is the draft."])
    called = Message(
        "assistant", [Content.from_function_call(call_id="c1", name="f", arguments={})]
    )

    shown = typed.as_json(Draft("Review it", [said, called]), fallback=maf_value)

    assert shown["prompt"] == "Review it"
    assert shown["history"][0] == {"role": "assistant", "text": "Here is the draft."}
    assert shown["history"][1]["role"] == "assistant"
    assert shown["history"][1]["contents"][0]["name"] == "f"
    assert maf_value(Content.from_text("hi"))["text"] == "hi"
    assert maf_value(3.5j) == "3.5j"


@dataclass
class Partly:
    text: str
    count: int = 1
    held: list[Opaque] = field(default_factory=list)


@dataclass
class NeedsOpaque:
    text: str
    held: list[Opaque]


def test_a_dataclass_is_answered_by_the_fields_a_form_can_give_the_rest_kept() -> None:
    schema = typed.schema_of_type(Partly)
    answer = typed.value_of(typed.describe(Partly), {"text": "hi"})
    canonical, problems = typed.check(typed.describe(Partly), schema, {"text": "hi", "count": "2"})
    _, foreign = typed.check(typed.describe(Partly), schema, {"text": "hi", "held": []})

    assert set(schema["properties"]) == {"text", "count"}
    assert schema["required"] == ["text"]
    assert answer == Partly(text="hi")
    assert (canonical, problems) == ({"text": "hi", "count": 2}, [])
    assert foreign == [(["held"], "Extra inputs are not permitted")]


def test_an_answer_type_whose_field_no_form_can_give_needs_a_default_for_it() -> None:
    with pytest.raises(TypeError, match=r"NeedsOpaque.held has no default"):
        typed.schema_of_type(NeedsOpaque)
