"""`human.summary`: what a request asks and a run did, in words derived from their records."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import BaseModel

from human.kinds import ApprovalRequest, ProposedAction
from human.records import AnswerRecord, AuditEvent, HumanRequest, Run
from human.requests import new_request
from human.routing import escalates_at, next_escalation, plan_timer
from human.summary import (
    Apart,
    choices,
    decided_by,
    effects_of,
    effects_said,
    escalation_text,
    key_arguments,
    money_text,
    outcome_of,
    outcome_tone,
    run_about,
    snippet,
    telling_apart,
    unsure_after,
)

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def asked(kind: str = "approval", **changes: Any) -> HumanRequest:
    base: dict[str, Any] = {
        "id": "req_1",
        "run_id": "run_1",
        "maf_request_id": "m1",
        "kind": kind,
        "title": "Send 120.00",
        "reason": "Policy says so.",
        "allowed_decisions": ["approve", "edit", "reject"],
        "response_schema": {},
        "team": "finance",
        "status": "pending",
        "created_at": T0,
    }
    return HumanRequest(**(base | changes))


def ran(output: Any, status: str = "completed") -> Run:
    return Run(
        id="run_1",
        workflow="any",
        input={},
        status=status,  # type: ignore[arg-type]
        output=output,
        created_at=T0,
        updated_at=T0,
    )


def approved_by(*names: str) -> list[AnswerRecord]:
    return [
        AnswerRecord(request_id="req_1", actor=n, decision="approve", body={}, at=T0) for n in names
    ]


def test_approving_a_tool_call_says_what_runs_with_money_in_its_currency() -> None:
    request = asked(
        proposed_action={"tool": "pay_out", "arguments": {"account": "X-7", "amount": 120}},
        context={"ledger": {"currency": "EUR", "owner": "c-5"}},
    )
    said = choices(request)
    assert said["approve"] == "pay_out runs with account X-7, amount 120.00 EUR."
    assert said["reject"] == "pay_out does not run; the agent is told your reason."
    assert key_arguments(request) == [("account", "X-7"), ("amount", "120.00 EUR")]


def test_two_currencies_name_none_and_a_second_approval_is_counted() -> None:
    request = asked(
        proposed_action={"tool": "pay_out", "arguments": {"amount": 1500.0}},
        context={"a": {"currency": "EUR"}, "b": {"currency": "USD"}},
        approvals_required=3,
        answers=approved_by("fay"),
    )
    assert choices(request)["approve"] == (
        "pay_out runs with amount 1500.00 once 2 more people of finance approved "
        "(3 different people must)."
    )


def test_each_kind_says_what_its_choices_do() -> None:
    assert choices(asked("question", allowed_decisions=["answer"])) == {
        "answer": "The agent receives your answer and carries on with it."
    }
    review = choices(asked("review"))
    assert review["edit"] == "Your edited version is used instead of the draft."
    takeover = choices(asked("takeover", allowed_decisions=["resolve", "return"]))
    assert takeover["return"] == "The agent takes the case back, with your guidance."
    assert choices(asked("input", allowed_decisions=["answer"]))["answer"].startswith(
        "The workflow receives your answer"
    )


def test_the_outcome_is_the_outputs_word_else_the_last_decision_else_the_effects() -> None:
    assert outcome_of(ran({"status": "ordered", "total": 5}), []) == "ordered"
    assert outcome_of(ran([{"text": "x"}, {"status": "expired"}]), []) == "expired"
    assert outcome_of(ran({"status": "ordered"}, status="waiting"), []) is None
    rejected = asked(
        status="resumed", answer={"decision": "reject", "reason": "no"}, answered_at=T0
    )
    assert outcome_of(ran({"text": "No refund."}), [rejected]) == "rejected"
    approved = asked(status="resumed", answer={"decision": "approve"}, answered_at=T0)
    assert outcome_of(ran({"text": "Done."}), [approved], ["pay_out"]) == "pay_out done"
    assert outcome_of(ran("free text"), []) is None
    assert [outcome_tone(w) for w in ("rejected", "ordered", "pay_out done", "odd", None)] == [
        "bad",
        "good",
        "good",
        "neutral",
        "neutral",
    ]


def effect(kind: str, tool: str, key: str) -> AuditEvent:
    data = {"tool": tool, "idempotency_key": key}
    return AuditEvent(
        id=1, type=kind, at=T0, run_id="run_1", request_id=None, actor="system", data=data
    )


def test_a_call_that_may_have_acted_is_the_outcome_and_never_reads_as_a_success() -> None:
    events = [
        effect("effect.uncertain", "send_note", "k1"),
        effect("effect.executed", "issue_refund", "k2"),
        effect("effect.uncertain", "ping", "k3"),
        effect("effect.executed", "ping", "k3"),  # it returned after all: it ran
    ]
    assert effects_of(events) == (["issue_refund", "ping"], ["send_note"], [])
    approved = asked(status="resumed", answer={"decision": "approve"}, answered_at=T0)
    said = outcome_of(ran({"text": "Done: Error: send_note may or may not have acted"}), [approved])
    assert said is None  # what it was, from the output and requests alone
    unsure = outcome_of(ran({"status": "sent"}), [approved], *effects_of(events))
    assert unsure == "issue_refund done, ping done, send_note uncertain"
    assert outcome_tone(unsure) == "bad"
    assert outcome_of(ran({"status": "sent"}, status="waiting"), [], [], ["send_note"]) is None
    # a plain tool that raised may have acted before it did: the same, worded so
    raised = [*events, effect("effect.failed", "relay", "k4")]
    assert effects_of(raised)[2] == ["relay"]
    failed = outcome_of(ran({"status": "sent"}), [approved], *effects_of(raised))
    assert failed == "issue_refund done, ping done, send_note uncertain, relay failed"
    alone = outcome_of(ran({"status": "sent"}), [approved], ["ping"], [], ["relay"])
    assert (alone, outcome_tone(alone)) == ("ping done, relay failed", "bad")
    assert effects_said([], [], ["relay"]) == (
        "relay raised an error: it may have acted before it did, and was not run again."
    )


def test_what_a_run_carried_out_is_said_from_its_records_and_none_only_when_none() -> None:
    assert effects_said([], []) == "No tool call was carried out."
    assert effects_said(["issue_refund", "notify", "issue_refund"], []) == (
        "Recorded as carried out: issue_refund (2 calls) and notify."
    )
    assert effects_said([], ["send_note"]) == (
        "send_note was cut off while running: it may or may not have acted."
    )
    both = effects_said(["issue_refund"], ["send_note", "ping"])
    assert both == (
        "Recorded as carried out: issue_refund. send_note and ping were cut off while running: "
        "each may or may not have acted."
    )
    assert "No tool call" not in both


def test_a_run_is_named_by_the_values_it_was_started_with() -> None:
    refund = ran(None).model_copy(  # as stored from an input model whose amount is a float
        update={"input": {"order_id": "A-1008", "amount": 450.0, "reason": "never arrived", "x": 1}}
    )
    assert (
        run_about(refund) == "order id A-1008 · amount 450.00 · reason never arrived"
    )  # no request: no currency
    gpus = ran(None).model_copy(update={"input": {"resource": "gpu", "amount": 4}})
    assert run_about(gpus) == "resource gpu · amount 4"  # a whole number: nothing says money
    long = ran(None).model_copy(update={"input": {"message": "word " * 30, "to": "kim"}})
    assert run_about(long) == "message word word word word word word word word… · to kim"
    assert run_about(ran(None).model_copy(update={"input": "Hello there"})) == "Hello there"
    lone = ran(None).model_copy(update={"input": {"text": "Ships Monday", "on": None}})
    assert run_about(lone) == "Ships Monday"
    assert run_about(ran(None), asked()) == "Send 120.00"  # no input: its first request
    assert run_about(ran(None)) == ""


def test_a_snippet_is_one_line_cut_at_a_word() -> None:
    text = "First line\nsecond " + "word " * 40
    cut = snippet(text, 30)
    assert "\n" not in cut
    assert cut == "First line second word word…"


def test_a_workflow_s_own_words_for_a_decision_come_before_baton_s() -> None:
    """A workflow's approval need not run the call it shows (a purchase's desk approval only
    records the desk's word): its `outcomes` say what a decision leads to."""
    data = ApprovalRequest(
        title="Purchase of a laptop",
        reason="Every purchase needs finance.",
        team="finance",
        proposed_action=ProposedAction(tool="place_order", arguments={"item": "laptop"}),
        outcomes={"approve": "Records finance's approval; nothing is ordered yet.", "answer": "x"},
    )
    request = new_request(data, run_id="run_1", label="m1", now=T0)
    said = choices(request)

    assert said["approve"] == "Records finance's approval; nothing is ordered yet."
    assert said["reject"] == "place_order does not run; the agent is told your reason."
    assert request.payload["outcomes"] == {  # a decision the kind does not take is dropped
        "approve": "Records finance's approval; nothing is ordered yet."
    }


