"""The files a request came with, on its page: a person reviewing an agent's chart sees the chart
and can save its report; an approver sees the receipt the agent read. In Chromium, on a laptop
and a phone: the image loads (the page's CSP lets it), nothing reaches past the window, the
download is the PDF's bytes, and axe-core finds nothing wrong."""

from __future__ import annotations

import pytest
from playwright.async_api import expect

from tests.browser.conftest import LAPTOP, PHONE, PageAs, audited, overflow
from tests.harness import Server
from tests.samples import chart_review


@pytest.fixture
def server(samples_server: Server) -> Server:
    return samples_server


@pytest.mark.parametrize("size", [LAPTOP, PHONE], ids=["laptop", "phone"])
async def test_a_request_s_page_shows_its_image_and_offers_its_document(
    server: Server, page_as: PageAs, axe_source: str, size: tuple[int, int]
) -> None:
    run = await server.start_run({"workflow": "chart_review", "input": {"topic": "sales"}})
    chart = await server.wait_for_request(run["id"])
    receipt_input = {"task": "File this receipt.", "receipt": "upload:7"}
    run = await server.start_run({"workflow": "multimodal_approval", "input": receipt_input})
    receipt = await server.wait_for_request(run["id"])
    width, height = size
    page = await page_as("lee", width=width, height=height)
    # the inbox says which requests came with files, before anyone opens them
    rows = page.locator("tr.request-row")
    await expect(rows.filter(has_text="Message from chart maker")).to_contain_text(
        "attached 2 files"
    )
    await expect(rows.filter(has_text="Approve file_expense")).to_contain_text(
        "attached an image (PNG, 198 KB)"
    )

    await page.goto(f"/requests/{chart['id']}")
    files = page.get_by_role("region", name="Attached files")
    image = files.get_by_role("img", name="An image (PNG, 198 KB), from the request")
    await expect(image).to_be_visible()
    assert await image.evaluate("img => img.complete && img.naturalWidth") == 260
    box = await image.bounding_box()
    assert box is not None
    assert box["width"] <= width
    await expect(files).to_contain_text("A document (PDF, 59 KB), from the request · Download")
    async with page.expect_download() as downloading:
        await files.get_by_role("link", name="Download").click()
    download = await downloading.value
    saved = await download.path()
    assert saved.read_bytes() == chart_review.pdf()
    assert download.suggested_filename.endswith(".pdf")
    assert await overflow(page) <= 0
    found = await audited(page, axe_source, "a chart to review")

    await page.goto(f"/requests/{receipt['id']}")
    photo = page.get_by_role("img", name="An image (PNG, 198 KB), from the user's message")
    await expect(photo).to_be_visible()
    assert await photo.evaluate("img => img.complete && img.naturalWidth") == 260
    await expect(page.get_by_role("link", name="Open full size")).to_have_attribute(
        "href", f"/requests/{receipt['id']}/attachments/{receipt['attachments'][0]['id']}"
    )
    assert await overflow(page) <= 0
    found += await audited(page, axe_source, "an approval with a photo")
    assert found == []
