"""MAF's approval response for Baton's answer to a tool call (`executors.platform.tool_adapters`).

Baton's result for a call may ride an approval only into a local tool's call by an agent that
carries `BatonCalls`; anywhere else (a hosted tool, an executor asking itself) a refusal is MAF's
rejection and an edit Baton cannot carry out is no approval.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from agent_framework import Agent, Content, Message, MiddlewareFailure, tool

from baton.errors import StoreError
from executors.platform.adapters import Reply
from executors.platform.chat_clients import ScriptedChatClient
from executors.platform.services import DRIVING_SERVICES
from executors.platform.tool_adapters import (
    BATON_ARGUMENTS,
    BATON_CALLS,
    BATON_RESULT,
    BATON_RUN,
    ToolApprovals,
    _answered,
    _approved,
)
from human.effects import EffectLedger

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


class _DownStore:
    """An effect ledger's store that cannot be read: a locked database."""

    async def effect_in_run(self, key: str, run_id: str) -> Any:
        raise StoreError("database is locked")


async def test_the_store_failing_under_an_approved_call_stops_the_agent_s_loop_for_a_retry() -> (
    None
):
    """Not the tool's failure told to the model, which would go on (and call other tools) in a
    drive the runtime throws away: the loop stops, and the runtime tries the drive again."""
    ran: list[str] = []

    @tool(approval_mode="always_require")
    def pay(amount: int) -> str:
        """Pay."""
        ran.append("pay")
        return "paid"

    @tool(approval_mode="never_require")
    def email(text: str) -> str:
        """Email the customer."""
        ran.append("email")
        return "sent"

    def play(messages: Any, options: Any) -> list[Content]:
        results = [c for m in messages for c in m.contents if c.type == "function_result"]
        if not results:
            return [Content.from_function_call("c1", "pay", arguments={"amount": 5})]
        return [Content.from_function_call("c2", "email", arguments={"text": "about it"})]

    agent = Agent(client=ScriptedChatClient(play), tools=[pay, email], middleware=[BATON_CALLS])
    session = agent.create_session()
    [asked] = (await agent.run("pay 5", session=session)).user_input_requests
    response = asked.to_function_approval_response(approved=True)
    response.additional_properties[BATON_RUN] = {"key": "k1", "arguments": {"amount": 5}}
    services = SimpleNamespace(
        ledger=EffectLedger(_DownStore()), run_id="r", effects=[], store_failures=[], run_ended=[]
    )
    token = DRIVING_SERVICES.set(services)  # type: ignore[arg-type]
    try:
        with pytest.raises(MiddlewareFailure):
            await agent.run(Message("user", [response]), session=session)
    finally:
        DRIVING_SERVICES.reset(token)

    assert ran == []
    assert [type(e).__name__ for e in services.store_failures] == ["StoreError"]
