"""`/docs` and `/redoc` show the API's operations on a machine with no other origin to reach."""

from __future__ import annotations

import pytest
from playwright.async_api import Browser, Page, Route, expect

from tests.harness import Server


async def offline_page(browser: Browser, server: Server, elsewhere: list[str]) -> Page:
    """A page that may reach this server only; what it asks of any other origin is noted."""
    context = await browser.new_context(base_url=server.base_url)

    async def only_this_origin(route: Route) -> None:
        if route.request.url.startswith(server.base_url):
            await route.continue_()
        else:
            elsewhere.append(route.request.url)
            await route.abort()

    await context.route("**/*", only_this_origin)
    return await context.new_page()


async def test_the_swagger_docs_render_offline_under_the_pages_policy(
    browser: Browser, server: Server
) -> None:
    elsewhere: list[str] = []
    page = await offline_page(browser, server, elsewhere)
    refused: list[str] = []
    page.on("console", lambda m: refused.append(m.text) if "Content Security" in m.text else None)
    reply = await page.goto("/docs")
    assert reply is not None
    assert reply.status == 200
    policy = reply.headers["content-security-policy"]
    assert "script-src 'self'" in policy
    assert "unsafe-inline" not in policy

    await expect(page.get_by_role("heading", name="Baton")).to_be_visible()
    await expect(page.get_by_text("/api/runs/{run_id}/cancel")).to_be_visible()
    await page.get_by_text("/api/runs/{run_id}/cancel").click()  # an operation opens
    await expect(page.get_by_role("heading", name="Responses")).to_be_visible()
    assert elsewhere == []
    assert refused == []


@pytest.mark.parametrize("width", [1366, 390])
async def test_the_redoc_reference_renders_offline_with_scripts_from_this_origin_only(
    browser: Browser, server: Server, width: int
) -> None:
    elsewhere: list[str] = []
    page = await offline_page(browser, server, elsewhere)
    await page.set_viewport_size({"width": width, "height": 800})
    reply = await page.goto("/redoc")
    assert reply is not None
    assert reply.status == 200
    policy = reply.headers["content-security-policy"]
    assert "script-src 'self';" in policy  # inline styles for ReDoc's own, never scripts

    await expect(page.get_by_role("heading", name="Baton (0.1.0)")).to_be_visible()
    await expect(page.get_by_role("heading", name="Start Run").first).to_be_attached()
    assert elsewhere == []