def test_a_request_a_run_paused_with_before_outcomes_reads_them_as_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # MAF pickles a paused run's pending request: one pickled by the code before `outcomes`
    # must still read after the deploy, and make a request.
    from human import kinds

    class ApprovalRequest(BaseModel):  # the class as it was, under the same module and name
        title: str
        reason: str
        team: str
        proposed_action: ProposedAction

    ApprovalRequest.__module__, ApprovalRequest.__qualname__ = kinds.__name__, "ApprovalRequest"
    monkeypatch.setattr(kinds, "ApprovalRequest", ApprovalRequest)
    action = ProposedAction(tool="pay_out", arguments={"amount": 1})
    saved = pickle.dumps(
        ApprovalRequest(title="t", reason="r", team="finance", proposed_action=action)
    )
    monkeypatch.undo()

    read = pickle.loads(saved)

    assert type(read) is kinds.ApprovalRequest
    assert read.outcomes == {}
    assert "outcomes" not in new_request(read, run_id="run_1", label="m1", now=T0).payload


def called(
    kind: str, key: str, arguments: dict[str, Any], tool: str = "send", minutes: int = 2
) -> AuditEvent:
    """An `effect.<kind>` event of a call with these arguments, `minutes` after T0."""
    return AuditEvent(
        id=minutes,
        type=f"effect.{kind}",
        at=T0 + timedelta(minutes=minutes),
        run_id="run_1",
        request_id=None,
        actor="system",
        data={"tool": tool, "idempotency_key": key, "arguments": arguments},
    )


