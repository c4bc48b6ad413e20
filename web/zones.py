"""The reader's time zone: pages show times as the reader's clock says them, not in UTC alone.

Each page's script (`/static/zone.js`) puts the browser's IANA time zone in the `baton_tz` cookie;
`ReaderZone` reads it for each request into a context variable, which the pages' time filters
(`web.templating.when`, `hour_text`) read. A name the zone database does not hold, or no cookie
(no script yet, or a client that is no browser), is UTC. The `<time>` elements keep the exact
instant in UTC in their `datetime` attribute, and every time shown names its zone.
"""

from __future__ import annotations

import functools
import zoneinfo
from contextvars import ContextVar
from datetime import UTC, datetime, tzinfo
from typing import Final

from starlette.requests import cookie_parser
from starlette.types import Receive, Scope, Send

from web.asgi import HttpMiddleware

COOKIE: Final = "baton_tz"
NAME_MAX: Final = 64  # the longest IANA name is 32 characters

_zone: ContextVar[tzinfo] = ContextVar("baton_reader_zone", default=UTC)


@functools.cache
def _known() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def zone_named(name: str | None) -> tzinfo:
    """The zone of an IANA name (`Europe/Berlin`), or UTC for no name or one it does not know."""
    if not name or len(name) > NAME_MAX or name not in _known():
        return UTC
    return zoneinfo.ZoneInfo(name)


def reader_zone() -> tzinfo:
    """The zone of the reader of the page being drawn (UTC outside a request)."""
    return _zone.get()


def local(moment: datetime) -> datetime:
    """`moment` on the reader's clock (a naive moment is taken as UTC, as the store keeps them)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(reader_zone())
    except OverflowError:  # an instant at the calendar's edge (year 1, 9999): on its own clock
        return moment


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


class ReaderZone(HttpMiddleware):
    """ASGI middleware: the `baton_tz` cookie of each HTTP request as the reader's zone."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the app with the request's zone set, and unset it after."""
        name = None
        for key, value in scope["headers"]:
            if key == b"cookie":
                name = cookie_parser(value.decode("latin-1")).get(COOKIE) or name
        token = _zone.set(zone_named(name))
        try:
            await self.app(scope, receive, send)
        finally:
            _zone.reset(token)
