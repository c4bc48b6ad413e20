"""A builder that configures the chat client it is given configures its own, not its persona's.

MAF keeps the tool loop's limits on the client object; `for_persona` hands each build its own
copy, so one workflow's `max_function_calls` never caps another workflow's run of the same persona
in the same process (`tests.fixtures.persona_clients`, MAF's `control_total_tool_executions.py`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures import persona_clients
from tests.harness import Server, baton_server

ENV = {"BATON_WORKFLOWS": "tests.fixtures.persona_clients"}


async def searches_of(server: Server, workflow: str) -> tuple[str, int]:
    """What a run of `workflow` answered, and how many searches it ran."""
    persona_clients.SEARCHES.clear()
    run = await server.start_run({"workflow": workflow, "input": {}})
    done = await server.wait_for_run(run["id"], status=("completed", "failed"))
    return done["output"]["text"], len(persona_clients.SEARCHES)


@pytest.fixture(autouse=True)
def fresh_notes() -> None:
    persona_clients.SEARCHES.clear()


async def test_one_workflow_s_tool_call_cap_leaves_another_s_on_the_same_persona_alone(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        first = await searches_of(server, "capped_rounds")
        capped = await searches_of(server, "capped_calls")
        again = await searches_of(server, "capped_rounds")

    assert first == ("Answer from 9 results.", 9)  # three rounds of three, as on MAF alone
    assert capped == ("Answer from 6 results.", 6)  # stopped once more than four ran
    assert again == first
