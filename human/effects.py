"""Exactly-once side effects: a ledger keyed by idempotency key, the key passed downstream."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from opentelemetry import trace

from baton import failpoints
from human.store.base import EffectStore

logger = logging.getLogger(__name__)
_tracer = trace.get_tracer("baton")


def idempotency_key(run_id: str, request_id: str, call_id: str) -> str:
    """The key of one approved (or auto-decided) call: the same on every replay of it."""
    digest = hashlib.sha256(f"{run_id}\x1f{request_id}\x1f{call_id}".encode()).hexdigest()
    return f"bk_{digest[:32]}"


class EffectLedger:
    """Runs a side effect at most once per key; a replay gets the recorded result."""

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
    ) -> Any:
        """Return the recorded result for `key`, or call the system once and record it.

        The called system receives `key` and must dedupe on it: a crash between its call and our
        commit replays the call, which then returns the first result instead of acting again.
        """
        attributes = {"baton.run_id": run_id, "baton.tool": tool, "baton.idempotency_key": key}
        with _tracer.start_as_current_span("baton.effect", attributes=attributes) as span:
            recorded = await self._store.get_effect(key)
            span.set_attribute("baton.replayed", recorded is not None)
            if recorded is not None:
                logger.info("effect replayed from ledger", extra={"tool": tool, "key": key})
                return recorded["result"]
            result = await call(key)
            failpoints.hit("effect.before_commit")
            await self._store.record_effect(
                key=key, run_id=run_id, tool=tool, arguments=arguments, result=result
            )
            failpoints.hit("effect.after_commit")
            return result