def test_an_edit_is_approved_with_changes_worded_from_the_answer_and_the_proposed_call() -> None:
    request = asked(
        status="resumed",
        answered_by="lee",
        answered_at=T0,
        proposed_action={"tool": "send", "arguments": {"to": "x", "amount": 300.0}},
        context={"currency": "EUR"},
        answer={"decision": "edit", "arguments": {"to": "x", "amount": 250}},
    )
    said = decided_by(request, " at 09:00 UTC")
    assert said == "Approved with changes by lee at 09:00 UTC: amount 300.00 EUR → 250.00 EUR"
    expired = request.model_copy(update={"status": "expired", "answered_by": "system"})
    assert decided_by(expired) is None  # nobody decided it


def test_an_approved_call_in_doubt_is_the_approvers_until_it_is_recorded_as_run() -> None:
    request = asked(
        status="resumed",
        answered_by="lee",
        answered_at=T0 + timedelta(minutes=1),
        proposed_action={"tool": "send", "arguments": {"text": "hi"}},
        answer={"decision": "approve"},
    )
    cut_off = called("uncertain", "k1", {"text": "hi"})
    other_call = called("uncertain", "k2", {"text": "bye"})
    other_tool = called("uncertain", "k3", {"text": "hi"}, tool="post")
    before_it = called("uncertain", "k4", {"text": "hi"}, minutes=0)
    assert unsure_after(request, [cut_off, other_call, other_tool, before_it]) == [cut_off]
    ended_after_all = called("executed", "k1", {"text": "hi"}, minutes=3)
    assert unsure_after(request, [cut_off, ended_after_all]) == []
    rejected = request.model_copy(update={"answer": {"decision": "reject"}})
    assert unsure_after(rejected, [cut_off]) == []


