"""A differential icicle of one attribution, base against head, as rows of cells the report draws with CSS.

Why: a table lists the five lines that grew; an icicle shows at a glance how big each is next to everything else.
Each cell's width is its larger side's share of its parent (so that what vanished still shows), its colour the
change (red grew, blue shrank, grey unchanged; the deeper, the larger the change), its title the numbers. Widths
are percentages of the section, so the page fits a phone's 390 px without scrolling sideways: a cell too narrow
for its label keeps its title (a tap or a hover shows it).

Two icicles per case, where the attribution holds their data: the first gradient's phases (seconds), each with the
compiled code its model lines made under it (jaxpr equations and FX nodes are made while tracing, so they sit under
``trace``); and the Python call counts, under "your code" and "the frameworks' code".
"""

from __future__ import annotations

import math

from .. import fmt
from ..results.attribution_record import Attribution

#: Cells narrower than this share of their row are folded into one "others" cell.
MIN_SHARE = 0.01
_CODE = {"project": "your code", "framework": "the frameworks' code"}


def colour(base: float, head: float) -> str:
    """Red for growth, blue for shrinkage, by the log of head/base (full at 4x); grey when equal."""
    if base == head:
        return "hsl(210, 10%, 82%)"
    if base <= 0 or head <= 0:
        strength = 1.0
    else:
        strength = min(abs(math.log(head / base)) / math.log(4), 1.0)
    light = round(88 - 38 * strength)
    return f"hsl(0, 75%, {light}%)" if head > base else f"hsl(215, 70%, {light}%)"


def _cell(label: str, title: str, base: float, head: float, left: float, width: float) -> dict:
    return {"label": label, "title": title, "left": round(left, 3), "width": round(width, 3),
            "color": colour(base, head)}


def _layout(items: list[tuple[str, str, float, float]], left: float, width: float, unit,
            fold: bool = True) -> list[dict]:
    """Cells for ``(label, where, base, head)`` items side by side within ``[left, left + width]`` (percent);
    ``fold``: the narrowest into one "others" cell (never for parents whose children are drawn under them)."""
    total = sum(max(b, h) for _, _, b, h in items)
    if total <= 0:
        return []
    kept = [i for i in items if not fold or max(i[2], i[3]) / total >= MIN_SHARE]
    rest = [i for i in items if i not in kept]
    if rest:
        kept.append((f"{len(rest)} others", "", sum(i[2] for i in rest), sum(i[3] for i in rest)))
    cells, x = [], left
    for label, where, b, h in kept:
        w = width * max(b, h) / total
        delta = h - b
        sign = "+" if delta > 0 else ""
        title = f"{label}{f' ({where})' if where else ''}: base {unit(b)}, head {unit(h)}, {sign}{unit(delta)}"
        cells.append(_cell(label, title, b, h, x, w))
        x += w
    return cells


def phase_icicle(a: Attribution) -> dict | None:
    """The process's phases and, under ``trace``, the compiled code per model line; None without phases."""
    phases = [(p.phase, "", p.base or 0.0, p.head or 0.0) for p in a.phases if (p.base or p.head)]
    if not phases:
        return None
    top = _layout(phases, 0.0, 100.0, fmt.seconds)
    b, h = sum(p[2] for p in phases), sum(p[3] for p in phases)
    rows = [[_cell("all phases", f"all phases: base {fmt.seconds(b)}, head {fmt.seconds(h)}", b, h, 0, 100)],
            top]
    from ..decide.source_lines import KIND_WORDS

    trace = next((c for c in top if c["label"] == "trace"), None)
    compiled = [(f"{c.fn}" + (f": {c.reason}" if c.reason else ""), f"{c.where}, {KIND_WORDS.get(c.kind, c.kind)}",
                 float(c.base), float(c.head)) for c in a.lines]
    if trace is not None and compiled:
        rows.append(_layout(compiled, trace["left"], trace["width"], fmt.count))
    return {"title": "phases (seconds)" + (", and under trace the compiled code per model line (count)"
                                           if len(rows) > 2 else ""), "rows": rows}


def calls_icicle(a: Attribution) -> dict | None:
    """The Python call counts that changed, under whose code they are; None without them."""
    if not a.calls:
        return None
    groups = [(code, [c for c in a.calls if c.code == code]) for code in _CODE]
    groups = [(code, cs) for code, cs in groups if cs]
    # Never folded: each group's functions are drawn under its cell (your code's 20,000 calls beside the frameworks'
    # millions would otherwise fold into "others" and its functions land under the frameworks' cell).
    level1 = _layout([(_CODE[code], "", float(sum(c.base for c in cs)), float(sum(c.head for c in cs)))
                      for code, cs in groups], 0.0, 100.0, fmt.count, fold=False)
    level2 = []
    for (code, cs), parent in zip(groups, level1):
        level2 += _layout([(c.fn, c.where, float(c.base), float(c.head)) for c in cs], parent["left"],
                          parent["width"], fmt.count)
    return {"title": "Python call counts that changed (calls)", "rows": [level1, level2]}


def icicles(a: Attribution) -> list[dict]:
    return [i for i in (phase_icicle(a), calls_icicle(a)) if i is not None]


__all__ = ["calls_icicle", "colour", "icicles", "phase_icicle"]
