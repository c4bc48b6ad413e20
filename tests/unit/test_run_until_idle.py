"""`Worker.run_until_idle` (the CLI's drive): its jobs live and die with the call.

While it runs it renews their leases (`tests/e2e/test_cancel_stops_work.py`); cancelled, it
stops them, rather than leave a drive working on with its lease no longer renewed, which a
worker beside it would take and drive a second time.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from baton.settings import Settings
from baton.wiring import open_parts
from tests.fixtures import slow_workflow
from tests.harness import eventually, seed
from workflows.platform import registry


def taken(label: str) -> int:
    return sum(1 for step in slow_workflow.STEPS if step.startswith(f"{label}:"))


async def test_a_cancelled_run_until_idle_stops_the_drives_it_started(tmp_path: Path) -> None:
    registry.load("tests.fixtures.slow_workflow")
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'idle.db'}")
    await seed(settings.database_url)
    label = f"idle-{len(slow_workflow.STEPS)}"
    async with open_parts(settings, local_worker=False) as parts:
        await parts.runtime.start("slow_steps", {"label": label}, actor="sam")
        idle = asyncio.create_task(parts.worker.run_until_idle())

        async def working() -> bool:
            return taken(label) >= 3

        await eventually(working, what="the step at work")
        idle.cancel()
        with pytest.raises(asyncio.CancelledError):
            await idle
        stopped_at = taken(label)
        await asyncio.sleep(0.3)  # six of its steps' time
        assert taken(label) == stopped_at
        assert stopped_at < 200
