"""Figures for the report, returned as ``data:`` URIs or inline SVG text.

Why this shape: the report is one self-contained HTML file, so every figure is
embedded; PNG at a modest DPI keeps a 1000-commit history's report small where SVG
would carry every point. Figures are drawn on an Agg canvas directly (no pyplot), so
no global backend or figure registry is touched and nothing is left open.

Colours are fixed per backend across every figure and table (``backend_color``), line
styles tell variants apart, and detected steps are the only red and green marks.
"""

from __future__ import annotations

import base64
import io
import math
from dataclasses import dataclass, field

import numpy as np
from matplotlib import rc_context
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullLocator

from .. import fmt

#: Colours of backends that declare none (``Backend.color``), in sorted-name order.
EXTRA_COLORS = ("#6b6b6b", "#b8a21b", "#393b79", "#637939", "#8c6d31", "#843c39")
REGRESSION_COLOR = "#d62728"
IMPROVEMENT_COLOR = "#2ca02c"
LINE_STYLES = ("-", "--", ":", "-.")
#: Colours of a cold process's stacked segments, in the segments' time order
#: (``run_views.segments()``: start-up, import, build, trace, lower, compile, execute, not split).
PHASE_PALETTE = ("#d9d9d9", "#8da0cb", "#66c2a5", "#ffd92f", "#e5c494", "#fc8d62", "#e78ac3", "#b3b3b3")
MAX_POINTS = 200
#: 11.45 in x 100 dpi = the report column's 1145 px, so images are shown 1:1, never scaled.
DPI = 100
WIDTH_IN = 11.45
#: A phone's rendition (the page picks it below 640 px): the 340 px a 390 px screen leaves
#: for a plot, so its 8-9 pt text is shown 1:1 instead of at a third of its size.
NARROW_IN = 3.4

STYLE = {
    "font.size": 9, "axes.titlesize": 10, "axes.titleweight": "bold", "axes.titlelocation": "left",
    "axes.labelsize": 9, "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True,
    "grid.color": "#e6e6e6", "grid.linewidth": 0.8, "axes.edgecolor": "#888888", "axes.axisbelow": True,
    "xtick.color": "#444444", "ytick.color": "#444444", "xtick.labelsize": 8, "ytick.labelsize": 8,
    "legend.fontsize": 8, "legend.frameon": False, "text.parse_math": False,  # names may hold '$'
    "font.family": "DejaVu Sans", "path.simplify": True,
    "axes.titley": 1.01,  # a fixed title position skips a tight-bbox pass per figure
}


def backend_color(backend: str, others: list[str] | tuple[str, ...] = ()) -> str:
    """The backend's colour (``Backend.color``, through ``engines.facts``); backends without one, or unknown here,
    take spare colours in sorted-name order."""
    from .. import engines

    declared = engines.facts(backend).color
    if declared:
        return declared
    unknown = sorted({b for b in (*others, backend) if not engines.facts(b).color})
    return EXTRA_COLORS[unknown.index(backend) % len(EXTRA_COLORS)]


def _encode(canvas: FigureCanvasAgg) -> str:
    """The canvas as it is now, as a 256-colour PNG data URI (a third of true colour's bytes)."""
    from PIL import Image

    image = Image.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
    image = image.convert("RGB").quantize(colors=256, method=Image.Quantize.FASTOCTREE)
    buf = io.BytesIO()
    image.save(buf, format="png", compress_level=6)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def png(fig: Figure) -> str:
    """Draw a whole figure, trimmed to its contents (labels never clipped), and encode it."""
    from PIL import Image

    FigureCanvasAgg(fig)
    raw = io.BytesIO()
    fig.savefig(raw, format="png", dpi=DPI, bbox_inches="tight", pad_inches=0.12)
    image = Image.open(io.BytesIO(raw.getvalue())).convert("RGB").quantize(colors=256, method=Image.Quantize.FASTOCTREE)
    buf = io.BytesIO()
    image.save(buf, format="png", compress_level=6)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def unit_formatter(unit: str) -> FuncFormatter:
    return FuncFormatter(lambda v, _pos: fmt.value(v, unit))


def _use_log(values: np.ndarray, unit: str) -> bool:
    values = values[np.isfinite(values) & (values > 0)]
    return unit != "ratio" and len(values) > 0 and values.max() / values.min() > 20


