"""The store contract, continued: claims, timers by Baton's clock, the outbox, people and tokens.

The store runs on a clock the test moves (as `BATON_CLOCK_FILE` moves a server's): timers are due
by that clock, never by the machine's, and claims lapse by it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from human.records import HumanRequest, Job, NewEvent, TeamsCard, TeamsConversation
from human.routing import notifications_for, timers_for
from human.store import open_store
from human.store.base import Progress, Store
from tests.contract.conftest import Backend, in_play
from tests.contract.test_store import (
    LIVE,
    a_request,
    an_answer,
    checkpoint,
    everything_about,
    final_of,
    started,
)
from tests.contract.test_store_feeds import collect


class ManualClock:
    """A clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC).replace(microsecond=0)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@dataclass
class Clocked:
    store: Store
    clock: ManualClock
    backend: Backend

    async def paused(
        self, requests: list[HumanRequest], *, channels: tuple[str, ...] = ()
    ) -> list[HumanRequest]:
        run = await started(self.store)
        fixed = [r.model_copy(update={"run_id": run.id}) for r in requests]
        committed = await self.store.record_progress(
            Progress(
                run_id=run.id,
                expected_checkpoint_id=None,
                job_id=None,
                status="waiting",
                checkpoint=checkpoint(f"cp-{run.id}"),
                new_requests=fixed,
                events=[
                    NewEvent(type="request.created", run_id=run.id, request_id=r.id) for r in fixed
                ],
                timers=[t for r in fixed for t in timers_for(r)],
                notifications=[n for r in fixed for n in notifications_for(r, channels, "created")],
            )
        )
        assert committed
        await self.drop_start_job()
        return fixed

    async def drop_start_job(self) -> None:
        for job in await self.store.lease_jobs("setup", limit=50, lease_s=LIVE):
            if job.kind == "start":
                await self.store.finish_job(job.id, "setup")
            else:
                await self.store.retry_job(job.id, "setup", delay_s=0, error="not now")

    async def due(self, kind: str = "timer") -> list[Job]:
        return [
            j for j in await self.store.lease_jobs("w1", limit=50, lease_s=LIVE) if j.kind == kind
        ]

    async def release_all(self, jobs: list[Job]) -> None:
        for job in jobs:
            await self.store.retry_job(job.id, "w1", delay_s=0, error="later")

    async def request(self, request_id: str) -> HumanRequest:
        found = await self.store.get_request(request_id)
        assert found is not None
        return found

    async def types(self, request_id: str) -> list[str]:
        return [e.type for e in await self.store.list_events(request_id=request_id)]


def deadline_request(
    clock: ManualClock, *, expires_h: float | None = 2, ladder: list[dict[str, Any]] | None = None
) -> HumanRequest:
    return a_request("placeholder", team="legal", at=clock.now).model_copy(
        update={
            "expires_at": clock.now + timedelta(hours=expires_h) if expires_h else None,
            "escalation": ladder or [],
        }
    )


# claims -------------------------------------------------------------------------------------


async def test_a_claim_is_exclusive_until_it_lapses_and_the_holder_may_renew(
    clocked: Clocked,
) -> None:
    store, clock = clocked.store, clocked.clock
    request = deadline_request(clock, expires_h=None)
    [request] = await clocked.paused([request])
    until = clock.now + timedelta(minutes=15)

    first = await store.claim_request(request.id, "fay", until=until)
    assert first.result == "claimed"
    assert (first.request.status, first.request.claimed_by) == ("claimed", "fay")
    assert first.request.claimed_until == until

    before = await everything_about(store, request.run_id)
    held = await store.claim_request(request.id, "fin", until=until + timedelta(minutes=1))
    assert (held.result, held.request.claimed_by) == ("held", "fay")
    assert await everything_about(store, request.run_id) == before

    renewed = await store.claim_request(request.id, "fay", until=until + timedelta(minutes=5))
    assert renewed.result == "renewed"
    assert renewed.request.claimed_until == until + timedelta(minutes=5)

    clock.advance(minutes=21)  # past the renewed claim: it holds nothing any more
    taken = await store.claim_request(request.id, "fin", until=clock.now + timedelta(minutes=15))
    assert (taken.result, taken.request.claimed_by) == ("claimed", "fin")
    claimed = [
        e for e in await store.list_events(request_id=request.id) if e.type == "request.claimed"
    ]
    assert [(e.type, e.actor, e.data["renewed"]) for e in claimed] == [
        ("request.claimed", "fay", False),
        ("request.claimed", "fay", True),
        ("request.claimed", "fin", False),
    ]


