"""MAF's workflows made agents (`.as_agent()`), each turn of `main()`'s session a run continuing
the one before, compared with MAF alone: what each agent's model is handed, turn by turn, and
the replies; each turn's pause (a person's review of an agent's reply, or of a tool call)
answered after a kill -9.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest
from agent_framework import Content, Message
from agent_framework.orchestrations import AgentRequestInfoResponse

from executors.platform.chat_clients import PLAYS, ScriptedChatClient
from tests.e2e.test_maf_samples import all_approved
from tests.harness import baton_server
from tests.samples import served

SAMPLES = {
    "sequential_workflow_agent": "sequential-workflow-agent",
    "concurrent_workflow_agent": "concurrent-workflow-agent",
    "workflow_agent_kwargs": "workflow-agent-kwargs",
    "workflow_agent_checkpoint": "workflow-agent-checkpoint",
}


async def maf_alone(workflow: str, ask: bool = False) -> list[list[dict[str, Any]]]:
    """`main()`'s turns in one session on MAF alone, each turn's replies.

    No one asked (an approval changes nothing); or, `ask`, each pause approved as MAF's
    `workflow_as_agent_human_in_the_loop.py` answers it, outside the session (with it, MAF
    raises "Unexpected content type while awaiting request info responses").
    """
    module = importlib.import_module(f"tests.samples.{workflow}")
    agent = module.build_agent(ScriptedChatClient(PLAYS[SAMPLES[workflow]]), ask=ask)
    kwargs = module.main_kwargs() if hasattr(module, "main_kwargs") else {}
    session = agent.create_session()
    replies = []
    for query in module.QUERIES:
        response = await agent.run(query, session=session, **kwargs)
        while asked := [
            c.to_function_approval_response(True)
            if c.type == "function_approval_request"
            else Content(
                "function_result", call_id=c.call_id, result=AgentRequestInfoResponse.approve()
            )
            for m in response.messages
            for c in m.contents
            if c.type == "function_approval_request"
            or (c.type == "function_call" and c.name == "request_info")
        ]:
            role = "tool" if asked[0].type == "function_result" else "user"
            response = await agent.run(Message(role, asked), **kwargs)
        replies.append([{"agent": m.author_name, "text": m.text} for m in response.messages])
    return replies


def traced(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.process
@pytest.mark.backends("sqlite")
@pytest.mark.parametrize("workflow", list(SAMPLES))
async def test_a_workflow_made_an_agent_goes_on_turn_by_turn_as_on_maf_alone(
    workflow: str,
    db_url: str,
    tokens: dict[str, str],
    server_log: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = importlib.import_module(f"tests.samples.{workflow}")
    alone_trace, asked_trace = tmp_path / "alone.jsonl", tmp_path / "asked.jsonl"
    baton_trace = tmp_path / "baton.jsonl"
    monkeypatch.setenv("SAMPLE_MODEL_TRACE", str(alone_trace))
    alone = await maf_alone(workflow)
    monkeypatch.setenv("SAMPLE_MODEL_TRACE", str(asked_trace))
    await maf_alone(workflow, ask=True)
    monkeypatch.setenv("SAMPLE_MODEL_TRACE", str(baton_trace))
    env = served(workflow) | {"SAMPLE_MODEL_TRACE": str(baton_trace)}
    ended: list[dict[str, Any]] = []
    turn_one = 0
    for query in module.QUERIES:  # each turn asks; the server is killed while it waits
        body = {"workflow": workflow, "input": {"text": query}}
        async with baton_server(db_url, tokens, server_log, env) as server:
            run = await server.start_run(body | ({"continues": ended[-1]["id"]} if ended else {}))
            await server.wait_for_request(run["id"])
            server.kill()
        async with baton_server(db_url, tokens, server_log, env) as server:
            ended.append(await all_approved(server, run["id"]))
        turn_one = turn_one or len(traced(baton_trace))

    assert [e["status"] for e in ended] == ["completed"] * len(module.QUERIES)
    # each turn's reply, as MAF alone's agent makes its response
    outputs = [e["output"] if isinstance(e["output"], list) else [e["output"]] for e in ended]
    assert outputs == alone
    # what each model was handed, call by call: as on MAF alone, where no one was asked (but
    # for how MAF names an agent's tool messages, which a pause in its tool loop changes)
    assert unnamed_in_loop(traced(baton_trace)) == unnamed_in_loop(traced(alone_trace))
    # the first turn, its pause answered after a kill -9: as MAF alone's, answered at once
    assert traced(baton_trace)[:turn_one] == traced(asked_trace)[:turn_one]


def unnamed_in_loop(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`calls` with the author of each tool call and result left out."""
    return [
        call
        | {
            "messages": [
                [role, None if any(isinstance(c, dict) for c in said) else author, said]
                for role, author, said in call["messages"]
            ]
        }
        for call in calls
    ]
