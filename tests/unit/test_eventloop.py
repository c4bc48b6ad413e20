"""Baton's commands and benchmark children run on the loop `baton serve` runs on (uvloop)."""

from __future__ import annotations

import asyncio

from baton import eventloop


def test_commands_run_on_uvloop_as_serve_does() -> None:
    async def running() -> str:
        await asyncio.sleep(0)
        return type(asyncio.get_running_loop()).__module__

    assert eventloop.kind() == "uvloop"  # installed with Baton on this platform
    assert eventloop.run(running()).startswith("uvloop")