async def test_two_claims_at_once_one_wins(clocked: Clocked, backend: Backend) -> None:
    request = deadline_request(clocked.clock, expires_h=None)
    [request] = await clocked.paused([request])
    other = await open_store(backend.url, clock=clocked.clock)
    until = clocked.clock.now + timedelta(minutes=15)
    try:
        outcomes = await asyncio.gather(
            *(
                (clocked.store if n % 2 else other).claim_request(request.id, f"p{n}", until=until)
                for n in range(10)
            )
        )
    finally:
        await other.close()

    winners = [o for o in outcomes if o.result == "claimed"]
    assert len(winners) == 1
    holder = winners[0].request.claimed_by
    assert all(
        o.result == "held" and o.request.claimed_by == holder for o in outcomes if o not in winners
    )
    assert (await clocked.types(request.id)).count("request.claimed") == 1


async def test_an_answer_while_someone_else_holds_the_claim_changes_nothing(
    clocked: Clocked,
) -> None:
    store, clock = clocked.store, clocked.clock
    request = deadline_request(clock, expires_h=None)
    [request] = await clocked.paused([request])
    await store.claim_request(request.id, "fay", until=clock.now + timedelta(minutes=15))
    before = await everything_about(store, request.run_id)

    refused = an_answer(request.id, "fin", at=clock.now)
    outcome = await store.record_answer(refused, final=final_of(refused))

    assert outcome.result == "claimed"
    assert outcome.request.claimed_by == "fay"
    assert await everything_about(store, request.run_id) == before

    mine = an_answer(request.id, "fay", at=clock.now)
    assert (await store.record_answer(mine, final=final_of(mine))).result == "closed"


async def test_the_holders_share_of_a_two_approver_request_ends_their_claim(
    clocked: Clocked,
) -> None:
    store, clock = clocked.store, clocked.clock
    request = deadline_request(clock, expires_h=None).model_copy(update={"approvals_required": 2})
    [request] = await clocked.paused([request])
    await store.claim_request(request.id, "fay", until=clock.now + timedelta(minutes=15))

    first = an_answer(request.id, "fay", at=clock.now)
    partial = await store.record_answer(first, final=final_of(first))

    assert partial.result == "partial"
    assert (partial.request.status, partial.request.claimed_by) == ("pending", None)
    second = an_answer(request.id, "fin", at=clock.now)
    assert (await store.record_answer(second, final=final_of(second))).result == "closed"


async def test_an_answer_writes_its_outbox_rows_only_when_it_changes_the_request(
    clocked: Clocked,
) -> None:
    store, clock = clocked.store, clocked.clock
    request = deadline_request(clock, expires_h=None).model_copy(update={"approvals_required": 2})
    [request] = await clocked.paused([request])
    rows = notifications_for(request, ["teams-bot"], "answered")

    first = an_answer(request.id, "fay", at=clock.now)
    assert (await store.record_answer(first, final=final_of(first), notifications=rows)).result == (
        "partial"
    )
    again = await store.record_answer(first, final=final_of(first), notifications=rows)
    second = an_answer(request.id, "fin", at=clock.now)
    closed = await store.record_answer(second, final=final_of(second), notifications=rows)
    late = an_answer(request.id, "max", at=clock.now)
    after = await store.record_answer(late, final=final_of(late), notifications=rows)

    assert (again.result, closed.result, after.result) == ("repeated", "closed", "not_open")
    answered = [n for n in after.request.notifications if n.event == "answered"]
    assert [(n.channel, n.status) for n in answered] == [("teams-bot", "queued")] * 2


