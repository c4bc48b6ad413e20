"""`/docs` shows the API's operations on a machine with no other origin to reach."""

from __future__ import annotations

from playwright.async_api import Browser, Route, expect

from tests.harness import Server


async def test_the_api_docs_render_offline_under_the_pages_policy(
    browser: Browser, server: Server
) -> None:
    context = await browser.new_context(base_url=server.base_url)
    elsewhere: list[str] = []

    async def only_this_origin(route: Route) -> None:
        if route.request.url.startswith(server.base_url):
            await route.continue_()
        else:
            elsewhere.append(route.request.url)
            await route.abort()

    await context.route("**/*", only_this_origin)
    page = await context.new_page()
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
