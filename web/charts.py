"""Charts drawn on the server as SVG: no script, no CDN, readable without JavaScript.

One kind of chart serves the dashboard: horizontal bars, one row per label, each bar made of
segments (a stacked bar) or a single value. The SVG scales to its container (`viewBox`); every
segment has a `<title>` (what a pointer over it shows) and each row its total as text, and the
page gives the same figures in a table beside it, for screen readers and for copying.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Final

from markupsafe import Markup

WIDTH: Final = 480  # drawn at about this many pixels wide on a laptop, 0.75 of it on a phone
FONT: Final = 14  # app.css: `svg.chart text`, in the chart's units
LABEL_MAX: Final = WIDTH * 0.45  # a longer label is cut, with its whole text in its `<title>`
ROOM_MIN: Final = 160  # the bars' own width at the least
GAP: Final = 8  # between a label and its bar, and a bar and its text
ROW_H: Final = 28
BAR_H: Final = 18

# Widths of characters in ems, as wide as a broad sans-serif draws them (DejaVu Sans, measured
# in Chromium; most faces are narrower): a column is given what its text needs, not clipped.
_NARROW: Final = frozenset("ijlI.,:;'|!()[]{} tf/-r")
_WIDE: Final = frozenset("mwMW%@")


def text_width(text: str) -> float:
    """About how wide `text` is drawn in a chart, in its units (a little over, not under)."""
    ems = sum(
        0.34
        if c in _NARROW
        else 1.0
        if c in _WIDE
        else 0.72
        if c.isupper()
        else 0.64
        if c.isdigit()
        else 0.62
        for c in text
    )
    return ems * FONT * 1.05


@dataclass(frozen=True)
class Segment:
    """One part of a bar: its value, its name (the legend's), and its style (`seg-<style>`)."""

    value: float
    name: str
    style: str


@dataclass(frozen=True)
class Bar:
    """One row: its label, its segments, and the text shown at its end."""

    label: str
    segments: Sequence[Segment]
    text: str


def bars(rows: Sequence[Bar], *, title: str, scale: float | None = None) -> Markup:
    """Horizontal (stacked) bars, scaled to the largest total (or `scale`).

    The label column is as wide as its longest label needs (up to `LABEL_MAX`; a longer one is
    cut, whole in its `<title>`), and the texts at the bars' ends have room for the longest: the
    chart grows wider (and is drawn smaller) rather than clip one.
    """
    top = scale or max((sum(s.value for s in r.segments) for r in rows), default=0) or 1
    labels = [_clip(r.label, LABEL_MAX) for r in rows]
    label_w = max((text_width(label) for label in labels), default=0) + GAP
    value_w = max((text_width(r.text) for r in rows), default=0) + GAP
    width = max(WIDTH, label_w + ROOM_MIN + value_w)
    room = width - label_w - value_w
    height = max(len(rows), 1) * ROW_H + 4
    parts = [
        f'<svg class="chart" viewBox="0 0 {width:.0f} {height}" role="img" '
        f'aria-label="{escape(title)}" preserveAspectRatio="xMinYMin meet">',
        f"<title>{escape(title)}</title>",
    ]
    for i, (row, label) in enumerate(zip(rows, labels, strict=True)):
        y = i * ROW_H + 4
        cut = f"<title>{escape(row.label)}</title>" if label != row.label else ""
        parts.append(
            f'<text class="label" x="{label_w - GAP:.1f}" y="{y + BAR_H - 4}" '
            f'text-anchor="end">{cut}{escape(label)}</text>'
        )
        x = label_w
        for seg in row.segments:
            if seg.value <= 0:
                continue
            w = room * seg.value / top
            parts.append(
                f'<rect class="seg-{escape(seg.style)}" x="{x:.1f}" y="{y}" '
                f'width="{max(w, 1):.1f}" height="{BAR_H}">'
                f"<title>{escape(row.label)}: {escape(seg.name)} {_num(seg.value)}</title></rect>"
            )
            x += w
        parts.append(
            f'<text class="value" x="{x + 6:.1f}" y="{y + BAR_H - 4}">{escape(row.text)}</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))  # every text in it is escaped above


def _clip(label: str, most: float) -> str:
    """`label`, or as much of it as fits `most` wide, with an ellipsis."""
    if text_width(label) <= most:
        return label
    while label and text_width(label + "…") > most:
        label = label[:-1]
    return label + "…"


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"
