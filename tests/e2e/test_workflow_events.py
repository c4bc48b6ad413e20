"""A workflow's own events (`ctx.add_event`) are facts of its run: in its conversation, and on
its page, as MAF's streaming samples print them (`multi_selection_edge_group.py`'s database
writes). MAF's own events (supersteps, executors invoked) and Baton's stay out."""

from __future__ import annotations

from pathlib import Path

from tests.harness import baton_server
from tests.pages import PAGE_ENV, signed_in, text_of

ENV = PAGE_ENV | {"BATON_WORKFLOWS": "tests.fixtures.reporting_workflow"}


async def test_a_workflow_s_own_events_are_in_its_run_s_conversation_and_page(
    db_url: str, tokens: dict[str, str], passwords: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        run = await server.start_run({"workflow": "reporting", "input": {"email_id": "e-7"}})
        done = await server.wait_for_run(run["id"], status=("completed", "failed"))
        async with signed_in(server, "sam", passwords["sam"]) as sam:
            page = text_of((await sam.http.get(f"/runs/{run['id']}")).text)

    assert done["output"] == "Email e-7 handled."  # the output executor's alone
    events = [e for e in done["conversation"] if e["type"] == "event"]
    assert events == [
        {
            "type": "event",
            "event": "database_event",
            "executor": None,  # (MAF names no executor for an event it adds)
            "data": "Email e-7 saved to database.",
        },
        {
            "type": "event",
            "event": "database_rows",
            "executor": None,  # (MAF names no executor for an event it adds)
            "data": {"table": "emails", "rows": 1},
        },
        {  # an intermediate output (`intermediate_output_from`): MAF's type `intermediate`
            "type": "event",
            "event": "output",
            "executor": "store_email",
            "data": "Email e-7 stored, 1 row.",
        },
    ]
    # in words: the event's name, the step's
    assert "Event · database event Email e-7 saved to database. (from the workflow)" in page
    assert "Event · database rows from the workflow Table emails Rows 1" in page
    assert "Output along the way Email e-7 stored, 1 row. (from the store email step)" in page
    assert "superstep" not in str(done["conversation"])
