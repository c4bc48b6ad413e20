"""MAF's `state_with_agents`, `workflow_kwargs_per_agent`, `sub_workflow_basics` and
`checkpoint_with_resume` (`tests.samples`), each paused once, killed (-9) and answered in a new
process: compared, output by output and model input by model input, with MAF alone (the same
plays, the pause answered in one process). The workflow state `state_with_agents` keeps before
its detector's pause is what its executors read after it (the email reaches the assistant);
`workflow_kwargs_per_agent`'s kwargs reach each agent's tools after the pause (the researcher's
approved query, the writer's formatting), and none is stored in the checkpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agent_framework import AgentResponse, Workflow

from executors.platform.chat_clients import ScriptedChatClient
from tests.e2e.test_maf_samples import checkpoint_text
from tests.harness import baton_server, stored_run
from tests.plays import handed_turn
from tests.samples import checkpoint_with_resume as factors
from tests.samples import served
from tests.samples import state_with_agents as emails
from tests.samples import sub_workflow_basics as texts
from tests.samples import workflow_kwargs_per_agent as per_agent

EMAIL = "Hi team, the Q3 review moves to Thursday. Ann"
APPROVE = {"decision": "approve"}


def _recording(play: Any, inputs: list[Any]) -> ScriptedChatClient:
    def playing(messages: Any, options: Any) -> Any:
        inputs.append(handed_turn(messages, options))
        return play(messages, options)

    return ScriptedChatClient(playing)


async def maf_alone(workflow: str) -> tuple[list[Any], list[Any]]:
    """The sample on MAF alone, its pause answered in the same process: its outputs, and what
    each model turn was handed."""
    inputs: list[Any] = []
    kwargs: dict[str, Any] = {}
    wf: Workflow
    if workflow == "state_with_agents":
        wf = emails.build(
            _recording(emails.detector_play, inputs), _recording(emails.assistant_play, inputs)
        )
        message: Any = EMAIL
    elif workflow == "workflow_kwargs_per_agent":
        wf = per_agent.build(_recording(per_agent._play, inputs))
        message, kwargs = (
            per_agent.Ask().request,
            {"function_invocation_kwargs": per_agent.PER_AGENT_FI_KWARGS},
        )
    elif workflow == "sub_workflow_basics":
        texts.TextProcessingOrchestrator.results.clear()  # as a new process has it
        wf, message = texts.build(), list(texts.TEXTS)
    else:
        wf, message = factors.build(), 10
    result = await wf.run(message, **kwargs)
    while asked := result.get_request_info_events():
        answers = {
            r.request_id: r.data.to_function_approval_response(True)
            if hasattr(r.data, "to_function_approval_response")
            else "Now it has words."
            for r in asked
        }
        result = await wf.run(responses=answers, **kwargs)
    outputs = [list(o) if isinstance(o, list) else o for o in result.get_outputs()]
    texts.TextProcessingOrchestrator.results.clear()
    return outputs, inputs


BATON = {  # workflow: (input, answer)
    "state_with_agents": ({"email": EMAIL}, APPROVE),
    "workflow_kwargs_per_agent": ({}, APPROVE),
    "sub_workflow_basics": ({}, {"decision": "answer", "answer": "Now it has words."}),
    "checkpoint_with_resume": ({"upper_limit": 10}, {"decision": "answer", "answer": "go on"}),
}


@pytest.mark.process
@pytest.mark.backends("sqlite")
@pytest.mark.parametrize("workflow", list(BATON))
async def test_a_sample_paused_and_answered_after_kill_9_ends_as_on_maf_alone(
    workflow: str, db_url: str, tokens: dict[str, str], server_log: Path, tmp_path: Path
) -> None:
    outputs, expected_inputs = await maf_alone(workflow)
    recorded = tmp_path / "model-inputs.jsonl"
    env = served(workflow) | {"SAMPLE_MODEL_INPUTS": str(recorded)}
    run_input, reply = BATON[workflow]
    async with baton_server(db_url, tokens, server_log, env) as server:
        run = await server.start_run({"workflow": workflow, "input": run_input})
        asked = await server.wait_for_request(run["id"])
        paused = await stored_run(db_url, run["id"])
        stored = await checkpoint_text(db_url, paused["checkpoint_id"])
        server.kill()
    async with baton_server(db_url, tokens, server_log, env) as server:
        answered = await server.respond(asked["id"], reply, user="ada")
        assert answered.status_code == 200, answered.text
        ended = await server.wait_for_run(run["id"], status=("completed", "failed"))
    inputs = (
        [json.loads(line) for line in recorded.read_text().splitlines()]
        if recorded.exists()
        else []
    )
    assert ended["status"] == "completed", ended["error"]
    assert inputs == expected_inputs
    if workflow == "sub_workflow_basics":  # its results are a class attribute, which no
        # checkpoint carries: answered in a new process, it collects one of six and yields
        # nothing, as on MAF alone restored from a FileCheckpointStorage in a new process
        # (`baton check` says so); in one process MAF alone yields the six
        assert len(outputs[0]) == 6
        outputs = []
    assert ended["output"] == _as_json(outputs), ended["output"]
    if workflow == "workflow_kwargs_per_agent":  # the kwargs were given again, never stored
        assert "contoso-sql.database.windows.net" not in stored, stored


def _as_json(outputs: list[Any]) -> Any:
    """MAF alone's outputs as Baton's API gives them: an agent's reply as its author and text
    (its structured value too), the one output alone, else the list."""

    def one(output: Any) -> Any:
        if isinstance(output, AgentResponse):
            reply = {"agent": output.messages[-1].author_name, "text": output.text}
            return reply | ({"value": output.value.model_dump()} if output.value else {})
        return json.loads(json.dumps(output, default=lambda o: getattr(o, "__dict__", str(o))))

    return one(outputs[0]) if len(outputs) == 1 else [one(o) for o in outputs]


def test_a_sample_s_results_in_a_class_attribute_are_shared_by_every_run_of_a_process() -> None:
    """Why `sub_workflow_basics` ends empty after a restart: `results` is the class's list."""
    assert "results" not in vars(texts.TextProcessingOrchestrator())
