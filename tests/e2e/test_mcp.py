"""The MCP server driven by the `mcp` SDK's own client: over HTTP (`/mcp` of the app `baton serve`
runs, in this process) and over stdio (`baton mcp` child processes on the same database, one of
them killed with SIGKILL while it waits).

An agent acting for sam (support-agents) asks; lee (support-leads) answers on the request's page
with the form's real post, or through the API; the waiting MCP call returns the typed answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import CallToolResult, Implementation

from tests.harness import MCP_INITIALIZE, Server, baton_server, digest, eventually
from tests.pages import PAGE_ENV, signed_in
from tests.samples.multimodal_approval import data_uri, png

DEPLOY = {
    "action": "deploy_service",
    "arguments": {"service": "billing", "replicas": 3, "region": "westeurope"},
    "reason": "The fix for the invoice rounding bug is ready.",
}
POLICIES = """\
version: 1
default_team: support-leads
rules:
  - id: status.read
    tool: read_status
    action: auto
  - id: database.drop
    tool: drop_database
    action: deny
  - id: deploy.big
    tool: deploy_service
    when: replicas > 5
    action: approval(finance, approvals=2)
  - id: deploy.small
    tool: deploy_service
    action: approval(support-leads)
    deadline: 4h
  - id: outage.person
    tool: restart_everything
    action: takeover(managers)
requests:
  - id: mcp.questions
    workflow: ask
    request: QuestionAsked
    team: support-agents
"""
AGENT = Implementation(name="test-agent", version="1.2")
TOOLS = {"request_approval", "ask_question", "request_review", "get_answer"}


@contextlib.asynccontextmanager
async def http_agent(server: Server, token: str | None) -> AsyncIterator[Client]:
    """An MCP client over streamable HTTP to the server's /mcp, with this bearer token."""
    headers = {"Authorization": f"Bearer {token}"} if token is not None else None
    async with (
        create_mcp_http_client(headers=headers) as http,
        Client(
            streamable_http_client(f"{server.base_url}/mcp", http_client=http),
            client_info=AGENT,
        ) as client,
    ):
        yield client


def stdio_params(db_url: str, *args: str, token: str | None = None) -> StdioServerParameters:
    """`baton mcp` as a child process on the same database (its own worker unless told)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BATON_")}
    env |= {"BATON_DATABASE_URL": db_url, "BATON_WORKER_POLL_MS": "100"}
    if token is not None:
        env["BATON_TOKEN"] = token
    baton = str(Path(sys.executable).with_name("baton"))
    return StdioServerParameters(command=baton, args=["mcp", *args], env=env)


@contextlib.asynccontextmanager
async def stdio_agent(params: StdioServerParameters) -> AsyncIterator[Client]:
    async with Client(params, client_info=AGENT) as client:
        yield client


class Progress:
    """What the server said while the call waited."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.messages.append(message or "")


