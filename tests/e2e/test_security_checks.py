"""A call MAF's FIDES flags is decided by a person, told what FIDES found, as on MAF alone.

FIDES (`SecureAgentConfig`, `tests/fixtures/fides_agents.py`) adds its policy checks to each run
of the agent as middleware of its context provider, which MAF runs inside the agent's own. A call
a person approved runs inside them too: replayed, FIDES finds what the first approval did not
disclose (the context is untrusted as well) and asks again, as on MAF alone; a rejection of that
second ask stops the post. A policies file that lets the tool run unasked does not let a flagged
call run: a person decides, and the request says first what FIDES found.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agent_framework import Message

from executors.platform.chat_clients import PLAYS, ScriptedChatClient
from tests.fixtures import fides_agents
from tests.harness import Server, baton_server, eventually
from tests.pages import PAGE_ENV

ENV = PAGE_ENV | {"BATON_WORKFLOWS": "tests.fixtures.fides_agents"}
PRIVATE = "max_allowed_confidentiality"
UNTRUSTED = "untrusted_context"


def ruled(tmp_path: Path, rules: str) -> dict[str, str]:
    """The server's settings with a policies file of `rules` (YAML list items); nothing posted."""
    policies = tmp_path / "policies.yaml"
    policies.write_text(f"version: 1\ndefault_team: support-leads\nrules:\n{rules}")
    fides_agents.POSTED.clear()
    return ENV | {"BATON_POLICIES": str(policies)}


async def asked(server: Server, run_id: str, count: int) -> dict[str, Any]:
    """The run's pending request, once it has asked `count` in all."""

    async def probe() -> dict[str, Any] | None:
        found = (await server.run(run_id))["requests"]
        pending = [r for r in found if r["status"] == "pending"]
        return pending[0] if len(found) == count and pending else None

    return await eventually(probe, what=f"request {count} of run {run_id}")


def found_by_fides(request: dict[str, Any]) -> list[str]:
    """The violations FIDES disclosed in asking for the approval behind a Baton request."""
    extra = request["payload"]["origin"]["approval_request"].get("additional_properties") or {}
    listed = extra.get("violations") or [{"violation_type": extra.get("violation_type")}]
    return [v["violation_type"] for v in listed]


async def on_maf_alone(decisions: list[bool]) -> list[list[str]]:
    """The violations of each approval FIDES asks for on MAF alone, answered with `decisions`."""
    agent = fides_agents.repo_assistant_of(
        ScriptedChatClient(PLAYS["leaky"]), ScriptedChatClient(PLAYS["quarantine"])
    )
    session = agent.create_session()
    response = await agent.run(fides_agents.Task().text, session=session)
    disclosed = []
    for approve in decisions:
        [ask] = response.user_input_requests
        extra = ask.additional_properties
        listed = extra.get("violations") or [{"violation_type": extra.get("violation_type")}]
        disclosed.append([v["violation_type"] for v in listed])
        reply = Message(role="user", contents=[ask.to_function_approval_response(approve)])
        response = await agent.run([reply], session=session)
    assert not response.user_input_requests
    return disclosed


@pytest.mark.parametrize("second", ["approve", "reject"])
async def test_an_approved_call_is_checked_again_and_its_second_finding_asked(
    db_url: str, tokens: dict[str, str], server_log: Path, second: str
) -> None:
    fides_agents.POSTED.clear()
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        run = await server.start_run({"workflow": "fides_repo", "input": {}})
        first = await asked(server, run["id"], 1)
        assert (
            await server.respond(first["id"], {"decision": "approve"}, user="lee")
        ).status_code == 200
        again = await asked(server, run["id"], 2)
        answer = {"decision": second} | (
            {"reason": "not the secrets"} if second == "reject" else {}
        )
        assert (await server.respond(again["id"], answer, user="lee")).status_code == 200
        done = await server.wait_for_run(run["id"], status=("completed", "failed"))
    posted = list(fides_agents.POSTED)
    fides_agents.POSTED.clear()
    alone = await on_maf_alone([True, second == "approve"])

    assert done["status"] == "completed", done["error"]
    assert (
        [found_by_fides(first), found_by_fides(again)]
        == alone
        == [
            [PRIVATE],
            [UNTRUSTED, PRIVATE],
        ]
    )
    assert (
        ["#devops: config from secrets.env"] if second == "approve" else []
    ) == fides_agents.POSTED  # MAF alone
    assert posted == (["#devops: config from secrets.env"] if second == "approve" else [])
    for request in (first, again):
        assert request["title"] == "Approve post_to_slack"
        assert request["policy_rule"] == "default.approval"
    assert "untrusted" in again["reason"].lower()
    results = [e["result"] for e in done["conversation"] if e["type"] == "tool_result"]
    assert "function_approval_request" not in " ".join(results)  # no ask noted as a result