async def test_release_ends_only_a_live_claim_and_only_the_holders_unless_forced(
    clocked: Clocked,
) -> None:
    store, clock = clocked.store, clocked.clock
    request = deadline_request(clock, expires_h=None)
    [request] = await clocked.paused([request])
    assert (await store.release_request(request.id, "fay", holder="fay")).result == "not_claimed"
    await store.claim_request(request.id, "fay", until=clock.now + timedelta(minutes=15))

    refused = await store.release_request(request.id, "fin", holder="fin")
    assert (refused.result, refused.request.claimed_by) == ("held", "fay")
    released = await store.release_request(request.id, "ada", holder=None)

    assert released.result == "released"
    assert (released.request.status, released.request.claimed_by) == ("pending", None)
    [event] = [
        e for e in await store.list_events(request_id=request.id) if e.type == "request.released"
    ]
    assert (event.actor, event.data) == ("ada", {"claimed_by": "fay", "reason": "released"})


async def test_reassign_moves_team_and_assignee_and_ends_the_claim(clocked: Clocked) -> None:
    store, clock = clocked.store, clocked.clock
    request = deadline_request(clock, expires_h=None)
    [request] = await clocked.paused([request])
    await store.claim_request(request.id, "lex", until=clock.now + timedelta(minutes=15))

    moved = await store.reassign_request(request.id, "ada", team="finance", assignee=None)
    assert moved.result == "reassigned"
    assert (moved.request.team, moved.request.assignee) == ("finance", None)
    assert (moved.request.status, moved.request.claimed_by) == ("pending", None)
    handed = await store.reassign_request(request.id, "ada", team=None, assignee="fin")
    assert (handed.request.team, handed.request.assignee) == ("finance", "fin")

    events = [
        e for e in await store.list_events(request_id=request.id) if e.type == "request.reassigned"
    ]
    assert [(e.actor, e.data) for e in events] == [
        (
            "ada",
            {
                "from_team": "legal",
                "to_team": "finance",
                "from_assignee": None,
                "to_assignee": None,
                "claim_ended": "lex",
            },
        ),
        (
            "ada",
            {
                "from_team": "finance",
                "to_team": "finance",
                "from_assignee": None,
                "to_assignee": "fin",
            },
        ),
    ]
    answered = an_answer(request.id, "fin", at=clock.now)
    await store.record_answer(answered, final=final_of(answered))
    closed = await store.reassign_request(request.id, "ada", team="legal", assignee=None)
    assert (closed.result, closed.request.team) == ("not_open", "finance")


# timers -------------------------------------------------------------------------------------


async def test_timers_are_due_by_batons_clock_not_the_machines(clocked: Clocked) -> None:
    ladder = [{"after_s": 3600, "team": "managers", "priority": "high"}]
    request = deadline_request(clocked.clock, expires_h=2, ladder=ladder)
    [request] = await clocked.paused([request])

    assert await clocked.due() == []
    clocked.clock.advance(minutes=59)
    assert await clocked.due() == []
    clocked.clock.advance(minutes=2)
    [escalate] = await clocked.due()
    assert (escalate.request_id, escalate.payload["action"], escalate.payload["step"]) == (
        request.id,
        "escalate",
        0,
    )
    await clocked.release_all([escalate])
    clocked.clock.advance(hours=1)
    due = await clocked.due()
    assert sorted(j.payload["action"] for j in due) == ["escalate", "expire"]


async def test_an_escalation_moves_the_request_once_with_a_new_deadline_and_notifications(
    clocked: Clocked,
) -> None:
    store, clock = clocked.store, clocked.clock
    ladder = [{"after_s": 3600, "team": "managers", "priority": "urgent", "expires_in_s": 7200}]
    request = deadline_request(clock, expires_h=2, ladder=ladder)
    [request] = await clocked.paused([request], channels=("webhook",))
    await store.claim_request(request.id, "lex", until=clock.now + timedelta(hours=3))
    [created_note] = await clocked.due("notify")
    clock.advance(hours=1, seconds=1)
    [timer] = await clocked.due()

    fired = await store.fire_timer(timer, "w1", channels=("webhook", "email"))
    again = await store.fire_timer(timer, "w1", channels=("webhook", "email"))

    assert (fired.result, again.result) == ("escalated", "lost")
    moved = await clocked.request(request.id)
    assert (moved.team, moved.priority, moved.status, moved.escalation_level) == (
        "managers",
        "urgent",
        "escalated",
        1,
    )
    assert moved.claimed_by is None
    assert moved.expires_at == clock.now + timedelta(hours=2)
    [event] = [
        e for e in await store.list_events(request_id=request.id) if e.type == "request.escalated"
    ]
    assert event.actor == "system"
    assert event.data == {
        "from_team": "legal",
        "to_team": "managers",
        "priority": "urgent",
        "expires_at": (clock.now + timedelta(hours=2)).isoformat(),
        "step": 0,
    }
    assert sorted((n.channel, n.event, n.status) for n in moved.notifications) == [
        ("email", "escalated", "queued"),
        ("webhook", "created", "queued"),
        ("webhook", "escalated", "queued"),
    ]
    notes = await clocked.due("notify")
    assert len(notes) == 2
    assert created_note.id not in {j.id for j in notes}
    # The first deadline (2 h after creation) passes: the escalation moved it, nothing expires.
    clock.advance(hours=1)
    [old_expiry] = await clocked.due()
    assert (await store.fire_timer(old_expiry, "w1", channels=())).result == "dropped"
    assert (await clocked.request(request.id)).status == "escalated"
    clock.advance(hours=1)
    due = {j.payload["action"]: j for j in await clocked.due()}
    assert sorted(due) == ["expire", "lapse_claim"]  # the escalation already ended the claim
    assert (await store.fire_timer(due["lapse_claim"], "w1", channels=())).result == "dropped"
    assert (await store.fire_timer(due["expire"], "w1", channels=())).result == "expired"


