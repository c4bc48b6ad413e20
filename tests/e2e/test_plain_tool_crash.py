"""A plain tool a person approved acts at most once through a crash of the drive that ran it.

The tool (`tests.fixtures.plain_effects`' `send_note`, a MAF `@tool` that takes no idempotency
key) writes outside Baton. Its call's start is committed before it runs and its record as soon as
it returns, not with the drive, whose model turns can take seconds: a process that dies after
the record leaves it, and the next drive gives the model the recorded result without running the
tool again; one that dies after the start and before the record (as if while the tool ran) leaves
a call nobody can say acted or not, which the next drive does not run again either: the model is
told so, and the audit trail has `effect.uncertain`.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from executors.platform.transcript import TOOL_FAILED
from human.effects import uncertain
from human.store.base import FAILED
from tests.harness import (
    Server,
    baton_server,
    eventually,
    fired_failpoints,
    jobs,
    stored_run,
    types_of,
)
from tests.pages import signed_in, text_of

pytestmark = pytest.mark.process

# the record committed as the tool returned; the drive's own commit, after its last model turn
AFTER = ("effect.recorded", "effect.before_commit")
POINTS = ("effect.started", *AFTER)
ENV = {"BATON_WORKFLOWS": "tests.fixtures.plain_effects"}


async def courier_waiting(
    db_url: str, tokens: dict[str, str], log: Path, env: dict[str, str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A courier run sending "hello", and its approval, pending (a server of its own, stopped)."""
    async with baton_server(db_url, tokens, log, env) as server:
        return await courier_asking(server)


async def courier_asking(server: Server) -> tuple[dict[str, Any], dict[str, Any]]:
    """A courier run sending "hello" on `server`, and its approval, pending."""
    run = await server.start_run({"workflow": "courier", "input": {"text": "hello"}})
    return run, await server.wait_for_request(run["id"])


async def approved_into(
    failpoint: str, db_url: str, tokens: dict[str, str], log: Path, env: dict[str, str]
) -> dict[str, Any]:
    """A courier run, approved on a server armed to die at `failpoint`, which it did.

    The server that pauses it is the one that dies: no effect point is passed before the call a
    person approves.
    """
    armed = env | {"BATON_FAILPOINTS": f"{failpoint}=exit"}
    async with baton_server(db_url, tokens, log, armed) as server:
        run, approval = await courier_asking(server)
        reply = await server.respond(approval["id"], {"decision": "approve"}, user="lee")
        assert reply.status_code == 200, reply.text
        assert await server.wait_exit() == 137
    assert fired_failpoints(log) == [failpoint]
    return run


@pytest.mark.parametrize("failpoint", AFTER)
async def test_an_approved_plain_tool_acts_once_through_a_crash_after_it_ran(
    failpoint: str, db_url: str, tokens: dict[str, str], server_log: Path, tmp_path: Path
) -> None:
    sent = tmp_path / "sent.txt"
    env = ENV | {"BATON_TEST_EFFECTS": str(sent)}
    run = await approved_into(failpoint, db_url, tokens, server_log, env)
    assert sent.read_text() == "hello\n"  # the tool acted, then the process died

    async with baton_server(db_url, tokens, server_log, env) as server:
        done = await server.wait_for_run(run["id"], status=("completed", "failed"))
        events = await server.audit(run["id"])

    assert done["status"] == "completed", done["error"]
    assert sent.read_text() == "hello\n"  # not again
    assert done["output"]["text"] == "Done: sent: hello"
    assert types_of(events).count("effect.executed") == 1
    assert jobs(db_url) == []


