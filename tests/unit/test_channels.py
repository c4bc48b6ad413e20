"""Request adapters and the run's conversation, driven in-process on each backend."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from baton.settings import Settings
from baton.wiring import open_parts
from executors.platform.transcript import excerpt, run_state
from human.records import User
from human.service import RequestService
from human.store.base import RequestFilter, Store
from tests.harness import refunds, seed
from workflows.platform import registry
from workflows.platform.runtime import Runtime
from workflows.platform.worker import Worker


@dataclass
class Desk:
    store: Store
    runtime: Runtime
    worker: Worker
    service: RequestService
    db_url: str

    async def person(self, name: str) -> User:
        user = await self.store.get_user(name)
        assert user is not None
        return user


@contextlib.asynccontextmanager
async def opened(settings: Settings) -> AsyncIterator[Desk]:
    """The parts `open_parts` wires, with no worker of this process's own (the test drives)."""
    await seed(settings.database_url)
    async with open_parts(settings, local_worker=False) as parts:
        yield Desk(parts.store, parts.runtime, parts.worker, parts.requests, settings.database_url)


@pytest.fixture
async def desk(db_url: str) -> AsyncIterator[Desk]:
    registry.load("tests.fixtures.foreign_workflow")
    async with opened(Settings(database_url=db_url)) as desk:
        yield desk


async def test_a_refund_runs_conversation_is_recorded_with_its_progress(desk: Desk) -> None:
    run = await desk.runtime.start(
        "refund", {"order_id": "A-1005", "amount": 120, "reason": "broken"}, actor="sam"
    )
    await desk.worker.run_until_idle()
    paused = await desk.runtime.conversation(run.id)
    [pending] = (await desk.service.list(RequestFilter(run_id=run.id))).items
    await desk.service.respond(
        pending.id, {"decision": "approve"}, responder=await desk.person("lee")
    )
    await desk.worker.run_until_idle()
    done = await desk.runtime.conversation(run.id)

    assert [(e["type"], e.get("tool")) for e in paused] == [
        ("input", None),
        ("tool_call", "lookup_order"),
        ("tool_result", "lookup_order"),
        ("tool_call", "issue_refund"),
        ("request", None),
    ]
    assert done[: len(paused)] == paused  # appended, never rewritten
    answered, result, said = done[len(paused) :]
    assert (answered["type"], answered["by"], answered["decision"]) == ("answer", "lee", "approve")
    assert (result["type"], result["tool"]) == ("tool_result", "issue_refund")
    assert "refund_id" in result["result"]
    assert said["type"] == "message"
    assert said["text"].startswith("Refunded 120.00")


async def test_a_request_type_of_its_own_is_an_input_request_answered_as_its_type(
    desk: Desk,
) -> None:
    run = await desk.runtime.start("foreign", {"country": "NZ"}, actor="sam")
    await desk.worker.run_until_idle()
    (request,) = (await desk.service.list(RequestFilter(run_id=run.id))).items

    assert (request.kind, request.title, request.executor_id) == (
        "input",
        "Visa from consulate",
        "consulate",
    )
    assert request.context == {"country": "NZ"}
    assert request.response_schema["properties"]["answer"]["properties"] == {
        "granted": {"title": "Granted", "type": "boolean"}
    }
    body = {"decision": "answer", "answer": {"granted": True}}
    await desk.service.respond(request.id, body, responder=await desk.person("lee"))
    await desk.worker.run_until_idle()

    done = await desk.runtime.get(run.id)
    assert (done.status, done.output) == ("completed", "NZ: granted")


async def test_an_answer_type_no_form_can_be_made_for_fails_the_run_saying_so(
    desk: Desk,
) -> None:
    run = await desk.runtime.start("opaque", {"country": "NZ"}, actor="sam")
    await desk.worker.run_until_idle()
    failed = await desk.runtime.get(run.id)

    assert failed.status == "failed"
    assert failed.error is not None
    assert "oracle asks for an answer of type" in failed.error
    assert "Opaque" in failed.error
    assert (await desk.service.list(RequestFilter(run_id=run.id))).items == []


def entry(**fields: Any) -> dict[str, Any]:
    return fields


def test_run_state_counts_since_a_person_last_took_over() -> None:
    before = [
        entry(type="message", role="user", from_user=True, text="Get me your manager!"),
        entry(type="tool_call", tool="report_confidence", arguments={"confidence": 0.3}),
        entry(type="tool_result", tool="restart_sync", result='{"ok": false}'),
        entry(type="tool_result", tool="issue_refund", result="Error: no order A-9"),
        entry(type="tool_result", tool="lookup_order", result='{"ok": true}'),
    ]
    assert run_state(before) == {
        "failed_attempts": 2,
        "asked_for_manager": True,
        "confidence": 0.3,
    }
    returned = [*before, entry(type="answer", kind="takeover", decision="return")]
    assert run_state(returned) == {"failed_attempts": 0, "asked_for_manager": False}


def test_only_the_user_asking_for_a_manager_counts() -> None:
    agent_says = entry(type="message", role="assistant", agent="triage", text="No manager here.")
    guidance = entry(type="message", role="user", by="sam", text="Tell them the manager is out.")

    assert run_state([agent_says, guidance])["asked_for_manager"] is False