def outcome_of(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return dict(result.structured_content)


def error_of(result: CallToolResult) -> str:
    assert result.is_error, result.structured_content
    return " ".join(getattr(c, "text", "") for c in result.content)


async def pending_ask(server: Server, *, user: str = "lee") -> dict[str, Any]:
    """The one pending request of the `ask` workflow, as `user` sees it in the API."""

    async def probe() -> dict[str, Any] | None:
        async with server.client(user) as client:
            found = await client.get("/api/requests", params={"status": "pending"})
        items = [r for r in found.json()["items"] if r["context"].get("agent") == "test-agent 1.2"]
        return items[0] if items else None

    return await eventually(probe, what="the ask in the inbox")


async def answer_in_the_form(
    server: Server, passwords: dict[str, str], request_id: str, form: dict[str, str]
) -> None:
    """lee answers on the request's page, with the form's own post."""
    async with signed_in(server, "lee", passwords["lee"]) as lee:
        page = await lee.http.get(f"/requests/{request_id}")
        assert page.status_code == 200, page.text
        assert "test-agent 1.2" in page.text
        assert "acting for sam" in page.text
        posted = await lee.post(f"/requests/{request_id}", form)
        if form["decision"] == "edit":  # the page shows the diff first: confirm it
            assert posted.status_code == 200, posted.text
            digest = re.search(r'name="confirm" value="([^"]+)"', posted.text)
            assert digest, posted.text
            posted = await lee.post(f"/requests/{request_id}", form | {"confirm": digest[1]})
        assert posted.status_code == 303, posted.text


async def test_over_http_an_approval_is_answered_in_the_web_form_and_the_call_returns_it(
    db_url: str, tokens: dict[str, str], passwords: dict[str, str], server_log: Path
) -> None:
    async with (
        baton_server(db_url, tokens, server_log, PAGE_ENV) as server,
        http_agent(server, tokens["sam"]) as agent,
    ):
        listed = await agent.list_tools()
        assert {t.name for t in listed.tools} == TOOLS
        heard = Progress()
        call = asyncio.create_task(
            agent.call_tool(
                "request_approval", DEPLOY | {"wait_seconds": 120}, progress_callback=heard
            )
        )
        pending = await pending_ask(server)
        assert pending["kind"] == "approval"
        assert pending["team"] == "support-leads"
        assert pending["policy_rule"] == "default.approval"
        assert pending["proposed_action"]["tool"] == "deploy_service"
        assert pending["proposed_action"]["arguments"] == DEPLOY["arguments"]
        assert pending["context"]["asked_by"] == "sam"
        assert pending["context"]["agent"] == "test-agent 1.2"
        assert "Baton does not run the action itself" in pending["reason"]
        assert not call.done()

        await answer_in_the_form(server, passwords, pending["id"], {"decision": "approve"})
        outcome = outcome_of(await call)

    assert outcome["status"] == "answered"
    assert outcome["answer"] == {"decision": "approve"}
    assert outcome["answered_by"] == ["lee"]
    assert outcome["human_request_id"] == pending["id"]
    assert outcome["url"].endswith(f"/requests/{pending['id']}")
    assert "Approved by lee" in outcome["message"]
    assert heard.messages[0].startswith(f"request_id {outcome['request_id']}")
    assert any("in the inbox of support-leads" in m for m in heard.messages)


async def test_an_agent_s_screenshot_in_its_arguments_is_shown_to_the_approver(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    """An agent outside MAF attaches what it saw (a data URI among its action's arguments): the
    request lists the file, from the request, and the approver opens its bytes."""
    screenshot = png(width=40, height=30, seed=3)
    arguments = {"service": "billing", "screenshot": data_uri(screenshot)}
    async with (
        baton_server(db_url, tokens, server_log, PAGE_ENV) as server,
        http_agent(server, tokens["sam"]) as agent,
    ):
        asked = DEPLOY | {"arguments": arguments, "wait_seconds": 0}
        outcome_of(await agent.call_tool("request_approval", asked))
        pending = await pending_ask(server)
        [file] = pending["attachments"]
        async with server.client("lee") as lee:
            got = await lee.get(f"/api/requests/{pending['id']}/attachments/{file['id']}")

    assert (file["media_type"], file["size"], file["source"]) == (
        "image/png",
        len(screenshot),
        "the request",
    )
    assert (got.status_code, got.content) == (200, screenshot)


@pytest.fixture
def policies_env(tmp_path: Path) -> dict[str, str]:
    """The server's environment with `POLICIES` as its policies file."""
    policies = tmp_path / "policies.yaml"
    policies.write_text(POLICIES)
    return {"BATON_POLICIES": str(policies)}


async def test_over_http_a_question_and_a_review_return_their_typed_answers(
    db_url: str, tokens: dict[str, str], server_log: Path, policies_env: dict[str, str]
) -> None:
    async with (
        baton_server(db_url, tokens, server_log, policies_env) as server,
        http_agent(server, tokens["lee"]) as agent,
    ):
        asked = await agent.call_tool(
            "ask_question",
            {
                "question": "Which region first?",
                "options": ["westeurope", "northeurope"],
                "wait_seconds": 0,
            },
        )
        waiting = outcome_of(asked)
        question = await server.request(waiting["human_request_id"])
        assert question["team"] == "support-agents"  # the policies file's requests: rule
        assert question["policy_rule"] == "mcp.questions"
        answered = await server.respond(
            question["id"], {"decision": "answer", "answer": "northeurope"}, user="sam"
        )
        assert answered.status_code == 200, answered.text
        got = outcome_of(
            await agent.call_tool(
                "get_answer", {"request_id": waiting["request_id"], "wait_seconds": 60}
            )
        )
        assert got["answer"] == {"decision": "answer", "answer": "northeurope"}
        assert got["answered_by"] == ["sam"]

        review = asyncio.create_task(
            agent.call_tool(
                "request_review",
                {"draft": "Dear customer, the fix ships today.", "team": "support-agents"},
            )
        )
        pending = await pending_ask(server, user="sam")
        edit = {"decision": "edit", "content": "Dear customer, the fix ships tomorrow."}
        assert (await server.respond(pending["id"], edit, user="sam")).status_code == 200
        reviewed = outcome_of(await review)
    assert reviewed["answer"] == edit
    assert reviewed["status"] == "answered"


async def test_the_policy_allows_refuses_and_routes_before_anyone_is_asked(
    db_url: str, tokens: dict[str, str], server_log: Path, policies_env: dict[str, str]
) -> None:
    async with (
        baton_server(db_url, tokens, server_log, policies_env) as server,
        http_agent(server, tokens["sam"]) as agent,
    ):
        allowed = outcome_of(
            await agent.call_tool(
                "request_approval",
                {"action": "read_status", "arguments": {"service": "billing"}, "reason": "look"},
            )
        )
        refused = outcome_of(
            await agent.call_tool(
                "request_approval",
                {"action": "drop_database", "arguments": {"name": "prod"}, "reason": "clean up"},
            )
        )
        big = outcome_of(
            await agent.call_tool(
                "request_approval",
                DEPLOY | {"arguments": {"service": "billing", "replicas": 8}, "wait_seconds": 0},
            )
        )
        small = outcome_of(await agent.call_tool("request_approval", DEPLOY | {"wait_seconds": 0}))
        # an edit into the stricter band asks that band, bound to the same ask
        edit = {"decision": "edit", "arguments": DEPLOY["arguments"] | {"replicas": 9}}
        reply = await server.respond(small["human_request_id"], edit, user="lee")
        assert reply.status_code == 200, reply.text

        async def reasked() -> dict[str, Any] | None:
            got = await agent.call_tool("get_answer", {"request_id": small["request_id"]})
            now = outcome_of(got)
            return now if now["human_request_id"] != small["human_request_id"] else None

        again = await eventually(reasked, what="the edit asked again")
        events = await server.audit(allowed["request_id"])
        for approver in ("fay", "fin"):
            approve = {"decision": "approve"}
            reply = await server.respond(again["human_request_id"], approve, user=approver)
            assert reply.status_code == 200, reply.text
        edited = outcome_of(
            await agent.call_tool(
                "get_answer", {"request_id": small["request_id"], "wait_seconds": 60}
            )
        )

        # a takeover band hands the case to a person; resolving it is no approval for the agent
        taken = outcome_of(
            await agent.call_tool(
                "request_approval",
                {"action": "restart_everything", "arguments": {}, "reason": "all is down"}
                | {"wait_seconds": 0},
            )
        )
        case = await server.request(taken["human_request_id"])
        resolve = {"decision": "resolve", "resolution": "I restarted the one broken node."}
        assert (await server.respond(case["id"], resolve, user="max")).status_code == 200
        resolved = outcome_of(
            await agent.call_tool(
                "get_answer", {"request_id": taken["request_id"], "wait_seconds": 60}
            )
        )

    assert allowed["status"] == "decided"
    assert allowed["answer"]["decision"] == "approve"
    assert allowed["policy_rule"] == "status.read"
    assert allowed["human_request_id"] is None
    assert [e["type"] for e in events].count("request.auto_decided") == 1
    assert refused["status"] == "decided"
    assert refused["answer"]["decision"] == "reject"
    assert refused["policy_rule"] == "database.drop"
    assert big["status"] == "waiting"
    assert big["team"] == "finance"
    assert big["policy_rule"] == "deploy.big"
    assert small["team"] == "support-leads"
    assert small["policy_rule"] == "deploy.small"
    assert again["status"] == "waiting"
    assert again["team"] == "finance"
    assert again["policy_rule"] == "deploy.big"
    # approving the edit's re-ask approves the edited call: the agent is given its arguments
    assert edited["answer"] == {"decision": "edit", "arguments": edit["arguments"]}
    assert edited["answered_by"] == ["lee", "fay", "fin"]
    assert case["kind"] == "takeover"
    assert case["team"] == "managers"
    assert resolved["answer"] == {
        "decision": "reject",
        "reason": "max took this over and resolved it: I restarted the one broken node.",
    }
    assert resolved["answered_by"] == ["max"]


async def test_bad_arguments_get_a_precise_error_and_store_nothing(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with (
        baton_server(db_url, tokens, server_log) as server,
        http_agent(server, tokens["sam"]) as agent,
    ):
        before = digest(db_url)
        cases = [
            ({"arguments": {}, "reason": "x"}, "action"),
            (DEPLOY | {"action": "deploy service!"}, "action: String should match pattern"),
            (DEPLOY | {"team": "nobody"}, "team: no team 'nobody'"),
            (DEPLOY | {"wait_seconds": 100_000}, "wait_seconds: at most 900"),
            (DEPLOY | {"reason": " "}, "reason: required for an approval"),
        ]
        errors = [error_of(await agent.call_tool("request_approval", args)) for args, _ in cases]
        errors.append(error_of(await agent.call_tool("ask_question", {"question": ""})))
        errors.append(error_of(await agent.call_tool("get_answer", {"request_id": "run_nope"})))
        async with http_agent(server, tokens["val"]) as viewer:
            errors.append(error_of(await viewer.call_tool("request_approval", DEPLOY)))
        # who asks is whoever Baton authenticated, never an input: not even through the API
        forged = {"kind": "approval", "asked_by": "ada"} | DEPLOY
        async with server.client("sam") as sam:
            refused = await sam.post("/api/runs", json={"workflow": "ask", "input": forged})
        after = digest(db_url)

    for (_, expected), error in zip(cases, errors, strict=False):
        assert expected in error, error
    assert "question" in errors[5]
    assert "no ask run_nope" in errors[6]
    assert "val is a viewer" in errors[7]
    assert refused.status_code == 422, refused.text
    assert refused.json()["errors"][0]["loc"] == ["body", "input", "asked_by"]
    assert after == before


async def test_a_call_without_a_valid_token_is_refused_over_http(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    accept = {"Accept": "application/json, text/event-stream"}
    async with baton_server(db_url, tokens, server_log) as server:
        async with server.client("lee") as lee:
            made = await lee.post("/api/tokens", json={"label": "agent"})
            revoked = made.json()
            assert (await lee.delete(f"/api/tokens/{revoked['id']}")).status_code == 200
        before = digest(db_url)
        async with httpx.AsyncClient(base_url=server.base_url) as http:
            replies = {
                name: await http.post("/mcp", json=MCP_INITIALIZE, headers=accept | auth)
                for name, auth in {
                    "none": {},
                    "wrong": {"Authorization": "Bearer bt_not-a-token"},
                    "revoked": {"Authorization": f"Bearer {revoked['token']}"},
                    "not bearer": {"Authorization": f"Basic {tokens['lee']}"},
                }.items()
            }
            good = await http.post(
                "/mcp",
                json=MCP_INITIALIZE,
                headers=accept | {"Authorization": f"Bearer {tokens['lee']}"},
            )
        refused = await connection_refused(http_agent(server, "bt_not-a-token"))
        after = digest(db_url)

    for name, reply in replies.items():
        assert reply.status_code == 401, (name, reply.text)
        assert reply.headers["www-authenticate"] == "Bearer"
        assert reply.json()["error"] == "unauthenticated", name
    assert "Server returned an error response" in refused  # its 401, above
    assert good.status_code == 200, good.text
    assert after == before


async def test_over_stdio_a_client_killed_while_waiting_gets_the_answer_after_restarting(
    db_url: str, tokens: dict[str, str], passwords: dict[str, str], server_log: Path
) -> None:
    params = stdio_params(db_url, token=tokens["sam"])
    async with baton_server(db_url, tokens, server_log, PAGE_ENV) as server:
        heard = Progress()
        async with stdio_agent(params) as agent:
            assert {t.name for t in (await agent.list_tools()).tools} == TOOLS
            call = asyncio.create_task(
                agent.call_tool(
                    "request_approval", DEPLOY | {"wait_seconds": 300}, progress_callback=heard
                )
            )
            pending = await pending_ask(server)

            async def first_heard() -> str | None:
                return heard.messages[0] if heard.messages else None

            first = await eventually(first_heard, what="the first progress notification")
            ask_id = first.split()[1].rstrip(":")  # "request_id run_…: waiting …"
            child = mcp_child()
            os.kill(child.pid, signal.SIGKILL)  # the agent's server dies while the call waits
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(call, 30)
            assert call.done()

            async def dead() -> bool:
                # the call ends when the pipes close, a moment before the kernel marks it dead
                # (and it may be reaped between the two looks)
                try:
                    return not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
                except psutil.NoSuchProcess:
                    return True

            await eventually(dead, timeout=10, what="the killed server to be dead")

        await answer_in_the_form(server, passwords, pending["id"], {"decision": "approve"})
        async with stdio_agent(params) as restarted:
            got = outcome_of(
                await restarted.call_tool("get_answer", {"request_id": ask_id, "wait_seconds": 60})
            )

    assert got["status"] == "answered"
    assert got["answer"] == {"decision": "approve"}
    assert got["answered_by"] == ["lee"]
    assert pending["context"]["asked_by"] == "sam"


async def test_over_stdio_an_approval_is_answered_in_the_web_form_while_the_call_waits(
    db_url: str, tokens: dict[str, str], passwords: dict[str, str], server_log: Path
) -> None:
    params = stdio_params(db_url, "--no-worker", token=tokens["sam"])  # the server's worker drives
    async with (
        baton_server(db_url, tokens, server_log, PAGE_ENV) as server,
        stdio_agent(params) as agent,
    ):
        heard = Progress()
        call = asyncio.create_task(
            agent.call_tool(
                "request_approval", DEPLOY | {"wait_seconds": 120}, progress_callback=heard
            )
        )
        pending = await pending_ask(server)
        edit = {
            "decision": "edit",
            "arguments.service": "billing",
            "arguments.replicas": "2",
            "arguments.region": "northeurope",
        }
        await answer_in_the_form(server, passwords, pending["id"], edit)
        outcome = outcome_of(await call)

    assert outcome["status"] == "answered"
    assert outcome["answer"]["decision"] == "edit"
    assert outcome["answer"]["arguments"] == {
        "service": "billing",
        "replicas": 2,
        "region": "northeurope",
    }
    assert outcome["answered_by"] == ["lee"]


async def test_over_stdio_a_token_that_is_missing_wrong_or_revoked_is_refused(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        async with server.client("sam") as sam:
            made = (await sam.post("/api/tokens", json={"label": "agent"})).json()
        for params in (stdio_params(db_url), stdio_params(db_url, token="bt_wrong")):
            await connection_refused(stdio_agent(params))
        async with stdio_agent(stdio_params(db_url, token=made["token"])) as agent:
            async with server.client("sam") as sam:
                assert (await sam.delete(f"/api/tokens/{made['id']}")).status_code == 200
            before = digest(db_url)
            refused = error_of(await agent.call_tool("request_approval", DEPLOY))
            after = digest(db_url)
    assert "unknown or revoked token" in refused
    assert after == before


async def connection_refused(agent: contextlib.AbstractAsyncContextManager[Client]) -> str:
    """What the SDK's client raised when it could not connect (the test fails if it could)."""
    try:
        async with agent as connected:
            await connected.list_tools()
    except Exception as exc:  # the SDK's own error, often in an ExceptionGroup
        return repr(exc) + " ".join(repr(e) for e in getattr(exc, "exceptions", ()))
    raise AssertionError("the client connected")


def mcp_child() -> psutil.Process:
    """The `baton mcp` process this test's client started."""
    found = [
        p
        for p in psutil.Process().children(recursive=True)
        if "mcp" in p.cmdline() and any(part.endswith("baton") for part in p.cmdline()[:2])
    ]
    assert len(found) == 1, found
    return found[0]
