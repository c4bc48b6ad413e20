"""What a workflow outputs before it pauses is the run's too, as MAF alone gives it.

MAF gives a workflow's outputs run by run: the greeting comes with the first run, each thanks
with the run that delivered the answer. Baton drives each of those runs in whichever process
holds the run, so the outputs of a drive that pauses are kept in the checkpoint it pauses at: the
waiting run shows them, and the run ends with every one, in order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_framework import WorkflowRunState

from tests.fixtures.feedback_workflow import Visit, build_feedback
from tests.harness import baton_server
from tests.pages import PAGE_ENV, signed_in, text_of

ENV = {"BATON_WORKFLOWS": "tests.fixtures.feedback_workflow"} | PAGE_ENV
ANSWERS = ["Ada", "Lovely gardens"]


async def on_maf_alone() -> list[Any]:
    """Each run's outputs, in order, the sample's loop answering each question."""
    workflow = build_feedback()
    outputs: list[Any] = []
    result = await workflow.run(Visit(place="Kew"))
    for answer in ANSWERS:
        outputs += result.get_outputs()
        [asked] = result.get_request_info_events()
        result = await workflow.run(responses={asked.request_id: answer})
    assert result.get_final_state() == WorkflowRunState.IDLE
    return outputs + result.get_outputs()


async def test_a_run_keeps_what_it_output_before_each_pause(
    db_url: str, tokens: dict[str, str], passwords: dict[str, str], server_log: Path
) -> None:
    seen: list[Any] = []
    pages: list[str] = []
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        run = await server.start_run({"workflow": "feedback", "input": {"place": "Kew"}})
        for answer in ANSWERS:
            asked = await server.wait_for_request(run["id"])
            seen.append((await server.run(run["id"]))["output"])  # waiting: its outputs so far
            async with signed_in(server, "lee", passwords["lee"]) as lee:
                pages.append(text_of((await lee.http.get(f"/runs/{run['id']}")).text))
            body = {"decision": "answer", "answer": answer}
            reply = await server.respond(asked["id"], body, user="lee")
            assert reply.status_code == 200, reply.text
            await server.wait_for_request(run["id"], status="resumed")
        done = await server.wait_for_run(run["id"], status="completed")
        events = await server.audit(run["id"])
        async with signed_in(server, "lee", passwords["lee"]) as lee:
            pages.append(text_of((await lee.http.get(f"/runs/{run['id']}")).text))

    alone = await on_maf_alone()
    assert alone == [
        "Welcome to Kew!",
        "Nice to meet you, Ada.",
        "Thank you for your feedback: Lovely gardens",
        {"feedback": "Lovely gardens", "steps": 2},
    ]
    assert done["output"] == alone
    assert seen == ["Welcome to Kew!", alone[:2]]
    [completed] = [e for e in events if e["type"] == "run.completed"]
    assert completed["data"]["output"] == alone
    # the run's page says what a waiting run has output so far, and a completed one's output
    assert ["Output so far" in page for page in pages] == [True, True, False]
    assert "Nice to meet you, Ada." in pages[1]
    assert "Thank you for your feedback: Lovely gardens" in pages[2]


async def test_a_cancelled_run_says_its_output_came_before_it_was_cancelled(
    db_url: str, tokens: dict[str, str], passwords: dict[str, str], server_log: Path
) -> None:
    """What a run output before it was cancelled is no result of it: the page says so."""
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        run = await server.start_run({"workflow": "feedback", "input": {"place": "Kew"}})
        await server.wait_for_request(run["id"])
        async with server.client("sam") as sam:
            reply = await sam.post(f"/api/runs/{run['id']}/cancel", json={"reason": "No visit."})
            assert reply.status_code == 200, reply.text
        await server.wait_for_run(run["id"], status="cancelled")
        async with signed_in(server, "lee", passwords["lee"]) as lee:
            page = text_of((await lee.http.get(f"/runs/{run['id']}")).text)

    assert "Output before it was cancelled Welcome to Kew!" in page
    assert "Output Welcome to Kew!" not in page  # as if it were what the run came to
    assert "Output so far" not in page
