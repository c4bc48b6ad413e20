"""The AG-UI reference client, `@ag-ui/client`'s `HttpAgent` under node, against `/agui`.

`tests/agui_client/client.mjs` is a front end without a page: it keeps one agent per person and
thread, as a page does, runs the steps this test sends it and reports what the client made of the
stream (its interrupts, result, pending interrupts, errors). The client checks the stream as it
reads it (`verifyEvents`: the order of runs and events), so a stream it accepts is one a real
AG-UI front end accepts. `npm ci` installs the client from the lockfile (Debian's nodejs).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness import REFUND_120, Server, digest

CLIENT = Path(__file__).parents[1] / "agui_client"


@pytest.fixture
def server(samples_server: Server) -> Server:
    return samples_server


@pytest.fixture(scope="session")
def installed_client() -> Path:
    """@ag-ui/client installed from tests/agui_client/package-lock.json, once."""
    if not (CLIENT / "node_modules" / "@ag-ui" / "client").is_dir():
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund"], cwd=CLIENT, check=True, capture_output=True
        )
    return CLIENT


class FrontEnd:
    """client.mjs in a child process: steps in, the client's reports out."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self._early: list[dict[str, Any]] = []

    async def send(self, step: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(step).encode() + b"\n")
        await self.proc.stdin.drain()

    async def report(self, step: str, timeout: float = 30.0) -> dict[str, Any]:
        """The next report of `step` (reports of other steps are kept for later)."""
        for index, early in enumerate(self._early):
            if early["step"] == step:
                return self._early.pop(index)
        assert self.proc.stdout is not None
        async with asyncio.timeout(timeout):
            while True:
                line = await self.proc.stdout.readline()
                assert line, f"the client ended: {await self._stderr()}"
                found: dict[str, Any] = json.loads(line)
                if found["step"] == step:
                    return found
                self._early.append(found)

    async def _stderr(self) -> str:
        assert self.proc.stderr is not None
        return (await self.proc.stderr.read()).decode(errors="replace")


async def front_end(server: Server, where: Path) -> AsyncIterator[FrontEnd]:
    proc = await asyncio.create_subprocess_exec(
        "node",
        str(where / "client.mjs"),
        server.base_url,
        cwd=where,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        yield FrontEnd(proc)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


@pytest.fixture
async def page(server: Server, installed_client: Path) -> AsyncIterator[FrontEnd]:
    async for running in front_end(server, installed_client):
        yield running


async def test_the_reference_client_is_asked_answers_and_follows_an_inbox_answer(
    server: Server, page: FrontEnd, db_url: str
) -> None:
    sam, lee = server.tokens["sam"], server.tokens["lee"]
    refund = {"workflow": "refund", "state": REFUND_120["input"]}

    # sam's page starts a refund; the client ends the run on its interrupt
    await page.send({"id": "start", "as": sam, "threadId": "page-1", "follow": False, **refund})
    [interrupt] = (await page.report("start"))["interrupts"]
    started = await page.report("start")
    assert started.get("error") is None, started
    assert started["pending"] == [interrupt["id"]]
    assert (started["events"][0], started["events"][-1]) == ("RUN_STARTED", "RUN_FINISHED")
    assert "MESSAGES_SNAPSHOT" in started["events"]
    pending = await server.request(interrupt["id"])
    assert (interrupt["reason"], interrupt["message"]) == ("approval", pending["title"])
    assert interrupt["responseSchema"] == pending["response_schema"]
    run_id = interrupt["metadata"]["baton"]["run_id"]

    # lee's page opens the run by its id and follows it: the same interrupt
    lees = {"as": lee, "threadId": run_id, **refund}
    await page.send({"id": "open", **lees})
    assert [i["id"] for i in (await page.report("open"))["interrupts"]] == [interrupt["id"]]

    # a rejection without its reason: the client gets the API's 422, nothing is stored
    before = digest(db_url)
    bad = {"decision": "reject"}
    entry = {"interruptId": interrupt["id"], "status": "resolved"}
    await page.send({"id": "bad", "resume": [entry | {"payload": bad}], **lees})
    refused = await page.report("bad")
    api = await server.respond(interrupt["id"], bad, user="lee")
    assert (refused["status"], refused["payload"]) == (422, api.json()), refused
    assert digest(db_url) == before

    # approved from lee's page: the client's run finishes with the run's output; the stream the
    # page opened before ends at its interrupt instead of showing the same continuation again
    approve = [entry | {"payload": {"decision": "approve"}}]
    await page.send({"id": "approve", "resume": approve, **lees})
    approved = await page.report("approve")
    done = await server.wait_for_run(run_id, status="completed")
    assert approved.get("error") is None, approved
    assert (approved["result"], approved["pending"]) == (done["output"], [])
    opened = await page.report("open")
    assert opened.get("error") is None, opened
    assert opened["events"].count("RUN_STARTED") == 1
    assert opened["events"][-1] == "RUN_FINISHED"

    # sam's page follows another refund; lee answers in the inbox; sam's page sees the end
    await page.send({"id": "follow", "as": sam, "threadId": "page-2", **refund})
    [asked] = (await page.report("follow"))["interrupts"]
    answered = await server.respond(asked["id"], {"decision": "approve"}, user="lee")
    assert answered.status_code == 200, answered.text
    followed = await page.report("follow")
    other = await server.wait_for_run(asked["metadata"]["baton"]["run_id"], status="completed")
    assert followed.get("error") is None, followed
    assert (followed["result"], followed["pending"]) == (other["output"], [])
    assert followed["events"].count("RUN_STARTED") == 2  # the run that moved on without it