async def test_a_flagged_call_is_asked_even_where_the_policy_lets_the_tool_run_unasked(
    db_url: str, tokens: dict[str, str], server_log: Path, tmp_path: Path
) -> None:
    env = ruled(tmp_path, "  - id: slack.routine\n    tool: post_to_slack\n    action: auto\n")
    async with baton_server(db_url, tokens, server_log, env) as server:
        run = await server.start_run({"workflow": "fides_repo", "input": {}})
        first = await asked(server, run["id"], 1)
        audit = await server.audit(run["id"])

    assert fides_agents.POSTED == []
    assert first["policy_rule"] == "post_to_slack.security_check"
    assert first["team"] == "support-leads"
    assert first["reason"].endswith(
        "Policy rule post_to_slack.security_check needs approval by support-leads."
    )
    assert "confidential" in first["reason"].lower(), first["reason"]
    assert "standing" not in first["response_schema"]["properties"]
    assert [e for e in audit if e["type"] == "request.auto_decided"] == []


async def test_a_conversation_with_a_guarded_agent_goes_on_in_its_session(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    """FIDES holds its security state to the session it began in: a run continuing one with
    a FIDES agent carries its session's id with the state, as MAF goes on with one session."""
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        run = await server.start_run({"workflow": "fides_repo", "input": {}})
        for count in (1, 2):
            pending = await asked(server, run["id"], count)
            reply = await server.respond(pending["id"], {"decision": "approve"}, user="lee")
            assert reply.status_code == 200, reply.text
        first = await server.wait_for_run(run["id"], status=("completed", "failed"))
        body = {"workflow": "fides_repo", "input": {"text": "Thanks."}, "continues": run["id"]}
        second = await server.start_run(body)
        done = await server.wait_for_run(second["id"], status=("completed", "failed"))

    assert first["status"] == "completed", first["error"]
    assert done["status"] == "completed", done["error"]
    assert done["output"]["text"] == first["output"]["text"]  # the posting's result, again
    [kept] = [e["sessions"] for e in first["conversation"] if e["type"] == "sessions"]
    [then] = [e["sessions"] for e in done["conversation"] if e["type"] == "sessions"]
    assert kept["repo_assistant"]["baton_session_id"] == then["repo_assistant"]["baton_session_id"]


async def test_a_standing_approval_does_not_decide_a_call_fides_flags(
    db_url: str, tokens: dict[str, str], server_log: Path, tmp_path: Path
) -> None:
    """`announce` asks a person every call (`always_require`), under a rule that lets an
    approval stand. The greeting is approved so, standing; the secrets are announced next, read
    from an untrusted source: the standing approval decides MAF's own ask, and FIDES, checking
    the call as it runs, flags it. A person decides that one, told what FIDES found."""
    env = ruled(
        tmp_path,
        "  - id: announce.standing\n    tool: announce\n"
        "    action: approval(support-leads)\n    standing: true\n",
    )
    async with baton_server(db_url, tokens, server_log, env) as server:
        run = await server.start_run({"workflow": "fides_standing", "input": {}})
        greeting = await asked(server, run["id"], 1)
        stands = {"decision": "approve", "standing": True}
        assert (await server.respond(greeting["id"], stands, user="lee")).status_code == 200
        flagged = await asked(server, run["id"], 2)
        audit = await server.audit(run["id"])

    assert "standing" in greeting["response_schema"]["properties"]  # the rule offers it
    assert fides_agents.POSTED == ["#devops: hello"]  # the secrets wait for a person
    assert flagged["proposed_action"]["arguments"]["message"] == "config from secrets.env"
    assert flagged["policy_rule"] == "announce.standing"
    assert "untrusted" in flagged["reason"].lower(), flagged["reason"]
    assert "standing" not in flagged["response_schema"]["properties"]
    stood = [e["data"] for e in audit if e["type"] == "request.auto_decided"]
    assert [d["arguments"]["message"] for d in stood] == ["config from secrets.env"]  # MAF's ask
