"""An agent's MCP tool (MAF's `MCPStdioTool`: a server process) closes when Baton is done.

MAF's agent opens the server as it first runs and closes it in `close()`, which MAF's samples
call with `async with Agent(...)`; a script that does not close it never exits. Baton closes each
agent once no instance it holds uses it: `baton run` and `baton check` end (the run done) and a
server running runs leaves no MCP server process behind a run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psutil

from tests.harness import baton_server, eventually
from tests.unit.test_workflow_loading import ROOT

ENV = {"BATON_WORKFLOWS": "tests.fixtures.mcp_agent"}


def servers() -> list[psutil.Process]:
    """The MCP servers this process's children started (`python -m tests.fixtures.mcp_cities`)
    and are still running: an ended child, reaped or a zombie, has no command line to read."""
    running = []
    for child in psutil.Process().children(recursive=True):
        try:
            if "tests.fixtures.mcp_cities" in " ".join(child.cmdline()):
                running.append(child)
        except (psutil.ZombieProcess, psutil.NoSuchProcess):
            continue
    return running


def test_baton_run_and_check_end_once_done_their_agent_s_mcp_server_closed(
    tmp_path: Path,
) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),
        "BATON_DATABASE_URL": f"sqlite:///{tmp_path / 'baton.db'}",
        **ENV,
    }
    runs = [
        [
            sys.executable,
            "-m",
            "baton",
            "run",
            "mcp_weather",
            "--input",
            '{"text": "Kew"}',
            "--json",
        ],
        [sys.executable, "-m", "baton", "check", "mcp_weather", "--input", '{"text": "Kew"}'],
    ]
    done = [
        subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
        for args in runs
    ]

    assert [d.returncode for d in done] == [0, 0], [d.stderr[-2000:] for d in done]
    run = json.loads(done[0].stdout)
    assert (run["status"], run["output"]["text"]) == (
        "completed",
        'It says: {"result": "Sunny in Kew."}',
    )
    assert "mcp_weather" in done[1].stdout


async def test_a_server_leaves_no_mcp_server_running_after_its_runs(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        for city in ("Kew", "Ely", "Rye"):
            run = await server.start_run({"workflow": "mcp_weather", "input": {"text": city}})
            done = await server.wait_for_run(run["id"], status=("completed", "failed"))
            assert done["output"]["text"] == f'It says: {{"result": "Sunny in {city}."}}', done

        async def none_left() -> bool:
            return not servers()

        await eventually(none_left, timeout=10, what="no MCP server left running")


async def test_a_tool_an_mcp_tool_loaded_before_a_pause_runs_when_its_call_is_approved(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    """MAF's progressive disclosure keeps what the model loaded on the MCP tool object, in no
    checkpoint: the approved call of a loaded tool, resumed in a fresh build, found no tool and
    MAF dropped it ("(no result)"). Baton carries the loaded tools with the agent's executor."""
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        run = await server.start_run({"workflow": "mcp_disclosing", "input": {"text": "Kew"}})
        asked = await server.wait_for_request(run["id"])
        reply = await server.respond(asked["id"], {"decision": "approve"}, user="ada")
        assert reply.status_code == 200, reply.text
        done = await server.wait_for_run(run["id"], status=("completed", "failed"))

    assert asked["proposed_action"]["tool"] == "cities_city_alert"
    assert done["status"] == "completed", done
    said = done["output"]["text"].split(" | ")
    assert said[1] == (
        "cities_load_tool: Loaded MCP tool 'cities_city_alert'. It is available on the next "
        "model iteration."
    )
    assert said[2] == 'cities_city_alert: {"result": "Alert sent to Kew."}'