@pytest.mark.parametrize(
    ("failpoint", "detailed"),
    [(None, False), *((point, False) for point in AFTER), (None, True), (AFTER[0], True)],
)
async def test_a_plain_tool_that_acted_then_raised_tells_the_model_and_never_runs_again(
    failpoint: str | None,
    detailed: bool,
    db_url: str,
    tokens: dict[str, str],
    passwords: dict[str, str],
    server_log: Path,
    tmp_path: Path,
) -> None:
    """The tool wrote, then raised. The model is told as MAF's own loop tells it, and the run
    goes on; the failure is kept as the call's result (`effect.failed`), so the drive after a
    crash (at its record, or at the drive's commit) tells the model the same, and never calls the
    tool again: it may have acted before it raised, as here. Where the agent's client sets
    `include_detailed_errors` (`detailed`), MAF tells the model what the tool raised, and so does
    the drive after the crash, in the same words."""
    sent = tmp_path / "sent.txt"
    env = ENV | {"BATON_TEST_EFFECTS": str(sent), "BATON_TEST_SEND_RAISES": "1"}
    if detailed:
        env |= {"BATON_TEST_DETAILED_ERRORS": "1"}
    if failpoint is None:
        run, approval = await courier_waiting(db_url, tokens, server_log, env)
        async with baton_server(db_url, tokens, server_log, env) as server:
            assert (
                await server.respond(approval["id"], {"decision": "approve"}, user="lee")
            ).is_success
    else:
        run = await approved_into(failpoint, db_url, tokens, server_log, env)
        assert sent.read_text() == "hello\n"  # it acted, raised, and the process died

    async with baton_server(db_url, tokens, server_log, env) as server:
        done = await server.wait_for_run(run["id"], status=("completed", "failed"))
        events = await server.audit(run["id"])
        async with signed_in(server, "lee", passwords["lee"]) as lee:
            drawn = (await lee.http.get(f"/runs/{run['id']}")).text
            page = text_of(drawn)

    assert done["status"] == "completed", done["error"]
    assert sent.read_text() == "hello\n"  # once
    # never a green "completed": it may have acted before it raised
    assert re.search(r'class="badge outcome-bad"[^>]*>send_note failed<', drawn), drawn
    raised = "the relay hung up after the note went out"
    told = f"{TOOL_FAILED} Exception: {raised}" if detailed else TOOL_FAILED  # MAF's words
    assert done["output"]["text"] == f"Done: {told}"
    assert [e["result"] for e in done["conversation"] if e["type"] == "tool_result"] == [told]
    error = f"ConnectionError: {raised}"
    [failed] = [e for e in events if e["type"].startswith("effect.")]
    assert failed["type"] == "effect.failed"
    assert failed["data"]["result"] == {FAILED: error}
    assert f"Tool call failed — send_note failed: {error}" in page
    assert jobs(db_url) == []


async def test_a_plain_tool_cut_off_before_its_record_is_not_run_again_and_the_model_is_told(
    db_url: str,
    tokens: dict[str, str],
    passwords: dict[str, str],
    server_log: Path,
    tmp_path: Path,
) -> None:
    sent = tmp_path / "sent.txt"
    env = ENV | {"BATON_TEST_EFFECTS": str(sent)}
    run = await approved_into("effect.started", db_url, tokens, server_log, env)
    assert not sent.exists()  # (here the tool had not acted; Baton cannot know that)

    async with baton_server(db_url, tokens, server_log, env) as server:
        done = await server.wait_for_run(run["id"], status=("completed", "failed"))
        events = await server.audit(run["id"])
        [approval] = done["requests"]
        async with signed_in(server, "lee", passwords["lee"]) as lee:
            page = text_of((await lee.http.get(f"/runs/{run['id']}")).text)
            listed = (await lee.http.get("/runs")).text
            approved = text_of((await lee.http.get(f"/requests/{approval['id']}")).text)

    assert done["status"] == "completed", done["error"]
    assert not sent.exists()  # not run again
    # the runs list, as the run's page: completed, but the call is to be checked (never green)
    row = re.search(rf'data-run-id="{run["id"]}".*?</tr>', listed, re.DOTALL)
    assert row, listed
    assert re.search(r'class="badge outcome-bad"[^>]*>send_note uncertain<', row.group(0))
    assert "send_note uncertain" in page
    # the approver's own page: not plainly done, but what the effect.uncertain event says
    said = (
        r"Approved by lee at [\d-]+ [\d:]+ UTC\. The run has ended: completed "
        r"\(send_note uncertain\)\. "
        r"send_note may or may not have acted: it was cut off while it ran \( ?[\d-]+ [\d:]+ "
        r"UTC ?\), called with text “hello”, and was not run again\. Check whether it acted before "
        r"calling it again\."
    )
    assert re.search(said, approved), approved
    notice = (
        r"send_note may or may not have acted \( ?\d{4}-\d\d-\d\d \d\d:\d\d UTC ?\): it was cut "
        r"off before it returned \(its process stopped, or its run was cancelled or taken over\), "
        r"so Baton cannot tell\. It was not run again, and the agent was told so\. Check whether "
        r"it acted\."
    )
    assert re.search(notice, page), page
    assert "Tool call cut off — send_note may or may not have acted; it was not run again" in page
    told = uncertain("send_note")
    assert done["output"]["text"] == f"Done: {told}"
    assert [e["result"] for e in done["conversation"] if e["type"] == "tool_result"] == [told]
    [cut_off] = [e for e in events if e["type"].startswith("effect.")]
    assert cut_off["type"] == "effect.uncertain"
    assert cut_off["data"]["arguments"] == {"text": "hello"}
    assert jobs(db_url) == []


