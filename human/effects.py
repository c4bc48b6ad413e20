"""Exactly-once side effects: a ledger keyed by idempotency key, the key passed downstream."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from opentelemetry.trace import Span

from baton.errors import RunEnded, StoreError
from baton.telemetry import span
from human.records import TERMINAL_RUN
from human.store.base import FAILED, EffectStore, NewEffect, failure_of

logger = logging.getLogger(__name__)


class HandedOn(Exception):
    """Raised by a ledger's `call` that does not act but hands the call on to run elsewhere.

    Not a failure: the ledger records nothing for it, and its span says so (`baton.handed_on`).
    """


class ToolFailed(Exception):
    """A plain tool's call that raised in an earlier drive, replayed: its recorded error again.

    The tool is not called a second time: it may have acted before it raised. `recorded`: the
    error as the ledger keeps it (`TimeoutError: the server did not answer`); the exception's
    text is what the call raised (`the server did not answer`), as the first time.
    """

    def __init__(self, recorded: str) -> None:
        self.recorded = recorded
        kind, said, raised = recorded.partition(": ")
        super().__init__(raised if said and kind.isidentifier() else recorded)


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
        again. `record_now`: the system takes no key (a plain tool), so nothing but Baton can
        remember the call: its start is committed before it runs and its record as soon as it
        returns, not with the drive (whose model turns may take seconds). A later drive that
        finds the record gives its result; one that finds only the start (the process stopped
        while the call ran, or before its record) cannot tell whether it acted, so it does not
        call again: it records `uncertain(tool)` as the result, which the model is given, with
        an `effect.uncertain` event. A call that raised is recorded so too, its error as its
        result (`effect.failed`), for it may have acted before it raised: a replay raises
        `ToolFailed` with that error and does not call it again.
        """
        attributes = {"baton.run_id": run_id, "baton.tool": tool, "baton.idempotency_key": key}
        with span("baton.effect", attributes) as effect_span:
            try:
                asked = NewEffect(key=key, run_id=run_id, tool=tool, arguments=arguments)
                return await self._perform(effect_span, asked, call, performed, record_now)
            except HandedOn as handed:  # (not the span's failure: raised after it ends)
                effect_span.set_attribute("baton.handed_on", True)
                handing = handed
        raise handing

    async def _perform(
        self,
        effect_span: Span,
        effect: NewEffect,
        call: Callable[[str], Awaitable[Any]],
        performed: list[NewEffect],
        record_now: bool,
    ) -> Any:
        """`perform`'s work, in its span: `effect` is the call asked for, its result unknown."""
        key, run_id, tool = effect.key, effect.run_id, effect.tool
        noted = next((e for e in performed if e.key == key), None)
        run_status, started = None, False
        if noted is not None:
            recorded: dict[str, Any] | None = {"result": noted.result}
        else:
            found = await self._store.effect_in_run(key, run_id)
            recorded, run_status, started = found.recorded, found.run_status, found.started
        effect_span.set_attribute("baton.replayed", recorded is not None)
        if recorded is not None:
            logger.info("effect replayed from ledger", extra={"tool": tool, "key": key})
            if (failure := failure_of(recorded["result"])) is not None:
                raise ToolFailed(failure)
            return recorded["result"]
        if run_status in TERMINAL_RUN:
            # Cancelled (or ended otherwise) while this drive ran: its progress will be fenced
            # off, and a call now would act for a run nobody waits on any more.
            logger.warning(
                "effect refused: run ended",
                extra={"run_id": run_id, "tool": tool, "key": key, "status": run_status},
            )
            raise RunEnded(f"run {run_id} is {run_status}: {tool} is not called")
        kept = record_now and run_status is not None  # (None: a check's run, never stored)
        # the start is the claim: a drive that did not insert it (another's is there, left by a
        # process that stopped or still running) does not call
        if kept and (started or not await self._store.start_effect(effect)):
            return await self._unsure(effect, performed)
        try:
            result = await call(key)
        except HandedOn:
            raise  # (acted on nothing: no start was kept for it, `GatedTool.keyed`)
        except Exception as exc:
            if kept:  # (it may have acted before it raised: never called again)
                await self._failed(effect, exc, performed)
            raise
        except asyncio.CancelledError:  # (cut off where it awaited: it may have acted)
            if kept:
                await asyncio.shield(self._cut_off(effect))
            raise
        effect = effect.model_copy(update={"result": result})
        if kept:
            try:  # (over an `uncertain` another drive recorded meanwhile: the truth replaces it)
                await self._store.record_effect(effect, replaces=uncertain(tool))
            except StoreError:  # the call's result is known: it rides the drive's commit instead
                logger.warning("effect record deferred", extra={"key": key}, exc_info=True)
                effect = effect.model_copy(update={"started": True})
        performed.append(effect)  # (the drive's commit finds its key recorded, if it is)
        return result

    async def _unsure(self, effect: NewEffect, performed: list[NewEffect]) -> Any:
        """Record `uncertain` as the result of a call another drive started and never ended."""
        logger.warning(
            "effect uncertain: not called again",
            extra={"run_id": effect.run_id, "tool": effect.tool, "key": effect.key},
        )
        effect = effect.model_copy(update={"result": uncertain(effect.tool)})
        await self._store.record_effect(effect, uncertain=True)
        performed.append(effect)
        return effect.result

    async def _cut_off(self, effect: NewEffect) -> None:
        """A call cancelled as it ran (its run cancelled, its drive stopped): said uncertain now.

        A cancelled run has no later drive to find its start; a stopped drive's successor would
        find the same.
        """
        unsure = effect.model_copy(update={"result": uncertain(effect.tool)})
        try:
            await self._store.record_effect(unsure, uncertain=True)
        except StoreError:  # kept: a later drive finds the start, and says the same
            logger.warning("effect cut off, not recorded", extra={"key": effect.key})

    async def _failed(self, effect: NewEffect, exc: Exception, performed: list[NewEffect]) -> None:
        """Record a keyless call that raised, its error as its result (`failure_of`).

        Over an `uncertain` another drive recorded meanwhile, as a result would be. A record that
        cannot be written leaves the start: a replay then says the call uncertain.
        """
        failed = effect.model_copy(update={"result": {FAILED: f"{type(exc).__name__}: {exc}"}})
        try:
            await self._store.record_effect(failed, replaces=uncertain(effect.tool))
        except StoreError:
            logger.warning("effect failure not recorded", extra={"key": effect.key}, exc_info=True)
            return
        performed.append(failed)


def uncertain(tool: str) -> str:
    """What a model is told of a call started and never recorded, instead of a second call."""
    return (
        f"Error: {tool} may or may not have acted: it was cut off before it returned (its "
        "process stopped, or its run was cancelled or taken over). It was not run again; check "
        "what it did before calling it again."
    )
