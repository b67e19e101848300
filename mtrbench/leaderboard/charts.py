"""Inline SVG charts for the leaderboard page: sorted, labelled bars and per-turn lines with bands.

Charts scale to their container (a viewBox, width 100%) and never carry their own legend inside the plot
area: the legend is an HTML list under the chart, so no label is ever drawn over a bar or a line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from mtrbench.analyses.turn_bands import TurnBand

# Okabe-Ito (colour-blind safe) first, then Tableau's; beyond these, hues spread by the golden angle.
PALETTE = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#D55E00",
    "#F0E442",
    "#000000",
    "#4E79A7",
    "#F28E2B",
    "#E15759",
    "#76B7B2",
    "#59A14F",
    "#EDC948",
    "#B07AA1",
    "#FF9DA7",
    "#9C755F",
    "#BAB0AC",
)
BAR_HEIGHT, LABEL_WIDTH, BAR_AREA, VALUE_PAD = 22, 150, 210, 52
LINE_WIDTH, LINE_HEIGHT, MARGIN_LEFT, MARGIN_BOTTOM, MARGIN_TOP, MARGIN_RIGHT = 420, 230, 42, 34, 10, 12


def colours(n: int) -> list[str]:
    """n distinct colours."""
    chosen = list(PALETTE[:n])
    for k in range(len(chosen), n):
        hue = (k * 137.508) % 360
        chosen.append(f"hsl({hue:.1f}, 62%, {42 + 12 * (k % 2)}%)")
    return chosen


def number(value: float | None) -> str:
    """Scores in [0, 1] with 4 decimals, ratings with 2; a missing value is an em dash."""
    if value is None:
        return "\u2014"
    return f"{value:.4f}" if abs(value) <= 1 else f"{value:.2f}"


def legend(items: Sequence[tuple[str, str]]) -> str:
    """An HTML legend, outside the plot: (label, colour) pairs."""
    return (
        '<ul class="legend">'
        + "".join(f'<li><span class="swatch" style="background:{c}"></span>{escape(label)}</li>' for label, c in items)
        + "</ul>"
    )


def _clip(label: str, limit: int = 22) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "\u2026"


def bar_chart(items: Sequence[tuple[str, float, str]], caption: str) -> str:
    """Horizontal bars (label, value, colour), best first, each labelled with its name and value.

    The scale is 0-1 unless a value exceeds 1 (judge ratings), then 0 to the largest value.
    """
    items = sorted(items, key=lambda item: (-item[1], item[0]))
    top = max([1.0] + [v for _, v, _ in items])
    height = BAR_HEIGHT * len(items) + 8
    width = LABEL_WIDTH + BAR_AREA + VALUE_PAD
    parts = [
        f'<svg viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(caption)}" class="bars">',
        f'<line class="axis" x1="{LABEL_WIDTH}" y1="0" x2="{LABEL_WIDTH}" y2="{height}"/>',
    ]
    for n, (label, value, colour) in enumerate(items):
        y = 4 + n * BAR_HEIGHT
        length = max(1.0, BAR_AREA * value / top) if value > 0 else 0
        parts.append(
            f'<g class="bar-row" data-label="{escape(label)}" data-value="{value!r}">'
            f'<text x="{LABEL_WIDTH - 6}" y="{y + 15}" text-anchor="end">{escape(_clip(label))}</text>'
            f'<rect class="bar" x="{LABEL_WIDTH}" y="{y + 3}" width="{length:.1f}" height="{BAR_HEIGHT - 6}" '
            f'fill="{colour}"><title>{escape(label)}: {number(value)}</title></rect>'
            f'<text class="value" x="{LABEL_WIDTH + length + 4:.1f}" y="{y + 15}">{number(value)}</text></g>'
        )
    parts.append("</svg>")
    return f'<figure class="chart"><figcaption>{escape(caption)}</figcaption>{"".join(parts)}</figure>'


@dataclass(frozen=True)
class Series:
    label: str
    colour: str
    bands: list[TurnBand]


def turn_chart(series: Sequence[Series], caption: str) -> str:
    """Mean per turn (line and points) inside its bootstrap band (shaded), one colour per system."""
    turns = sorted({b.turn for s in series for b in s.bands})
    if not turns:
        return ""
    top = max([1.0] + [b.high for s in series for b in s.bands])
    plot_w = LINE_WIDTH - MARGIN_LEFT - MARGIN_RIGHT
    plot_h = LINE_HEIGHT - MARGIN_TOP - MARGIN_BOTTOM
    first, last = turns[0], turns[-1]

    def x(turn: float) -> float:
        return MARGIN_LEFT + (plot_w * (turn - first) / (last - first) if last > first else plot_w / 2)

    def y(value: float) -> float:
        return MARGIN_TOP + plot_h * (1 - value / top)

    parts = [
        f'<svg viewBox="0 0 {LINE_WIDTH} {LINE_HEIGHT}" width="{LINE_WIDTH}" height="{LINE_HEIGHT}" role="img" '
        f'aria-label="{escape(caption)}" class="turns">'
    ]
    for k in range(5):  # horizontal grid and y labels
        value = top * k / 4
        parts.append(
            f'<line class="grid" x1="{MARGIN_LEFT}" x2="{LINE_WIDTH - MARGIN_RIGHT}" y1="{y(value):.1f}" '
            f'y2="{y(value):.1f}"/><text class="tick" x="{MARGIN_LEFT - 4}" y="{y(value) + 4:.1f}" '
            f'text-anchor="end">{value:.2f}</text>'
        )
    for turn in turns:
        parts.append(
            f'<text class="tick" x="{x(turn):.1f}" y="{LINE_HEIGHT - MARGIN_BOTTOM + 14}" '
            f'text-anchor="middle">{turn}</text>'
        )
    parts.append(
        f'<text class="tick" x="{MARGIN_LEFT + plot_w / 2:.1f}" y="{LINE_HEIGHT - 4}" text-anchor="middle">turn</text>'
    )
    for s in series:
        bands = sorted(s.bands, key=lambda b: b.turn)
        if not bands:
            continue
        upper = " ".join(f"{x(b.turn):.1f},{y(b.high):.1f}" for b in bands)
        lower = " ".join(f"{x(b.turn):.1f},{y(b.low):.1f}" for b in reversed(bands))
        line = " ".join(f"{x(b.turn):.1f},{y(b.mean):.1f}" for b in bands)
        parts.append(
            f'<g class="series" data-label="{escape(s.label)}">'
            f'<polygon class="band" points="{upper} {lower}" fill="{s.colour}"/>'
            f'<polyline class="line" points="{line}" stroke="{s.colour}"/>'
        )
        for b in bands:
            parts.append(
                f'<circle cx="{x(b.turn):.1f}" cy="{y(b.mean):.1f}" r="2.6" fill="{s.colour}">'
                f"<title>{escape(s.label)}, turn {b.turn}: {number(b.mean)} [{number(b.low)}, "
                f"{number(b.high)}], {b.n_queries} queries / {b.n_conversations} conversations</title>"
                f"</circle>"
            )
        parts.append("</g>")
    parts.append("</svg>")
    return (
        f'<figure class="chart"><figcaption>{escape(caption)}</figcaption>{"".join(parts)}'
        f"{legend([(s.label, s.colour) for s in series])}</figure>"
    )
