"""The background worker: leases jobs (start, resume, notify, timer) and runs them.

Leases make work survive its process: a job whose holder died is leased again once its lease
runs out, and live holders renew theirs while they work. `wake()` starts a lease round at once
when this process queued the work; other processes' work is found when the store signals it
(PostgreSQL's NOTIFY, which wakes one worker per job) or by polling: a poll that heard nothing
asks one cheap question (`Store.jobs_due`) and leases only if something is due.

A lease round runs only when a lane that may hold a job due has room: every lane after a
signal, a poll that found work, a failed round or a `wake()` naming none; the lanes a `wake()`
names; a job's own lane when it ends (its end may free the next drive of its run); and a lane
whose last lease filled every free slot (more may wait). It asks which lanes have a job due in
one read (`Store.lanes_due`) and leases in each that has room, so a round costs one read however
many lanes it covers, and no round runs for a change nobody announced.

Jobs run in two lanes, each with its own slots and leased apart (`Job.lane`): `work` (drives and
timers: Baton's own work, `concurrency` at a time) and `delivery` (notifications, as slow as the
server they go to, `delivery_concurrency` at a time). A flood of slow deliveries fills only its
own lane: it can neither hold the slots a resume waits for nor take its places in a lease.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import secrets
import socket
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass

from baton.errors import StoreError, StoreUnavailable
from baton.telemetry import correlation_id
from human.records import LANES, Job, JobLane
from human.store.base import InPlay, Lease, Store
from workflows.platform.runtime import Runtime

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 8
STORE_WAIT_MAX_S = 60.0

JobHandler = Callable[[Job, str], Awaitable[bool]]
"""Runs a job of one kind (`notify`, `timer`) for its lease owner; True if it ended the job."""


@dataclass(frozen=True)
class WorkerHealth:
    """What `/healthz` reports of a process's worker."""

    running: bool
    ok: bool
    last_round_s: float
    failing: str | None


