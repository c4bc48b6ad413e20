"""The README's workflow example, exactly as printed, through pause, kill -9 and resume."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.harness import baton_server

README = Path(__file__).resolve().parents[2] / "README.md"

# The process is the subject: `baton serve` runs in child processes, on both backends.
pytestmark = pytest.mark.process


def readme_example() -> str:
    section = README.read_text(encoding="utf-8").split("## Write your own workflow", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "the README lost its example"
    return match.group(1)


def test_the_example_is_at_most_40_lines() -> None:
    assert len(readme_example().splitlines()) <= 40


async def test_readme_example_pauses_survives_kill_9_and_resumes(
    tmp_path: Path, db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "readme_expense.py").write_text(readme_example(), encoding="utf-8")
    env = {
        "BATON_WORKFLOWS": "readme_expense",
        "PYTHONPATH": os.pathsep.join([str(plugins), os.environ.get("PYTHONPATH", "")]),
    }
    expense = {"workflow": "expense", "input": {"employee": "kim", "amount": 42.5}}

    async with baton_server(db_url, tokens, server_log, env) as server:
        run = await server.start_run(expense)
        pending = await server.wait_for_request(run["id"])
        server.kill()

    assert pending["team"] == "managers"
    assert pending["proposed_action"]["arguments"] == {"employee": "kim", "amount": 42.5}

    async with baton_server(db_url, tokens, server_log, env) as server:
        reply = await server.respond(pending["id"], {"decision": "approve"}, user="ada")
        assert reply.status_code == 200, reply.text
        done = await server.wait_for_run(run["id"], status="completed")
        events = [e["type"] for e in await server.audit(run["id"])]

    assert done["output"] == "paid 42.5"
    assert events == [
        "run.started",
        "request.created",
        "request.answered",
        "run.resumed",
        "run.completed",
    ]
