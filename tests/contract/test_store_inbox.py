"""The store contract, continued: what the inbox asks of it (filters, counts) and sign-in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from baton.errors import Invalid
from human.access import actor_of, held_from
from human.records import HumanRequest, User
from human.store import open_store
from human.store.base import RequestFilter, Store, Viewer
from tests.contract.conftest import Backend
from tests.contract.test_store import T0, a_request, an_answer, final_of, paused, started


async def test_filters_by_workflow_assignee_and_overdue_and_counts_per_status(
    store: Store,
) -> None:
    refund = await started(store, workflow="refund")
    purchase = await started(store, workflow="purchase")
    late = a_request(refund.id, team="finance").model_copy(
        update={"expires_at": T0 + timedelta(hours=1)}
    )
    timely = a_request(refund.id, team="support-leads").model_copy(
        update={"expires_at": T0 + timedelta(days=2), "assignee": "lee"}
    )
    other = a_request(purchase.id, team="legal")
    await paused(store, refund.id, [late, timely], at=f"cp-{refund.id}")
    await paused(store, purchase.id, [other], at=f"cp-{purchase.id}")
    await store.record_answer(
        an_answer(other.id, "lee"), final=final_of(an_answer(other.id, "lee"))
    )

    def ids(page: list[object]) -> set[str]:
        return {r.id for r in page}  # type: ignore[attr-defined]

    by_workflow = await store.list_requests(RequestFilter(workflow="refund"))
    assert ids(by_workflow.items) == {late.id, timely.id}
    assigned = await store.list_requests(RequestFilter(assignee="lee"))
    assert ids(assigned.items) == {timely.id}
    overdue = await store.list_requests(RequestFilter(overdue_at=T0 + timedelta(hours=2)))
    assert ids(overdue.items) == {late.id}
    # Overdue means open and past its deadline: the answered one never is.
    later = await store.list_requests(RequestFilter(overdue_at=T0 + timedelta(days=30)))
    assert ids(later.items) == {late.id, timely.id}

    assert await store.count_requests(RequestFilter()) == {"pending": 2, "answered": 1}
    assert await store.count_requests(RequestFilter(status="answered")) == {
        "pending": 2,
        "answered": 1,
    }  # the status filter is what the counts are split by: ignored
    assert await store.count_requests(RequestFilter(teams=("finance", "legal"))) == {
        "pending": 1,
        "answered": 1,
    }
    assert await store.count_requests(RequestFilter(workflow="purchase")) == {"answered": 1}
    assert await store.count_requests(RequestFilter(teams=())) == {}


async def test_credentials_give_the_user_and_their_password_hash(store: Store) -> None:
    await store.add_user("lee", role="responder", teams=["support-leads"], password_hash="h1")
    await store.add_user("sam", role="responder", teams=["support-agents"])
    found = await store.credentials("lee")
    assert found is not None
    user, password_hash = found
    assert (user.name, user.teams, password_hash) == ("lee", ("support-leads",), "h1")
    assert (await store.credentials("sam")) is not None
    assert (await store.credentials("sam"))[1] is None  # type: ignore[index]
    assert await store.credentials("nobody") is None
    # Updating a user without a new password keeps the old one.
    await store.add_user("lee", role="admin", teams=["support-leads"])
    assert (await store.credentials("lee"))[1] == "h1"  # type: ignore[index]


async def test_failed_sign_ins_make_a_streak_by_name_that_ages_out_and_a_success_ends(
    backend: Backend,
) -> None:
    now = [T0]

    def clock() -> datetime:
        return now[0]

    store = await open_store(backend.url, clock=clock)
    try:
        assert await store.sign_in_streak("lee", window_s=300) is None
        assert [await store.note_failed_sign_in("lee", window_s=300) for _ in range(3)] == [1, 2, 3]
        # names nobody has are counted the same; each name has its own streak
        assert await store.note_failed_sign_in("nobody", window_s=300) == 1
        now[0] = T0 + timedelta(seconds=100)
        assert await store.sign_in_streak("lee", window_s=300) == (3, 100.0)
        assert await store.sign_in_streak("nobody", window_s=300) == (1, 100.0)
        assert await store.note_failed_sign_in("lee", window_s=300) == 4
        # past the window since its last failure a streak is over, and the next one starts at 1
        now[0] = T0 + timedelta(seconds=350)
        assert await store.sign_in_streak("nobody", window_s=300) is None
        assert await store.sign_in_streak("lee", window_s=300) == (4, 250.0)
        now[0] = T0 + timedelta(seconds=401)
        assert await store.sign_in_streak("lee", window_s=300) is None
        assert await store.note_failed_sign_in("lee", window_s=300) == 1
        # the stale streak of `nobody` was forgotten on the way
        assert backend.fetch("SELECT name FROM sign_in_failures ORDER BY name") == [("lee",)]
        await store.clear_failed_sign_ins("lee")
        assert await store.sign_in_streak("lee", window_s=300) is None
        await store.clear_failed_sign_ins("lee")  # ending no streak is no error
    finally:
        await store.close()


async def test_a_viewer_sees_the_runs_they_started_and_those_their_teams_take_part_in(
    store: Store,
) -> None:
    mine = await started(store, by="sam")  # sam started it; support-leads owns its request
    purchase = await started(store, workflow="purchase", by="pat")  # legal and finance
    quiet = await started(store, by="pat")  # no request yet: only pat sees it
    leads = a_request(mine.id, team="support-leads")
    legal = a_request(purchase.id, team="legal")
    finance = a_request(purchase.id, team="finance")
    await paused(store, mine.id, [leads], at=f"cp-{mine.id}")
    await paused(store, purchase.id, [legal, finance], at=f"cp-{purchase.id}")

    def request_ids(page: list[object]) -> set[str]:
        return {r.id for r in page}  # type: ignore[attr-defined]

    async def sees(name: str, *teams: str) -> tuple[set[str], set[str]]:
        viewer = Viewer(name=name, teams=teams)
        runs = await store.list_runs(
            status=None, workflow=None, cursor=None, limit=50, visible_to=viewer
        )
        requests = await store.list_requests(RequestFilter(visible_to=viewer))
        return {r.id for r in runs.items}, request_ids(requests.items)

    assert await sees("sam", "support-agents") == ({mine.id}, {leads.id})
    assert await sees("lee", "support-leads") == ({mine.id}, {leads.id})
    # a finance member sees the whole purchase, legal's request too: one case, one view
    assert await sees("fay", "finance") == ({purchase.id}, {legal.id, finance.id})
    assert await sees("pat") == ({purchase.id, quiet.id}, {legal.id, finance.id})
    assert await sees("nobody", "managers") == (set(), set())
    assert await store.count_requests(
        RequestFilter(visible_to=Viewer(name="lee", teams=("support-leads", "legal")))
    ) == {"pending": 3}
    # keyset pages of a filtered list still end
    page = await store.list_runs(
        status=None, workflow=None, cursor=None, limit=1, visible_to=Viewer(name="pat")
    )
    assert [r.id for r in page.items] == [quiet.id]
    assert page.next_cursor is not None
    rest = await store.list_runs(
        status=None, workflow=None, cursor=page.next_cursor, limit=1, visible_to=Viewer(name="pat")
    )
    assert [r.id for r in rest.items] == [purchase.id]

    assert await store.teams_of_run(purchase.id) == frozenset({"legal", "finance"})
    assert await store.teams_of_run(quiet.id) == frozenset()


async def test_my_work_unassigned_claimed_and_answered_by_filters(store: Store) -> None:
    run = await started(store)
    mine = a_request(run.id, team="support-leads")
    assigned = a_request(run.id, team="finance").model_copy(update={"assignee": "lee"})
    claimed = a_request(run.id, team="legal")
    elsewhere = a_request(run.id, team="legal")
    answered = a_request(run.id, team="legal")
    two = a_request(run.id, team="finance", approvals=2)
    await paused(store, run.id, [mine, assigned, claimed, elsewhere, answered, two])
    await store.claim_request(claimed.id, "lee", until=T0 + timedelta(hours=1))
    await store.record_answer(
        an_answer(answered.id, "lee"), final=final_of(an_answer(answered.id, "lee"))
    )
    await store.record_answer(an_answer(two.id, "lee"), final=final_of(an_answer(two.id, "lee")))

    def ids(found: list[HumanRequest]) -> set[str]:
        return {r.id for r in found}

    lee = Viewer(name="lee", teams=("support-leads",))
    open_ = ("pending", "claimed", "escalated")
    waiting = await store.list_requests(RequestFilter(waiting_for=lee, statuses=open_))
    assert ids(waiting.items) == {mine.id, assigned.id, claimed.id}
    assert await store.count_requests(RequestFilter(waiting_for=lee, statuses=open_)) == {
        "pending": 2,
        "claimed": 1,
    }
    claims = await store.list_requests(RequestFilter(claimed_by="lee"))
    assert ids(claims.items) == {claimed.id}
    free = await store.list_requests(RequestFilter(unassigned=True, statuses=open_))
    assert ids(free.items) == {mine.id, elsewhere.id, two.id}
    # an approval of two counts as answered by its approver, though the request is still open
    by_lee = await store.list_requests(RequestFilter(answered_by="lee"))
    assert ids(by_lee.items) == {answered.id, two.id}
    assert (await store.list_requests(RequestFilter(answered_by="fay"))).items == []


async def test_what_a_person_may_act_on_now_is_what_access_says(store: Store) -> None:
    """`actionable_by` and `held_from` split a person's open requests as `held_from` does."""
    theirs, own = await started(store, by="sam"), await started(store, by="lee")
    free = a_request(theirs.id)
    four_eyes = a_request(own.id)  # lee started the run: lee may not approve it
    asked = a_request(own.id, kind="question")  # four-eyes holds approvals and reviews only
    held = a_request(theirs.id)
    lapsed = a_request(theirs.id)
    kept = a_request(theirs.id)
    halfway = a_request(theirs.id, approvals=2)
    await paused(store, theirs.id, [free, held, lapsed, kept, halfway], at=f"cp-{theirs.id}")
    await paused(store, own.id, [four_eyes, asked], at=f"cp-{own.id}")
    await store.claim_request(held.id, "sue", until=T0 + timedelta(hours=1))
    await store.claim_request(lapsed.id, "sue", until=T0 - timedelta(minutes=1))
    await store.claim_request(kept.id, "lee", until=T0 + timedelta(hours=1))
    await store.record_answer(
        an_answer(halfway.id, "lee"), final=final_of(an_answer(halfway.id, "lee"))
    )

    lee = User(id="u-lee", name="lee", role="responder", teams=("support-leads",))
    mine = RequestFilter(
        waiting_for=Viewer(name="lee", teams=lee.teams), statuses=("pending", "claimed")
    )

    async def split(user: User) -> tuple[set[str], set[str]]:
        actor = actor_of(user, T0)
        able = await store.list_requests(mine.model_copy(update={"actionable_by": actor}))
        not_ = await store.list_requests(mine.model_copy(update={"held_from": actor}))
        return {r.id for r in able.items}, {r.id for r in not_.items}

    able, not_able = await split(lee)
    assert able == {free.id, asked.id, lapsed.id, kept.id}
    assert not_able == {four_eyes.id, held.id, halfway.id}
    # the store and `human.access.held_from` say the same of each request
    for request_id in able | not_able:
        request = await store.get_request(request_id)
        assert request is not None
        run = theirs if request.run_id == theirs.id else own
        assert (held_from(lee, request, run, T0) is None) == (request_id in able)
    assert await store.count_requests(mine.model_copy(update={"held_from": actor_of(lee, T0)}))
    # a viewer answers nothing: every request is held from them
    val = lee.model_copy(update={"name": "val", "role": "viewer"})
    assert await split(val) == (set(), able | not_able)