async def approved_until_the_tool_begins(server: Server, approval_id: str, sent: Path) -> None:
    """Lee approves the courier's call; back once the (slow) tool has begun."""
    reply = await server.respond(approval_id, {"decision": "approve"}, user="lee")
    assert reply.status_code == 200, reply.text
    started = Path(f"{sent}.started")

    async def tool_began() -> bool:
        return started.exists()

    await eventually(tool_began, what="the tool to begin")


@pytest.mark.parametrize(("grace", "said"), [("20", "sent: hello"), ("0", None)])
async def test_a_stopped_server_lets_a_running_tool_finish_within_its_grace(
    grace: str,
    said: str | None,
    db_url: str,
    tokens: dict[str, str],
    server_log: Path,
    tmp_path: Path,
) -> None:
    """SIGTERM (a deploy) while an approved plain tool runs: the server leases nothing more and
    lets the drive reach its commit within `BATON_SHUTDOWN_GRACE_SECONDS`; with no grace it
    cancels the drive, and the call it cut off is recorded uncertain, never run again."""
    sent = tmp_path / "sent.txt"
    env = ENV | {"BATON_TEST_EFFECTS": str(sent), "BATON_TEST_SLOW_SEND": "2"}
    run, approval = await courier_waiting(db_url, tokens, server_log, env)
    stopping = env | {"BATON_SHUTDOWN_GRACE_SECONDS": grace}
    async with baton_server(db_url, tokens, server_log, stopping) as server:
        await approved_until_the_tool_begins(server, approval["id"], sent)
        assert server.proc is not None
        server.proc.send_signal(signal.SIGTERM)
        # uvicorn shuts down, then raises the signal again: the process ends as SIGTERM's
        assert await server.wait_exit() == -signal.SIGTERM
        assert "Application shutdown complete." in server.log_tail(200)
    stopped = await stored_run(db_url, run["id"])

    async with baton_server(
        db_url, tokens, server_log, ENV | {"BATON_TEST_EFFECTS": str(sent)}
    ) as server:
        done = await server.wait_for_run(run["id"], status=("completed", "failed"))
        events = await server.audit(run["id"])

    kinds = [e["type"] for e in events if e["type"].startswith("effect.")]
    if said is not None:  # the drive ended before the process: the tool acted, recorded once
        assert stopped["status"] == "completed"
        assert sent.read_text() == "hello\n"
        assert kinds == ["effect.executed"]
    else:  # cut off as it slept: it did not act, and is not run again
        assert not sent.exists()
        assert kinds == ["effect.uncertain"]
        said = uncertain("send_note")
    assert done["output"]["text"] == f"Done: {said}"
    assert jobs(db_url) == []


async def test_a_stopped_worker_lets_a_running_tool_finish_within_its_grace(
    db_url: str, tokens: dict[str, str], server_log: Path, tmp_path: Path
) -> None:
    """`baton worker` beside a `serve --no-worker`, stopped (SIGTERM) while the tool runs."""
    sent = tmp_path / "sent.txt"
    env = ENV | {"BATON_TEST_EFFECTS": str(sent), "BATON_TEST_SLOW_SEND": "2"}
    async with baton_server(db_url, tokens, server_log, env, args=["--no-worker"]) as server:
        with server_log.open("ab") as out:
            worker = subprocess.Popen(
                [sys.executable, "-m", "baton", "worker"],
                env={**os.environ, "BATON_DATABASE_URL": db_url, "BATON_WORKER_POLL_MS": "50"}
                | env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            run = await server.start_run({"workflow": "courier", "input": {"text": "hello"}})
            approval = await server.wait_for_request(run["id"])
            await approved_until_the_tool_begins(server, approval["id"], sent)
            worker.send_signal(signal.SIGTERM)
            assert await asyncio.to_thread(worker.wait, 30) == 0
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
        done = await server.run(run["id"])
        events = await server.audit(run["id"])

    assert done["status"] == "completed", done
    assert done["output"]["text"] == "Done: sent: hello"
    assert sent.read_text() == "hello\n"
    assert [e["type"] for e in events if e["type"].startswith("effect.")] == ["effect.executed"]
