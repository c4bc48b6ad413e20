"""What a process loads to start: a channel's libraries only when a setting asks for the channel.

Slack's (`slack_sdk`), Teams' (`microsoft_agents`) and Azure identity's (`azure.identity`)
libraries were about 40 % of `baton serve`'s start; every `baton worker`, CLI command and test
process paid for them. The child here imports the web app and opens its parts as `baton serve`
does, then says which of them it loaded.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from human.store import open_store

HEAVY = ("slack_sdk", "microsoft_agents", "azure.identity")

CHILD = f"""
import asyncio, json, sys
from baton.settings import Settings
from baton.wiring import open_parts
from web.app import create_app

async def main():
    settings = Settings()
    create_app(settings)
    async with open_parts(settings):
        pass
    print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))

asyncio.run(main())
"""


def _loaded(tmp_path: Path, **settings: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BATON_")}
    env |= {"BATON_DATABASE_URL": f"sqlite:///{tmp_path / 'baton.db'}", **settings}
    done = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


@pytest.fixture
async def migrated(tmp_path: Path) -> Path:
    store = await open_store(f"sqlite:///{tmp_path / 'baton.db'}")
    await store.close()
    return tmp_path


def test_a_process_with_no_slack_or_teams_setting_loads_none_of_their_libraries(
    migrated: Path,
) -> None:
    assert _loaded(migrated) == []


def test_each_channel_set_loads_its_library(migrated: Path) -> None:
    slack = _loaded(migrated, BATON_SLACK_SIGNING_SECRET="s", BATON_SLACK_BOT_TOKEN="xoxb-1")
    teams = _loaded(
        migrated,
        BATON_TEAMS_APP_ID="app",
        BATON_TEAMS_APP_PASSWORD="secret",
        BATON_TEAMS_TENANT_ID="tenant",
    )

    assert "slack_sdk" in slack
    assert {"microsoft_agents", "azure.identity"} <= set(teams)


def test_a_benchmark_cycle_s_child_loads_no_web_app(tmp_path: Path) -> None:
    # `baton bench` and `baton bench-instructions` start dozens of these children; the web app
    # (FastAPI, the routes, the pages) was some 40 % of each one's start, and under callgrind
    # some 2 billion instructions a child, for nothing its cycles use.
    child = (
        "import json, sys\n"
        "from baton import bench, bench_peers\n"
        "bench_peers.main(['minimal', 'baton', '1', sys.argv[1]])\n"
        "print(json.dumps(sorted(m for m in ('fastapi', 'web.app') if m in sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", child, str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    said = done.stdout.strip().splitlines()
    assert json.loads(said[0])["cycles"] == 1  # the cycle ran
    assert json.loads(said[-1]) == []


def test_a_start_pauses_the_garbage_collector_and_leaves_it_running_with_the_start_frozen() -> None:
    from baton.cli import _starting

    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    try:
        with _starting():
            assert not gc.isenabled()
            made = [[n] for n in range(1000)]  # what a start makes and keeps
        assert gc.isenabled()  # a server that never collected again would grow without bound
        assert gc.get_freeze_count() >= frozen + len(made)
        with pytest.raises(ValueError, match="refused"), _starting():
            raise ValueError("refused")  # a start that fails (a bad setting) ends it too
        assert gc.isenabled()
    finally:
        gc.unfreeze()  # this test process's objects back in the collector's sight
