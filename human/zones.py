"""People's clocks: IANA time zone names, and a moment as a person in one reads it.

A person may have a time zone (`User.time_zone`: an administrator sets it, or their browser's is
kept when they first sign in with none); messages sent to them give times on it (`said_at`). The
pages use the same names for their reader's zone (`web.zones`).
"""

from __future__ import annotations

import functools
import zoneinfo
from datetime import UTC, datetime, tzinfo
from typing import Final

NAME_MAX: Final = 64  # the longest IANA name is 32 characters


DEFAULT_ZONE: Final = "UTC"
"""The clock of a person with no time zone."""

NO_CLOCK: Final = frozenset({"localtime", "Factory"})
"""Names the zone database holds that are no person's clock: the server's own, and a placeholder."""


@functools.cache
def _known() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones()) - NO_CLOCK


def is_zone(name: str) -> bool:
    """Whether the zone database knows `name` (`Europe/Berlin`, `UTC`)."""
    return 0 < len(name) <= NAME_MAX and name in _known()


def zone_named(name: str | None) -> tzinfo:
    """The zone of an IANA name (`Europe/Berlin`), or UTC for no name or one it does not know."""
    if not name or not is_zone(name):
        return UTC
    return zoneinfo.ZoneInfo(name)


def zone_label(moment: datetime) -> str:
    """The zone of a local moment as people write it: `CET`, `EST`, `UTC`, `UTC+05:45`.

    The database names some zones by their offset only (`-03`, `+0545`); those read as UTC±hh:mm.
    """
    if moment.tzinfo is UTC:
        return "UTC"
    name = moment.tzname() or ""
    if name and name[0] not in "+-":
        return name
    offset = moment.utcoffset()
    minutes = int(offset.total_seconds() // 60) if offset is not None else 0
    sign = "+" if minutes >= 0 else "-"
    hours, minutes = divmod(abs(minutes), 60)
    return f"UTC{sign}{hours:02d}" + (f":{minutes:02d}" if minutes else "")


def on_clock(moment: datetime, zone: tzinfo) -> datetime:
    """`moment` on `zone`'s clock (a naive moment is taken as UTC, as the store keeps them)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(zone)
    except OverflowError:  # an instant at the calendar's edge (year 1, 9999): on its own clock
        return moment


def said_at(moment: datetime, zone: str | None) -> str:
    """A moment as a person on `zone`'s clock reads it, day and zone: `2026-12-07 18:00 CET`."""
    seen = on_clock(moment, zone_named(zone))
    return f"{seen.date().isoformat()} {seen:%H:%M} {zone_label(seen)}"
