"""Storage behind the `Store` Protocol, one module per backend."""

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
