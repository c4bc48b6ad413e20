"""Which worker a queued job wakes: one, in turn, on PostgreSQL; and the idle poll's one question.

A process that waits for jobs (`Store.wait_for_jobs`) on PostgreSQL listens on a channel of its
own and keeps a `job_listeners` row alive; a job queued unleased NOTIFYs one live listener, the
one woken longest ago. Here a plain connection beside the stores overhears every channel: the
notifications one sends after the jobs' commits arrive after theirs (PostgreSQL delivers in
commit order), so the count of what was heard before it is exact.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import asyncpg
import pytest

from human.store.base import Store
from tests.contract.conftest import Backend
from tests.contract.test_store import LIVE, started
from tests.contract.test_store_feeds import other_process
from tests.contract.test_store_routing import Clocked, ManualClock, deadline_request
from tests.harness import eventually, sql

END = "end"


def live_listeners(backend: Backend) -> list[str]:
    return [
        r["channel"]
        for r in sql(
            backend.url,
            "SELECT channel FROM job_listeners "
            "WHERE live_until >= extract(epoch from clock_timestamp()) ORDER BY channel",
        )
    ]


async def listening(backend: Backend, count: int) -> list[str]:
    """The live listeners' channels, once there are `count` of them."""

    async def found() -> list[str] | None:
        channels = live_listeners(backend)
        return channels if len(channels) == count else None

    return await eventually(found, what=f"{count} live job listeners")


@dataclass
class Overheard:
    """Every (channel, payload) notified on the channels listened to, in arrival order."""

    conn: asyncpg.Connection
    heard: list[tuple[str, str]] = field(default_factory=list)

    async def settled(self) -> list[tuple[str, str]]:
        """What was heard of every transaction committed before this call (the end marker too)."""
        await self.conn.execute(f"NOTIFY baton_jobs, '{END}'")

        async def ended() -> bool:
            return ("baton_jobs", END) in self.heard

        await eventually(ended, what="the end marker")
        return [h for h in self.heard if h != ("baton_jobs", END)]


@contextlib.asynccontextmanager
async def overhearing(backend: Backend, channels: list[str]) -> AsyncIterator[Overheard]:
    conn = await asyncpg.connect("postgresql://" + backend.url.split("://", 1)[1])
    overheard = Overheard(conn)
    try:
        for channel in [*channels, "baton_jobs"]:
            await conn.add_listener(
                channel, lambda _c, _pid, ch, payload: overheard.heard.append((ch, payload))
            )
        yield overheard
    finally:
        await conn.close()


def job_ids(backend: Backend) -> list[str]:
    return [str(r["id"]) for r in sql(backend.url, "SELECT id FROM jobs ORDER BY id")]


@pytest.mark.backends("postgres")
async def test_each_queued_job_wakes_one_listening_process_in_turn(
    store: Store, backend: Backend
) -> None:
    async with other_process(backend) as other:
        await store.wait_for_jobs(0.01)  # both processes now wait for jobs
        await other.wait_for_jobs(0.01)
        channels = await listening(backend, 2)
        async with overhearing(backend, channels) as ears:
            for _ in range(6):
                await started(store)  # each queues an unleased start job
            heard = await ears.settled()

    assert sorted(payload for _, payload in heard) == job_ids(backend)  # each job once
    assert Counter(channel for channel, _ in heard) == {channels[0]: 3, channels[1]: 3}


@pytest.mark.backends("postgres")
async def test_a_lapsed_listener_is_passed_over_and_none_live_wakes_everyone(
    store: Store, backend: Backend
) -> None:
    # A process killed without a word leaves its row; once it lapses, no job is sent its way.
    sql(
        backend.url,
        "INSERT INTO job_listeners (channel, live_until, woken_at) "
        "VALUES ('baton_wake_dead', extract(epoch from clock_timestamp()) - 1, 0)",
    )
    async with overhearing(backend, ["baton_wake_dead"]) as ears:
        await started(store)  # nobody listens yet: every process hears it on `baton_jobs`
        before = await ears.settled()
        await store.wait_for_jobs(0.01)
        (channel,) = await listening(backend, 1)
        await ears.conn.add_listener(
            channel, lambda _c, _pid, ch, payload: ears.heard.append((ch, payload))
        )
        for _ in range(3):
            await started(store)
        heard = await ears.settled()

    first, *rest = job_ids(backend)
    assert before == [("baton_jobs", first)]
    assert heard[len(before) :] == [(channel, job) for job in rest]


