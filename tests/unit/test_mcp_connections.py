"""The pool closes an MCP tool once no instance holds it, never under a drive still using it.

`mcp_shared` builds a new agent each drive around one MCP tool its module holds (as a tool built
once per process is): dropping one drive's instance while another's call is running leaves the
tool open; dropping the last closes it; an instance taken while its tool closes waits for the
close, then connects again as its agent runs.
"""

from __future__ import annotations

import asyncio

from baton.wiring import Parts
from executors.platform.agents import agents_of
from tests.fixtures import mcp_agent
from workflows.platform import registry

registry.load("tests.fixtures.mcp_agent")


async def test_a_tool_instances_share_closes_only_when_the_last_lets_it_go(parts: Parts) -> None:
    spec, pool = registry.get("mcp_shared"), parts.runtime.pool
    a = await pool.take(spec, "run-a", {"text": "Kew"}, None)
    b = await pool.take(spec, "run-b", {"text": "Ely"}, None)
    [agent_a], [agent_b] = agents_of(a.workflow), agents_of(b.workflow)
    assert agent_a is not agent_b
    assert a.connections == b.connections == (mcp_agent.SHARED,)

    first = await agent_a.run("Kew")
    running = asyncio.create_task(agent_b.run("Ely"))  # its call takes 1.5 s
    await asyncio.sleep(0.5)
    await pool.drop(a)  # drive A ends while B's call runs
    second = await asyncio.wait_for(running, 20)
    still_open = mcp_agent.SHARED.is_connected
    await pool.drop(b)

    assert "Sunny in Kew." in first.text
    assert "Sunny in Ely." in second.text, second.text
    assert still_open
    assert not mcp_agent.SHARED.is_connected  # the last instance let it go: closed


async def test_an_instance_taken_while_its_tool_closes_waits_then_connects_again(
    parts: Parts,
) -> None:
    spec, pool = registry.get("mcp_shared"), parts.runtime.pool
    a = await pool.take(spec, "run-a", {"text": "Kew"}, None)
    [agent_a] = agents_of(a.workflow)
    await agent_a.run("Kew")
    closing = asyncio.create_task(pool.drop(a))
    await asyncio.sleep(0)  # the close has begun
    b = await pool.take(spec, "run-b", {"text": "Ely"}, None)
    [agent_b] = agents_of(b.workflow)
    second = await asyncio.wait_for(agent_b.run("Ely"), 20)
    await closing
    await pool.drop(b)

    assert "Sunny in Ely." in second.text, second.text
    assert not mcp_agent.SHARED.is_connected
