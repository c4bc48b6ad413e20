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

import re
from pathlib import Path

import pytest

from human.effects import uncertain
from tests.harness import baton_server, fired_failpoints, jobs, types_of
from tests.pages import signed_in, text_of

pytestmark = pytest.mark.process

# the record committed as the tool returned; the drive's own commit, after its last model turn
AFTER = ("effect.recorded", "effect.before_commit")
POINTS = ("effect.started", *AFTER)
ENV = {"BATON_WORKFLOWS": "tests.fixtures.plain_effects"}


@pytest.mark.parametrize("failpoint", AFTER)
async def test_an_approved_plain_tool_acts_once_through_a_crash_after_it_ran(
    failpoint: str, db_url: str, tokens: dict[str, str], server_log: Path, tmp_path: Path
) -> None:
    sent = tmp_path / "sent.txt"
    env = ENV | {"BATON_TEST_EFFECTS": str(sent)}
    async with baton_server(db_url, tokens, server_log, env) as server:
        run = await server.start_run({"workflow": "courier", "input": {"text": "hello"}})
        approval = await server.wait_for_request(run["id"])
    armed = env | {"BATON_FAILPOINTS": f"{failpoint}=exit"}
    async with baton_server(db_url, tokens, server_log, armed) as server:
        reply = await server.respond(approval["id"], {"decision": "approve"}, user="lee")
        assert reply.status_code == 200, reply.text
        assert await server.wait_exit() == 137

    assert fired_failpoints(server_log) == [failpoint]
    assert sent.read_text() == "hello\n"  # the tool acted, then the process died

    async with baton_server(db_url, tokens, server_log, env) as server:
        done = await server.wait_for_run(run["id"], status=("completed", "failed"))
        events = await server.audit(run["id"])

    assert done["status"] == "completed", done["error"]
    assert sent.read_text() == "hello\n"  # not again
    assert done["output"]["text"] == "Done: sent: hello"
    assert types_of(events).count("effect.executed") == 1
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
    async with baton_server(db_url, tokens, server_log, env) as server:
        run = await server.start_run({"workflow": "courier", "input": {"text": "hello"}})
        approval = await server.wait_for_request(run["id"])
    armed = env | {"BATON_FAILPOINTS": "effect.started=exit"}
    async with baton_server(db_url, tokens, server_log, armed) as server:
        reply = await server.respond(approval["id"], {"decision": "approve"}, user="lee")
        assert reply.status_code == 200, reply.text
        assert await server.wait_exit() == 137

    assert fired_failpoints(server_log) == ["effect.started"]
    assert not sent.exists()  # (here the tool had not acted; Baton cannot know that)

    async with baton_server(db_url, tokens, server_log, env) as server:
        done = await server.wait_for_run(run["id"], status=("completed", "failed"))
        events = await server.audit(run["id"])
        async with signed_in(server, "lee", passwords["lee"]) as lee:
            page = text_of((await lee.http.get(f"/runs/{run['id']}")).text)

    assert done["status"] == "completed", done["error"]
    assert not sent.exists()  # not run again
    notice = (
        r"send_note may or may not have acted \( ?\d{4}-\d\d-\d\d \d\d:\d\d UTC ?\): it was cut "
        r"off before it returned \(its process stopped, or its run was cancelled or taken over\), "
        r"so Baton cannot tell\. It was not run again, and the agent was told so\. Check whether "
        r"it acted\."
    )
    assert re.search(notice, page), page
    assert (
        "effect.uncertain by system — send_note may have run: it was cut off while it ran" in page
    )
    told = uncertain("send_note")
    assert done["output"]["text"] == f"Done: {told}"
    assert [e["result"] for e in done["conversation"] if e["type"] == "tool_result"] == [told]
    [cut_off] = [e for e in events if e["type"].startswith("effect.")]
    assert cut_off["type"] == "effect.uncertain"
    assert cut_off["data"]["arguments"] == {"text": "hello"}
    assert jobs(db_url) == []