async def test_expiry_closes_the_request_queues_the_resume_and_is_delivered_once(
    clocked: Clocked,
) -> None:
    store, clock = clocked.store, clocked.clock
    request = deadline_request(clock, expires_h=1)
    [request] = await clocked.paused([request])
    run_id = request.run_id
    clock.advance(hours=1)
    [timer] = await clocked.due()

    fired = await store.fire_timer(timer, "w1", channels=())

    assert fired.result == "expired"
    assert fired.request is not None
    expired = fired.request
    assert (expired.status, expired.answer, expired.answered_by) == (
        "expired",
        {"decision": "expired"},
        "system",
    )
    [event] = [
        e for e in await store.list_events(request_id=request.id) if e.type == "request.expired"
    ]
    assert event.data == {"expires_at": request.expires_at.isoformat(), "team": "legal"}  # type: ignore[union-attr]
    jobs = await store.lease_jobs("w2", limit=10, lease_s=LIVE)
    assert [(j.kind, j.run_id) for j in jobs] == [("resume", run_id)]
    assert [r.id for r in (await in_play(store, run_id)).answered] == [request.id]
    late = an_answer(request.id, "lex", at=clock.now)
    assert (await store.record_answer(late, final=final_of(late))).result == "not_open"

    delivered = await store.record_progress(
        Progress(
            run_id=run_id,
            expected_checkpoint_id=f"cp-{run_id}",
            job_id=jobs[0].id,
            status="completed",
            delivered_request_ids=[request.id],
        )
    )
    assert delivered
    assert (await in_play(store, run_id)).answered == []
    assert (await clocked.request(request.id)).status == "expired"


async def test_a_lapsed_claim_is_released_by_its_timer_and_a_renewed_one_is_not(
    clocked: Clocked,
) -> None:
    store, clock = clocked.store, clocked.clock
    request = deadline_request(clock, expires_h=None)
    [request] = await clocked.paused([request])
    await store.claim_request(request.id, "lex", until=clock.now + timedelta(minutes=15))
    await store.claim_request(request.id, "lex", until=clock.now + timedelta(minutes=30))

    clock.advance(minutes=16)
    [first] = await clocked.due()
    assert (await store.fire_timer(first, "w1", channels=())).result == "dropped"
    assert (await clocked.request(request.id)).claimed_by == "lex"
    clock.advance(minutes=15)
    [second] = await clocked.due()
    fired = await store.fire_timer(second, "w1", channels=())

    assert fired.result == "released"
    assert fired.request is not None
    assert (fired.request.status, fired.request.claimed_by) == ("pending", None)
    [event] = [
        e for e in await store.list_events(request_id=request.id) if e.type == "request.released"
    ]
    assert (event.actor, event.data) == ("system", {"claimed_by": "lex", "reason": "lapsed"})