def test_excerpt_is_readable_lines() -> None:
    lines = excerpt(
        [
            entry(type="message", role="user", by="customer", text="hi"),
            entry(type="handoff", **{"from": "triage", "to": "billing"}),
            entry(type="tool_call", agent="billing", tool="issue_refund", arguments={"amount": 5}),
            entry(type="answer", kind="approval", by="lee", decision="reject", text="no"),
            entry(type="input", input={"text": "Send the notes."}),
            entry(type="input", input={"city": "Kew", "days": 2}),
            entry(
                type="answer",
                kind="approval",
                by="ada",
                decision="approve",
                standing=True,
                rule="notes.standing",
                tool="send_note",
            ),
        ]
    )

    assert lines == [
        "customer: hi",
        "triage hands the case to billing",
        "billing calls issue_refund with amount 5",
        "lee answered the approval with reject: no",
        "user: Send the notes.",  # an agent's run: its input of one text field is what was said
        'input: {"city": "Kew", "days": 2}',
        "ada answered the approval with approve, standing for the run's later send_note calls "
        "under rule notes.standing",
    ]


DENY_AND_TAKEOVER = """\
rules:
  - id: refund.never_tiny
    tool: issue_refund
    when: amount < 25
    action: deny
  - id: refund.person
    tool: issue_refund
    action: takeover(support-agents)
"""


@pytest.fixture
async def strict_desk(db_url: str, tmp_path: Path) -> AsyncIterator[Desk]:
    rules = tmp_path / "policies.yaml"
    rules.write_text(DENY_AND_TAKEOVER)
    async with opened(Settings(database_url=db_url, policies=str(rules))) as desk:
        yield desk


async def test_a_deny_rule_refuses_the_call_and_the_model_is_told(strict_desk: Desk) -> None:
    desk = strict_desk
    run = await desk.runtime.start(
        "support",
        {"customer_id": "customer-02", "message": "refund 20 on order A-1002"},
        actor="sue",
    )
    await desk.worker.run_until_idle()
    done = await desk.runtime.get(run.id)
    events = await desk.store.list_events(run_id=run.id)

    assert done.status == "completed"
    assert "Refused by policy rule refund.never_tiny" in done.output["resolution"]
    [auto] = [e for e in events if e.type == "request.auto_decided"]
    assert (auto.data["decision"], auto.data["rule"]) == ("reject", "refund.never_tiny")
    assert await refunds(desk.db_url) == []


async def test_a_takeover_rule_at_the_tool_boundary_asks_a_person_first(strict_desk: Desk) -> None:
    desk = strict_desk
    run = await desk.runtime.start(
        "support",
        {"customer_id": "customer-02", "message": "refund 120 on order A-1002"},
        actor="sue",
    )
    await desk.worker.run_until_idle()
    [takeover] = (await desk.service.list(RequestFilter(run_id=run.id))).items
    assert (takeover.kind, takeover.team, takeover.policy_rule) == (
        "takeover",
        "support-agents",
        "refund.person",
    )
    guidance = {"decision": "return", "guidance": "No refunds this week."}
    await desk.service.respond(takeover.id, guidance, responder=await desk.person("sam"))
    await desk.worker.run_until_idle()
    done = await desk.runtime.get(run.id)

    assert done.status == "completed"
    assert "No refunds this week. The call issue_refund did not run." in done.output["resolution"]
    assert await refunds(desk.db_url) == []


@pytest.mark.parametrize("decision", ["resolve", "return"])
async def test_a_workflows_own_approval_taken_over_is_resolved_or_handed_back(
    desk: Desk, decision: str
) -> None:
    run = await desk.runtime.start(
        "refund", {"order_id": "A-1005", "amount": 120, "reason": "broken"}, actor="sam"
    )
    await desk.worker.run_until_idle()
    [approval] = (await desk.service.list(RequestFilter(run_id=run.id))).items
    lee = await desk.person("lee")
    await desk.service.take_over(approval.id, responder=lee)
    await desk.worker.run_until_idle()
    takeover = next(
        r
        for r in (await desk.service.list(RequestFilter(run_id=run.id))).items
        if r.id != approval.id
    )
    assert (takeover.kind, takeover.assignee, takeover.status) == ("takeover", "lee", "pending")
    answer = (
        {"decision": "resolve", "resolution": "Refunded by hand.", "outcome": {"amount": 120}}
        if decision == "resolve"
        else {"decision": "return", "guidance": "Offer a voucher instead."}
    )
    await desk.service.respond(takeover.id, answer, responder=lee)
    await desk.worker.run_until_idle()
    done = await desk.runtime.get(run.id)

    assert done.status == "completed"
    if decision == "resolve":
        assert done.output == {
            "resolution": "Refunded by hand.",
            "outcome": {"amount": 120},
            "resolved_by": "lee",
            "resolver": "person",
        }
    else:  # the refund agent got a rejection carrying the guidance, and said so
        assert "Offer a voucher instead." in done.output["text"]
        assert "No refund was issued" in done.output["text"]
    assert await refunds(desk.db_url) == []


def test_an_approval_let_stand_decides_only_its_rule_s_tool_in_the_team_that_gave_it() -> None:
    from executors.platform.transcript import standing_grant

    given = entry(
        type="answer",
        kind="approval",
        by="lee",
        decision="approve",
        request_id="req_1",
        standing=True,
        rule="notes.standing",
        tool="send_note",
        team="support-leads",
    )
    plain = entry(type="answer", kind="approval", by="sam", decision="approve", request_id="r0")

    assert standing_grant([plain, given], "notes.standing", "send_note", "support-leads") == given
    assert standing_grant([given], "notes.other", "send_note", "support-leads") is None
    assert standing_grant([given], "notes.standing", "post_memo", "support-leads") is None
    # the policies file has since sent the rule to another team: that team decides again
    assert standing_grant([given], "notes.standing", "send_note", "compliance") is None
    assert standing_grant([plain], "notes.standing", "send_note", "support-leads") is None
