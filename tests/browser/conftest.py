"""A real headless Chromium (Debian's, never a downloaded one) driven by Playwright.

Each test gets a fresh browser; `page_as` signs a demo person in through the sign-in form, with
JavaScript on or off. Playwright's `expect` polls until its condition holds (20 s at most).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

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


# How far the page reaches past the window's right edge: what a horizontal scrollbar would scroll.
# Content clipped by an ancestor (a visually hidden table head) is not counted, as no user sees it.
OVERFLOW = "() => document.documentElement.scrollWidth - window.innerWidth"
# The elements whose box reaches past the window's right edge, clipped or not (a whole pixel:
# layout rounds, and a box ending at 390.4 in a 390 px window shows nothing).
WIDE_BOXES = """() => [...document.body.querySelectorAll('*')]
    .filter(e => Math.floor(e.getBoundingClientRect().right) > window.innerWidth)
    .map(e => `${e.tagName.toLowerCase()} ${(e.textContent || '').trim().slice(0, 40)}`)"""


async def laid_out(page: Page) -> None:
    """Wait until the page has loaded: its stylesheet applied, its deferred scripts (htmx) run.

    A layout query (scrollWidth, a bounding box) does not wait for a stylesheet still loading: it
    lays the page out without it. app.css is revalidated at every navigation (`no-cache`), and on a
    busy machine its answer can come after the page's text is there and every `expect` about the
    text has passed; the unstyled dashboard is 412 px wide at 390 (CI once saw that: 22 px).
    htmx.min.js is revalidated too, and until it has run a field changed on a page a form post
    just loaded is heard by nothing (CI once saw an edit's live check never refresh so).
    """
    await page.wait_for_load_state("load")


async def overflow(page: Page) -> int:
    """How many pixels the laid-out page reaches past the window: 0 or less when it fits."""
    await laid_out(page)
    return int(await page.evaluate(OVERFLOW))


async def wide_boxes(page: Page) -> list[str]:
    """The elements whose box reaches past the window once laid out, clipped or not."""
    await laid_out(page)
    return list(await page.evaluate(WIDE_BOXES))


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
        name: str,
        *,
        javascript: bool = True,
        width: int = 1200,
        height: int = 900,
        zone: str | None = None,
    ) -> Page:
        context = await browser.new_context(
            base_url=server.base_url,
            java_script_enabled=javascript,
            viewport={"width": width, "height": height},
            timezone_id=zone,  # the browser's clock (None: the machine's)
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


# accessibility: axe-core in the page (tests/browser/test_accessibility.py) -------------------

AXE = Path(__file__).parent / "axe"
RULES = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"]


@pytest.fixture(scope="session")
def axe_source() -> str:
    """axe.min.js, installed from tests/browser/axe/package-lock.json once."""
    script = AXE / "node_modules" / "axe-core" / "axe.min.js"
    if not script.is_file():
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund"], cwd=AXE, check=True, capture_output=True
        )
    return script.read_text(encoding="utf-8")


async def audited(page: Page, axe: str, where: str) -> list[str]:
    """What axe finds wrong on the page as it is now, one line a rule (none: it passes)."""
    await page.evaluate(axe)  # (through the DevTools protocol: the page's CSP does not apply)
    found: dict[str, Any] = await page.evaluate(
        "rules => axe.run(document, {runOnly: {type: 'tag', values: rules}})", RULES
    )
    assert found["passes"], "axe checked nothing"
    return [
        f"{where}: {v['id']} ({v['impact']}): {v['help']}: "
        + ", ".join(" ".join(n["target"]) for n in v["nodes"][:5])
        for v in found["violations"]
    ]
