"""Storage behind the store Protocols.

`base` declares them, one per concept, and `Store`, their union; `transactions` writes each
transaction once, against `dialect`'s `Tx` and `Dialect`; `rows` maps rows to records and holds
the pure `plan_*` decisions; `sqlite` and `postgres` keep only what is their own.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from human.store.base import Store, utcnow


async def open_store(url: str, *, clock: Callable[[], datetime] = utcnow) -> Store:
    """Open the backend a database URL names."""
    if url.startswith("sqlite:///"):
        from human.store.sqlite import SqliteStore

        return await SqliteStore.open(url, clock=clock)
    if url.startswith(("postgresql://", "postgres://")):
        from human.store.postgres import PostgresStore

        return await PostgresStore.open(url, clock=clock)
    from baton.errors import StoreError

    raise StoreError(f"no store backend for {url.split(':', 1)[0]!r} yet")
