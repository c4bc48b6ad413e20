"""Agents an executor holds by name and runs itself are followed like any agent's.

MAF's declarative workflows keep their agents in a dict on each `InvokeAzureAgent` executor
(`tests.fixtures.held_agents` has that shape): the run's conversation holds each one's turns,
tool calls and results, under the name it is held by.
"""

from __future__ import annotations

from pathlib import Path

from tests.harness import baton_server

ENV = {"BATON_WORKFLOWS": "tests.fixtures.held_agents"}


async def test_the_turns_of_agents_an_executor_holds_are_in_the_run_s_conversation(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        run = await server.start_run({"workflow": "held_agents", "input": {"text": "lamps glow"}})
        done = await server.wait_for_run(run["id"], status="completed")

    said = [
        (e["type"], e.get("agent"), e.get("tool"), e.get("text") or e.get("result"))
        for e in done["conversation"]
    ]
    assert said == [
        ("message", None, None, "lamps glow"),  # the user's words it started on
        ("tool_call", "writer", "word_count", None),
        ("tool_result", "writer", "word_count", "2"),
        ("message", "writer", None, "Done: 2"),
        ("tool_call", "checker", "publish", None),
        ("tool_result", "checker", "publish", "published: Done: 2"),
        ("message", "checker", None, "Done: published: Done: 2"),
    ]
    assert done["output"] == "Done: published: Done: 2"
