"""MAF's AG-UI shapes of a request (`executors.platform.maf_agui`): what a front end written for
MAF's own AG-UI endpoint reads of an interrupt, and how its answers become the API's bodies."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from baton.errors import InvalidAnswer
from executors.platform.maf_agui import NO_REASON, answer_body, asked, tool_call_id
from human.kinds import (
    ApprovalRequest,
    InputRequest,
    ProposedAction,
    QuestionRequest,
    Routing,
    TakeoverRequest,
)
from human.records import HumanRequest
from human.requests import new_request

WORDS = {"title": "t", "reason": "r", "team": "support"}
CALL = {"call_id": "call-1", "tool": "submit_refund", "arguments": {"amount": 10}, "agent": "a"}
MAF_APPROVAL = {
    "type": "function_approval_request",
    "id": "call-1",
    "function_call": {"type": "function_call", "call_id": "call-1", "name": "submit_refund"},
}


def asking(data: Routing, origin: dict[str, Any] | None = None, label: str = "maf-1") -> Any:
    return new_request(
        data,
        run_id="run_1",
        label=label,
        now=datetime.now(UTC),
        origin=origin,
        executor_id="refund_agent",
    )


APPROVAL = asking(
    ApprovalRequest(
        **WORDS, proposed_action=ProposedAction(tool="submit_refund", arguments={"a": 1})
    ),
    {"adapter": "agent_tool_approvals", **CALL, "approval_request": MAF_APPROVAL},
)
WITH_REASON = asking(
    ApprovalRequest(
        **WORDS, proposed_action=ProposedAction(tool="refund", arguments={"reason": "late"})
    ),
    {"adapter": "agent_tool_approvals", **CALL, "approval_request": MAF_APPROVAL},
)
QUESTION = asking(
    QuestionRequest(**WORDS, question="Which order is it?"),
    {"adapter": "user_turns", "agent": "refund_agent"},
    label="maf-2#1a2b",  # asked again: MAF's request is the first one's
)
INPUT = asking(
    InputRequest(**WORDS, data={"draft": "x"}, request_type="my.module:Review", answer_schema={}),
    {"adapter": "typed_inputs"},
)
HOST_CALL = asking(
    InputRequest(**WORDS, data={"city": "?"}, request_type="tool:locate", answer_schema={}),
    {"adapter": "host_call_inputs", **CALL | {"tool": "locate", "arguments": {}}},
)
TAKEOVER = asking(
    TakeoverRequest(**WORDS),
    {"adapter": "agent_tool_approvals", **CALL, "approval_request": MAF_APPROVAL},
)


def test_an_approval_is_maf_s_own_function_approval_request_bound_to_its_call() -> None:
    assert asked(APPROVAL) == MAF_APPROVAL
    assert tool_call_id(APPROVAL) == "call-1"


def test_an_approval_asked_again_after_an_edit_shows_the_edited_arguments() -> None:
    again = asking(
        ApprovalRequest(
            **WORDS, proposed_action=ProposedAction(tool="submit_refund", arguments={"a": 2})
        ),
        {
            "adapter": "agent_tool_approvals",
            **CALL,
            "approval_request": MAF_APPROVAL,
            "edited": True,
            "arguments": {"a": 2},
        },
    )
    shown = asked(again)
    assert json.loads(shown["function_call"]["arguments"]) == {"a": 2}
    assert shown["id"] == MAF_APPROVAL["id"]
    assert answer_body(again, {"approved": True, "arguments": {"a": 2}}) == {"decision": "approve"}


def test_a_handoff_s_turn_is_its_agent_s_reply_as_maf_s_handoff_request_carries_it() -> None:
    assert asked(QUESTION) == {
        "type": "workflow_request_info",
        "request_id": "maf-2",
        "source_executor_id": "refund_agent",
        "request_type": "HandoffAgentUserRequest",
        "response_type": "list[Message]",
        "data": {
            "agent_response": {
                "messages": [
                    {
                        "role": "assistant",
                        "author_name": "refund_agent",
                        "contents": [{"type": "text", "text": "Which order is it?"}],
                    }
                ]
            }
        },
    }
    assert tool_call_id(QUESTION) is None


def test_a_typed_request_shows_its_type_and_data_a_host_call_its_call() -> None:
    assert asked(INPUT) == {
        "type": "workflow_request_info",
        "request_id": "maf-1",
        "source_executor_id": "refund_agent",
        "request_type": "Review",
        "data": {"draft": "x"},
    }
    assert asked(HOST_CALL)["data"] == {
        "type": "function_call",
        "call_id": "call-1",
        "name": "locate",
        "arguments": {},
    }
    assert tool_call_id(HOST_CALL) == "call-1"
    # a takeover of an approval is no approval: MAF's approval shape would be answered wrongly
    assert asked(TAKEOVER) == {
        "type": "workflow_request_info",
        "request_id": "maf-1",
        "source_executor_id": "refund_agent",
    }


@pytest.mark.parametrize(
    ("request_", "payload", "body"),
    [
        (APPROVAL, {"approved": True}, {"decision": "approve"}),
        (
            APPROVAL,
            {**MAF_APPROVAL, "type": "function_approval_response", "approved": True},
            {"decision": "approve"},
        ),
        (APPROVAL, {"approved": False}, {"decision": "reject", "reason": NO_REASON}),
        (
            APPROVAL,
            {"approved": False, "reason": "too much"},
            {"decision": "reject", "reason": "too much"},
        ),
        (APPROVAL, {"accepted": True, "arguments": {"a": 1}}, {"decision": "approve"}),
        (
            APPROVAL,
            {"accepted": True, "arguments": {"a": 2}},
            {"decision": "edit", "arguments": {"a": 2}},
        ),
        # MAF's endpoint's own edits (agent_framework_ag_ui 1.7's response schema): whole, or
        # the changed arguments by name, merged onto the call's
        (
            APPROVAL,
            {"approved": True, "editedArgs": {"a": 2}},
            {"decision": "edit", "arguments": {"a": 2}},
        ),
        (APPROVAL, {"approved": True, "a": 3}, {"decision": "edit", "arguments": {"a": 3}}),
        (APPROVAL, {"approved": True, "a": 1}, {"decision": "approve"}),
        (APPROVAL, {"approved": False, "a": 3}, {"decision": "reject", "reason": NO_REASON}),
        (
            APPROVAL,
            {
                **MAF_APPROVAL,
                "type": "function_approval_response",
                "approved": True,
                "arguments": {"a": 2},
            },
            {"decision": "edit", "arguments": {"a": 2}},
        ),
        (  # a call with an argument named `reason`: edited by name, as MAF's endpoint reads it
            WITH_REASON,
            {"approved": True, "reason": "goodwill"},
            {"decision": "edit", "arguments": {"reason": "goodwill"}},
        ),
        (
            WITH_REASON,
            {"approved": False, "reason": "no"},
            {"decision": "reject", "reason": "no"},
        ),
        (QUESTION, "A-1", {"decision": "answer", "answer": "A-1"}),
        (QUESTION, {"role": "user", "content": "A-1"}, {"decision": "answer", "answer": "A-1"}),
        (
            QUESTION,
            [
                {"role": "user", "contents": [{"type": "text", "text": "A-1"}]},
                {"role": "user", "content": [{"type": "text", "text": "thanks"}]},
            ],
            {"decision": "answer", "answer": "A-1\nthanks"},
        ),
        (INPUT, {"verdict": "ship"}, {"decision": "answer", "answer": {"verdict": "ship"}}),
        (INPUT, "ship", {"decision": "answer", "answer": "ship"}),
        (
            HOST_CALL,
            {"type": "function_result", "call_id": "call-1", "result": "Lisbon"},
            {"decision": "answer", "answer": "Lisbon"},
        ),
    ],
)
def test_maf_s_answers_are_the_api_s_bodies(
    request_: HumanRequest, payload: Any, body: dict[str, Any]
) -> None:
    assert answer_body(request_, payload) == body


@pytest.mark.parametrize(
    ("request_", "payload"),
    [
        (APPROVAL, {"decision": "reject", "reason": "no"}),  # Baton's own body
        (APPROVAL, {"approved": "yes"}),  # neither: the answer's check refuses it
        (APPROVAL, ["approved"]),
        (QUESTION, [{"role": "assistant", "content": "not the user's"}]),
        (QUESTION, [{"role": "user", "contents": [{"type": "image", "uri": "x"}]}]),
        (QUESTION, []),
        (QUESTION, 7),
        (TAKEOVER, {"approved": True}),
    ],
)
def test_what_is_not_maf_s_answer_passes_as_it_is(request_: HumanRequest, payload: Any) -> None:
    assert answer_body(request_, payload) == payload


@pytest.mark.parametrize(
    ("payload", "said"),
    [
        ({"approved": True, "amount": 50}, "the call has no argument 'amount' to edit"),
        ({"approved": True, "editedArgs": {"a": 2}, "a": 3}, "not as editedArgs and the argum"),
        ({"approved": True, "editedArgs": {"a": 2}, "arguments": {"a": 2}}, "given one way"),
        ({"approved": True, "editedArgs": "a=2"}, "editedArgs must be an object"),
    ],
)
def test_an_edit_baton_cannot_read_is_refused_not_dropped(payload: Any, said: str) -> None:
    """A front end that sent an edit must not see the call run as the model asked it."""
    with pytest.raises(InvalidAnswer, match=said):
        answer_body(APPROVAL, payload)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
KEYS = st.sampled_from(
    [
        "approved",
        "accepted",
        "arguments",
        "reason",
        "role",
        "content",
        "contents",
        "type",
        "text",
        "result",
        "decision",
    ]
)
MAFLIKE = st.recursive(
    JSON,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=5),
    max_leaves=12,
)


@given(payload=MAFLIKE, request_=st.sampled_from([APPROVAL, QUESTION, INPUT, HOST_CALL, TAKEOVER]))
def test_any_json_is_read_passed_on_or_refused(request_: HumanRequest, payload: Any) -> None:
    refusal: InvalidAnswer | None = None
    try:
        body = answer_body(request_, payload)
    except InvalidAnswer as refused:  # an approval's edit it cannot read: named, not dropped
        refusal = refused
    if refusal is not None:
        assert request_ is APPROVAL
        assert [e["msg"] for e in refusal.errors] == [str(refusal)]
        return
    if body is not payload:  # read as MAF's: then it is Baton's shape
        assert isinstance(body, dict)
        assert body["decision"] in request_.allowed_decisions
