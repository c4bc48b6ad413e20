"""The outbox dispatcher: delivers `notify` jobs, retries with backoff, gives up after a bound.

A pause or an escalation writes one outbox row per configured channel in its own transaction, each
with a `notify` job; the worker leases those jobs and hands them here. Each attempt is recorded on
the row (status, attempts, last error: the request's `notifications` field shows them) and as a
`request.notified` event with the channel and outcome (`sent`, `retrying`, `failed` once the
attempts are used up, `skipped` when there was nothing to send). A failed attempt is retried after
`backoff_s`, doubled at each further attempt. Delivery is at least once: a worker that dies after
sending and before recording sends again once its lease runs out. A notice a channel sends as
several messages (an email, one a time zone) records the parts a failed attempt handed over
(`Notice.parts_sent`), and its retries send the others alone.

Each attempt is bounded as a whole by `deadline_s` (`BATON_NOTIFY_TIMEOUT_SECONDS`): connecting,
sending and reading the answer together, whatever the channel. A per-read timeout alone is not
enough: a receiver that drips one byte a second never lets a read time out, and would hold the
attempt (and its worker slot) for as long as it likes. An attempt past its deadline is cancelled
and counts as failed, to be retried like any other failure.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Mapping
from typing import Any, Final, TypeVar

from baton.errors import NotificationFailed
from human.channels import Channel, Notice
from human.channels.links import LinkSigner
from human.records import Job
from human.store.base import Store

logger = logging.getLogger(__name__)
T = TypeVar("T")


class Dispatcher:
    """Delivers outbox rows through their channels."""

    def __init__(
        self,
        store: Store,
        channels: Mapping[str, Channel],
        links: LinkSigner,
        *,
        max_attempts: int = 6,
        backoff_s: float = 5.0,
        deadline_s: float = 10.0,
    ) -> None:
        self._store = store
        self._channels = dict(channels)
        self._links = links
        self._max_attempts = max_attempts
        self._backoff_s = backoff_s
        self._deadline_s = deadline_s

    @property
    def channels(self) -> tuple[str, ...]:
        """The names of the configured channels, in a stable order."""
        return tuple(sorted(self._channels))

    async def handle(self, job: Job, owner: str) -> bool:
        """Deliver one `notify` job; True when it recorded the outcome (and so ended the job)."""
        note_id = job.payload.get("notification_id")
        note = await self._store.get_notification(str(note_id)) if note_id else None
        if note is None or note.status != "queued":
            return False
        request = await self._store.get_request(note.request_id)
        channel = self._channels.get(note.channel)
        extra = {"notification_id": note.id, "channel": note.channel, "request_id": note.request_id}
        if request is None or channel is None:
            await self._store.record_delivery(
                note.id,
                job_id=job.id,
                owner=owner,
                outcome="skipped",
                error=(
                    f"request {note.request_id} no longer exists"
                    if request is None
                    else f"channel {note.channel} is not configured"
                ),
            )
            return True
        notice = Notice(
            request=request,
            event=note.event,
            delivery_id=note.id,
            url=self._links.page(request.id),
            parts_sent=set(note.parts_sent),
        )
        try:
            skipped = await self._attempt(channel, notice)
        except NotificationFailed as exc:
            attempt = note.attempts + 1
            last = attempt >= self._max_attempts
            delay = self._backoff_s * 2 ** (attempt - 1)
            await self._store.record_delivery(
                note.id,
                job_id=job.id,
                owner=owner,
                outcome="failed" if last else "retrying",
                error=str(exc),
                retry_in_s=delay,
                parts_sent=[p for p in sorted(notice.parts_sent) if p not in note.parts_sent],
            )
            logger.warning(
                "notification gave up" if last else "notification failed; will retry",
                extra={**extra, "attempt": attempt, "error": str(exc), "retry_in_s": delay},
            )
            return True
        await self._store.record_delivery(
            note.id,
            job_id=job.id,
            owner=owner,
            outcome="skipped" if skipped else "sent",
            error=skipped,
        )
        logger.info("notification delivered", extra={**extra, "skipped": skipped})
        return True

    async def _attempt(self, channel: Channel, notice: Notice) -> str | None:
        """Send once within the deadline; `NotificationFailed` when it runs out first."""
        try:
            return await within(self._deadline_s, channel.send(notice))
        except DeadlinePassed as exc:
            raise NotificationFailed(
                f"{channel.name}: no complete answer within {self._deadline_s:g} s "
                "(BATON_NOTIFY_TIMEOUT_SECONDS)"
            ) from exc
        except TimeoutError as exc:  # the channel's own
            raise NotificationFailed(f"{channel.name}: {type(exc).__name__}: {exc}") from exc


class DeadlinePassed(TimeoutError):
    """The work `within` bounds did not end by its deadline, and was cut."""


CUT_AGAIN_S: Final = 0.05
"""How long `within` waits for a cancelled piece of work to end before cancelling it again."""


async def within(deadline_s: float, work: Coroutine[Any, Any, T]) -> T:
    """`work`'s result, or `DeadlinePassed` once `deadline_s` is over and `work` has ended.

    `asyncio.timeout` cancels once, and code that swallows that one cancellation runs on past
    the deadline: Python 3.11's `asyncio.wait_for` (which aiosmtplib awaits each SMTP answer
    with) swallows it when the answer arrives in the same instant. So `work` runs as a task of
    its own and is cancelled again every `CUT_AGAIN_S` until it ends. Work that ends anyway, its
    cancellation swallowed at its very end, ended: its result stands.
    """
    task = asyncio.ensure_future(work)
    try:
        await asyncio.wait({task}, timeout=deadline_s)
    finally:  # at the deadline, or when the caller is cancelled itself
        while not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=CUT_AGAIN_S)
    if task.cancelled():
        raise DeadlinePassed(f"cut at its deadline of {deadline_s:g} s")
    return task.result()
