"""MAF's FIDES samples (`02-agents/security/email_security_example.py` and
`repo_confidentiality_example.py`, `tests.samples`), each driven to the approval FIDES asks for a
call its policy flags, the approval answered (approved, or rejected) in a new process after a
kill -9: compared, model input by model input, request by request and output by output, with MAF
alone (the same plays, the sample's turns in one session in one process)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from agent_framework import Message

from executors.platform.chat_clients import ScriptedChatClient
from tests.harness import baton_server, eventually
from tests.pages import PAGE_ENV, signed_in, text_of
from tests.plays import handed_turn
from tests.samples import email_security as email
from tests.samples import repo_confidentiality as repo
from tests.samples import served

ENV = PAGE_ENV | served("email_security", "repo_confidentiality") | {"PYTHONUNBUFFERED": "1"}
SAMPLES = {  # workflow: (module, turns, the plays)
    "email_security": (email, email.USER_MESSAGES),
    "repo_confidentiality": (repo, [repo.USER_MESSAGE]),
}
HIDDEN = re.compile(r"var_[0-9a-f]{16}")
SENT = re.compile(r"msg_[0-9]{4}")  # `send_email`'s `hash(to + subject)`: each process its own
MAF_REJECTED = "Error: Tool call invocation was rejected by user."
REJECTED = "Rejected by ada: not that"  # Baton: the model hears who, and why


def numbered(value: Any) -> Any:
    """`value` with FIDES's variable ids (random) numbered in order of appearance."""
    seen: dict[str, str] = {}
    text = SENT.sub("msg_", json.dumps(value))
    return json.loads(HIDDEN.sub(lambda m: seen.setdefault(m[0], f"var_{len(seen)}"), text))


def unnumbered(ask: dict[str, Any]) -> dict[str, Any]:
    """What FIDES said in asking, less the request's id (MAF's, random)."""
    return {k: v for k, v in ask.items() if k != "_approval_request_id"}


def build(module: Any, main: Any, quarantine: Any) -> Any:
    if module is repo:
        return repo.setup_agent(main, quarantine, approval_on_violation=True)[0]
    return email.setup_agent(main, quarantine)[0]


async def maf_alone(workflow: str, approve: bool) -> dict[str, Any]:
    """The sample's turns in one session on MAF alone, each ask answered `approve`."""
    module, turns = SAMPLES[workflow]
    inputs: list[Any] = []
    plays = {"email_security": email.email_play, "repo_confidentiality": repo.repo_play}

    def playing(messages: Any, options: Any) -> Any:
        inputs.append(handed_turn(messages, options))
        return plays[workflow](messages, options)

    quarantine = email.quarantine_play if module is email else repo.quiet
    agent = build(module, ScriptedChatClient(playing), ScriptedChatClient(quarantine))
    session = agent.create_session()
    outputs, asks = [], []
    for text in turns:
        reply = await agent.run(text, session=session)
        while reply.user_input_requests:
            asks += [a.additional_properties for a in reply.user_input_requests]
            answers = [a.to_function_approval_response(approve) for a in reply.user_input_requests]
            reply = await agent.run(Message(role="user", contents=answers), session=session)
        outputs.append(reply.text)
    said = json.dumps({"outputs": outputs, "inputs": inputs, "asks": asks})
    return numbered(json.loads(said.replace(MAF_REJECTED, REJECTED)))


@pytest.mark.process
@pytest.mark.backends("sqlite")
@pytest.mark.parametrize("decision", ["approve", "reject"])
@pytest.mark.parametrize("workflow", list(SAMPLES))
async def test_a_fides_sample_s_flagged_call_answered_after_kill_9_ends_as_on_maf_alone(
    workflow: str,
    decision: str,
    db_url: str,
    tokens: dict[str, str],
    passwords: dict[str, str],
    server_log: Path,
    tmp_path: Path,
) -> None:
    """Each turn a run continuing the one before; a turn that asks is killed (-9) there and each
    ask answered in a new process (the repository's twice: FIDES asks again on replaying the
    approved call). The model is handed what it is on MAF alone (a continued run's history too:
    a tool's several texts joined as MAF joins them), the asks say what FIDES said, labels and
    all, and the output is MAF alone's. Each ask shows the person the run's conversation (a
    re-ask in a later drive too) and where the context's label came from (the email sample's
    from an earlier run the request does not show)."""
    expected = await maf_alone(workflow, decision == "approve")
    recorded = tmp_path / "model-inputs.jsonl"
    env = ENV | {"SAMPLE_MODEL_INPUTS": str(recorded)}
    _, turns = SAMPLES[workflow]
    outputs: list[str] = []
    asks: list[dict[str, Any]] = []
    last: str | None = None
    asked: dict[str, Any] | None = None
    for text in turns:
        async with baton_server(db_url, tokens, server_log, env) as server:
            body: dict[str, Any] = {"workflow": workflow, "input": {"text": text}}
            run = await server.start_run(body | ({"continues": last} if last else {}))
            last = run["id"]
            now = await server.wait_for_run(run["id"], status=("completed", "failed", "waiting"))
            if now["status"] == "completed":
                outputs.append(now["output"]["text"])
                continue
            asked = await server.wait_for_request(run["id"])
            server.kill()
        while asked:
            async with (
                baton_server(db_url, tokens, server_log, env) as server,
                signed_in(server, "ada", passwords["ada"]) as client,
            ):
                asks.append(asked)
                page = await client.http.get(f"/requests/{asked['id']}")
                assert asked["reason"].split(". ")[0] in text_of(page.text)  # FIDES's words
                answer = {"decision": decision} | (
                    {"reason": "not that"} if decision == "reject" else {}
                )
                reply = await server.respond(asked["id"], answer, user="ada")
                assert reply.status_code == 200, reply.text
                answered = asked["id"]

                async def moved_on(answered: str = answered, run_id: str = run["id"]) -> Any:
                    now = await server.run(run_id)
                    fresh = [
                        r
                        for r in now["requests"]
                        if r["status"] == "pending" and r["id"] != answered
                    ]
                    if fresh:
                        return fresh[0]
                    return now if now["status"] in ("completed", "failed") else None

                moved = await eventually(moved_on, what=f"run {run['id']} past {answered}")
                if "payload" in moved:  # FIDES asks again
                    asked = moved
                    server.kill()
                    continue
                asked = None
                assert moved["status"] == "completed", moved["error"]
                outputs.append(moved["output"]["text"])
    inputs = [json.loads(line) for line in recorded.read_text().splitlines()]
    extra = [a["payload"]["origin"]["approval_request"].get("additional_properties") for a in asks]
    got = numbered({"outputs": outputs, "inputs": inputs, "asks": extra})

    source = {"email_security": "fetch_emails", "repo_confidentiality": "read_repo"}[workflow]
    for ask in asks:  # each ask shows the person the run's conversation, the flagged call in it
        assert f"from what {source} returned" in ask["reason"], ask["reason"]  # why, the label's
        said = ask["context"]["conversation"]
        assert said[0].startswith(f"user: {turns[-1][:40]}"), said
        assert any(" calls " in line for line in said), said
    assert [m["messages"] for m in got["inputs"]] == [m["messages"] for m in expected["inputs"]]
    assert got["inputs"] == expected["inputs"]
    assert got["outputs"] == expected["outputs"]
    # what FIDES said in asking, its labels of the context through the pause among it
    assert [unnumbered(a) for a in got["asks"]] == [unnumbered(a) for a in expected["asks"]]