def _bins(x: np.ndarray, max_points: int) -> tuple[np.ndarray, np.ndarray]:
    """Start index and size of each equal-width commit bin (at most ``max_points`` bins)."""
    span = x[-1] - x[0] + 1
    bins = ((x - x[0]) * max_points // span).astype(int)
    starts = np.flatnonzero(np.r_[True, bins[1:] != bins[:-1]])
    return starts, np.diff(np.r_[starts, len(x)])


def downsample(x: np.ndarray, y: np.ndarray, max_points: int = MAX_POINTS):
    """At most ``max_points`` points: equal-width commit bins, mean position and value, min/max band.

    Returns ``(x, y, lo, hi)``; ``lo``/``hi`` are None when nothing was aggregated.
    """
    if len(x) <= max_points:
        return x, y, None, None
    starts, counts = _bins(x, max_points)
    return (np.add.reduceat(x, starts) / counts, np.add.reduceat(y, starts) / counts,
            np.minimum.reduceat(y, starts), np.maximum.reduceat(y, starts))


def hover_points(line: "Line", unit: str, scale: float, max_points: int = MAX_POINTS) -> list:
    """What a pointer over the plot shows, per drawn point: ``[first, last, y, value, samples]``.

    ``first``/``last``: the commit positions the point covers (one commit unless the line was
    downsampled); ``y``: where it is drawn (plot units, 4 significant digits); ``value``: the
    value as the formatter prints it (a bin: its mean); ``samples``: "N samples, min–max" over
    the samples behind it ("" when the history kept medians only). Text comes from ``fmt``
    here, so the page's script only places it.
    """
    x = np.asarray(line.x)
    if not len(x):
        return []
    n = line.n if line.n is not None else np.zeros(len(x), dtype=int)
    lo = line.lo if line.lo is not None else line.y
    hi = line.hi if line.hi is not None else line.y
    if len(x) > max_points:
        starts, counts = _bins(x, max_points)
        ends = starts + counts - 1
        y = np.add.reduceat(line.y, starts) / counts
        n, lo, hi = np.add.reduceat(n, starts), np.minimum.reduceat(lo, starts), np.maximum.reduceat(hi, starts)
        first, last = x[starts], x[ends]
    else:
        y, first, last = line.y, x, x
    out = []
    for f, l, v, k, a, b in zip(first.tolist(), last.tolist(), y.tolist(), n.tolist(), lo.tolist(), hi.tolist()):
        spread = (f"{k} samples, {fmt.value(a, unit)}–{fmt.value(b, unit)}" if k > 1
                  else "1 sample" if k == 1 else "median only")
        out.append([int(f), int(l), float(f"{v / scale:.4g}"), fmt.value(v, unit), spread])
    return out


@dataclass
class Line:
    """One case's series in a trend plot, with its detected steps as ``(pos, value_after, regression)``.

    ``n``, ``lo``, ``hi``: per value, how many samples are behind it and their min and max
    (None: unknown); ``step_info``: per step, ``(anchor, text)`` for the pointer.
    """

    label: str
    color: str
    style: str
    x: np.ndarray
    y: np.ndarray
    steps: list[tuple[int, float, bool]] = field(default_factory=list)
    n: np.ndarray | None = None
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None
    step_info: list[tuple[str, str]] = field(default_factory=list)


class TrendCanvas:
    """Draws every trend plot of one report on one reused figure, blitting the static parts.

    Why: nearly all of matplotlib's time per figure goes to ticks and their text. The
    x axis is the same list of commits in every trend plot, so it is drawn once into a
    background (with the axes frame), and each plot restores that background and draws
    only what changes: the y axis, bands, lines, step markers and title (matplotlib's
    blitting API: ``copy_from_bbox`` / ``restore_region`` / ``draw_artist``). Together
    with reusing the axes this makes a 1000-commit report about three times faster.

    No legend inside: colours (backend) and line styles (variant) are fixed across the
    whole report, so the HTML shows one legend per section.
    """

    def __init__(self, ticks: list[tuple[int, str]], n_commits: int, width_in: float = WIDTH_IN):
        narrow = width_in < 6
        if narrow and len(ticks) > 3:  # three labels fit a phone's width
            keep = sorted({round(i * (len(ticks) - 1) / 2) for i in range(3)})
            ticks = [ticks[i] for i in keep]
        with rc_context(STYLE):
            self.fig = Figure(figsize=(width_in, 3.4 if narrow else 3.2), dpi=DPI)
            self.canvas = FigureCanvasAgg(self.fig)
            self.ax = ax = self.fig.add_axes((0.22, 0.2, 0.75, 0.68) if narrow else (0.075, 0.19, 0.895, 0.72))
            ax.set_xlim(-0.5, max(n_commits - 0.5, 0.5))
            ax.set_xticks([t[0] for t in ticks], [t[1] for t in ticks], fontsize=7.5)
            self.title = ax.text(-0.25 if narrow else 0, 1.04, "", transform=ax.transAxes, fontsize=9 if narrow else 10,
                                 fontweight="bold", va="bottom", ha="left", wrap=False)
            ax.yaxis.set_visible(False)
            self.canvas.draw()
            self.background = self.canvas.copy_from_bbox(self.fig.bbox)
            ax.yaxis.set_visible(True)
        self.n_commits = n_commits
        self.narrow = narrow

    def plot(self, lines: list[Line], title: str, unit: str, ylabel: str) -> tuple[str, int, dict]:
        """Lines across commits (x = commit order); steps marked ▲ (worse) / ▼ (better).

        Returns the PNG data URI, how many commits one plotted point averages at most
        (1: every commit drawn), and what the page needs to answer a pointer over the image
        (:meth:`hover`). The x-axis note lives in the HTML caption: it is the same for
        every plot.
        """
        ax = self.ax
        # Bytes are drawn in MiB so that tick positions land on round binary sizes.
        scale = float(2**20) if unit == "bytes" else 1.0
        with rc_context(STYLE):
            for artist in [*ax.lines, *ax.collections]:
                artist.remove()
            polys, colors, extremes, drawn = [], [], [], []
            aggregated = 1
            for ln in lines:
                x, y, lo, hi = downsample(ln.x, ln.y / scale)
                if lo is not None:
                    aggregated = max(aggregated, math.ceil(len(ln.x) / len(x)))
                    polys.append(np.column_stack([np.r_[x, x[::-1]], np.r_[lo, hi[::-1]]]))
                    colors.append(ln.color)
                    extremes += [lo, hi]
                extremes.append(y)
                few = len(x) <= 40
                drawn += ax.plot(x, y, ln.style, color=ln.color, linewidth=1.5, marker="o" if few else None,
                                 markersize=3.5 if len(x) > 1 else 6)
            for ln in lines:  # markers above every line
                for worse, color, marker in ((True, REGRESSION_COLOR, "^"), (False, IMPROVEMENT_COLOR, "v")):
                    pts = [(p, v) for p, v, w in ln.steps if w == worse]
                    if pts:
                        drawn += ax.plot([p for p, _ in pts], [v / scale for _, v in pts], marker=marker, markersize=9,
                                         linestyle="none", color=color, markeredgecolor="white",
                                         markeredgewidth=0.8)
            bands = None
            if polys:
                bands = PolyCollection(polys, facecolors=colors, alpha=0.10, linewidths=0)
                ax.add_collection(bands, autolim=False)
            values = np.concatenate(extremes) if extremes else np.array([1.0])
            values = values[np.isfinite(values)]
            log = _use_log(values, unit)
            if log:
                ax.set_yscale("log")
                ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0), numticks=8))
                positive = values[values > 0]
                ax.set_ylim(positive.min() / 1.25, positive.max() * 1.25)
            else:
                ax.set_yscale("linear")
                ax.yaxis.set_major_locator(MaxNLocator(5, integer=unit == "count"))
                top = float(values.max()) if len(values) else 1.0
                bottom = 0.0 if unit != "ratio" and (not len(values) or values.min() >= 0) else float(values.min())
                ax.set_ylim(bottom, top * 1.1 if top > 0 else 1.0)
            ax.set_xlim(-0.5, max(self.n_commits - 0.5, 0.5))  # set_yscale may touch autoscaling
            ax.yaxis.set_minor_locator(NullLocator())
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: fmt.value(v * scale, unit)))
            ax.set_ylabel("" if self.narrow else ylabel + (", log scale" if log else ""))
            self.title.set_text(title if not self.narrow else _shorten(title, 44))
            self.canvas.restore_region(self.background)
            ax.draw_artist(ax.yaxis)
            if bands is not None:
                ax.draw_artist(bands)
            for artist in drawn:
                ax.draw_artist(artist)
            ax.draw_artist(self.title)
            if self.narrow:  # a phone's rendition shares the points of the wide one: only its geometry differs
                return _encode(self.canvas), aggregated, self.geometry()
            return _encode(self.canvas), aggregated, self.hover(lines, unit, scale, log)

    def geometry(self) -> dict:
        """The image's size, its axes box in pixels from the top left, and the y limits (:meth:`hover`'s first part)."""
        width, height = self.canvas.get_width_height()
        box = self.ax.get_window_extent()
        return {"size": [width, height],
                "box": [round(box.x0, 1), round(height - box.y1, 1), round(box.width, 1), round(box.height, 1)],
                "y": [float(v) for v in self.ax.get_ylim()]}

    def hover(self, lines: list[Line], unit: str, scale: float, log: bool) -> dict:
        """The image's data coordinates and its points, for the page's small pointer script.

        ``box``: the axes in image pixels from the top left (left, top, width, height);
        ``x``/``y``: the axis limits; ``log``: a log y axis; ``lines``: label, colour and
        :func:`hover_points` per line; ``steps``: ``[pos, y, anchor, text]`` per step marker.
        """
        steps = []
        for ln in lines:
            for (pos, value, _), (anchor, text) in zip(ln.steps, ln.step_info):
                steps.append([int(pos), float(f"{value / scale:.4g}"), anchor, text])
        return {**self.geometry(), "x": [float(v) for v in self.ax.get_xlim()], "log": bool(log),
                "lines": [{"label": ln.label, "color": ln.color, "points": hover_points(ln, unit, scale)}
                          for ln in lines],
                "steps": steps}


