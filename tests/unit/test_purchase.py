"""The purchase workflow through the runtime and worker in one process, on both backends.

Two approvals pending in one run, answered in either order (each delivered from the run's current
checkpoint); a rejection or an expiry on one side ends the run and cancels the other side; the
order review comes last. A moved clock stands in for hours passing.
"""

from __future__ import annotations

import pickle
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import BaseModel

from executors.shipped import purchase_desk
from human.forms import answer_forms
from human.policy import load_policy
from human.records import HumanRequest, Run, User
from human.service import RequestService
from human.store import open_store
from human.store.base import RequestFilter, Store
from human.summary import choices, key_arguments
from human.timers import TimerRunner
from tests.harness import seed
from workflows.platform.runtime import Runtime
from workflows.platform.worker import Worker
from workflows.shipped import POLICIES

PURCHASE = {"item": "laptop", "amount": 2400.0, "vendor": "Contoso", "requester": "sam"}


class MovableClock:
    def __init__(self) -> None:
        self.offset = timedelta(0)

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.offset


@dataclass
class Desk:
    store: Store
    runtime: Runtime
    worker: Worker
    service: RequestService
    clock: MovableClock
    people: dict[str, User]

    async def start(self, **extra: Any) -> tuple[Run, dict[str, HumanRequest]]:
        run = await self.runtime.start("purchase", PURCHASE | extra, actor="sam")
        await self.worker.run_until_idle()
        return run, await self.open(run.id)

    async def open(self, run_id: str) -> dict[str, HumanRequest]:
        page = await self.service.list(RequestFilter(run_id=run_id, limit=50))
        return {r.team: r for r in page.items if r.status in ("pending", "escalated")}

    async def answer(self, request: HumanRequest, who: str, body: dict[str, Any]) -> None:
        await self.service.respond(request.id, body, responder=self.people[who])
        await self.worker.run_until_idle()

    async def run(self, run_id: str) -> Run:
        return await self.runtime.get(run_id)

    async def types(self, run_id: str) -> list[str]:
        return [e.type for e in await self.store.list_events(run_id=run_id)]


@pytest.fixture
async def desk(db_url: str) -> AsyncIterator[Desk]:
    await seed(db_url)
    clock = MovableClock()
    store = await open_store(db_url, clock=clock)
    runtime = Runtime(store, clock=clock, policy=load_policy(POLICIES))
    timers = TimerRunner(store)
    worker = Worker(store, runtime, handlers={"timer": timers.handle})
    people = {}
    for name in ("lex", "fay", "fin", "max", "lee"):
        user = await store.get_user(name)
        assert user is not None
        people[name] = user
    yield Desk(store, runtime, worker, RequestService(store, clock=clock), clock, people)
    await store.close()


@pytest.mark.parametrize("first", ["legal", "finance"])
async def test_both_approvals_in_either_order_then_the_review_places_the_order(
    desk: Desk, first: str
) -> None:
    run, pending = await desk.start()
    assert sorted(pending) == ["finance", "legal"]
    assert all(r.expires_at is not None and len(r.escalation) == 1 for r in pending.values())
    second = "legal" if first == "finance" else "finance"
    who = {"legal": "lex", "finance": "fay"}

    await desk.answer(pending[first], who[first], {"decision": "approve"})
    assert (await desk.run(run.id)).status == "waiting"
    assert sorted(await desk.open(run.id)) == [second]
    await desk.answer(pending[second], who[second], {"decision": "approve"})

    [review] = (await desk.open(run.id)).values()
    assert (review.kind, review.team) == ("review", "finance")
    # what each decision leads to, in the workflow's words: a desk's approval orders nothing
    assert choices(pending[first])["approve"].startswith(f"Records {first}'s approval; nothing")
    assert choices(review)["approve"] == "The order goes to Contoso as drafted."
    # and no generic help beside it says otherwise ("Let the proposed action run as it is")
    assert {f.decision: f.help for f in answer_forms(pending[first])}["approve"] == ""
    assert "Approved by: fay (finance); lex (legal)" in review.payload["draft"]
    assert review.context["approved_by"] == ["fay (finance)", "lex (legal)"]
    await desk.answer(review, "fin", {"decision": "approve"})
    done = await desk.run(run.id)
    assert done.status == "completed", done.error
    assert done.output["status"] == "ordered"
    assert "Vendor: Contoso" in done.output["purchase_order"]
    assert (await desk.types(run.id)).count("run.resumed") == 3


async def test_the_purchase_s_currency_is_named_wherever_its_amount_is(desk: Desk) -> None:
    run, pending = await desk.start(currency="USD")
    for request in pending.values():
        assert request.title == "Purchase of laptop from Contoso for 2400.00 USD"
        assert request.context["currency"] == "USD"
        assert ("amount", "2400.00 USD") in key_arguments(request)  # as the pages show it
    for who, request in zip(("lex", "fay"), (pending["legal"], pending["finance"]), strict=True):
        await desk.answer(request, who, {"decision": "approve"})
    [review] = (await desk.open(run.id)).values()
    assert review.context["currency"] == "USD"
    assert "Amount: 2,400.00 USD" in review.payload["draft"]
    # left out, it is the default's
    _, asked = await desk.start()
    assert asked["legal"].title == "Purchase of laptop from Contoso for 2400.00 EUR"


