"""The page figure of `baton bench`: a request page with a 200-message conversation."""

from __future__ import annotations

from pathlib import Path

from baton.bench_pages import measure_request_page


async def test_the_request_page_with_200_messages_is_measured_whole(tmp_path: Path) -> None:
    # measure_request_page refuses a page that does not show every message as a transcript
    ms = await measure_request_page(tmp_path, renders=3)
    assert ms > 0
