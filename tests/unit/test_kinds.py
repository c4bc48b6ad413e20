"""Answer models per kind, their schemas, and their trip through MAF's checkpoint encoding."""

from __future__ import annotations

from typing import Any

import pytest
from agent_framework._workflows._checkpoint_encoding import (
    decode_checkpoint_value,
    encode_checkpoint_value,
)
from agent_framework.exceptions import WorkflowCheckpointException
from pydantic import BaseModel, ValidationError

from human.kinds import (
    CHECKPOINT_TYPES,
    KINDS,
    SYSTEM_OUTCOMES,
    ApprovalAnswer,
    ApprovalRequest,
    Escalation,
    InputAnswer,
    InputRequest,
    ProposedAction,
    QuestionAnswer,
    QuestionRequest,
    ReviewAnswer,
    ReviewRequest,
    TakeoverAnswer,
    TakeoverRequest,
)
from workflows.platform import registry

ANSWER_MODELS = [kind.answer_model for kind in KINDS.values()]


def problems(model: type[BaseModel], body: dict[str, Any]) -> list[tuple[str, ...]]:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(body)
    return [tuple(str(p) for p in e["loc"]) for e in caught.value.errors()]


@pytest.mark.parametrize("model", ANSWER_MODELS, ids=lambda m: m.__name__)
def test_an_answer_has_no_default_decision(model: type[BaseModel]) -> None:
    assert model.model_fields["decision"].is_required()
    assert ("decision",) in problems(model, {})


@pytest.mark.parametrize(
    ("model", "body", "field"),
    [
        (ApprovalAnswer, {"decision": "reject"}, "reason"),
        (ApprovalAnswer, {"decision": "reject", "reason": "   "}, "reason"),
        (ApprovalAnswer, {"decision": "edit"}, "arguments"),
        (ReviewAnswer, {"decision": "reject"}, "reason"),
        (ReviewAnswer, {"decision": "edit"}, "content"),
        (QuestionAnswer, {"decision": "answer"}, "answer"),
        (TakeoverAnswer, {"decision": "resolve"}, "resolution"),
        (TakeoverAnswer, {"decision": "return"}, "guidance"),
    ],
)
def test_a_decision_requires_its_fields(
    model: type[BaseModel], body: dict[str, Any], field: str
) -> None:
    with pytest.raises(ValidationError, match=f"{field}: required"):
        model.model_validate(body)


@pytest.mark.parametrize(
    ("model", "body"),
    [
        (ApprovalAnswer, {"decision": "reject", "reason": "over budget"}),
        (ApprovalAnswer, {"decision": "edit", "arguments": {"amount": 40}}),
        (ApprovalAnswer, {"decision": "approve"}),
        (ReviewAnswer, {"decision": "edit", "content": "Dear Kim, ..."}),
        (QuestionAnswer, {"decision": "answer", "answer": "the blue one"}),
        (TakeoverAnswer, {"decision": "resolve", "resolution": "called", "outcome": {"ok": 1}}),
        (TakeoverAnswer, {"decision": "return", "guidance": "offer a voucher"}),
    ],
)
def test_a_complete_answer_is_accepted(model: type[BaseModel], body: dict[str, Any]) -> None:
    assert model.model_validate(body).model_dump(exclude_none=True) == body


@pytest.mark.parametrize("name", sorted(KINDS))
def test_stray_fields_are_rejected(name: str) -> None:
    model = KINDS[name].answer_model
    decision = KINDS[name].decisions[0]
    body = {"decision": decision, "approved": True}
    body |= {field: "x" for field in model.requires.get(decision, ())}

    assert ("approved",) in problems(model, body)


@pytest.mark.parametrize(
    ("model", "body", "field"),
    [
        (ApprovalAnswer, {"decision": "approve", "arguments": {"amount": 1}}, "arguments"),
        (
            ApprovalAnswer,
            {"decision": "reject", "reason": "no", "arguments": {"a": 1}},
            "arguments",
        ),
        (TakeoverAnswer, {"decision": "return", "guidance": "g", "resolution": "r"}, "resolution"),
        (ReviewAnswer, {"decision": "approve", "content": "sneaky"}, "content"),
    ],
)
def test_a_field_of_another_decision_is_rejected(
    model: type[BaseModel], body: dict[str, Any], field: str
) -> None:
    with pytest.raises(ValidationError, match=f"{field}: not allowed"):
        model.model_validate(body)


@pytest.mark.parametrize("name", sorted(KINDS))
def test_the_response_schema_offers_only_a_persons_decisions(name: str) -> None:
    kind = KINDS[name]

    schema = kind.response_schema()

    enum = schema["properties"]["decision"]["enum"]
    assert enum == list(kind.decisions)
    assert not set(enum) & set(SYSTEM_OUTCOMES)
    assert "decision" in schema["required"]
    # the model still takes the system outcomes the runtime delivers
    for outcome in SYSTEM_OUTCOMES:
        kind.answer_model.model_validate({"decision": outcome})


