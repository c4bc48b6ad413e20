"""The dashboard's SVG charts, drawn in Chromium: every label and figure shows whole."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import Browser

from tests.browser.conftest import LAPTOP, PHONE
from web.charts import Bar, Segment, bars

CSS = (Path(__file__).parents[2] / "web" / "static" / "app.css").read_text()

# What a text reaches past its chart's drawing, left or right (0 when it shows whole).
CUT_OFF = """() => [...document.querySelectorAll('svg.chart text')].map(t => {
    const box = t.getBBox(), width = t.ownerSVGElement.viewBox.baseVal.width;
    return [t.textContent, Math.max(0, -box.x, box.x + box.width - width)];
})"""


def chart(labels: list[str], texts: list[str]) -> str:
    rows = [
        Bar(label=label, segments=[Segment(30 * (i + 1), "answered", "p50")], text=text)
        for i, (label, text) in enumerate(zip(labels, texts, strict=True))
    ]
    return str(bars(rows, title="A chart"))


@pytest.mark.parametrize("size", [LAPTOP, PHONE], ids=["laptop", "phone"])
async def test_labels_and_figures_are_drawn_whole_at_a_laptop_and_a_phone(
    browser: Browser, size: tuple[int, int]
) -> None:
    page = await browser.new_page(viewport={"width": size[0], "height": size[1]})
    charts = [
        # the clipped ones a reviewer saw: "urchase.approval", "18 s / 1 h 16 m"
        chart(["purchase.approval", "refund.medium"], ["18 s / 1 h 16 min", "4"]),
        chart(["support-agents", "WWW-MANAGERS-EMEA"], ["1 h 59 min / 23 h 59 min", "120 open"]),
        chart(["x"], ["1"]),
    ]
    await page.set_content(f"<style>{CSS}</style><main>{''.join(charts)}</main>")

    shown = await page.evaluate(CUT_OFF)

    assert [text for text, _ in shown] == [
        "purchase.approval",
        "18 s / 1 h 16 min",
        "refund.medium",
        "4",
        "support-agents",
        "1 h 59 min / 23 h 59 min",
        "WWW-MANAGERS-EMEA",
        "120 open",
        "x",
        "1",
    ]
    assert [(text, cut) for text, cut in shown if cut > 0] == []
    await page.close()


def test_a_label_too_long_for_its_column_is_cut_with_its_whole_text_in_its_title() -> None:
    long = "a-team-whose-name-goes-on-and-on-and-on-and-on-and-on"
    drawn = chart([long], ["3"])
    assert f"<title>{long}</title>" in drawn
    assert "…</text>" in drawn