async def test_a_closed_request_takes_its_timers_with_it(clocked: Clocked) -> None:
    store, clock = clocked.store, clocked.clock
    ladder = [{"after_s": 60, "team": "managers"}]
    first, second = (deadline_request(clock, expires_h=1, ladder=ladder) for _ in range(2))
    [first, second] = await clocked.paused([first, second])
    clock.advance(minutes=2)
    leased = await clocked.due()  # every timer leased, the way a worker holds them, then...
    assert {j.request_id for j in leased} == {first.id, second.id}
    [racing] = [j for j in leased if j.request_id == second.id]
    for request in (first, second):  # ...both are answered before it fires
        answer = an_answer(request.id, "lex", at=clock.now)
        await store.record_answer(answer, final=final_of(answer))
    before = await clocked.request(second.id)

    clock.advance(hours=2)

    # The answers took their timers with them: the jobs table keeps only work in flight.
    assert await clocked.due() == []
    assert (await store.fire_timer(racing, "w1", channels=("webhook",))).result == "lost"
    assert await clocked.request(second.id) == before


# the outbox ---------------------------------------------------------------------------------


async def test_deliveries_are_recorded_retried_and_given_up_with_events(clocked: Clocked) -> None:
    store = clocked.store
    request = deadline_request(clocked.clock, expires_h=None)
    [request] = await clocked.paused([request], channels=("webhook", "email"))
    notes = {n.channel: n for n in (await clocked.request(request.id)).notifications}
    jobs = {j.payload["notification_id"]: j for j in await clocked.due("notify")}
    webhook, email = jobs[notes["webhook"].id], jobs[notes["email"].id]
    assert await store.get_notification("ntf_nothing") is None

    retrying = await store.record_delivery(
        notes["webhook"].id,
        job_id=webhook.id,
        owner="w1",
        outcome="retrying",
        error="HTTP 500",
        retry_in_s=0,
    )
    assert retrying is not None
    assert (retrying.status, retrying.attempts, retrying.last_error) == ("queued", 1, "HTTP 500")
    [again] = await clocked.due("notify")
    assert again.id == webhook.id
    sent = await store.record_delivery(
        notes["webhook"].id, job_id=again.id, owner="w1", outcome="sent"
    )
    failed = await store.record_delivery(
        notes["email"].id, job_id=email.id, owner="w1", outcome="failed", error="refused"
    )

    assert sent is not None
    assert failed is not None
    assert (sent.status, sent.attempts) == ("sent", 2)
    assert (failed.status, failed.attempts, failed.last_error) == ("failed", 1, "refused")
    assert await clocked.due("notify") == []
    assert await store.get_notification(sent.id) == sent
    shown = {n.channel: n for n in (await clocked.request(request.id)).notifications}
    assert shown == {"webhook": sent, "email": failed}
    notified = [
        e for e in await store.list_events(request_id=request.id) if e.type == "request.notified"
    ]
    assert [
        (e.data["channel"], e.data["outcome"], e.data["attempt"], e.data.get("error"))
        for e in notified
    ] == [
        ("webhook", "retrying", 1, "HTTP 500"),
        ("webhook", "sent", 2, None),
        ("email", "failed", 1, "refused"),
    ]


async def test_the_parts_failed_attempts_handed_over_are_kept_for_the_next(
    clocked: Clocked,
) -> None:
    """Each failed attempt's parts join the row's, in order, once each; the events name them."""
    store = clocked.store
    request = deadline_request(clocked.clock, expires_h=None)
    [request] = await clocked.paused([request], channels=("email",))
    [note] = (await clocked.request(request.id)).notifications
    assert note.parts_sent == []
    seen = []
    for parts in (["Europe/Berlin"], ["Europe/Berlin", "UTC"], []):
        [job] = await clocked.due("notify")
        kept = await store.record_delivery(
            note.id,
            job_id=job.id,
            owner="w1",
            outcome="retrying",
            error="451",
            retry_in_s=0,
            parts_sent=parts,
        )
        assert kept is not None
        seen.append(kept.parts_sent)

    assert seen == [["Europe/Berlin"], ["Europe/Berlin", "UTC"], ["Europe/Berlin", "UTC"]]
    assert (await store.get_notification(note.id)).parts_sent == ["Europe/Berlin", "UTC"]  # type: ignore[union-attr]
    notified = [
        e.data.get("parts_sent")
        for e in await store.list_events(request_id=request.id)
        if e.type == "request.notified"
    ]
    assert notified == [["Europe/Berlin"], ["Europe/Berlin", "UTC"], None]


