"""A real headless Chromium (Debian's, never a downloaded one) driven by Playwright.

Each test gets a fresh browser; `page_as` signs a demo person in through the sign-in form, with
JavaScript on or off. Playwright's `expect` polls until its condition holds (20 s at most).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, async_playwright, expect

from tests.harness import Server

CHROMIUM = os.environ.get("BATON_TEST_CHROMIUM", "/usr/bin/chromium")
# Root needs --no-sandbox; the rest keep Chromium off a network this machine does not have.
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

expect.set_options(timeout=20_000)

PageAs = Callable[..., Awaitable[Page]]

LAPTOP = (1366, 768)
PHONE = (390, 844)


@pytest.fixture
def server(page_server: Server) -> Server:
    return page_server


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    assert Path(CHROMIUM).exists(), f"no Chromium at {CHROMIUM}: apt-get install chromium"
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield launched
        finally:
            await launched.close()


@pytest.fixture(params=["js", "no-js"])
def javascript(request: pytest.FixtureRequest) -> bool:
    """The same flow with JavaScript on, then off."""
    return bool(request.param == "js")


@pytest.fixture
def page_as(browser: Browser, server: Server, passwords: dict[str, str]) -> PageAs:
    async def open_page(
        name: str, *, javascript: bool = True, width: int = 1200, height: int = 900
    ) -> Page:
        context = await browser.new_context(
            base_url=server.base_url,
            java_script_enabled=javascript,
            viewport={"width": width, "height": height},
        )
        page = await context.new_page()
        await page.goto("/")
        await expect(page).to_have_url(f"{server.base_url}/signin?next=%2F")
        await page.get_by_label("Name").fill(name)
        await page.get_by_label("Password").fill(passwords[name])
        await page.get_by_role("button", name="Sign in").click()
        await expect(page.get_by_role("heading", name="Inbox")).to_be_visible()
        return page

    return open_page
