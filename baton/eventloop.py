"""The event loop Baton's processes run on: uvloop's where it is installed, else asyncio's.

uvloop (libuv under asyncio's API) spends less of each cycle in the loop itself: a minimal cycle
takes about a tenth less CPU on it (docs/benchmarks.md). `baton serve` has it through uvicorn's
`loop="auto"`; every other command, and each benchmark child, runs its main coroutine through
`run`, so that what is measured runs as what is deployed. Where uvloop is not installed (it has
no Windows build) asyncio's own loop serves, unchanged.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run(main: Coroutine[Any, Any, T]) -> T:
    """Run `main` to its end on a new event loop, as `asyncio.run` does."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - installed with Baton where it builds
        return asyncio.run(main)
    return uvloop.run(main)


def kind() -> str:
    """Which loop `run` runs on here: "uvloop" or "asyncio" (the benchmark prints it)."""
    return "uvloop" if importlib.util.find_spec("uvloop") is not None else "asyncio"
