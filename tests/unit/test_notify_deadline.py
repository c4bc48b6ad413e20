"""A delivery deadline holds against code that swallows a cancellation (`notify.within`)."""

from __future__ import annotations

import asyncio
import time

import pytest

from human.notify import DeadlinePassed, within


class SwallowsOneCancellation:
    """A send of three slow steps that swallows the first cancellation it meets.

    As Python 3.11's `asyncio.wait_for` does when the answer it awaits arrives in the instant
    of the cancellation: the caller's deadline fires, and the send carries on to its end.
    """

    def __init__(self) -> None:
        self.sent = False
        self.swallowed = 0

    async def send(self) -> str:
        for _ in range(3):
            try:
                await asyncio.sleep(0.5)
            except asyncio.CancelledError:
                if self.swallowed:
                    raise
                self.swallowed += 1
        self.sent = True
        return "sent"


async def test_one_cancellation_swallowed_is_not_enough_for_asyncio_timeout() -> None:
    # why `within` exists: with `asyncio.timeout` alone the send runs to its end
    send = SwallowsOneCancellation()
    async with asyncio.timeout(0.2):
        await send.send()
    assert send.sent


async def test_within_cuts_work_that_swallows_a_cancellation_at_its_deadline() -> None:
    send = SwallowsOneCancellation()
    began = time.monotonic()
    with pytest.raises(DeadlinePassed, match=r"deadline of 0\.2 s"):
        await within(0.2, send.send())
    took = time.monotonic() - began
    assert send.swallowed == 1
    assert not send.sent
    assert took < 0.5 + 0.3, took  # the first step's end, not the whole send's 1.5 s


async def test_within_returns_what_ends_in_time_and_raises_what_it_raised() -> None:
    async def quick() -> int:
        await asyncio.sleep(0)
        return 7

    async def own_timeout() -> None:
        raise TimeoutError("the relay's own read timeout")

    assert await within(1.0, quick()) == 7
    with pytest.raises(TimeoutError, match="own read timeout") as raised:
        await within(1.0, own_timeout())
    assert not isinstance(raised.value, DeadlinePassed)


async def test_within_cuts_its_work_when_its_caller_is_cancelled() -> None:
    send = SwallowsOneCancellation()
    caller = asyncio.ensure_future(within(10.0, send.send()))
    await asyncio.sleep(0.1)
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert send.swallowed == 1
    assert not send.sent
