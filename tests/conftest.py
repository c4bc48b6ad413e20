from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import seed


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'baton.db'}"


@pytest.fixture
async def tokens(db_url: str) -> dict[str, str]:
    return await seed(db_url)


@pytest.fixture
def server_log(tmp_path: Path) -> Path:
    return tmp_path / "server.log"