class Worker:
    """Runs due jobs with bounded concurrency."""

    def __init__(
        self,
        store: Store,
        runtime: Runtime,
        *,
        concurrency: int = 4,
        delivery_concurrency: int = 4,
        poll_s: float = 0.5,
        lease_s: float = 30.0,
        handlers: Mapping[str, JobHandler] | None = None,
    ) -> None:
        self._store = store
        self._runtime = runtime
        self._handlers = dict(handlers or {})
        self._limits: dict[JobLane, int] = {
            "work": concurrency,
            "delivery": delivery_concurrency,
        }
        self._poll_s = poll_s
        self._lease_s = lease_s
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self._wake = asyncio.Event()
        self._active: dict[int, asyncio.Task[None]] = {}
        self._run_of: dict[int, str | None] = {}  # each active job's run
        self._drives: set[int] = set()  # the active jobs that drive their run
        self._halted: set[int] = set()  # jobs stopped because their run was cancelled
        self._held: dict[JobLane, set[int]] = {lane: set() for lane in self._limits}
        self._slots = {lane: asyncio.Semaphore(n) for lane, n in self._limits.items()}
        self._look: set[JobLane] = set(self._limits)  # lanes that may hold a job due
        self._running = False
        self._stopping = asyncio.Event()  # set by `stop`: no more leases
        self._beat = time.monotonic()
        self._failing: str | None = None
        self._store_wait_s = 0.0

    def health(self) -> WorkerHealth:
        """Whether the lease loop runs, when it last went round, and what fails it, if anything.

        The loop goes round at least every poll (`poll_s`); one that has not for 30 polls (and
        at least 30 s) is stuck.
        """
        age = time.monotonic() - self._beat
        stuck = self._running and age > max(30.0, 30 * self._poll_s)
        return WorkerHealth(
            running=self._running,
            ok=self._running and not stuck and self._failing is None,
            last_round_s=round(age, 3),
            failing=self._failing or ("stuck" if stuck else None),
        )

    def holding(self) -> int:
        """How many jobs this worker holds now (running, or leased to it and not yet done)."""
        return len(self._active.keys() | set().union(*self._held.values()))

    def wake(self, lanes: Iterable[JobLane] = LANES) -> None:
        """Look for work in `lanes` now instead of at the next poll."""
        self._look.update(lanes)
        self._wake.set()

    @property
    def lease(self) -> Lease:
        """How jobs queued by this process are leased to this worker."""
        return Lease(owner=self.owner, seconds=self._lease_s)

    def accept(self, job: Job, in_play: InPlay | None = None) -> None:
        """Run a job already leased to this worker (queued by this process).

        `in_play`: what a drive job starts from, read by the transaction that queued it. It is
        used only if the job starts at once: one that waits for a slot reads it again then (the
        run may have been cancelled meanwhile, and a drive must not run a cancelled run's tools).
        """
        if job.id in self._active:
            return
        task = asyncio.create_task(self._handle(job, in_play))
        self._active[job.id] = task
        self._run_of[job.id] = job.run_id
        if job.kind in ("start", "resume"):  # a drive: a cancel of its run stops it
            self._drives.add(job.id)
        self._held[job.lane].add(job.id)
        task.add_done_callback(functools.partial(self._done, job.id, job.lane))

    def stop_run(self, run_id: str) -> None:
        """Stop this worker's drives of `run_id`, which was cancelled: its work is for nobody.

        A step still working (a model call, a long computation) is cancelled where it awaits,
        as MAF's own cancellation does (`task.cancel()`); the drive's progress would be refused
        anyway, and its tools' effects already are. The job is deleted (`_handle`).
        """
        for job_id, of in list(self._run_of.items()):
            if of == run_id and job_id in self._drives:  # not the notices its cancel queued
                self._halt(job_id)

    def _halt(self, job_id: int) -> None:
        task = self._active.get(job_id)
        if task is not None and not task.done() and job_id not in self._halted:
            self._halted.add(job_id)
            task.cancel()

    async def drain(self, run_id: str | None = None) -> None:
        """Wait until the jobs this worker holds have finished (tests, CLI, benchmarks).

        With `run_id`, only that run's, while the other runs' jobs go on. Either way the jobs it
        accepts while waiting are waited for too; not those still waiting in the store for a
        lease round. Cancelling the wait cancels no job.
        """
        while tasks := [
            task
            for job_id, task in self._active.items()
            if run_id is None or self._run_of.get(job_id) == run_id
        ]:
            await asyncio.wait(tasks)

    async def stop(self, grace_s: float) -> None:
        """Lease nothing more, and wait up to `grace_s` for the jobs under way to end.

        So a process that is stopped (a deploy's SIGTERM) lets a drive reach its next commit: a
        tool it runs finishes and is recorded, where a drive cancelled in the middle of a plain
        tool's call leaves that call uncertain (`EffectLedger`), and a model call's work is not
        done twice. Their leases are renewed meanwhile; the caller then cancels `run_forever`,
        which cancels what is still running.
        """
        self._stopping.set()
        self._wake.set()
        if self._active and grace_s > 0:
            logger.info("worker stopping", extra={"jobs": len(self._active), "grace_s": grace_s})
            await asyncio.wait(list(self._active.values()), timeout=grace_s)

    async def run_forever(self) -> None:
        """Lease and run jobs until cancelled; a failing store is waited out, never fatal.

        A round that fails (the database unreachable, the disk full) is logged and tried again
        after a backoff that doubles up to 30 s; `health()` names the failure meanwhile.
        """
        renewer = asyncio.create_task(self._renew_forever())
        self._running, backoff = True, self._poll_s
        try:
            while True:
                self._beat = time.monotonic()
                if self._stopping.is_set():  # (stopping: the jobs under way end, none begins)
                    await asyncio.Future()
                try:
                    started = await self._lease_round()
                    if not started and not self._to_look():
                        self._wake.clear()
                        while not await self._idle():
                            self._beat = time.monotonic()
                except Exception as exc:  # the store failed: wait, and go on when it answers
                    self._look.update(self._limits)  # what the round would have looked at
                    self._failing = f"{type(exc).__name__}: {str(exc)[:200]}"
                    logger.exception("worker round failed; retrying", extra={"retry_s": backoff})
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, 30.0)
                else:
                    self._failing, backoff = None, self._poll_s
        finally:
            self._running = False
            renewer.cancel()
            for task in list(self._active.values()):
                task.cancel()
            await asyncio.gather(renewer, *self._active.values(), return_exceptions=True)

    async def _idle(self) -> bool:
        """Wait a poll for work: this process's own, or another's as the store signals it.

        True when woken so, or when the poll found a job due (one read); False after a quiet
        poll with nothing due, to wait again.
        """
        woken = asyncio.ensure_future(self._wake.wait())
        # The store waits longer than the poll, so that its return means a signal, not a timeout.
        signalled = asyncio.ensure_future(self._store.wait_for_jobs(2 * self._poll_s))
        try:
            done, _ = await asyncio.wait(
                {woken, signalled}, timeout=self._poll_s, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            for waiter in (woken, signalled):
                waiter.cancel()
            await asyncio.gather(woken, signalled, return_exceptions=True)
        if signalled in done or (not done and await self._store.jobs_due()):
            self._look.update(self._limits)  # another process's job, of a lane not known
            return True
        return bool(done)  # woken: whoever woke it named the lanes

    async def run_until_idle(self) -> int:
        """Run jobs until none is due (for the CLI, tests and benchmarks); how many ran.

        The jobs it runs are those it leases and those this process queued leased to it and took
        at once (`accept`: a run it started, an answer's resume), which no worker beside it can
        lease in between. Its leases are renewed while it works, as `run_forever`'s are: a drive
        longer than a lease (a slow model, a long step) stays this process's, never driven a
        second time by a worker beside it, and a cancel of its run in another process stops it
        at a renewal.
        """
        renewer = asyncio.create_task(self._renew_forever())
        ran, mine = 0, list[asyncio.Task[None]]()
        try:
            while True:
                jobs = [
                    job
                    for lane, limit in self._limits.items()
                    for job in await self._store.lease_jobs(
                        self.owner, limit=limit, lease_s=self._lease_s, lane=lane
                    )
                ]
                for job in jobs:
                    self.accept(job)
                mine = list(self._active.values())
                if not mine:
                    return ran
                ran += len(mine)
                await self.drain()
                for task in mine:  # a job that failed fails the call, as it always has
                    if not task.cancelled() and task.exception() is not None:
                        raise task.exception()  # type: ignore[misc]
        finally:  # left early (cancelled, a job failed): its jobs stop with it, not unrenewed
            renewer.cancel()
            for task in mine:
                task.cancel()
            await asyncio.gather(renewer, *mine, return_exceptions=True)

    async def _lease_round(self) -> int:
        """Lease what fits in the free slots of every lane; how many jobs started.

        A round runs only when a lane to look in has room; then one read finds which lanes have
        a job due (`lanes_due`), and each with room is leased in. With every slot taken, wait
        until a job ends (its lane may have work due) first.
        """
        if all(len(self._held[lane]) >= limit for lane, limit in self._limits.items()):
            self._wake.clear()
            await self._wake.wait()
        free = {
            lane: room
            for lane, limit in self._limits.items()
            if (room := limit - len(self._held[lane])) > 0
        }
        if not free.keys() & self._look:
            return 0
        # The read covers every lane, so a lane with room is leased in if due though nobody woke
        # it: a busy lane, waking only itself, never keeps the other waiting for a poll.
        self._look -= free.keys()  # a wake from now on looks again
        due = await self._store.lanes_due()
        if self._stopping.is_set():  # (stopped while it read: it leases nothing)
            return 0
        started = 0
        for lane, room in free.items():
            if lane not in due:
                continue
            jobs = await self._store.lease_jobs(
                self.owner, limit=room, lease_s=self._lease_s, lane=lane, checked=True
            )
            if len(jobs) == room:  # the lane may hold more than there was room for
                self._look.add(lane)
            for job in jobs:
                self.accept(job)
            started += len(jobs)
        return started

    def _to_look(self) -> bool:
        """Whether a lane to look in has a free slot (a wake came during the last round)."""
        return any(len(self._held[lane]) < self._limits[lane] for lane in self._look)

    def _done(self, job_id: int, lane: JobLane, _task: asyncio.Task[None]) -> None:
        self._active.pop(job_id, None)
        self._run_of.pop(job_id, None)
        self._drives.discard(job_id)
        self._halted.discard(job_id)
        for held in self._held.values():
            held.discard(job_id)
        self.wake((lane,))  # its slot is free, and its end may free the next drive of its run

    async def _renew_forever(self) -> None:
        while True:
            await asyncio.sleep(self._lease_s / 3)
            try:
                cancelled = await self._store.renew_leases(
                    self.owner, list(self._active), lease_s=self._lease_s
                )
            except Exception:
                logger.exception("lease renewal failed")
                continue
            for job_id in cancelled:  # cancelled in another process (here: `stop_run` at once)
                self._halt(job_id)

    async def _handle(self, job: Job, in_play: InPlay | None = None) -> None:
        # Jobs this process queued are accepted at once (their lease is held and renewed) but
        # run as many at a time as their lane has slots, like leased ones.
        slot = self._slots[job.lane]
        if slot.locked():
            in_play = None  # read when its turn comes, not as it was queued
        try:
            async with slot:
                unavailable = await self._run_job(job, in_play)
        except asyncio.CancelledError:
            if job.id not in self._halted:
                raise  # the worker stops: the job's lease lapses to another
            asyncio.current_task().uncancel()  # type: ignore[union-attr]
            await self._halted_job(job)
            return
        if unavailable is not None:
            await self._give_back(job, unavailable)

    async def _halted_job(self, job: Job) -> None:
        """The job of a drive stopped because its run was cancelled: deleted (nothing to do)."""
        self._halted.discard(job.id)
        logger.info("drive stopped: its run was cancelled", extra={"run_id": job.run_id})
        try:
            await self._store.finish_job(job.id, self.owner)
        except StoreError:  # its lease lapses; the next holder finds the run ended
            logger.exception("stopped job not deleted", extra={"job_id": job.id})

    async def _run_job(self, job: Job, in_play: InPlay | None = None) -> StoreUnavailable | None:
        """Run a job; the store's failure to serve it is returned, to give the job back for."""
        queued_by = job.payload.get("correlation_id")
        token = correlation_id.set(
            f"{queued_by}/job-{job.id}" if queued_by not in (None, "-") else f"job-{job.id}"
        )
        try:
            consumed = False
            if job.kind in ("start", "resume") and job.run_id:
                consumed = await self._runtime.drive(job.run_id, job.id, in_play)
            elif job.kind in self._handlers:
                consumed = await self._handlers[job.kind](job, self.owner)
            if not consumed:
                await self._store.finish_job(job.id, self.owner)
            self._store_wait_s = 0.0
        except asyncio.CancelledError:
            raise
        except StoreUnavailable as exc:
            logger.warning("job waits for the store", extra={"job_id": job.id, "error": str(exc)})
            return exc
        except Exception as exc:
            delay = min(60.0, 0.5 * 2 ** (job.attempts - 1))
            logger.exception("job failed", extra={"job_id": job.id, "attempts": job.attempts})
            if job.attempts >= MAX_ATTEMPTS:
                logger.error("job abandoned", extra={"job_id": job.id})
            try:
                await self._store.retry_job(
                    job.id,
                    self.owner,
                    delay_s=delay if job.attempts < MAX_ATTEMPTS else 3600.0,
                    error=f"{type(exc).__name__}: {exc}",
                )
            except StoreError:  # its lease lapses instead; the failed attempt is counted already
                logger.exception("failed job not given back", extra={"job_id": job.id})
        finally:
            correlation_id.reset(token)
        return None

    async def _give_back(self, job: Job, unavailable: StoreUnavailable) -> None:
        """Give back a job the store could not serve, its attempt not counted: the job did not fail.

        A disk that stays full or a database that stays read-only must not use up a job's
        attempts toward abandonment. Giving it back is a write too: while the store refuses that
        as well, the job stays this worker's (its lease renewed where the store allows) and the
        give-back is tried again, so the lease never lapses into a counted attempt for want of
        it. The job comes due again after a poll, and each job the store fails after that one
        (until a job succeeds) waits twice as long, up to `STORE_WAIT_MAX_S`.
        """
        self._store_wait_s = min(max(self._store_wait_s * 2, self._poll_s), STORE_WAIT_MAX_S)
        wait = self._poll_s
        while True:
            try:
                await self._store.retry_job(
                    job.id,
                    self.owner,
                    delay_s=self._store_wait_s,
                    error=f"{type(unavailable).__name__}: {unavailable}",
                    counted=False,
                )
                return
            except StoreUnavailable:
                await asyncio.sleep(wait)
                wait = min(wait * 2, 30.0)
