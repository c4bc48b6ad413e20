"""The worker waits out a failing store and carries on; meanwhile its health says why."""

from __future__ import annotations

import asyncio
from typing import Any

from baton.errors import StoreError
from human.policy import load_policy
from human.store import open_store
from tests.harness import eventually, seed
from workflows.platform import registry
from workflows.platform.runtime import Runtime
from workflows.platform.worker import Worker
from workflows.shipped import POLICIES

PURCHASE = {"item": "laptop", "amount": 2400.0, "vendor": "Contoso", "requester": "sam"}


async def test_a_failing_store_is_waited_out_and_the_health_names_it(db_url: str) -> None:
    registry.load("workflows.shipped")
    await seed(db_url)
    store = await open_store(db_url)
    lanes_due = store.lanes_due  # the read each lease round begins with
    failures = {"left": 3}

    async def flaky(*args: Any, **kwargs: Any) -> Any:
        if failures["left"] > 0:
            failures["left"] -= 1
            raise StoreError("database or disk is full")
        return await lanes_due(*args, **kwargs)

    store.lanes_due = flaky  # type: ignore[method-assign]
    runtime = Runtime(store, policy=load_policy(POLICIES))
    worker = Worker(store, runtime, poll_s=0.05)
    loop = asyncio.create_task(worker.run_forever())
    try:
        failing = await eventually(
            lambda: _now(worker.health() if worker.health().failing else None),
            what="the worker to report the failure",
        )
        await eventually(lambda: _now(failures["left"] == 0), what="the store to answer again")
        run = await runtime.start("purchase", PURCHASE, actor="sam")
        waiting = await eventually(
            lambda: _status(runtime, run.id, "waiting"), what="the run to be driven after all"
        )
        healthy = worker.health()
    finally:
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
        await store.close()

    assert failing.ok is False
    assert failing.failing == "StoreError: database or disk is full"
    assert failures["left"] == 0
    assert waiting
    assert (healthy.ok, healthy.failing, healthy.running) == (True, None, True)
    assert worker.health().running is False  # cancelled: no longer running


async def _now(value: Any) -> Any:
    return value


async def _status(runtime: Runtime, run_id: str, status: str) -> bool | None:
    return True if (await runtime.get(run_id)).status == status else None
