"""Starts racing with one Idempotency-Key store one run, on both backends."""

from __future__ import annotations

import asyncio

import pytest

from baton.errors import IdempotencyConflict
from human.policy import load_policy
from human.store import open_store
from tests.harness import seed
from workflows.platform import registry
from workflows.platform.runtime import Runtime
from workflows.shipped import POLICIES

REFUND = {"order_id": "A-1005", "amount": 120, "reason": "arrived broken"}


async def test_racing_starts_with_one_key_store_one_run(db_url: str) -> None:
    registry.load("workflows.shipped")
    await seed(db_url)
    store = await open_store(db_url)
    try:
        runtime = Runtime(store, policy=load_policy(POLICIES))
        started = await asyncio.gather(
            *(runtime.start_once("refund", REFUND, actor="sam", key="race-1") for _ in range(12))
        )
        with pytest.raises(IdempotencyConflict):
            await runtime.start_once("refund", {**REFUND, "amount": 1}, actor="sam", key="race-1")
        runs = await runtime.list_runs(status=None, workflow=None, cursor=None, limit=50)
    finally:
        await store.close()

    assert len({run.id for run, _ in started}) == 1
    assert sorted(replayed for _, replayed in started) == [False] + [True] * 11
    assert len(runs.items) == 1