async def test_most_urgent_first_pages_by_priority_then_deadline_then_newest(store: Store) -> None:
    """The deadline, or an escalation that comes before it: its team's time runs out then."""
    run = await started(store)

    def asked(priority: str, hours: float | None, escalates: float | None = None) -> HumanRequest:
        due = None if hours is None else T0 + timedelta(hours=hours)
        ladder = [] if escalates is None else [{"after_s": escalates * 3600, "team": "managers"}]
        return a_request(run.id).model_copy(
            update={"priority": priority, "expires_at": due, "escalation": ladder, "created_at": T0}
        )

    def due(request: HumanRequest) -> datetime:
        first = [request.expires_at]
        if request.escalation:
            first.append(T0 + timedelta(seconds=request.escalation[0]["after_s"]))
        return min((d for d in first if d is not None), default=datetime.max.replace(tzinfo=UTC))

    made = [
        asked("normal", 5),
        asked("high", None),
        asked("normal", None),
        asked("high", 2),
        asked("low", 1),
        asked("normal", 1),
        asked("high", 2),
        asked("urgent", 48),
        asked("normal", None),
        asked("normal", 24, escalates=3),  # before the 5 h deadline: the managers' turn first
        asked("normal", 2, escalates=4),  # the deadline first
        asked("normal", None, escalates=6),  # no deadline: the escalation
        asked("high", 24, escalates=1),
    ]
    await paused(store, run.id, made)
    rank = {"urgent": 3, "high": 2, "normal": 1, "low": 0}
    by_seq = {r.id: i for i, r in enumerate(made)}
    expected = sorted(
        made,
        key=lambda r: (-rank[r.priority], due(r), -by_seq[r.id]),
    )
    seen: list[str] = []
    cursor = None
    for _ in range(len(made)):
        page = await store.list_requests(RequestFilter(sort="urgent", limit=2, cursor=cursor))
        seen += [r.id for r in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == [r.id for r in expected]
    assert cursor is None
    with pytest.raises(Invalid):
        await store.list_requests(RequestFilter(sort="urgent", cursor="s12"))
    with pytest.raises(Invalid):
        await store.list_requests(RequestFilter(sort="urgent", cursor="u1.x.3"))