async def test_an_edit_by_one_desk_changes_the_order_and_says_so(desk: Desk) -> None:
    run, pending = await desk.start()
    await desk.answer(pending["legal"], "lex", {"decision": "approve"})
    edited = {"item": "laptop", "amount": 2100.0, "vendor": "Contoso"}
    await desk.answer(pending["finance"], "fay", {"decision": "edit", "arguments": edited})

    [review] = (await desk.open(run.id)).values()
    assert "Amount: 2,100.00 EUR" in review.payload["draft"]
    assert "finance changed amount from 2400.0 to 2100.0" in review.payload["draft"]


async def test_an_edit_by_the_first_desk_stands_when_the_other_approves_as_asked(
    desk: Desk,
) -> None:
    run, pending = await desk.start()
    edited = {"item": "laptop", "amount": 2100.0, "vendor": "Contoso"}
    await desk.answer(pending["legal"], "lex", {"decision": "edit", "arguments": edited})
    await desk.answer(pending["finance"], "fay", {"decision": "approve"})

    [review] = (await desk.open(run.id)).values()
    assert "Amount: 2,100.00 EUR" in review.payload["draft"]
    assert "legal changed amount from 2400.0 to 2100.0" in review.payload["draft"]


async def test_two_desks_editing_one_term_differently_are_both_named(desk: Desk) -> None:
    run, pending = await desk.start()
    for request, who, amount in (
        (pending["legal"], "lex", 2100.0),
        (pending["finance"], "fay", 2000.0),
    ):
        edited = {"item": "laptop", "amount": amount, "vendor": "Contoso"}
        await desk.answer(request, who, {"decision": "edit", "arguments": edited})

    [review] = (await desk.open(run.id)).values()
    assert "legal and finance disagree on amount (2100.0 vs 2000.0)" in review.payload["draft"]


async def test_a_rejection_ends_the_run_at_once_and_cancels_the_other_side(desk: Desk) -> None:
    run, pending = await desk.start()

    await desk.answer(pending["finance"], "fay", {"decision": "reject", "reason": "over budget"})

    done = await desk.run(run.id)
    assert done.status == "completed", done.error
    assert done.output["status"] == "rejected"
    assert done.output["reason"] == "finance rejected it: over budget"
    legal = await desk.service.get(pending["legal"].id)
    assert legal.status == "cancelled"
    assert "request.cancelled" in await desk.types(run.id)


async def _legal_approved_finance_escalated(desk: Desk) -> tuple[Run, dict[str, HumanRequest]]:
    """A purchase legal approved, whose finance approval escalated (at half its 4 h)."""
    run, pending = await desk.start(approve_within_hours=4)
    await desk.answer(pending["legal"], "lex", {"decision": "approve"})
    desk.clock.offset = timedelta(hours=2, seconds=5)
    await desk.worker.run_until_idle()
    return run, pending


async def test_an_approval_escalates_to_managers_then_expires_into_the_workflow(
    desk: Desk,
) -> None:
    run, pending = await _legal_approved_finance_escalated(desk)
    escalated = await desk.service.get(pending["finance"].id)
    assert (escalated.status, escalated.team, escalated.priority) == (
        "escalated",
        "managers",
        "high",
    )
    desk.clock.offset = timedelta(hours=4, seconds=5)
    await desk.worker.run_until_idle()

    done = await desk.run(run.id)
    assert done.status == "completed", done.error
    assert done.output["status"] == "expired"
    assert done.output["reason"] == "finance did not approve it in time"
    expired = await desk.service.get(pending["finance"].id)
    assert (expired.status, expired.answer) == ("expired", {"decision": "expired"})
    types = await desk.types(run.id)
    assert types.count("request.escalated") == 1
    assert types.count("request.expired") == 1


async def test_an_approval_a_manager_gave_after_an_escalation_is_signed_by_that_manager(
    desk: Desk,
) -> None:
    # The workflow receives who approved (`ApprovalAnswer.answered_by`), not only which desk.
    run, _ = await _legal_approved_finance_escalated(desk)
    escalated = (await desk.open(run.id))["managers"]
    await desk.answer(escalated, "max", {"decision": "approve"})

    [review] = (await desk.open(run.id)).values()
    assert "Approved by: max (finance); lex (legal)" in review.payload["draft"]


def test_a_verdict_a_run_paused_with_before_its_newer_fields_reads_them_as_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # MAF pickles a checkpoint's messages: the legal desk's verdict waits in the fan-in while
    # finance decides. Pickled by the code before `proposed` and `by`, it must still read.
    class Verdict(BaseModel):  # the class as it was, under the same module and name
        team: str
        decision: str
        terms: dict[str, Any]

    Verdict.__module__, Verdict.__qualname__ = purchase_desk.__name__, "Verdict"
    monkeypatch.setattr(purchase_desk, "Verdict", Verdict)
    saved = pickle.dumps(Verdict(team="legal", decision="approve", terms={"item": "laptop"}))
    monkeypatch.undo()  # the deploy: the module's class is the new one again

    read = pickle.loads(saved)

    assert type(read) is purchase_desk.Verdict
    assert (read.proposed, read.by, read.signed()) == ({}, [], "legal")
    terms, changes = purchase_desk.approved_terms([read])
    assert (terms, changes) == ({"item": "laptop"}, [])
