"""What a workflow output before it failed is the run's too, as MAF's stream gives it.

A script that streams a MAF run sees its outputs and its own events up to the failure, then the
failure (MAF's non-streaming `run` raises and gives them to nobody). A run on Baton that fails
keeps them: its output is what it output before it failed, and its events are in its
conversation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agent_framework import InMemoryCheckpointStorage

from tests.fixtures.failing_after_outputs import build_failing
from tests.fixtures.failing_functional import failing_functional
from tests.harness import baton_server
from tests.pages import PAGE_ENV, signed_in, text_of

ENV = {
    "BATON_WORKFLOWS": "tests.fixtures.failing_after_outputs,tests.fixtures.failing_functional"
} | PAGE_ENV


async def on_maf_alone() -> tuple[list[Any], list[Any]]:
    """The outputs and the workflow's own events a streaming script sees before the failure."""
    seen: list[Any] = []

    async def stream() -> None:
        async for event in build_failing().run("memo", stream=True):
            seen.append(event)

    with pytest.raises(RuntimeError, match="the mail server refused memo"):
        await stream()
    outputs = [e.data for e in seen if e.type == "output"]
    events = [e.data for e in seen if str(e.type) == "saved"]
    return outputs, events


async def test_a_failed_run_keeps_what_it_output_and_reported_before_it_failed(
    db_url: str, tokens: dict[str, str], passwords: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        run = await server.start_run(
            {"workflow": "failing_after_outputs", "input": {"text": "memo"}}
        )
        done = await server.wait_for_run(run["id"], status="failed")
        async with signed_in(server, "sam", passwords["sam"]) as sam:
            page = text_of((await sam.http.get(f"/runs/{run['id']}")).text)

    outputs, events = await on_maf_alone()
    assert outputs == ["saved memo", "sending memo"]
    assert done["error"] == "RuntimeError: the mail server refused memo"
    assert done["output"] == outputs
    assert [e["data"] for e in done["conversation"] if e["type"] == "event"] == events
    assert "Output before it failed" in page
    assert "sending memo" in page


async def test_a_failed_functional_run_keeps_what_it_reported_in_the_drive_that_failed(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    """The drive after the answer fails: its events up to the failure are the run's too."""
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        run = await server.start_run({"workflow": "failing_functional", "input": {"text": "memo"}})
        request = await server.wait_for_request(run["id"])
        answered = await server.respond(
            request["id"], {"decision": "answer", "answer": "kim"}, user="lee"
        )
        assert answered.status_code == 200, answered.text
        done = await server.wait_for_run(run["id"], status="failed")

    workflow = failing_functional.build()
    first = await workflow.run("memo", checkpoint_storage=InMemoryCheckpointStorage())
    seen: list[Any] = [*first]

    async def stream() -> None:
        async for event in workflow.run(responses={"sign": "kim"}, stream=True):
            seen.append(event)

    with pytest.raises(RuntimeError, match="the mail server refused memo"):
        await stream()
    events = [e.data for e in seen if str(e.type) == "saved"]
    # MAF replays the function from its start after the answer: the first event is given again
    assert events == [
        "memo saved as a draft.",
        "memo saved as a draft.",
        "memo signed by kim.",
    ]
    assert done["error"] == "RuntimeError: the mail server refused memo"
    assert [e["data"] for e in done["conversation"] if e["type"] == "event"] == events
