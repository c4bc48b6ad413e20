"""MAF's tool limits (`max_invocations`, `max_invocation_exceptions`) on an agent one of whose
tools asks a person first, `main()`'s turns in one session, each pause answered in a new process
(kill -9): compared, output by output and model input by model input, with MAF alone (the same
play, the same tool, `main()`'s turns in one process, each approval approved)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from agent_framework import FunctionTool, Message

from executors.platform.chat_clients import ScriptedChatClient
from tests.harness import Server, baton_server
from tests.plays import handed_turn
from tests.samples import max_exceptions as dividing
from tests.samples import max_invocations as unicorns
from tests.samples import served
from tests.samples import total_tool_calls as capped

ENV = {
    "PYTHONUNBUFFERED": "1",  # the tool's own print, kept through a kill -9
}
LIMITED = {  # workflow: (module, its play, its asking tool)
    "max_invocations_approval": (
        unicorns,
        unicorns.unicorn_play,
        unicorns.asking_unicorn_function,
    ),
    "max_exceptions_approval": (dividing, dividing.dividing_play, dividing.asking_safe_divide),
    "total_tool_calls_approval": (capped, capped.capped_play, capped.asking_search_web),
}


async def maf_alone(module: Any, play: Any, tool: FunctionTool) -> tuple[list[str], list[Any]]:
    """`main()`'s turns in one session on MAF alone, each approval approved: each turn's output,
    and what each model turn was handed."""
    inputs: list[Any] = []

    def playing(messages: Any, options: Any) -> Any:
        inputs.append(handed_turn(messages, options))
        return play(messages, options)

    agent = module.tool_agent(ScriptedChatClient(playing), copy.copy(tool))  # its count at 0
    session = agent.create_session()
    outputs = []
    for text in module.USER_MESSAGES:
        reply = await agent.run(text, session=session)
        while reply.user_input_requests:
            approved = [a.to_function_approval_response(True) for a in reply.user_input_requests]
            reply = await agent.run(Message(role="user", contents=approved), session=session)
        outputs.append(reply.text)
    return outputs, inputs


@pytest.mark.process
@pytest.mark.backends("sqlite")
@pytest.mark.parametrize("restarted", [False, True], ids=["next-turn-here", "next-turn-anew"])
@pytest.mark.parametrize("workflow", list(LIMITED))
async def test_a_tool_s_limit_holds_across_a_pause_answered_in_a_new_process_as_on_maf_alone(
    workflow: str,
    restarted: bool,
    db_url: str,
    tokens: dict[str, str],
    server_log: Path,
    tmp_path: Path,
) -> None:
    """The first turn's approved call runs (the limit's one call, or its one failure); the
    second turn's approved call, answered after a kill -9, is refused by the limit on MAF alone
    and the model hears so. The new process's tool counted from 0: the second call ran (ten
    unicorns; the division's body again). The next turn starts in the process that answered the
    turn before, or (`restarted`) in a new one, as after a deploy between turns.
    `total_tool_calls_approval` is one turn: its first batch approved after a kill -9, the tool
    loop stops at `max_function_calls` as on MAF alone (it counts within one request)."""
    module, play, tool = LIMITED[workflow]
    expected_outputs, expected_inputs = await maf_alone(module, play, tool)
    recorded = tmp_path / "model-inputs.jsonl"
    env = ENV | served(module.__name__.rpartition(".")[2]) | {"SAMPLE_MODEL_INPUTS": str(recorded)}
    outputs = await on_baton(
        workflow, module.USER_MESSAGES, restarted, env, server_log, db_url, tokens
    )
    inputs = [json.loads(line) for line in recorded.read_text().splitlines()]
    ran = server_log.read_text().count("Tool failed with error")

    assert outputs == expected_outputs
    assert inputs == expected_inputs
    if workflow == "max_exceptions_approval":
        assert ran == 1  # on MAF alone the limit keeps the second call from running the tool


async def on_baton(
    workflow: str,
    turns: list[str],
    restarted: bool,
    env: dict[str, str],
    server_log: Path,
    db_url: str,
    tokens: dict[str, str],
) -> list[str]:
    """`main()`'s turns on Baton, each continuing the one before: a turn that asks is killed
    (-9) there and answered in a new process, the next turn starting in that one, or
    (`restarted`) in another new one. Each turn's output."""
    outputs: list[str] = []
    last: dict[str, Any] | None = None  # the run before: its id, its open request if any

    async def start(server: Server, text: str) -> dict[str, Any]:
        body: dict[str, Any] = {"workflow": workflow, "input": {"text": text}}
        run = await server.start_run(body | ({"continues": last["id"]} if last else {}))
        now = await server.wait_for_run(run["id"], status=("completed", "failed", "waiting"))
        if now["status"] == "waiting":
            asked = await server.wait_for_request(run["id"])
            server.kill()
            return {"id": run["id"], "asked": asked}
        assert now["status"] == "completed", now["error"]
        outputs.append(now["output"]["text"])
        return {"id": run["id"], "asked": None}

    async def answer(server: Server, asked: dict[str, Any]) -> None:
        reply = await server.respond(asked["id"], {"decision": "approve"}, user="ada")
        assert reply.status_code == 200, reply.text
        ended = await server.wait_for_run(asked["run_id"], status=("completed", "failed"))
        assert ended["status"] == "completed", ended["error"]
        outputs.append(ended["output"]["text"])

    for text in turns:
        async with baton_server(db_url, tokens, server_log, env) as server:
            if last and last["asked"]:
                await answer(server, last["asked"])
                if restarted:
                    server.kill()
            if not (restarted and last and last["asked"]):
                last = await start(server, text)
                continue
        async with baton_server(db_url, tokens, server_log, env) as server:
            last = await start(server, text)
    if last and last["asked"]:
        async with baton_server(db_url, tokens, server_log, env) as server:
            await answer(server, last["asked"])
    return outputs
