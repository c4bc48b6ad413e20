"""Real model providers: MAF's own OpenAI and Azure OpenAI clients against a local server.

`baton serve` runs with `BATON_MODEL=openai` or `azure-openai`; MAF's Chat Completions client sends
real HTTP to a small OpenAI-compatible server the test starts (tests/fake_llm.py), runs the tool
loop, pauses for approval, and resumes in a new process after `kill -9`. For Azure, azure-identity's
`DefaultAzureCredential` gets its token from the same server through the managed-identity protocol
of App Service and Container Apps (`IDENTITY_ENDPOINT`, `IDENTITY_HEADER`): nothing leaves the
machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fake_llm import IDENTITY_SECRET, ISSUED_TOKEN, Recorded, fake_model_server
from tests.harness import REFUND_120, baton_server, refunds, types_of
from tests.supportkit import REFUND_120 as SUPPORT_REFUND_120
from tests.supportkit import pending_request

# The process is the subject: `baton serve` runs in child processes, on both backends.
pytestmark = pytest.mark.process


def _tool_messages(chat: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in chat["body"]["messages"] if m.get("role") == "tool"]


async def test_openai_client_runs_the_tool_loop_pauses_and_resumes_after_kill_9(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with fake_model_server() as (url, recorded):
        env = {
            "BATON_MODEL": "openai",
            "OPENAI_API_KEY": "sk-test-key",
            "OPENAI_BASE_URL": f"{url}/v1",
            "OPENAI_MODEL": "gpt-test",
        }
        async with baton_server(db_url, tokens, server_log, env) as server:
            run = await server.start_run(REFUND_120)
            approval = await server.wait_for_request(run["id"])
            server.kill()
        asked = len(recorded.chats)

        async with baton_server(db_url, tokens, server_log, env) as server:
            reply = await server.respond(approval["id"], {"decision": "approve"}, user="lee")
            assert reply.status_code == 200, reply.text
            done = await server.wait_for_run(run["id"], status="completed")

    assert approval["proposed_action"]["arguments"] == {"order_id": "A-1002", "amount": 120.0}
    assert asked == 2  # lookup_order, then issue_refund, then the pause
    first, second, last = recorded.chats
    assert {c["path"] for c in recorded.chats} == {"/v1/chat/completions"}
    assert {c["headers"]["authorization"] for c in recorded.chats} == {"Bearer sk-test-key"}
    assert {c["body"]["model"] for c in recorded.chats} == {"gpt-test"}
    assert {t["function"]["name"] for t in first["body"]["tools"]} == {
        "lookup_order",
        "issue_refund",
    }
    # MAF ran lookup_order itself and sent its result back in the loop
    [looked_up] = _tool_messages(second)
    assert json.loads(looked_up["content"])["id"] == "A-1002"
    # after the restart, the refund Baton ran on approval reaches the model as the tool's result
    refund_result = json.loads(_tool_messages(last)[-1]["content"])
    [refund] = await refunds(db_url)
    assert refund_result["refund_id"] == refund["refund_id"]
    assert done["output"]["text"].startswith("Refund outcome:")


async def test_azure_openai_with_a_managed_identity_token_through_handoffs_and_a_restart(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with fake_model_server() as (url, recorded):
        env = {
            "BATON_MODEL": "azure-openai",
            "AZURE_OPENAI_ENDPOINT": url,
            "AZURE_OPENAI_DEPLOYMENT": "baton-chat",
            "AZURE_OPENAI_API_VERSION": "2024-10-21",
            "IDENTITY_ENDPOINT": f"{url}/msi/token",
            "IDENTITY_HEADER": IDENTITY_SECRET,
        }
        async with baton_server(db_url, tokens, server_log, env) as server:
            run = await server.start_run(SUPPORT_REFUND_120)
            approval = await pending_request(server, run["id"], kind="approval")
            server.kill()

        async with baton_server(db_url, tokens, server_log, env) as server:
            reply = await server.respond(approval["id"], {"decision": "approve"}, user="lee")
            assert reply.status_code == 200, reply.text
            done = await server.wait_for_run(run["id"], status="completed")
            events = await server.audit(run["id"])

    _assert_managed_identity(recorded)
    triage = recorded.chats[0]
    assert {t["function"]["name"] for t in triage["body"]["tools"]} >= {
        "handoff_to_billing",
        "handoff_to_technical",
        "handoff_to_accounts",
    }
    assert approval["policy_rule"] == "refund.medium"
    assert done["conversation"][1] == {"type": "handoff", "from": "triage", "to": "billing"}
    [refund] = await refunds(db_url)
    last = recorded.chats[-1]
    assert refund["refund_id"] in _tool_messages(last)[-1]["content"]
    assert done["output"]["resolver"] == "agent"
    assert refund["refund_id"] in done["output"]["resolution"]
    assert types_of(events).count("effect.executed") == 1


def _assert_managed_identity(recorded: Recorded) -> None:
    assert recorded.tokens, "DefaultAzureCredential never asked the identity endpoint"
    for call in recorded.tokens:
        assert call["headers"]["x-identity-header"] == IDENTITY_SECRET
        assert call["query"]["resource"].startswith("https://cognitiveservices.azure.com")
    for chat in recorded.chats:
        assert chat["path"] == "/openai/deployments/baton-chat/chat/completions"
        assert chat["query"]["api-version"] == "2024-10-21"
        assert chat["headers"]["authorization"] == f"Bearer {ISSUED_TOKEN}"
        assert "api-key" not in chat["headers"]


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"BATON_MODEL": "openai"}, "OPENAI_API_KEY"),
        ({"BATON_MODEL": "azure-openai"}, "AZURE_OPENAI_ENDPOINT, AZURE_OPENAI_DEPLOYMENT"),
        (
            {"BATON_MODEL": "azure-openai", "AZURE_OPENAI_ENDPOINT": "http://127.0.0.1:9"},
            "AZURE_OPENAI_DEPLOYMENT",
        ),
    ],
)
def test_serve_refuses_to_start_naming_a_missing_setting(
    env: dict[str, str], named: str, tmp_path: Path
) -> None:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "AZURE_OPENAI_", "BATON_"))
    }
    done = subprocess.run(
        [sys.executable, "-m", "baton", "serve", "--port", "9"],
        env={**clean, "BATON_DATABASE_URL": f"sqlite:///{tmp_path / 'b.db'}", **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 2, done.stderr
    assert f"BATON_MODEL={env['BATON_MODEL']} needs {named}" in done.stderr


def test_a_bad_policies_file_stops_serve_with_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "p.yaml"
    bad.write_text("rules:\n  - id: a\n    tool: t\n    action: sometimes\n")
    done = subprocess.run(
        [sys.executable, "-m", "baton", "serve", "--port", "9"],
        env={
            **os.environ,
            "BATON_DATABASE_URL": f"sqlite:///{tmp_path / 'b.db'}",
            "BATON_POLICIES": str(bad),
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 2
    assert f"{bad}:4: rules.0.action" in done.stderr
