"""MAF's approval response for Baton's answer to a tool call (`executors.platform.tool_adapters`).

Baton's result for a call may ride an approval only into a local tool's call by an agent that
carries `BatonCalls`; anywhere else (a hosted tool, an executor asking itself) a refusal is MAF's
rejection and an edit Baton cannot carry out is no approval.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from agent_framework import Content

from executors.platform.adapters import Reply
from executors.platform.tool_adapters import (
    BATON_ARGUMENTS,
    BATON_RESULT,
    ToolApprovals,
    _answered,
    _approved,
)

CALL = Content.from_function_call("call-1", "submit_refund", arguments={"amount": 10})
APPROVAL = Content.from_function_approval_request(id="approval-1", function_call=CALL)
REFUSED = Reply(Content.from_function_result(call_id="call-1", result="Rejected by ada: no"))


def adapter() -> Any:
    return ToolApprovals(SimpleNamespace(baton_calls=frozenset({"clerk"})), [])  # type: ignore[arg-type]


def test_only_a_local_call_by_an_agent_carrying_baton_calls_is_in_the_loop() -> None:
    hosted = Content.from_function_approval_request(
        id="approval-2",
        function_call=Content.from_function_call("call-2", "mcp_search", arguments={}, hosted=True),
    )
    assert adapter()._in_loop(APPROVAL, "clerk")
    assert not adapter()._in_loop(APPROVAL, "refunder")  # an executor asking for itself
    assert not adapter()._in_loop(hosted, "clerk")  # the provider runs it, unseen by Baton


def test_in_the_loop_a_refusal_rides_an_approval_that_baton_calls_turns_into_its_result() -> None:
    reply = _answered(APPROVAL, REFUSED, in_loop=True)
    assert isinstance(reply, Reply)
    assert reply.response.approved is True
    assert reply.response.additional_properties[BATON_RESULT] == "Rejected by ada: no"


def test_elsewhere_a_refusal_is_maf_s_rejection_and_carries_nothing() -> None:
    reply = _answered(APPROVAL, REFUSED, in_loop=False)
    assert isinstance(reply, Reply)
    assert reply.response.approved is False
    assert BATON_RESULT not in reply.response.additional_properties


def test_an_edit_is_approved_only_where_baton_calls_runs_the_person_s_arguments() -> None:
    edited = {"amount": 5}
    in_loop = _approved(APPROVAL, edited, in_loop=True)
    assert (in_loop.approved, in_loop.additional_properties[BATON_ARGUMENTS]) == (True, edited)
    assert _approved(APPROVAL, edited, in_loop=False).approved is False
    assert _approved(APPROVAL, {"amount": 10}, in_loop=False).approved is True  # as asked
