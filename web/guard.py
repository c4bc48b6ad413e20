"""The edge's first look at a request: its address texts Baton can store, its body bounded JSON.

Before any route runs: a path or a query parameter that holds what no text in the store may (a
NUL, which PostgreSQL refuses in any text it is sent, a search or a filter included; a text past
64 K characters) is a 404 (the path names nothing stored) or a 422 naming the parameter; a body
larger than `BATON_MAX_BODY_BYTES` is a 413 (by its declared length, or as soon as it grows past
the limit); a JSON body that holds what may not be stored (`human.text`: a lone surrogate, a NUL,
`Infinity`, a number beyond a double, nesting past 32 levels, a text past 64 K characters) is a
422 naming where, in Baton's error shape. Nothing of such a request reaches a route, so nothing of
it is stored or looked up.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from human.text import NotJson, Problem, parse, problems
from web.asgi import HttpMiddleware

_JSON_TYPES = ("application/json",)


class BodyGuard(HttpMiddleware):
    """ASGI middleware: refuse oversized bodies (413) and JSON that may not be stored (422)."""

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        super().__init__(app)
        self.max_bytes = max_bytes

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the path and query; read the body whole (bounded), check it, hand it on."""
        if found := address_problems(scope):
            if found[0][0][0] == "path":  # no stored id holds it: the path names nothing
                detail = f"no such path: it {found[0][1]}"
                await _answer(send, 404, {"error": "not_found", "detail": detail})
            else:
                await _answer(send, 422, _invalid(found))
            return
        if scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await self._too_large(send)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._too_large(send)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        media = headers.get("content-type", "").split(";")[0].strip().lower()
        if body and (media in _JSON_TYPES or media.endswith("+json")):
            try:
                parse(body)
            except NotJson as refused:
                await _answer(send, 422, _refusal(refused))
                return
        await self.app(scope, _replay(body, receive), send)

    async def _too_large(self, send: Send) -> None:
        detail = f"the request body is larger than {self.max_bytes} bytes (BATON_MAX_BODY_BYTES)"
        await _answer(send, 413, {"error": "too_large", "detail": detail})


def address_problems(scope: Scope) -> list[Problem]:
    """What in a request's path and query parameters no stored text may hold, with where.

    The query is read as Starlette reads it for the routes (`parse_qsl` of its Latin-1 text,
    percent-escapes as UTF-8): a parameter's location is `["query", name]`, the path's `["path"]`.
    """
    query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    found = [(["path", *loc], msg) for loc, msg in problems(scope.get("path", ""))]
    for name, value in query:
        found += [(["query", name, *loc], msg) for loc, msg in problems(value)]
        found += [(["query", name], f"parameter name {msg}") for _, msg in problems(name)]
    return found


def _invalid(found: list[Problem]) -> dict[str, Any]:
    errors = [{"loc": [_shown(part) for part in loc], "msg": msg} for loc, msg in found[:20]]
    first = errors[0]
    return {
        "error": "invalid",
        "detail": f"{'.'.join(first['loc'])}: {first['msg']}",
        "errors": errors,
    }


def _shown(part: str) -> str:
    """A location's part as an error may show it: no NUL, no surrogate, at most 40 characters."""
    text = part.replace("\x00", "\\0").encode("utf-8", "replace").decode("utf-8")
    return text if len(text) <= 40 else text[:40] + "…"


def _refusal(refused: NotJson) -> dict[str, Any]:
    errors = [{"loc": ["body", *loc[:32]], "msg": msg} for loc, msg in refused.problems[:20]]
    return {"error": "invalid", "detail": f"body: {refused}", "errors": errors}


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


async def _answer(send: Send, status: int, body: dict[str, Any]) -> None:
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})
