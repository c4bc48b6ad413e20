"""Runs due `timer` jobs: a request's deadline, the rungs of its escalation ladder, a claim's end.

The store applies each timer in one transaction with the deletion of its job (`fire_timer`), by
the rules of `human/routing.py`: an expiry closes the request as `expired` and queues its run's
resume, so the workflow receives `decision: "expired"`; an escalation moves the request to its new
team, priority and deadline and queues notifications again. A timer that came due while every
process was down fires on the next start, once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from human.records import Job
from human.store.base import OutboxStore

logger = logging.getLogger(__name__)


class TimerRunner:
    """Fires timer jobs leased by the worker."""

    def __init__(
        self,
        store: OutboxStore,
        *,
        channels: Sequence[str] = (),
        answer_channels: Sequence[str] = (),
        on_change: Callable[[str, str], None] | None = None,
    ) -> None:
        """`channels` are told of escalations; `answer_channels` of an expiry."""
        self._store = store
        self._channels = tuple(channels)
        self._answer_channels = tuple(answer_channels)
        self._on_change = on_change or (lambda kind, ident: None)

    async def handle(self, job: Job, owner: str) -> bool:
        """Fire one timer; always True (the store ended the job, or it was no longer ours)."""
        outcome = await self._store.fire_timer(
            job, owner, channels=self._channels, answer_channels=self._answer_channels
        )
        extra = {
            "request_id": job.request_id,
            "action": job.payload.get("action"),
            "outcome": outcome.result,
        }
        if outcome.result in ("expired", "escalated", "released"):
            logger.info("timer fired", extra=extra)
            if job.request_id:
                self._on_change("request", job.request_id)
        else:
            logger.debug("timer had nothing to do", extra=extra)
        return True
