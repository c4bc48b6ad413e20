"""The security headers, on a page, the API, a refusal before any route, and a static file."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI
from fastapi.responses import HTMLResponse

from web.guard import BodyGuard
from web.headers import CSP, SecurityHeaders


def app() -> FastAPI:
    made = FastAPI()

    @made.get("/page", response_class=HTMLResponse)
    async def page() -> str:
        return "<p>hi</p>"

    @made.post("/api/thing")
    async def thing(body: dict[str, int]) -> dict[str, int]:
        return body

    @made.get("/static/app.css")
    async def css() -> str:
        return "body {}"

    made.add_middleware(BodyGuard, max_bytes=2048)
    made.add_middleware(SecurityHeaders)
    return made


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app())
    async with httpx.AsyncClient(transport=transport, base_url="http://baton.test") as made:
        yield made


async def test_a_page_gets_the_script_policy_and_a_signed_in_one_is_not_cached(
    client: httpx.AsyncClient,
) -> None:
    anon = await client.get("/page")
    signed = await client.get("/page", headers={"Authorization": "Bearer t"})

    assert anon.headers["content-security-policy"] == CSP
    assert "unsafe-inline" not in CSP
    assert anon.headers["x-content-type-options"] == "nosniff"
    assert anon.headers["x-frame-options"] == "DENY"
    assert anon.headers["referrer-policy"] == "same-origin"
    assert "cache-control" not in anon.headers
    assert signed.headers["cache-control"] == "no-store"


async def test_json_a_refusal_before_any_route_and_a_static_file_carry_them_too(
    client: httpx.AsyncClient,
) -> None:
    ok = await client.post("/api/thing", json={"a": 1}, headers={"Authorization": "Bearer t"})
    big = await client.post("/api/thing", content=b"{" + b" " * 4096 + b"}")
    css = await client.get("/static/app.css", headers={"Cookie": "baton_session=x"})

    assert (ok.status_code, big.status_code) == (200, 413)
    for reply in (ok, big, css):
        assert reply.headers["x-content-type-options"] == "nosniff"
        assert reply.headers["content-security-policy"] == "frame-ancestors 'none'"
    assert ok.headers["cache-control"] == "no-store"
    assert css.headers["cache-control"] == "no-cache"
