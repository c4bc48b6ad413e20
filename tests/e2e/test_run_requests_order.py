"""A run's requests are shown in the order the workflow asked them: one step's two approvals (or
one model turn's calls) read as the workflow made them, on the run's API resource and its page,
as in its conversation and audit trail. (They were listed newest first, the inbox's order.)"""

from __future__ import annotations

import re
from pathlib import Path

from tests.harness import baton_server
from tests.pages import PAGE_ENV, signed_in

ENV = PAGE_ENV | {"BATON_WORKFLOWS": "tests.fixtures.twin_workflow"}


async def test_a_run_s_requests_are_listed_in_the_order_they_were_asked(
    db_url: str, tokens: dict[str, str], passwords: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        run = await server.start_run({"workflow": "twin", "input": {"item": "laptop"}})
        await server.wait_for_run(run["id"], status="waiting")
        shown = await server.run(run["id"])
        async with signed_in(server, "ada", passwords["ada"]) as ada:
            page = (await ada.http.get(f"/runs/{run['id']}")).text
        async with server.client("ada") as c:
            inbox = (await c.get("/api/requests", params={"run_id": run["id"]})).json()

    # TwinDesk asks legal, then finance, in one step
    assert [r["title"] for r in shown["requests"]] == ["legal: laptop", "finance: laptop"]
    rows = re.findall(r'class="request-row" data-request-id="([^"]+)"', page)
    assert rows == [r["id"] for r in shown["requests"]]
    # the inbox's list stays newest first
    assert [r["title"] for r in inbox["items"]] == ["finance: laptop", "legal: laptop"]
