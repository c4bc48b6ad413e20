"""Fixtures of the unit tests that drive runs in this process."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from baton.settings import Settings
from baton.wiring import Parts, open_parts
from tests.harness import seed


@pytest.fixture
async def parts(db_url: str) -> AsyncIterator[Parts]:
    """Baton's parts on the test's database (seeded with the demo people), its worker local."""
    await seed(db_url)
    async with open_parts(Settings(database_url=db_url)) as opened:
        yield opened
