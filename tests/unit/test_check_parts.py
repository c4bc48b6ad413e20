"""The parts of `baton check`: made-up answers and inputs, and executor state fingerprints."""

from __future__ import annotations

import asyncio
import enum
from collections import defaultdict
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Never, TypedDict

import pytest
from agent_framework import (
    AgentSession,
    Content,
    Executor,
    FunctionTool,
    Message,
    WorkflowContext,
    WorkflowEvent,
    handler,
    tool,
)
from agent_framework_orchestrations import HandoffAgentUserRequest
from pydantic import BaseModel, Field

from human.kinds import (
    ApprovalAnswer,
    ApprovalRequest,
    ProposedAction,
    QuestionAnswer,
    QuestionRequest,
    ReviewAnswer,
    TakeoverAnswer,
)
from workflows.platform.samples import answer_to, given_answer, sample_of, value_of
from workflows.platform.snapshots import (
    MAX_DEPTH,
    fingerprint,
    framework_names,
    keys_became_strings,
    lost_attributes,
    own_attributes,
)


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass
class Pick:
    colour: Colour
    count: int
    sure: bool


class Shape(TypedDict):
    name: str
    sides: list[int]


class Order(BaseModel):
    fraction: float = Field(gt=0, le=0.5)
    quantity: Annotated[int, Field(ge=10, lt=20)]
    below: Annotated[float, Field(gt=-10, lt=-5)]
    code: Annotated[str, Field(min_length=5, max_length=6)]
    size: Literal["small", "large"]
    picks: list[Pick]
    note: str | None
    tries: int = 3


def request(data: Any, response_type: Any) -> WorkflowEvent[Any]:
    return WorkflowEvent.request_info("r1", "desk", data, response_type)


@pytest.mark.parametrize(
    ("declared", "expected"),
    [
        (bool, True),
        (int, 1),
        (float, 1.0),
        (str, "ok"),
        (Colour, Colour.RED),
        (Literal["p", "q"], "p"),
        (list[str], ["ok"]),
        (Pick, Pick(colour=Colour.RED, count=1, sure=True)),
        (Shape, {"name": "ok", "sides": [1]}),
    ],
)
def test_a_value_is_made_up_for_each_plain_type(declared: Any, expected: Any) -> None:
    assert value_of(declared) == expected


def test_a_model_is_made_up_field_by_field_within_its_bounds() -> None:
    order = value_of(Order)

    assert order == Order(
        fraction=0.25,
        quantity=15,
        below=-7.5,
        code="okoko",
        size="small",
        picks=[Pick(colour=Colour.RED, count=1, sure=True)],
        note="ok",
    )


def test_examples_and_defaults_come_before_made_up_values() -> None:
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string", "examples": ["Lisbon"]},
            "days": {"type": "integer", "default": 4},
        },
        "required": ["city", "days"],
    }

    assert sample_of(schema) == {"city": "Lisbon", "days": 4}


def test_an_unmakeable_type_says_so() -> None:
    class Opaque:
        pass

    with pytest.raises(ValueError, match="cannot make up a Opaque"):
        value_of(Opaque)


def test_baton_kinds_are_answered_as_a_person_would() -> None:
    approval = ApprovalRequest(
        title="t", reason="r", team="x", proposed_action=ProposedAction(tool="pay", arguments={})
    )
    question = QuestionRequest(title="t", reason="r", team="x", question="why?")

    assert answer_to(request(approval, ApprovalAnswer)) == ApprovalAnswer(decision="approve")
    assert answer_to(request(question, QuestionAnswer)) == QuestionAnswer(
        decision="answer", answer="ok"
    )
    assert answer_to(request(approval, ReviewAnswer)) == ReviewAnswer(decision="approve")
    assert answer_to(request(approval, TakeoverAnswer)) == TakeoverAnswer(
        decision="resolve", resolution="ok"
    )


def test_mafs_own_requests_get_the_responses_maf_expects() -> None:
    call = Content.from_function_call("c1", "pay", arguments={"amount": 3}, id="c1")
    approval = Content.from_function_approval_request("c1", call)
    handoff = HandoffAgentUserRequest(agent_response=None)  # type: ignore[arg-type]

    approved = answer_to(request(approval, Content))
    refused = given_answer(request(approval, Content), False)
    host = answer_to(request(call, Content))
    user = answer_to(request(handoff, list[Message]))

    assert (approved.type, approved.approved) == ("function_approval_response", True)
    assert refused.approved is False
    assert (host.type, host.call_id, host.result) == ("function_result", "c1", "ok")
    assert [m.text for m in user] == ["ok"]