@pytest.mark.backends("postgres")
async def test_a_closed_store_stops_listening_for_jobs(backend: Backend) -> None:
    async with other_process(backend) as other:
        await other.wait_for_jobs(0.01)
        await listening(backend, 1)

    assert sql(backend.url, "SELECT channel FROM job_listeners") == []


async def test_jobs_due_says_whether_an_unleased_job_is_due(store: Store) -> None:
    assert await store.jobs_due() is False

    await started(store)
    assert await store.jobs_due() is True
    assert await store.jobs_due("work") is True  # a start job is Baton's own work
    assert await store.jobs_due("delivery") is False

    leased = await store.lease_jobs("a", limit=1, lease_s=LIVE)
    assert [job.kind for job in leased] == ["start"]
    assert await store.jobs_due() is False

    await store.retry_job(leased[0].id, "a", delay_s=3600, error="later")
    assert await store.jobs_due() is False


@pytest.mark.backends("postgres")
async def test_a_timer_queued_for_later_wakes_no_worker_and_a_due_one_does(
    clocked: Clocked, backend: Backend
) -> None:
    # A timer is due by Baton's clock; its wake-up, if any, was sent as it was queued. Before its
    # time no worker could lease it, so waking one would only cost a lease round for nothing.
    async with overhearing(backend, []) as ears:
        earlier = ManualClock()
        earlier.advance(hours=-3)  # asked 3 hours ago with 2 hours to answer: due an hour ago
        later, due = await clocked.paused(
            [deadline_request(clocked.clock), deadline_request(earlier)]
        )
        heard = {payload for _, payload in await ears.settled()}

    queued = sql(backend.url, "SELECT request_id, id FROM jobs WHERE kind = 'timer'")
    timers = {r["request_id"]: str(r["id"]) for r in queued}
    assert timers[later.id] not in heard
    assert timers[due.id] in heard


@pytest.mark.backends("postgres")
async def test_a_lease_round_with_nothing_due_costs_the_database_one_statement(
    store: Store,
) -> None:
    # Most lease rounds of a lane find nothing; a worker pays for each in round trips. Nor does a
    # connection going back to the pool cost one (asyncpg's default RESET ALL and co.).
    pool = store._pool  # type: ignore[attr-defined]
    sent: list[str] = []
    async with contextlib.AsyncExitStack() as held:  # every connection the pool may hand out
        for _ in range(pool.get_max_size()):
            conn = await held.enter_async_context(pool.acquire())
            conn.add_query_logger(lambda logged: sent.append(logged.query))

    for lane in ("work", "delivery"):
        await store.lease_jobs("w1", limit=4, lease_s=LIVE, lane=lane)
    await asyncio.sleep(0)  # query loggers are called soon after, not at once
    each_lane, sent[:] = list(sent), []
    assert await store.lanes_due() == frozenset()  # what a worker's lease round asks
    await asyncio.sleep(0)

    assert len(each_lane) == 2
    assert all(q.lstrip().startswith("SELECT 1 FROM jobs") for q in each_lane)
    assert len(sent) == 1  # every lane in one statement


@pytest.mark.backends("postgres")
async def test_a_wait_cancelled_while_its_listener_connects_leaves_no_connection(
    backend: Backend,
) -> None:
    """Cancelled at any point of connecting and LISTENing, the half-made connection is closed."""
    others = (
        "SELECT count(*) AS n FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid <> pg_backend_pid()"
    )
    before = sql(backend.url, others)[0]["n"]
    for step in range(40):
        async with other_process(backend) as other:
            waiting = asyncio.create_task(other.wait_for_jobs(5))
            await asyncio.sleep(step * 0.0005)
            waiting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await waiting

    async def settled() -> bool | None:
        return True if sql(backend.url, others)[0]["n"] == before else None

    await eventually(settled, what=f"{before} connections but this test's own")
