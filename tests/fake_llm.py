"""A small OpenAI-compatible server for the provider tests: chat completions with tool calls.

It speaks the Chat Completions protocol at OpenAI's path (`/v1/chat/completions`) and Azure
OpenAI's (`/openai/deployments/{deployment}/chat/completions?api-version=...`), plays a capable
model from the conversation it is sent (the same decisions the scripted plays make), and records
every request: path, query, headers and body. It also issues managed-identity tokens the way App
Service and Container Apps do (`GET {IDENTITY_ENDPOINT}?resource=...` with the
`X-IDENTITY-HEADER` secret), so `DefaultAzureCredential` finds a token without the internet.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from tests.harness import eventually, free_port

IDENTITY_SECRET = "identity-header-secret"
ISSUED_TOKEN = "fake-entra-token-" + secrets.token_hex(6)


@dataclass
class Recorded:
    """What the fake model server received."""

    chats: list[dict[str, Any]] = field(default_factory=list)
    tokens: list[dict[str, Any]] = field(default_factory=list)


def _app(recorded: Recorded) -> FastAPI:
    app = FastAPI()

    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        recorded.chats.append(
            {
                "path": request.url.path,
                "query": dict(request.query_params),
                "headers": {k.lower(): v for k, v in request.headers.items()},
                "body": body,
            }
        )
        return JSONResponse(_completion(body))

    app.add_api_route("/v1/chat/completions", chat, methods=["POST"])
    app.add_api_route("/openai/deployments/{deployment}/chat/completions", chat, methods=["POST"])

    @app.get("/msi/token")
    async def token(request: Request) -> JSONResponse:
        recorded.tokens.append(
            {
                "query": dict(request.query_params),
                "headers": {k.lower(): v for k, v in request.headers.items()},
            }
        )
        if request.headers.get("x-identity-header") != IDENTITY_SECRET:
            return JSONResponse({"error": "bad identity header"}, status_code=401)
        return JSONResponse(
            {
                "access_token": ISSUED_TOKEN,
                "expires_on": str(int(time.time()) + 3600),
                "resource": request.query_params.get("resource"),
                "token_type": "Bearer",
            }
        )

    return app


def _completion(body: dict[str, Any]) -> dict[str, Any]:
    tools = {t["function"]["name"] for t in body.get("tools") or []}
    messages = body["messages"]
    called = [
        c["function"]["name"]
        for m in messages
        if m.get("role") == "assistant"
        for c in m.get("tool_calls") or []
    ]
    results = {
        _name_of(messages, m.get("tool_call_id")): m.get("content")
        for m in messages
        if m.get("role") == "tool"
    }
    user = " ".join(_text(m) for m in messages if m.get("role") == "user")
    order = (re.findall(r"A-\d{4}", user) or ["A-1002"])[0]
    amount = float(
        (re.findall(r'"amount":\s*([\d.]+)|refund (\d+)', user) or [("120", "")])[0][0] or 120
    )
    if "handoff_to_billing" in tools and "issue_refund" not in tools:
        return _tool_call("handoff_to_billing", {})
    if "lookup_order" not in called:
        return _tool_call("lookup_order", {"order_id": order})
    if "issue_refund" not in called:
        return _tool_call("issue_refund", {"order_id": order, "amount": amount})
    outcome = str(results.get("issue_refund"))
    if "close_case" in tools and "close_case" not in called:
        return _tool_call("close_case", {"resolution": f"Refund outcome: {outcome}"})
    return _text_reply(f"Refund outcome: {outcome}")


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def _name_of(messages: list[dict[str, Any]], call_id: Any) -> str | None:
    for m in messages:
        for c in m.get("tool_calls") or []:
            if c.get("id") == call_id:
                return str(c["function"]["name"])
    return None


def _envelope(message: dict[str, Any], finish: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{secrets.token_hex(6)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "fake-model",
        "choices": [{"index": 0, "finish_reason": finish, "message": message}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def _tool_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    call = {
        "id": f"call_{secrets.token_hex(6)}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return _envelope({"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls")


def _text_reply(text: str) -> dict[str, Any]:
    return _envelope({"role": "assistant", "content": text}, "stop")


@asynccontextmanager
async def fake_model_server() -> AsyncIterator[tuple[str, Recorded]]:
    """The server on a loopback port, in a thread of this process: (base URL, what it received)."""
    recorded = Recorded()
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(_app(recorded), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()

    async def started() -> bool:
        if not thread.is_alive():
            raise AssertionError("the fake model server stopped")
        return bool(server.started)

    await eventually(started, what="the fake model server to start")
    try:
        yield f"http://127.0.0.1:{port}", recorded
    finally:
        server.should_exit = True
        thread.join(timeout=10)
