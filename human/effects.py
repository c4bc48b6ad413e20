"""Exactly-once side effects: a ledger keyed by idempotency key, the key passed downstream."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from baton.errors import RunEnded
from baton.telemetry import span
from human.records import TERMINAL_RUN
from human.store.base import EffectStore, NewEffect

logger = logging.getLogger(__name__)


def idempotency_key(run_id: str, request_id: str, call_id: str) -> str:
    """The key of one approved (or auto-decided) call: the same on every replay of it."""
    digest = hashlib.sha256(f"{run_id}\x1f{request_id}\x1f{call_id}".encode()).hexdigest()
    return f"bk_{digest[:32]}"


class EffectLedger:
    """Runs a side effect at most once per key; a replay gets the recorded result.

    The ledger writes nothing itself: `perform` keeps the record of a call in the drive's buffer
    (`performed`), and the runtime commits the buffer with the drive's progress
    (`Progress.effects`, one transaction with the pause or the run's end), so an effect costs no
    commit of its own. Until that commit, the called system is what remembers the call: it was
    handed the key and dedupes on it, so a drive lost before its commit (a crash, a fenced-off
    progress, a machine that lost a commit not yet on disk) calls again with the same key and gets
    the first result back, without acting twice.
    """

    def __init__(self, store: EffectStore) -> None:
        self._store = store

    async def perform(
        self,
        *,
        key: str,
        run_id: str,
        tool: str,
        arguments: dict[str, Any],
        call: Callable[[str], Awaitable[Any]],
        performed: list[NewEffect],
        record_now: bool = False,
    ) -> Any:
        """Return the result recorded for `key`, or call the system once and note the record.

        `performed` is the drive's buffer: a key already in it (performed earlier in this drive)
        or in the store (committed by an earlier drive) is not called again. A new call's record
        is appended to it, for the runtime to commit with the drive's progress.

        The called system receives `key` and must dedupe on it: a crash between its call and the
        drive's commit replays the call, which then returns the first result instead of acting
        again. `record_now`: the system takes no key (a plain tool), so the record is committed
        as soon as the call returns, not with the drive (whose model turns may take seconds): a
        crash after that finds it; only one in the moment between the return and the commit
        would call again.
        """
        attributes = {"baton.run_id": run_id, "baton.tool": tool, "baton.idempotency_key": key}
        with span("baton.effect", attributes) as effect_span:
            noted = next((e for e in performed if e.key == key), None)
            run_status = None
            if noted is not None:
                recorded: dict[str, Any] | None = {"result": noted.result}
            else:
                found = await self._store.effect_in_run(key, run_id)
                recorded, run_status = found.recorded, found.run_status
            effect_span.set_attribute("baton.replayed", recorded is not None)
            if recorded is not None:
                logger.info("effect replayed from ledger", extra={"tool": tool, "key": key})
                return recorded["result"]
            if run_status in TERMINAL_RUN:
                # Cancelled (or ended otherwise) while this drive ran: its progress will be fenced
                # off, and a call now would act for a run nobody waits on any more.
                logger.warning(
                    "effect refused: run ended",
                    extra={"run_id": run_id, "tool": tool, "key": key, "status": run_status},
                )
                raise RunEnded(f"run {run_id} is {run_status}: {tool} is not called")
            result = await call(key)
            effect = NewEffect(
                key=key, run_id=run_id, tool=tool, arguments=arguments, result=result
            )
            if record_now and run_status is not None:  # (None: a check's run, never stored)
                await self._store.record_effect(effect)
            performed.append(effect)  # (the drive's commit finds its key recorded, if it is)
            return result
