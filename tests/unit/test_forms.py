"""Forms from JSON Schema and back (human/forms.py): a control per field, with its type, hints."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from baton.errors import InvalidAnswer, InvalidInput
from human import typed
from human.answer_schema import echoed
from human.forms import (
    OTHER,
    FormValues,
    answer_forms,
    answer_from_form,
    confirmation,
    errors_by_field,
    fields_of,
    input_form,
    input_from_form,
    values_of,
)
from human.forms import (
    Field as FormField,
)
from human.kinds import KINDS, schema_of
from human.records import HumanRequest
from human.service import validate_answer
from tests.samples.typed_review import ReviewDecision


class RefundArgs(BaseModel):
    order_id: str = Field(min_length=1, description="The order.")
    amount: float = Field(gt=0, description="Amount to refund")


class Colour(StrEnum):
    RED = "red"
    GREEN = "green"


class Address(BaseModel):
    street: str
    zip: str = Field(pattern=r"^\d{5}$")


class Everything(BaseModel):
    name: str = Field(max_length=40)
    note: str = Field("", max_length=2000)
    count: int = Field(ge=1, le=9)
    ratio: float | None = None
    urgent: bool = False
    colour: Colour
    size: Literal["xs", "s", "m", "l", "xl"] = "m"
    address: Address
    tags: list[str] = Field(default_factory=list)
    extra: dict[str, Any] = Field(default_factory=dict)


def an_approval(**changes: Any) -> HumanRequest:
    spec = KINDS["approval"]
    request = HumanRequest(
        id="req_1",
        run_id="run_1",
        maf_request_id="call.1",
        kind="approval",
        title="Refund 120.00 on order A-1002",
        reason="policy",
        proposed_action={
            "tool": "issue_refund",
            "arguments": {"order_id": "A-1002", "amount": 120.0},
            "arguments_schema": schema_of(RefundArgs),
        },
        allowed_decisions=list(spec.decisions),
        response_schema=spec.response_schema({"arguments": schema_of(RefundArgs)}),
        team="support-leads",
        status="pending",
        created_at=datetime(2026, 3, 1, tzinfo=UTC),
    )
    return request.model_copy(update=changes)


def a_request(
    kind: str, *, schemas: dict[str, dict[str, Any]] | None = None, **payload: Any
) -> HumanRequest:
    spec = KINDS[kind]
    return HumanRequest(
        id="req_2",
        run_id="run_1",
        maf_request_id="m.1",
        kind=kind,
        title=kind,
        reason="why",
        payload=payload,
        allowed_decisions=list(spec.decisions),
        response_schema=spec.response_schema(schemas),
        team="t",
        status="pending",
        created_at=datetime(2026, 3, 1, tzinfo=UTC),
    )


def by_name(fields: tuple[FormField, ...]) -> dict[str, FormField]:
    found: dict[str, FormField] = {}
    for f in fields:
        found[f.name] = f
        found |= by_name(f.children)
    return found


def posted(**values: str) -> FormValues:
    return FormValues([(k.replace("__", "."), v) for k, v in values.items()])


# schema -> controls -------------------------------------------------------------------------


def test_an_approval_has_a_form_per_decision_with_the_fields_each_takes() -> None:
    forms = {f.decision: f for f in answer_forms(an_approval())}
    assert list(forms) == ["approve", "edit", "reject"]

    [reason] = forms["approve"].fields
    assert (reason.name, reason.control, reason.required) == ("reason", "textarea", False)

    edit = by_name(forms["edit"].fields)
    assert edit["arguments"].control == "fieldset"
    order, amount = edit["arguments.order_id"], edit["arguments.amount"]
    assert (order.control, order.required, order.value) == ("text", True, "A-1002")
    assert dict(order.attrs) == {"minlength": "1", "type": "text"}
    assert order.help == "The order."
    assert (amount.control, amount.required, amount.value) == ("number", True, "120")
    # the server refuses 0 (exclusiveMinimum): so does the browser
    assert dict(amount.attrs) == {"step": "any", "min": "0.000000001", "inputmode": "decimal"}
    # its description and its limits, each a sentence
    assert amount.help == "Amount to refund. More than 0."
    assert edit["reason"].required is False

    [why] = forms["reject"].fields
    assert (why.name, why.control, why.required) == ("reason", "textarea", True)
    assert forms["edit"].confirms
    assert not forms["reject"].confirms


def test_every_json_type_gets_its_control() -> None:
    fields = by_name(fields_of(schema_of(Everything)))
    assert fields["name"].control == "text"
    assert ("maxlength", "40") in fields["name"].attrs
    assert fields["note"].control == "textarea"  # long text
    assert fields["count"].control == "number"
    assert dict(fields["count"].attrs) == {
        "step": "1",
        "min": "1",
        "max": "9",
        "inputmode": "numeric",
    }
    assert (fields["ratio"].control, fields["ratio"].required) == ("number", False)
    # a yes/no choice, its default chosen: never a lone box whose unticked state means "no"
    urgent = fields["urgent"]
    assert (urgent.control, urgent.options, urgent.value) == (
        "radio",
        (("true", "Yes"), ("false", "No")),
        "false",
    )
    assert fields["colour"].control == "radio"  # a $ref to an enum of two
    assert fields["colour"].options == (("red", "Red"), ("green", "Green"))
    assert fields["colour"].required
    assert fields["size"].control == "radio"  # five options: still radios
    assert fields["address"].control == "fieldset"
    assert ("pattern", r"^\d{5}$") in fields["address.zip"].attrs
    assert fields["tags"].control == "lines"
    assert fields["extra"].control == "json"
    assert {n for n, f in fields.items() if f.required} == {
        "name",
        "count",
        "colour",
        "address",
        "address.street",
        "address.zip",
    }


def test_a_value_filled_in_from_the_request_is_shown_read_only_and_sent_back() -> None:
    schema = echoed(
        {
            "type": "object",
            "properties": {
                "request_id": {"type": "string"},
                "round": {"type": "integer"},
                "approved": {"type": "boolean"},
            },
            "required": ["request_id", "round", "approved"],
        },
        {"request": {"request_id": "r-7", "round": 2}},
    )
    fields = by_name(fields_of(schema, values={"request_id": "r-7", "round": 2}))
    assert (fields["request_id"].value, fields["round"].value) == ("r-7", "2")
    assert ("readonly", "") in fields["request_id"].attrs
    assert ("readonly", "") in fields["round"].attrs
    assert fields["request_id"].help == "Filled in from the request."
    assert ("readonly", "") not in fields["approved"].attrs  # the person's to answer
    # an author's own read-only field holding no value is still the person's to fill in
    empty = by_name(
        fields_of({"type": "object", "properties": {"ref": {"type": "string", "readOnly": True}}})
    )
    assert ("readonly", "") not in empty["ref"].attrs


def test_a_questions_options_are_radios_with_something_else_where_it_takes_other_answers() -> None:
    [form] = answer_forms(a_request("question", question="Which?", options=["one", "two"]))
    [only] = answer_forms(
        a_request("question", question="Which?", options=["one", "two"], other=False)
    )
    [many] = answer_forms(a_request("question", question="Which?", options=list("abcdef")))

    [answer] = form.fields
    assert (answer.control, answer.options, answer.required) == (
        "radio",
        (("one", "one"), ("two", "two")),
        True,
    )
    assert answer.other == ""  # "Something else", free text beside it
    assert only.fields[0].other is None  # only the options
    assert (many.fields[0].control, many.fields[0].other) == ("select", "")


def test_money_has_cents_its_currency_from_the_context_and_no_zero() -> None:
    schema = {
        "type": "object",
        "properties": {
            "amount": {
                "type": "number",
                "exclusiveMinimum": 0,
                "format": "money",
                "x-currency": "{order.currency}",
            },
            "fee": {"type": "number", "minimum": 0, "format": "money", "x-currency": "EUR"},
            "count": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10},
        },
    }
    asked = a_request("approval", schemas={"arguments": schema})
    asked = asked.model_copy(
        update={
            "context": {"order": {"currency": "SEK"}},
            "proposed_action": {"tool": "t", "arguments": {"amount": 120, "fee": 0, "count": 2}},
        }
    )
    edit = by_name(next(f for f in answer_forms(asked) if f.decision == "edit").fields)
    unknown = by_name(fields_of(schema, values={"amount": 5}))

    amount, fee, count = edit["arguments.amount"], edit["arguments.fee"], edit["arguments.count"]
    assert (amount.value, amount.unit) == ("120.00", "SEK")
    assert dict(amount.attrs) == {"step": "0.01", "min": "0.01", "inputmode": "decimal"}
    assert (fee.unit, dict(fee.attrs)["min"]) == ("EUR", "0")
    assert (dict(count.attrs)["min"], dict(count.attrs)["max"]) == ("1", "9")
    assert unknown["amount"].unit == "{order.currency}"  # resolved by the form it is in


def test_a_questions_answer_is_the_option_chosen_or_the_text_typed_for_something_else() -> None:
    asked = a_request("question", question="Which?", options=["one", "two"])

    chosen = answer_from_form(asked, posted(decision="answer", answer="two", answer_other="x"))
    typed = answer_from_form(asked, posted(decision="answer", answer=OTHER, answer_other=" A-9 "))
    untold = answer_from_form(asked, posted(decision="answer", answer_other="A-9"))
    blank = answer_from_form(asked, posted(decision="answer", answer=OTHER, answer_other=""))
    [again] = answer_forms(asked, submitted="answer", raw=posted(decision="answer", answer="zz"))

    assert chosen == {"decision": "answer", "answer": "two"}
    assert typed == untold == {"decision": "answer", "answer": "A-9"}
    assert blank == {"decision": "answer"}  # the service says an answer is required
    assert (again.fields[0].value, again.fields[0].other) == (OTHER, "zz")


def test_a_refused_post_is_shown_again_as_typed_with_errors_next_to_their_fields() -> None:
    raw = posted(decision="edit", arguments__order_id="A-1002", arguments__amount="x")
    errors = [
        {"loc": ["arguments", "amount"], "msg": "'x' is not of type 'number'"},
        {"loc": ["decision"], "msg": "odd"},
        {"loc": [], "msg": "the answer must be a JSON object"},
    ]
    forms = {
        f.decision: f for f in answer_forms(an_approval(), submitted="edit", raw=raw, errors=errors)
    }
    edit = by_name(forms["edit"].fields)
    assert edit["arguments.amount"].value == "x"
    assert edit["arguments.amount"].error == "'x' is not of type 'number'"
    assert forms["edit"].open
    assert forms["edit"].errors == ("the answer must be a JSON object", "decision: odd")
    assert not forms["approve"].open
    assert forms["approve"].errors == ()
    assert by_name(forms["reject"].fields)["reason"].error is None


# posts -> JSON ------------------------------------------------------------------------------


def test_an_edit_post_is_the_answer_body_with_typed_values() -> None:
    form = posted(
        decision="edit",
        arguments__order_id="A-1002",
        arguments__amount="30",
        reason="",
        csrf_token="t",
        confirm="c",
    )
    assert answer_from_form(an_approval(), form) == {
        "decision": "edit",
        "arguments": {"order_id": "A-1002", "amount": 30},
    }
    half = posted(decision="edit", arguments__order_id="A-1002", arguments__amount="30.5")
    assert answer_from_form(an_approval(), half)["arguments"]["amount"] == 30.5
    # fields of another decision are not read: an approve sends no arguments
    approve = posted(decision="approve", arguments__amount="1", reason="fine")
    assert answer_from_form(an_approval(), approve) == {"decision": "approve", "reason": "fine"}


@pytest.mark.parametrize("text", ["x", "1e999", "nan", "12,5"])
def test_text_that_is_no_number_goes_on_as_text_for_the_validator_to_name(text: str) -> None:
    form = posted(decision="edit", arguments__order_id="A", arguments__amount=text)
    assert answer_from_form(an_approval(), form)["arguments"]["amount"] == text


def test_every_type_comes_back_from_a_post() -> None:
    schema = schema_of(Everything)
    form = FormValues(
        [
            ("name", "Ada"),
            ("note", ""),
            ("count", "3"),
            ("ratio", ""),
            ("urgent", "true"),
            ("colour", "green"),
            ("size", "xl"),
            ("address.street", "Main St 1"),
            ("address.zip", "12345"),
            ("tags", "a\n\n b \n"),
            ("extra", '{"k": [1, 2]}'),
        ]
    )
    assert values_of(schema, form) == {
        "name": "Ada",
        "count": 3,
        "urgent": True,
        "colour": "green",
        "size": "xl",
        "address": {"street": "Main St 1", "zip": "12345"},
        "tags": ["a", "b"],
        "extra": {"k": [1, 2]},
    }
    assert values_of(schema, FormValues([("urgent", "false")])) == {"urgent": False}
    assert values_of(schema, FormValues([("urgent", "")])) == {}  # no choice made: none sent
    started = input_from_form(schema, form)
    assert (
        started
        == Everything.model_validate(started).model_dump(mode="json", exclude={"note", "ratio"})
        | {}
    )


def test_text_meant_as_json_that_is_not_json_is_refused_naming_the_field() -> None:
    with pytest.raises(InvalidInput) as refused:
        input_from_form(schema_of(Everything), FormValues([("extra", "{not json")]))
    assert refused.value.errors[0]["loc"] == ["input", "extra"]
    review = a_request("review", draft={"title": "Order", "lines": 2})
    with pytest.raises(InvalidAnswer) as bad:
        answer_from_form(review, posted(decision="edit", content="{oops"))
    assert bad.value.errors[0]["loc"] == ["content"]
    ok = answer_from_form(review, posted(decision="edit", content='{"title": "Order 2"}'))
    assert ok == {"decision": "edit", "content": {"title": "Order 2"}}
    text_review = a_request("review", draft="Dear customer, ...")
    [_, edit, _] = answer_forms(text_review)
    assert by_name(edit.fields)["content"].control == "textarea"
    assert by_name(edit.fields)["content"].value == "Dear customer, ..."
    assert answer_from_form(text_review, posted(decision="edit", content="{x")) == {
        "decision": "edit",
        "content": "{x",
    }


def test_a_confirmation_names_one_answer_whatever_its_numbers_look_like() -> None:
    a = {"decision": "edit", "arguments": {"order_id": "A", "amount": 30}}
    b = {"decision": "edit", "arguments": {"amount": 30.0, "order_id": "A"}}
    c = {"decision": "edit", "arguments": {"order_id": "A", "amount": 31}}
    assert confirmation(a) == confirmation(b)
    assert confirmation(a) != confirmation(c)


def test_errors_are_keyed_by_the_field_path_they_name() -> None:
    by_field, rest = errors_by_field(
        [
            {"loc": ["input", "amount"], "msg": "too small"},
            {"loc": ["input", "amount"], "msg": "odd"},
            {"loc": ["input"], "msg": "bad input"},
        ],
        strip=("input",),
    )
    assert by_field == {"amount": "too small; odd"}
    assert rest == ["bad input"]


def test_a_start_form_shows_the_input_schema_defaults() -> None:
    form = input_form("everything", "All types.", schema_of(Everything))
    fields = by_name(form.fields)
    assert fields["size"].value == "m"
    assert fields["urgent"].value == "false"
    assert fields["name"].value == ""


# input requests: the form of the workflow's own answer type ----------------------------------


def an_input(answer_type: Any) -> HumanRequest:
    return a_request(
        "input",
        schemas={"answer": typed.schema_of_type(answer_type)},
        answer_type=typed.describe(answer_type),
    )


def test_an_input_answer_of_a_dataclass_is_a_form_of_its_own_fields() -> None:
    [form] = answer_forms(an_input(ReviewDecision))
    assert (form.label, form.submit, form.help) == (
        "Answer",
        "Send answer",
        "The reviewer's decision.",
    )
    fields = by_name(form.fields)
    assert [f.name for f in form.fields] == [
        "answer.verdict",
        "answer.score",
        "answer.tags",
        "answer.followup",
        "answer.note",
    ]
    verdict = fields["answer.verdict"]
    assert (verdict.control, verdict.required, verdict.value) == ("radio", True, "")
    assert verdict.options == (("publish", "Publish"), ("revise", "Revise"), ("drop", "Drop"))
    score = fields["answer.score"]
    assert (score.control, score.required, score.help) == ("number", True, "From 1 to 5.")
    assert dict(score.attrs) == {"step": "1", "min": "1", "max": "5", "inputmode": "numeric"}
    assert (fields["answer.tags"].control, fields["answer.tags"].required) == ("lines", False)
    assert (fields["answer.note"].control, fields["answer.note"].value) == ("text", "")

    followup = fields["answer.followup"]
    assert (followup.control, followup.label, followup.skippable) == ("fieldset", "Followup", True)
    assert followup.help == "Leave Owner empty if there is no followup."
    owner, due = fields["answer.followup.owner"], fields["answer.followup.due_in_days"]
    # required once the follow-up is given at all: the server, not the browser, can tell
    assert (owner.required, owner.if_filled) == (True, True)
    assert (due.label, due.value, due.required) == ("Due in days", "7", False)


def test_an_input_post_is_the_typed_value_under_answer() -> None:
    request = an_input(ReviewDecision)
    full = posted(
        decision="answer",
        answer__verdict="revise",
        answer__score="4",
        answer__tags="tone\r\n\r\n length \r\n",
        answer__followup__owner="ann",
        answer__followup__due_in_days="10",
        answer__note="",
    )
    body = answer_from_form(request, full)
    assert body == {
        "decision": "answer",
        "answer": {
            "verdict": "revise",
            "score": 4,
            "tags": ["tone", "length"],
            "followup": {"owner": "ann", "due_in_days": 10},
        },
    }
    assert validate_answer(request, body)["answer"]["followup"] == {
        "owner": "ann",
        "due_in_days": 10,
    }

    # the follow-up left as shown (owner empty, the default 7 kept) is no follow-up at all
    untouched = posted(
        decision="answer",
        answer__verdict="publish",
        answer__score="5",
        answer__tags="",
        answer__followup__owner="",
        answer__followup__due_in_days="7",
    )
    assert answer_from_form(request, untouched)["answer"]["followup"] is None
    # partly filled in: its own required field is missing, and the check says which
    partly = posted(
        decision="answer",
        answer__verdict="publish",
        answer__score="5",
        answer__followup__owner="",
        answer__followup__due_in_days="3",
    )
    with pytest.raises(InvalidAnswer) as refused:
        validate_answer(request, answer_from_form(request, partly))
    assert [e["loc"] for e in refused.value.errors] == [["answer", "followup", "owner"]]


def test_an_input_refusal_shows_beside_the_field_it_names_with_the_values_kept() -> None:
    request = an_input(ReviewDecision)
    raw = posted(
        decision="answer",
        answer__verdict="drop",
        answer__score="9",
        answer__tags="a\nb",
        answer__followup__owner="ann",
        answer__followup__due_in_days="7",
    )
    with pytest.raises(InvalidAnswer) as refused:
        validate_answer(request, answer_from_form(request, raw))
    [form] = answer_forms(request, submitted="answer", raw=raw, errors=refused.value.errors)
    fields = by_name(form.fields)
    assert fields["answer.score"].error == "Input should be less than or equal to 5"
    assert fields["answer.score"].value == "9"
    assert (fields["answer.verdict"].value, fields["answer.tags"].value) == ("drop", "a\nb")
    assert fields["answer.followup.owner"].value == "ann"
    assert form.errors == ()
    # an error about the answer as a whole heads the form
    [whole] = answer_forms(
        request, submitted="answer", raw=raw, errors=[{"loc": ["answer"], "msg": "odd"}]
    )
    assert whole.errors == ("odd",)


def test_a_yes_or_no_answer_is_two_choices_neither_made_for_the_person() -> None:
    request = an_input(bool)
    [form] = answer_forms(request)
    [answer] = form.fields
    assert (answer.name, answer.control, answer.required) == ("answer", "radio", True)
    assert (answer.options, answer.value) == ((("true", "Yes"), ("false", "No")), "")
    assert answer.label == "Your answer"
    asked = request.model_copy(update={"reason": "Sign off release 1.2?"})
    assert answer_forms(asked)[0].fields[0].label == "Sign off release 1.2?"  # the question asked
    assert answer_from_form(request, posted(decision="answer", answer="false")) == {
        "decision": "answer",
        "answer": False,
    }
    # no choice made is no answer, never a "no"
    nothing = answer_from_form(request, posted(decision="answer"))
    assert nothing == {"decision": "answer"}
    with pytest.raises(InvalidAnswer) as refused:
        validate_answer(request, nothing)
    assert refused.value.errors[0]["loc"] == ["answer"]


def test_help_from_a_docstring_is_its_first_paragraph_in_plain_words() -> None:
    @dataclass
    class Grade:
        """Grade the draft; `A` is best.

        Args:
            mark: The mark.
        """

        mark: Literal["A", "B"]

    [form] = answer_forms(an_input(Grade))
    assert form.help == "Grade the draft; A is best."


def test_a_text_answer_is_one_line_and_a_list_of_choices_a_select() -> None:
    [text] = answer_forms(an_input(str))[0].fields
    assert (text.control, text.required) == ("text", True)
    many = Literal["a", "b", "c", "d", "e", "f"]
    [pick] = answer_forms(an_input(many))[0].fields
    assert (pick.control, len(pick.options)) == ("select", 6)


def test_a_start_forms_description_is_plain_words() -> None:
    form = input_form("w", "Start `w`: it asks a *person*.\n\nFor developers.", {"properties": {}})

    assert form.description == "Start w: it asks a *person*."