def test_requests_alike_are_told_apart_by_what_differs_first() -> None:
    call = {"tool": "place_order", "arguments": {"item": "desk", "amount": 700.0}}

    def desk(request_id: str, run_id: str, team: str) -> HumanRequest:
        return asked(
            id=request_id,
            run_id=run_id,
            title="Buy a desk",
            proposed_action=call,
            context={"item": "desk", "desk": team},
            executor_id=f"{team}_approval",
        )

    legal, finance = desk("r1", "run_1", "legal"), desk("r2", "run_1", "finance")
    again = desk("r3", "run_2", "legal")  # the same purchase asked again in another run
    alone = asked(id="r4", title="Something else")
    apart = telling_apart([legal, finance, again, alone])

    assert "r4" not in apart  # a title of its own needs nothing more
    assert apart["r1"] == Apart(facts=frozenset({"desk"}), step="legal approval", twin=True)
    assert apart["r2"] == Apart(facts=frozenset({"desk"}), step="finance approval", twin=False)
    assert apart["r2"].told(finance) == [("step", "finance approval"), ("desk", "finance")]
    # the fact that differs comes first, from the context beside the call's arguments
    first = apart["r2"].facts
    assert key_arguments(finance, most=2, first=first) == [("desk", "finance"), ("item", "desk")]
    assert key_arguments(finance) == [("item", "desk"), ("amount", "700.00")]  # as before


def test_what_comes_next_unless_answered_is_the_first_rung_left_before_the_deadline() -> None:
    ladder = [
        {"after_s": 3600, "team": "managers", "priority": "high"},
        {"after_s": 7200, "priority": "urgent"},
    ]
    fresh = asked(escalation=ladder, expires_at=T0 + timedelta(hours=24))
    first = next_escalation(fresh, T0 + timedelta(minutes=5))
    assert first is not None
    assert (first.at, escalation_text(first)) == (
        T0 + timedelta(hours=1),
        "goes to managers at high priority",
    )
    moved = fresh.model_copy(update={"escalation_level": 1, "status": "escalated"})
    second = next_escalation(moved, T0 + timedelta(minutes=90))
    assert second is not None
    assert escalation_text(second) == "becomes urgent priority"  # (its team stays)
    # the deadline first: it expires before it would escalate; and none once closed, or due
    assert (
        next_escalation(asked(escalation=ladder, expires_at=T0 + timedelta(minutes=30)), T0) is None
    )
    assert next_escalation(fresh.model_copy(update={"status": "answered"}), T0) is None
    assert next_escalation(fresh, T0 + timedelta(hours=1)) is None
    assert next_escalation(moved.model_copy(update={"escalation_level": 2}), T0) is None


def test_a_request_is_due_at_its_next_escalation_where_that_comes_before_its_deadline() -> None:
    ladder = [
        {"after_s": 3600, "team": "managers"},
        {"after_s": 7200, "team": "legal", "expires_in_s": 600},
    ]
    fresh = asked(escalation=ladder, expires_at=T0 + timedelta(hours=24))
    assert escalates_at(fresh) == T0 + timedelta(hours=1)
    assert escalates_at(asked(escalation=ladder, expires_at=T0 + timedelta(minutes=30))) is None
    assert escalates_at(asked()) is None  # no ladder: its deadline alone
    # each rung that fires writes the next one's time (or none: its new deadline comes first)
    first = plan_timer(
        fresh, {"action": "escalate", "step": 0}, now=T0 + timedelta(hours=1), channels=()
    )
    assert first is not None
    assert first.columns["escalates_at"] == T0 + timedelta(hours=2)
    moved = fresh.model_copy(update={"escalation_level": 1, "status": "escalated"})
    second = plan_timer(
        moved, {"action": "escalate", "step": 1}, now=T0 + timedelta(hours=2), channels=()
    )
    assert second is not None
    assert second.columns["escalates_at"] is None


def test_a_whole_number_is_money_only_where_a_currency_says_so() -> None:
    assert money_text("amount", 120, "EUR") == "120.00 EUR"
    assert money_text("amount", 120.0) == "120.00"  # typed a float: a price
    assert money_text("amount", 4) is None  # four GPUs, not 4.00
    assert money_text("count", 4.5, "EUR") is None  # not a money name
