"""Baton's clock: the time deadlines, escalations and claims are measured by.

In production it is the system clock. Tests move it without sleeping: `BATON_CLOCK_FILE` (tests
only, like `BATON_FAILPOINTS`) names a file holding an offset in seconds that every process of the
test adds to the system clock, read at every look (a few bytes, and only in tests: no cache to go
stale when two writes land within one tick of the file system's clock). An offset rather than a
fixed time keeps time flowing, so leases, retries and polling behave as they do in production
while a test jumps hours ahead by writing one number.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path


class Clock:
    """The current time in UTC, optionally offset by the number in a file."""

    def __init__(self, offset_file: str | Path | None = None) -> None:
        self._file = Path(offset_file) if offset_file else None

    def __call__(self) -> datetime:
        """Now, aware, in UTC (plus the file's offset, if any)."""
        return datetime.now(UTC) + self.offset()

    def offset(self) -> timedelta:
        """The offset the file holds now (zero without a file, or while it is missing)."""
        if self._file is None:
            return timedelta(0)
        try:
            text = self._file.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return timedelta(0)
        try:
            return timedelta(seconds=float(text) if text else 0.0)
        except ValueError as exc:
            raise ValueError(
                f"BATON_CLOCK_FILE {self._file} must hold an offset in seconds, not {text!r}"
            ) from exc


def clock_of(offset_file: str | None) -> Callable[[], datetime]:
    """The clock a process runs on: the system's, or the system's plus a test's offset."""
    return Clock(offset_file)
