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
LABEL_W: Final = 130
VALUE_W: Final = 110
ROW_H: Final = 28
BAR_H: Final = 18


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
    """Horizontal (stacked) bars, scaled to the largest total (or `scale`)."""
    top = scale or max((sum(s.value for s in r.segments) for r in rows), default=0) or 1
    room = WIDTH - LABEL_W - VALUE_W
    height = max(len(rows), 1) * ROW_H + 4
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-label="{escape(title)}" preserveAspectRatio="xMinYMin meet">',
        f"<title>{escape(title)}</title>",
    ]
    for i, row in enumerate(rows):
        y = i * ROW_H + 4
        parts.append(
            f'<text class="label" x="{LABEL_W - 8}" y="{y + BAR_H - 4}" '
            f'text-anchor="end">{escape(_clip(row.label))}</text>'
        )
        x = float(LABEL_W)
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


def _clip(label: str, limit: int = 18) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"
