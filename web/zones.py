"""The reader's time zone: pages show times as the reader's clock says them, not in UTC alone.

Each page's script (`/static/zone.js`) puts the browser's IANA time zone in the `baton_tz` cookie;
`ReaderZone` reads it for each request into a context variable, which the pages' time filters
(`web.templating.when`, `hour_text`) read. A name the zone database does not hold, or no cookie
(no script yet, or a client that is no browser), is UTC. The `<time>` elements keep the exact
instant in UTC in their `datetime` attribute, and every time shown names its zone.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextvars import ContextVar
from datetime import UTC, datetime, tzinfo
from typing import Final

from starlette.requests import cookie_parser
from starlette.types import Receive, Scope, Send

from human.zones import is_zone, on_clock, zone_label, zone_named
from web.asgi import HttpMiddleware

__all__ = [
    "COOKIE",
    "ReaderZone",
    "cookie_zone",
    "local",
    "reader_zone",
    "zone_label",
    "zone_named",
]

COOKIE: Final = "baton_tz"

_zone: ContextVar[tzinfo] = ContextVar("baton_reader_zone", default=UTC)


def reader_zone() -> tzinfo:
    """The zone of the reader of the page being drawn (UTC outside a request)."""
    return _zone.get()


def local(moment: datetime) -> datetime:
    """`moment` on the reader's clock (a naive moment is taken as UTC, as the store keeps them)."""
    return on_clock(moment, reader_zone())


def cookie_zone(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """The zone the `baton_tz` cookie names, where the zone database knows it."""
    name = None
    for key, value in headers:
        if key == b"cookie":
            name = cookie_parser(value.decode("latin-1")).get(COOKIE) or name
    return name if name and is_zone(name) else None


class ReaderZone(HttpMiddleware):
    """ASGI middleware: the `baton_tz` cookie of each HTTP request as the reader's zone."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the app with the request's zone set, and unset it after."""
        token = _zone.set(zone_named(cookie_zone(scope["headers"])))
        try:
            await self.app(scope, receive, send)
        finally:
            _zone.reset(token)