def test_an_approval_schema_carries_the_tools_arguments_schema_without_leaking_it() -> None:
    approval = KINDS["approval"]
    tool_schema = {"type": "object", "properties": {"amount": {"type": "number"}}}

    with_tool = approval.response_schema({"arguments": tool_schema})
    with_tool["properties"]["decision"]["enum"].append("expired")  # a caller mutating its copy
    plain = approval.response_schema()

    assert with_tool["properties"]["arguments"]["properties"] == tool_schema["properties"]
    assert with_tool["properties"]["arguments"]["title"] == "Changed arguments"
    assert plain["properties"]["arguments"] != with_tool["properties"]["arguments"]
    assert plain["properties"]["decision"]["enum"] == ["approve", "edit", "reject"]


# checkpoint encoding ------------------------------------------------------------------------

ROUTING: dict[str, Any] = {
    "title": "Refund 120.00 on order A-1",
    "reason": "policy rule refund.medium",
    "context": {"customer": "Kim", "order": {"id": "A-1", "total": 200.0}},
    "team": "support-leads",
    "priority": "high",
    "approvals_required": 2,
    "expires_in_s": 3600.0,
    "policy_rule": "refund.medium",
}
ACTION = ProposedAction(
    tool="issue_refund",
    arguments={"order_id": "A-1", "amount": 120.0},
    arguments_schema={"type": "object"},
)
ESCALATION = Escalation(after_s=4 * 3600, team="managers", priority="high", expires_in_s=86400)

SAMPLES: dict[type[BaseModel], BaseModel] = {
    ProposedAction: ACTION,
    Escalation: ESCALATION,
    ApprovalRequest: ApprovalRequest(**ROUTING, proposed_action=ACTION, escalation=[ESCALATION]),
    QuestionRequest: QuestionRequest(**ROUTING, question="Which one?", options=["a", "b"]),
    ReviewRequest: ReviewRequest(**ROUTING, draft={"subject": "Your refund", "body": "..."}),
    TakeoverRequest: TakeoverRequest(**ROUTING, conversation=[{"role": "user", "text": "hi"}]),
    ApprovalAnswer: ApprovalAnswer(decision="edit", arguments={"amount": 40.0}, reason="less"),
    QuestionAnswer: QuestionAnswer(decision="answer", answer="b"),
    ReviewAnswer: ReviewAnswer(decision="edit", content={"body": "better"}),
    TakeoverAnswer: TakeoverAnswer(decision="resolve", resolution="done", outcome={"ok": True}),
    InputRequest: InputRequest(
        **ROUTING,
        data={"prompt": "Higher or lower?"},
        request_type="game:Feedback",
        answer_schema={"type": "string"},
        answer_type={"class": "builtins:str"},
    ),
    InputAnswer: InputAnswer(decision="answer", answer={"verdict": "publish", "score": 4}),
}


def allow_list() -> frozenset[str]:
    registry.load("workflows.shipped")
    return registry.get("refund").allowed_types


def test_every_checkpoint_type_has_a_sample() -> None:
    assert set(SAMPLES) == set(CHECKPOINT_TYPES)


@pytest.mark.parametrize("model", CHECKPOINT_TYPES, ids=lambda m: m.__name__)
def test_a_checkpoint_type_round_trips_under_the_registrys_allow_list(
    model: type[BaseModel],
) -> None:
    sample = SAMPLES[model]
    encoded = encode_checkpoint_value({"pending": sample})

    decoded = decode_checkpoint_value(encoded, allowed_types=allow_list())

    assert type(decoded["pending"]) is model
    assert decoded["pending"] == sample


@pytest.mark.parametrize("model", CHECKPOINT_TYPES, ids=lambda m: m.__name__)
def test_a_checkpoint_type_is_blocked_under_an_empty_allow_list(model: type[BaseModel]) -> None:
    encoded = encode_checkpoint_value({"pending": SAMPLES[model]})

    with pytest.raises(WorkflowCheckpointException, match="blocked"):
        decode_checkpoint_value(encoded, allowed_types=frozenset())


def test_only_a_choice_left_at_no_is_no_value_for_a_decision_that_does_not_take_it() -> None:
    """A form's No sends `standing: false` with any decision; any other field's `false` is one."""
    assert ApprovalAnswer.model_validate({"decision": "reject", "reason": "no", "standing": False})
    with pytest.raises(ValidationError, match="standing: not allowed"):
        ApprovalAnswer.model_validate({"decision": "reject", "reason": "no", "standing": True})
    with pytest.raises(ValidationError, match="content: not allowed"):
        ReviewAnswer.model_validate({"decision": "approve", "content": False})