def _shorten(text: str, width: int) -> str:
    """A title cut at a word to fit a phone's plot, marked with an ellipsis (the page's heading says it whole)."""
    if len(text) <= width:
        return text
    return text[:width].rsplit(" ", 1)[0].rstrip(" —(") + " …"


@dataclass
class Bar:
    label: str
    color: str                   # backend colour, used for the tick label
    segments: dict[str, float]   # segment key (run_views.segments()) -> seconds
    total: float


def phase_plot(bars: list[Bar], names: dict[str, str], title: str, width_in: float = WIDTH_IN - 0.3) -> str:
    """Horizontal stacked bars: where one cold process's time goes, phase by phase.

    ``names`` maps each segment key to its display name, in time order; colours follow that order.
    ``width_in``: the figure's width (``NARROW_IN`` for a phone: the legend wraps, labels shorten).
    """
    order = list(names)
    colors = {k: PHASE_PALETTE[i % len(PHASE_PALETTE)] for i, k in enumerate(order)}
    narrow = width_in < 6
    with rc_context(STYLE):
        fig = Figure(figsize=(width_in, 0.9 + 0.5 * len(bars)))
        ax = fig.add_subplot()
        if narrow:
            fig.subplots_adjust(left=0.42, right=0.86)
        ypos = np.arange(len(bars))[::-1]
        used = []
        for key in order:
            widths = np.array([b.segments.get(key, 0.0) for b in bars])
            if not np.any(widths > 0):
                continue
            lefts = np.array([sum(v for k, v in b.segments.items() if order.index(k) < order.index(key)) for b in bars])
            ax.barh(ypos, widths, left=lefts, color=colors[key], height=0.62, edgecolor="white", linewidth=0.6)
            used.append(key)
        top = max((max(b.total, sum(b.segments.values())) for b in bars), default=1.0)
        for y, b in zip(ypos, bars):
            ax.text(max(b.total, sum(b.segments.values())) + top * 0.01, y, fmt.seconds(b.total), va="center", fontsize=8.5, color="#333333",
                    fontweight="bold")
        ax.set_yticks(ypos, [b.label for b in bars])
        for tick, b in zip(ax.get_yticklabels(), bars):
            tick.set_color(b.color)
            tick.set_fontweight("bold")
        ax.set_xlim(0, top * (1.3 if narrow else 1.1))
        ax.xaxis.set_major_formatter(unit_formatter("s"))
        ax.xaxis.set_major_locator(MaxNLocator(3 if narrow else 8))
        ax.set_xlabel("seconds from spawn (medians)" if narrow else
                      "seconds from process spawn to first gradient (median of cold samples)")
        ax.grid(axis="y", visible=False)
        handles, labels = [Patch(color=colors[k]) for k in used], [names[k] for k in used]
        if narrow:  # title and a two-column legend across the whole figure, above the axes: nothing wider than it
            rows = -(-len(used) // 2)
            top_in = 0.35 + 0.19 * rows + 0.15
            fig.set_figheight(fig.get_figheight() + top_in)
            fig.subplots_adjust(top=1 - top_in / fig.get_figheight())
            fig.suptitle(title, x=0.01, y=0.995, ha="left", va="top", fontsize=10, fontweight="bold")
            fig.legend(handles, labels, loc="upper left", bbox_to_anchor=(0.0, 1 - 0.3 / fig.get_figheight()), ncol=2,
                       fontsize=8, handlelength=1.2, borderaxespad=0.3, columnspacing=1.0)
        else:
            ax.set_title(title, loc="left", pad=30)
            ax.legend(handles, labels, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=len(used), fontsize=8,
                      handlelength=1.2, borderaxespad=0.3)
        return png(fig)


@dataclass
class CacheBar:
    label: str
    color: str
    cold: float | None
    warm: float | None


def cache_plot(panels: list[tuple[str, list[CacheBar]]], title: str, width_in: float = WIDTH_IN - 0.3) -> str:
    """Cold versus warm compile cache, side by side per case, one panel per metric (stacked on a phone)."""
    narrow = width_in < 6
    with rc_context(STYLE):
        n = len(panels[0][1]) if panels else 0
        if narrow:  # panels stacked; room on the right for "2.1× faster warm"
            fig = Figure(figsize=(width_in, (1.2 + 0.62 * n) * len(panels)))
            axes = fig.subplots(len(panels), 1, sharey=True, squeeze=False)[:, 0]
            fig.subplots_adjust(hspace=0.55, left=0.36, right=0.7)
        else:
            fig = Figure(figsize=(width_in, 1.2 + 0.62 * n))
            axes = fig.subplots(1, len(panels), sharey=True, squeeze=False)[0]
            fig.subplots_adjust(wspace=0.35)
        for i, (ax, (metric_label, rows)) in enumerate(zip(axes, panels)):
            ypos = np.arange(len(rows))[::-1]
            cold = np.array([r.cold if r.cold else np.nan for r in rows], dtype=float)
            warm = np.array([r.warm if r.warm else np.nan for r in rows], dtype=float)
            colors = [r.color for r in rows]
            ax.barh(ypos + 0.19, cold, height=0.36, color=colors)
            ax.barh(ypos - 0.19, warm, height=0.36, color=colors, alpha=0.35, hatch="///", edgecolor=colors)
            if _use_log(np.concatenate([cold, warm]), "s"):
                ax.set_xscale("log")
                ax.xaxis.set_minor_locator(NullLocator())
            ax.xaxis.set_major_formatter(unit_formatter("s"))
            for y, r in zip(ypos, rows):
                if r.cold and r.warm:
                    text = (f"{fmt.factor(r.cold / r.warm)} faster warm" if r.cold >= r.warm
                            else f"{fmt.factor(r.warm / r.cold)} slower warm")
                    ax.text(1.01, y, text.replace(" warm", "\nwarm") if narrow else text, transform=ax.get_yaxis_transform(),
                            va="center", fontsize=8, color="#333333")
            ax.set_yticks(ypos, [r.label for r in rows])
            for tick, r in zip(ax.get_yticklabels(), rows):
                tick.set_color(r.color)
                tick.set_fontweight("bold")
            ax.grid(axis="y", visible=False)
            ax.set_xlabel(f"{metric_label} (seconds{', log scale' if ax.get_xscale() == 'log' else ''})")
            ax.set_title(metric_label, loc="left", pad=8)
        axes[0].legend([Patch(facecolor="#777777"), Patch(facecolor="#777777", alpha=0.35, hatch="///", edgecolor="#777777")],
                       ["cold cache (fresh, empty)", "warm cache (populated beforehand)"], loc="lower left",
                       bbox_to_anchor=(0, 1.08), ncol=1 if narrow else 2, fontsize=8)
        height = fig.get_figheight()
        fig.suptitle(title, x=0.01, ha="left", fontsize=10, fontweight="bold",
                     y=1.0 + (0.45 if narrow else 0.35) / height)
        return png(fig)


@dataclass
class BisectPoint:
    """One tested commit of a bisect: where it sits in the range, its value of the deciding metric (None when
    no comparison measured it), and what the search found it to be."""

    x: int
    label: str
    value: float | None
    #: good, bad, between, unknown or skipped; "good end" and "bad end" for the range's ends.
    state: str
    culprit: bool = False


#: A tested commit's colour by state: the ends and the commits that match them in the gate's red and green.
BISECT_COLORS = {"good end": IMPROVEMENT_COLOR, "good": IMPROVEMENT_COLOR, "bad end": REGRESSION_COLOR,
                 "bad": REGRESSION_COLOR, "between": "#e8871e", "turn": "#8e44ad", "unknown": "#6b6b6b", "skipped": "#b8a21b"}


def bisect_plot(points: list[BisectPoint], n_commits: int, metric: str, unit: str, title: str) -> str:
    """Each tested commit's value of the deciding metric across the range, in range order.

    The ends are squares, the tested commits dots coloured by what they were found to be,
    the culprit ringed; a commit no comparison measured this metric for (skipped, or decided
    by another metric) is a cross on the bottom edge, so every tested commit has its mark.
    """
    with rc_context(STYLE):
        fig = Figure(figsize=(WIDTH_IN - 0.3, 3.4))
        ax = fig.add_subplot()
        measured = sorted((p for p in points if p.value is not None), key=lambda p: p.x)
        if measured:
            ax.plot([p.x for p in measured], [p.value for p in measured], color="#bbbbbb", linewidth=1.0, zorder=1)
        for state in BISECT_COLORS:
            these = [p for p in measured if p.state == state]
            if these:
                ax.scatter([p.x for p in these], [p.value for p in these], color=BISECT_COLORS[state], zorder=3,
                           s=60 if state.endswith(" end") else 34, marker="s" if state.endswith(" end") else "o",
                           label=state)
        unmeasured = [p for p in points if p.value is None]
        if unmeasured:
            ax.scatter([p.x for p in unmeasured], [0.03] * len(unmeasured), transform=ax.get_xaxis_transform(),
                       marker="x", color=[BISECT_COLORS.get(p.state, "#6b6b6b") for p in unmeasured], zorder=3,
                       label="not measured in this metric")
        for p in points:
            if p.culprit:
                y, transform = ((p.value, ax.transData) if p.value is not None
                                else (0.03, ax.get_xaxis_transform()))
                ax.scatter([p.x], [y], transform=transform, s=260, facecolors="none", edgecolors=REGRESSION_COLOR,
                           linewidths=2.0, zorder=4, label="culprit")
                ax.annotate("culprit", (p.x, y), xycoords=transform, textcoords="offset points", xytext=(0, 12),
                            ha="center", color=REGRESSION_COLOR, fontweight="bold")
        ax.set_xlim(-0.5, max(n_commits - 1, 1) + 0.5)
        ticks = sorted({p.x: p.label for p in points}.items())
        ax.set_xticks([x for x, _ in ticks], [label for _, label in ticks], rotation=45, ha="right")
        if measured:
            ax.yaxis.set_major_formatter(unit_formatter(unit))
        else:  # nothing measured in this metric: an axis of made-up numbers would mislead
            ax.set_yticks([])
        ax.set_ylabel(metric)
        ax.set_xlabel(f"commits from the good end to the bad end (first-parent, {n_commits} in all; tested ones named)")
        ax.grid(axis="x", visible=False)
        ax.legend(loc="upper left", ncols=4)
        ax.set_title(title, loc="left")
        return png(fig)


def sparkline_svg(values, color: str, width: int = 110, height: int = 26, max_points: int = 60) -> str:
    """A tiny inline SVG trend (no axes): built from numbers only, so safe to embed unescaped."""
    y = np.asarray(values, dtype=float)
    y = y[np.isfinite(y)]
    if len(y) == 0:
        return ""
    if len(y) > max_points:
        _, y, _, _ = downsample(np.arange(len(y)), y, max_points)
    lo, hi = float(y.min()), float(y.max())
    span = hi - lo or 1.0
    pad = 3
    xs = np.linspace(pad, width - pad, len(y)) if len(y) > 1 else np.array([width / 2])
    ys = height - pad - (y - lo) / span * (height - 2 * pad)
    points = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(xs, ys))
    color = color if color.startswith("#") and all(c in "0123456789abcdefABCDEF" for c in color[1:]) else "#555555"
    return (f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
            f'xmlns="http://www.w3.org/2000/svg" role="img" aria-label="trend">'
            f'<polyline fill="none" stroke="{color}" stroke-width="1.5" stroke-linejoin="round" points="{points}"/>'
            f'<circle cx="{xs[-1]:.1f}" cy="{ys[-1]:.1f}" r="2.4" fill="{color}"/></svg>')


__all__ = ["BISECT_COLORS", "Bar", "BisectPoint", "CacheBar", "LINE_STYLES", "Line", "MAX_POINTS",
           "PHASE_PALETTE", "STYLE", "TrendCanvas", "WIDTH_IN", "backend_color", "bisect_plot", "cache_plot", "downsample",
           "hover_points", "phase_plot", "png", "sparkline_svg", "unit_formatter"]