async def test_a_delivery_recorded_without_the_lease_changes_nothing(clocked: Clocked) -> None:
    store = clocked.store
    request = deadline_request(clocked.clock, expires_h=None)
    [request] = await clocked.paused([request], channels=("webhook",))
    [note] = (await clocked.request(request.id)).notifications
    [job] = await clocked.due("notify")  # held by w1 now; w0 lost it
    before = await store.list_events(request_id=request.id)

    for outcome in ("sent", "retrying", "failed", "skipped"):
        lost = await store.record_delivery(
            note.id,
            job_id=job.id,
            owner="w0",
            outcome=outcome,
            error="late",  # type: ignore[arg-type]
        )
        assert lost is None

    assert await store.get_notification(note.id) == note
    assert await store.list_events(request_id=request.id) == before
    sent = await store.record_delivery(note.id, job_id=job.id, owner="w1", outcome="sent")
    assert sent is not None
    assert (sent.status, sent.attempts) == ("sent", 1)


# people and tokens --------------------------------------------------------------------------


async def test_teams_users_addresses_and_slack_ids(store: Store) -> None:
    audit = [NewEvent(type="team.added", actor="ada", data={"team": "legal"})]
    assert await store.add_team("legal", "Contracts", events=audit) is True
    assert await store.add_team("legal", "Other", events=audit) is False
    lex = await store.add_user(
        "lex", role="responder", teams=["legal"], email="lex@example.com", slack_id="U1"
    )
    await store.add_user("liv", role="responder", teams=["legal", "finance"])
    assert (lex.email, lex.slack_id) == ("lex@example.com", "U1")

    kept = await store.add_user("lex", role="admin", teams=["legal"])
    assert (kept.role, kept.email, kept.slack_id) == ("admin", "lex@example.com", "U1")
    cleared = await store.add_user("lex", role="admin", teams=["legal"], slack_id="")
    assert (cleared.email, cleared.slack_id) == ("lex@example.com", None)
    await store.add_user("lex", role="admin", teams=["legal"], slack_id="U9")

    assert [u.name for u in await store.team_members("legal")] == ["lex", "liv"]
    assert await store.team_members("nobody") == []
    assert [u.name for u in await store.list_users()] == ["lex", "liv"]
    teams = {t.name: t for t in await store.list_teams()}
    assert (teams["legal"].description, teams["legal"].members) == ("Contracts", ("lex", "liv"))
    assert teams["finance"].members == ("liv",)
    found = await store.user_for_slack_id("U9")
    assert found is not None
    assert found.name == "lex"
    assert await store.user_for_slack_id("U1") is None
    # The audit of the team is written once, by the call that created it.
    [event] = await collect(store.watch(after_id=0), 1)
    assert (event.type, event.actor, event.data) == ("team.added", "ada", {"team": "legal"})
    assert await store.last_event_id() == event.id


async def test_entra_ids_emails_and_the_teams_channels_cards_are_posted_to(store: Store) -> None:
    oid = "0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0"
    await store.add_user("lex", role="responder", teams=["legal"], email="Lex@Example.com")
    linked = await store.add_user("lex", role="responder", teams=["legal"], entra_id=oid)
    assert (linked.entra_id, linked.email) == (oid, "Lex@Example.com")
    by_oid = await store.user_for_entra_id(oid.upper())
    by_email = await store.user_for_email("lex@example.COM")
    assert (by_oid and by_oid.name, by_email and by_email.name) == ("lex", "lex")
    cleared = await store.add_user("lex", role="responder", teams=["legal"], entra_id="")
    assert cleared.entra_id is None
    assert await store.user_for_entra_id(oid) is None
    assert await store.user_for_email("nobody@example.com") is None

    assert await store.teams_conversation("legal") is None
    at = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
    first = TeamsConversation(
        team="legal",
        service_url="https://smba.example/emea/",
        conversation_id="19:a@thread.tacv2",
        tenant_id="t1",
        linked_by="ada",
        linked_at=at,
    )
    await store.link_teams_conversation(
        first, events=[NewEvent(type="teams.linked", actor="ada", data={"team": "legal"})]
    )
    moved = first.model_copy(update={"conversation_id": "19:b@thread.tacv2", "linked_by": "max"})
    await store.link_teams_conversation(moved)
    assert await store.teams_conversation("legal") == moved
    [event] = await collect(store.watch(after_id=0), 1)
    assert (event.type, event.actor) == ("teams.linked", "ada")

    card = TeamsCard(
        request_id="req_1", service_url=moved.service_url, conversation_id="19:b", activity_id="1"
    )
    await store.add_teams_card(card)
    await store.add_teams_card(card)  # the same post recorded twice is kept once
    later = card.model_copy(update={"activity_id": "2"})
    await store.add_teams_card(later)
    assert await store.teams_cards("req_1") == [card, later]
    assert await store.teams_cards("req_2") == []


