"""`web.agui.RunTracker`: a Baton run's states as AG-UI's lifecycle, one view at a time."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    MessagesSnapshotEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
)

from human.records import HumanRequest, Run
from web.agui import RunTracker, View, messages_of

NOW = datetime(2026, 12, 4, tzinfo=UTC)


def run(status: str, **more: Any) -> Run:
    return Run.model_validate(
        {
            "id": "run_1",
            "workflow": "w",
            "input": {},
            "status": status,
            "created_at": NOW,
            "updated_at": NOW,
            **more,
        }
    )


def asked(request_id: str, **more: Any) -> HumanRequest:
    return HumanRequest.model_validate(
        {
            "id": request_id,
            "run_id": "run_1",
            "maf_request_id": request_id,
            "kind": "approval",
            "title": f"Approve {request_id}",
            "reason": "policy",
            "allowed_decisions": ["approve", "reject"],
            "response_schema": {"type": "object"},
            "team": "leads",
            "status": "pending",
            "created_at": NOW,
            **more,
        }
    )


def names(events: list[BaseEvent]) -> list[str]:
    named = []
    for event in events:
        if isinstance(event, RunFinishedEvent) and event.outcome is not None:
            named.append(f"RUN_FINISHED:{event.outcome.type}")
        else:
            named.append(str(event.type.value))
    return named


def tracker() -> RunTracker:
    return RunTracker("thread", "agui-1", "http://baton.test")


AUDIT = CustomEvent(name="request.notified", value={})


def test_a_run_that_asks_then_ends_is_two_ag_ui_runs_the_second_a_child_of_the_first() -> None:
    t = tracker()
    assert names(t.step(View(run("running"), ()))) == ["RUN_STARTED"]
    waiting = View(run("waiting"), (asked("req_a"),))
    out = t.step(waiting, AUDIT)
    assert names(out) == ["CUSTOM", "RUN_FINISHED:interrupt"]
    interrupt = out[-1].outcome.interrupts[0]  # type: ignore[attr-defined]
    assert (interrupt.id, interrupt.reason, interrupt.message) == (
        "req_a",
        "approval",
        "Approve req_a",
    )
    assert interrupt.metadata["baton"]["url"] == "http://baton.test/requests/req_a"
    # nothing may be sent between an interrupt and the run moving on: such audit events are not
    assert t.step(waiting, AUDIT) == []
    # the answer (from anywhere): a new AG-UI run, then the end with the output
    moved = t.step(View(run("waiting"), ()), CustomEvent(name="request.answered", value={}))
    assert names(moved) == ["RUN_STARTED", "CUSTOM"]
    assert isinstance(moved[0], RunStartedEvent)
    assert moved[0].parent_run_id == "agui-1"
    assert moved[0].run_id.startswith("agui-1.")
    ended = t.step(View(run("completed", output={"ok": True}), ()))
    assert names(ended) == ["RUN_FINISHED"]
    assert isinstance(ended[0], RunFinishedEvent)
    assert ended[0].result == {"ok": True}
    assert t.finished
    assert t.step(View(run("completed"), ()), AUDIT) == []


def test_the_same_requests_escalated_or_half_approved_are_the_same_interrupt() -> None:
    t = tracker()
    t.step(View(run("waiting"), (asked("req_a"),)))
    escalated = asked("req_a", status="escalated", team="managers", answers=[])
    assert t.step(View(run("waiting"), (escalated,)), AUDIT) == []


def test_a_second_request_after_the_first_is_a_new_interrupt() -> None:
    t = tracker()
    t.step(View(run("waiting"), (asked("req_a"), asked("req_b"))))
    out = t.step(View(run("waiting"), (asked("req_b"),)))  # req_a answered, req_b still open
    assert names(out) == ["RUN_STARTED", "RUN_FINISHED:interrupt"]
    assert [i.id for i in out[-1].outcome.interrupts] == ["req_b"]  # type: ignore[attr-defined]


def test_a_failed_run_is_a_run_error_and_a_cancelled_one_says_so() -> None:
    t = tracker()
    t.step(View(run("waiting"), (asked("req_a"),)))
    failed = t.step(View(run("failed", error="boom"), ()))
    assert names(failed) == ["RUN_STARTED", "RUN_ERROR"]
    assert isinstance(failed[-1], RunErrorEvent)
    assert (failed[-1].message, failed[-1].code) == ("boom", "run_failed")
    cancelled = tracker().step(View(run("cancelled"), ()))
    assert names(cancelled) == ["RUN_STARTED", "RUN_FINISHED:cancelled"]


def test_the_conversation_goes_out_as_a_snapshot_when_it_grew_and_only_inside_a_run() -> None:
    said = (
        {"type": "message", "role": "assistant", "agent": "desk", "text": "Looking."},
        {"type": "tool_call", "agent": "desk", "tool": "look", "call_id": "c1", "arguments": {}},
        {"type": "tool_result", "agent": "desk", "tool": "look", "call_id": "c1", "result": "ok"},
        {"type": "tool_result", "agent": "desk", "tool": "x", "call_id": "nobody", "result": "?"},
        {"type": "handoff", "from": "a", "to": "b"},
        {"type": "message", "role": "user", "by": "lee", "text": "Go on."},
    )
    t = tracker()
    out = t.step(View(run("waiting"), (asked("req_a"),), said[:3]))
    assert names(out) == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED:interrupt"]
    assert t.step(View(run("waiting"), (asked("req_a"),), said)) == []  # grew, but closed
    out = t.step(View(run("running"), (), said))
    assert names(out) == ["RUN_STARTED", "MESSAGES_SNAPSHOT"]
    assert isinstance(out[-1], MessagesSnapshotEvent)
    shown = [(m.role, m.id) for m in out[-1].messages]
    assert shown == [
        ("assistant", "run_1-0"),
        ("assistant", "run_1-1"),
        ("tool", "run_1-2"),  # a result without its call (run_1-3) is left out
        ("user", "run_1-5"),
    ]
    assert messages_of("run_1", said)[1].tool_calls[0].function.name == "look"  # type: ignore[union-attr]
    assert t.step(View(run("running"), (), said)) == []  # nothing new
