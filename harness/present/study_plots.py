"""The studies' figures: growth with depth (log-log, one panel per phase) and effect ratios with intervals.

Why apart from ``plots.py``: these draw a study's own results (``ttfg study``'s depth and effect
studies, shown by ``report_sections.py``), not the history's trends; they share only the house
style, the canvas and the axis formatter, which ``plots.py`` keeps for every figure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

from .plots import STYLE, WIDTH_IN, png, unit_formatter


@dataclass
class DepthLine:
    """One backend in a depth panel: measured medians, and the fitted curve when there is one."""

    label: str
    color: str
    x: list[float]
    y: list[float]
    fit_x: list[float] = field(default_factory=list)
    fit_y: list[float] = field(default_factory=list)


@dataclass
class DepthPanel:
    title: str
    lines: list[DepthLine]


def _depth_axes(ax, panel: DepthPanel, depths: list[float]) -> None:
    ys = []
    for ln in panel.lines:
        ax.plot(ln.x, ln.y, "-", color=ln.color, linewidth=1.6, marker="o", markersize=4.5, label=ln.label)
        fit = [(x, y) for x, y in zip(ln.fit_x, ln.fit_y) if y > 0]
        if fit:
            ax.plot([x for x, _ in fit], [y for _, y in fit], "--", color=ln.color, linewidth=1.2, alpha=0.9)
        ys += list(ln.y)
    ax.set_xscale("log")
    ax.set_yscale("log")
    if ys:
        # A slope-1 guide (time proportional to depth) through the middle of the data: lines
        # steeper than it grow super-linearly, flatter ones sub-linearly.
        lo, hi = min(depths), max(depths)
        mid_y = math.exp(sum(math.log(v) for v in ys) / len(ys))
        mid_x = math.sqrt(lo * hi)
        ax.plot([lo, hi], [mid_y * lo / mid_x, mid_y * hi / mid_x], ":", color="#8a8a8a", linewidth=1.2,
                zorder=0.5, label="∝ depth (k = 1), for reference")
        ax.set_ylim(min(ys) / 1.6, max(ys) * 1.6)
    ax.set_xlim(min(depths) / 1.25, max(depths) * 1.25)
    ax.set_xticks(depths, [f"{d:g}" for d in depths])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0), numticks=8))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(unit_formatter("s"))
    ax.set_title(panel.title, loc="left", pad=6)
    # "best": the place that hides the fewest points (lines of far-apart backends leave
    # no fixed corner free); a light frame keeps it readable where it must cross a line.
    ax.legend(loc="best", fontsize=7.5, handlelength=2.2, frameon=True, framealpha=0.85, edgecolor="none")


def depth_plot(panels: list[DepthPanel], title: str, xlabel: str, ncols: int = 2) -> str:
    """Log-log growth with depth: one panel per phase, one line per backend, fits dashed."""
    depths = sorted({x for p in panels for ln in p.lines for x in ln.x}) or [1.0]
    ncols = max(1, min(ncols, len(panels)))
    nrows = max(1, math.ceil(len(panels) / ncols))
    with rc_context(STYLE):
        height = 0.6 + 3.3 * nrows
        fig = Figure(figsize=(WIDTH_IN - 0.3, height))
        axes = fig.subplots(nrows, ncols, squeeze=False)
        fig.subplots_adjust(wspace=0.16, hspace=0.42, top=1.0 - 0.55 / height)
        for i, ax in enumerate(axes.flat):
            if i >= len(panels):
                ax.set_visible(False)
                continue
            _depth_axes(ax, panels[i], depths)
            if i % ncols == 0:
                ax.set_ylabel("median seconds, log scale")
            if i >= len(panels) - ncols:
                ax.set_xlabel(xlabel)
        fig.suptitle(title, x=0.01, ha="left", fontsize=10, fontweight="bold", y=1.0 - 0.05 / height)
        return png(fig)


@dataclass
class EffectBar:
    """One backend x metric of an effect study: the ratio treatment / control and its interval."""

    label: str
    color: str
    ratio: float
    low: float | None
    high: float | None
    text: str


def effect_plot(bars: list[EffectBar], title: str, xlabel: str, left: str, right: str) -> str:
    """Horizontal bars from 1 to each ratio on a log axis, interval whiskers, a line at 1.

    The axis is symmetric around 1 in log space, so "twice as fast" and "twice as
    slow" are bars of the same length on either side.
    """
    with rc_context(STYLE):
        fig = Figure(figsize=(WIDTH_IN - 0.3, 1.3 + 0.42 * len(bars)))
        ax = fig.add_subplot()
        ypos = np.arange(len(bars))[::-1]
        ratios = np.array([b.ratio for b in bars], dtype=float)
        lows = np.array([b.low if b.low else b.ratio for b in bars], dtype=float)
        highs = np.array([b.high if b.high else b.ratio for b in bars], dtype=float)
        ax.barh(ypos, ratios - 1.0, left=1.0, color=[b.color for b in bars], height=0.58, alpha=0.85)
        ax.errorbar(ratios, ypos, xerr=[np.maximum(ratios - lows, 0), np.maximum(highs - ratios, 0)], fmt="none",
                    ecolor="#222222", elinewidth=1.1, capsize=3.5)
        ax.set_xscale("log")
        extent = max([abs(math.log(v)) for v in np.r_[lows, highs] if v > 0] + [math.log(1.5)]) * 1.25
        ax.set_xlim(math.exp(-extent), math.exp(extent))
        ax.axvline(1.0, color="#333333", linewidth=1.0)
        for y, b, lo, hi in zip(ypos, bars, lows, highs):
            # The numbers sit on the empty side of the line at 1, clear of the bar and its whisker.
            if b.ratio < 1:
                ax.text(max(hi, 1.0) * 1.03, y, b.text, va="center", ha="left", fontsize=8, color="#333333")
            else:
                ax.text(min(lo, 1.0) / 1.03, y, b.text, va="center", ha="right", fontsize=8, color="#333333")
        ax.set_yticks(ypos, [b.label for b in bars])
        for tick, b in zip(ax.get_yticklabels(), bars):
            tick.set_color(b.color)
            tick.set_fontweight("bold")
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0), numticks=12))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}×"))
        ax.grid(axis="y", visible=False)
        ax.set_ylim(-0.7, len(bars) - 0.3)
        ax.set_xlabel(xlabel)
        for x, text, ha in ((0.0, "◀ " + left, "left"), (1.0, right + " ▶", "right")):
            ax.text(x, 1.01, text, transform=ax.transAxes, ha=ha, va="bottom", fontsize=8.5, color="#444444")
        ax.set_title(title, loc="left", pad=20)
        return png(fig)


__all__ = ["DepthLine", "DepthPanel", "EffectBar", "depth_plot", "effect_plot"]