async def test_tokens_are_listed_without_secrets_and_revoked_once(store: Store) -> None:
    ada = await store.add_user("ada", role="admin", teams=[])
    lee = await store.add_user("lee", role="responder", teams=["support-leads"])
    first = await store.add_token(lee.id, "hash-1", "laptop", hint="bt_abcd")
    second = await store.add_token(lee.id, "hash-2", "ci", token_id="tok_given")
    await store.add_token(ada.id, "hash-3")

    mine = await store.list_tokens(lee.id)
    assert {t.id for t in mine} == {first, "tok_given"}
    assert second == "tok_given"
    by_id = {t.id: t for t in mine}
    assert (by_id[first].user, by_id[first].label, by_id[first].hint) == (
        "lee",
        "laptop",
        "bt_abcd",
    )
    assert len(await store.list_tokens()) == 3
    assert "hash" not in by_id[first].model_dump()

    revoked = await store.revoke_token(first, events=[NewEvent(type="token.revoked", actor="lee")])
    again = await store.revoke_token(first, events=[NewEvent(type="token.revoked", actor="lee")])

    assert revoked is not None
    assert revoked.revoked_at is not None
    assert again == revoked
    assert await store.get_token(first) == revoked
    assert await store.user_for_token("hash-1") is None
    assert await store.user_for_token("hash-2") == lee
    assert await store.revoke_token("tok_nothing") is None
    assert await store.get_token("tok_nothing") is None
    [event] = await collect(store.watch(after_id=0), 1)
    assert (event.type, await store.last_event_id()) == ("token.revoked", event.id)


# a request's end told to the channels that follow it ---------------------------------------


def _told(request: HumanRequest) -> list[tuple[str, str, str]]:
    return sorted((n.channel, n.event, n.status) for n in request.notifications)


async def test_an_expiry_tells_the_channels_that_follow_a_request_to_its_end(
    clocked: Clocked,
) -> None:
    store, clock = clocked.store, clocked.clock
    [request] = await clocked.paused([deadline_request(clock, expires_h=1)])
    clock.advance(hours=1)
    [timer] = await clocked.due()

    fired = await store.fire_timer(
        timer, "w1", channels=("webhook",), answer_channels=("teams-bot",)
    )

    assert fired.result == "expired"
    assert fired.request is not None
    assert _told(fired.request) == [("teams-bot", "answered", "queued")]
    notes = await clocked.due("notify")
    assert [j.request_id for j in notes] == [request.id]


async def test_a_run_cancelled_or_ended_tells_them_of_each_request_it_closes(
    clocked: Clocked,
) -> None:
    store, clock = clocked.store, clocked.clock
    one, two = (deadline_request(clock).model_copy(update={"id": f"req_{n}"}) for n in (1, 2))
    [one, two] = await clocked.paused([one, two])
    [ended] = await clocked.paused([deadline_request(clock).model_copy(update={"id": "req_3"})])

    cancelled = await store.cancel_run(one.run_id, "ada", notify=("teams-bot",))
    finished = await store.record_progress(
        Progress(
            run_id=ended.run_id,
            expected_checkpoint_id=f"cp-{ended.run_id}",
            job_id=None,
            status="completed",
            closing_channels=("teams-bot",),
        )
    )

    assert cancelled is not None
    assert finished
    for request in (one, two, ended):
        closed = await clocked.request(request.id)
        assert closed.status == "cancelled"
        assert _told(closed) == [("teams-bot", "answered", "queued")]
    notes = await clocked.due("notify")
    assert sorted(str(j.request_id) for j in notes) == ["req_1", "req_2", "req_3"]