def test_a_magentic_plan_review_is_approved_made_up_and_revised_with_given_guidance() -> None:
    from agent_framework_orchestrations import (
        MagenticPlanReviewRequest,
        MagenticPlanReviewResponse,
    )

    plan = Message("assistant", ["1. Research. 2. Draft."])
    review = request(
        MagenticPlanReviewRequest(plan=plan, current_progress=None, is_stalled=False),
        MagenticPlanReviewResponse,
    )

    made_up = answer_to(review)
    given = given_answer(review, True)
    revised = given_answer(review, ["add a budget line", "name an owner"])

    assert isinstance(made_up, MagenticPlanReviewResponse)
    assert made_up.review == [] == given.review  # empty: the plan stands
    assert [m.text for m in revised.review] == ["add a budget line", "name an owner"]
    assert given_answer(review, "shorter").review[0].text == "shorter"
    with pytest.raises(ValueError, match="a hold on an agent's plan takes true, or the guidance"):
        given_answer(review, 3)


def test_a_given_answer_is_validated_as_the_response_type() -> None:
    asked = request(Pick(colour=Colour.BLUE, count=2, sure=False), Pick)

    assert given_answer(asked, {"colour": "blue", "count": 5, "sure": False}) == Pick(
        Colour.BLUE, 5, False
    )
    with pytest.raises(ValueError, match="is not a Pick: count: Input should be a valid integer"):
        given_answer(asked, {"colour": "blue", "count": "many", "sure": False})


# fingerprints -------------------------------------------------------------------------------


def pay(amount: int) -> str:
    """Pay `amount`."""
    return f"paid {amount}"


class Holder(Executor):
    """An executor with state of every sort the check must tell apart."""

    def __init__(self) -> None:
        super().__init__(id="holder")
        self.count = 0
        self.settings = {"limit": 3}
        self.lock = asyncio.Lock()
        self.tool: FunctionTool = tool(pay)
        self.session = AgentSession()

    @handler
    async def on_text(self, message: str, ctx: WorkflowContext[Never, str]) -> None:
        self.count += 1


def prints(executor: Executor) -> dict[str, Any]:
    return {name: fingerprint(value) for name, value in own_attributes(executor).items()}


def test_mafs_own_attributes_are_not_the_executors() -> None:
    names = framework_names(Holder)

    assert {"id", "_handlers", "_execution_lock", "_response_handlers"} <= names
    assert set(own_attributes(Holder())) == {"count", "settings", "lock", "tool", "session"}


def test_a_restore_that_loses_a_count_is_found_and_settings_are_not_state() -> None:
    fresh = (prints(Holder()), prints(Holder()))
    paused, restored = Holder(), Holder()
    paused.count = 2

    assert lost_attributes(prints(paused), prints(restored), fresh) == ["count"]
    restored.count = 2
    assert lost_attributes(prints(paused), prints(restored), fresh) == []


def test_what_differs_between_two_fresh_instances_is_never_compared() -> None:
    fresh = (prints(Holder()), prints(Holder()))
    paused, restored = Holder(), Holder()
    paused.session.state["history"] = ["hello"]
    restored.session.state["history"] = ["hello"]

    assert fresh[0]["session"] != fresh[1]["session"]  # each session has its own id
    assert lost_attributes(prints(paused), prints(restored), fresh) == []
    restored.session.state["history"] = []
    assert lost_attributes(prints(paused), prints(restored), fresh) == ["session"]


def test_locks_and_mafs_components_compare_by_type_only() -> None:
    fresh = (prints(Holder()), prints(Holder()))
    paused, restored = Holder(), Holder()
    paused.tool.invocation_count = 5  # what a tool counts is MAF's, rebuilt with the graph

    asyncio.run(paused.lock.acquire())  # held at the pause; a fresh instance's is free

    assert lost_attributes(prints(paused), prints(restored), fresh) == []


def test_fingerprints_stop_at_the_depth_bound_and_at_cycles() -> None:
    nested: list[Any] = ["leaf"]
    for _ in range(MAX_DEPTH + 2):
        nested = [nested]
    loop: dict[str, Any] = {}
    loop["self"] = loop

    deep = fingerprint(nested)
    for _ in range(MAX_DEPTH):
        deep = deep["<items>"][0]

    assert deep == {"<type>": "builtins.list"}
    assert fingerprint(loop)["<items>"]["self"] == {"<cycle>": "builtins.dict"}


def test_keys_a_checkpoint_made_strings_are_told_from_other_changes() -> None:
    assert keys_became_strings({1: "a"}, {"1": "a"})
    assert keys_became_strings([{2: (1, 2)}], [{"2": (1, 2)}])  # inside a list too
    assert not keys_became_strings({1: "a"}, {1: "a"})  # nothing changed
    assert not keys_became_strings({1: "a"}, {"1": "b"})  # a value changed too
    # a defaultdict that comes back a dict has changed its type, not its keys
    assert not keys_became_strings(defaultdict(list, {"a": [1]}), {"a": [1]})
