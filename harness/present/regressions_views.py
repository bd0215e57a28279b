"""``ttfg regressions`` for people and scripts: the detected steps as a terminal table, as JSON, and counted.

Why a module of its own: the steps are analysed by the use case (``app/report.py``);
this only shows them, the same way for the terminal and for ``ttfg report``'s closing line.
"""

from __future__ import annotations

from rich.text import Text

from .. import fmt
from ..history.points import metric
from ..history.trends import STEP_COLUMNS
from ..results.format import strict_json
from .terminal import case_cells, case_layout, fitted


def step_counts(trends) -> str:
    """``2 regressions, 1 improvement; 3 unconfirmed timing candidates, not counted``."""
    text = f"{fmt.plural(trends.n_regressions(), 'regression')}, {fmt.plural(trends.n_improvements(), 'improvement')}"
    n_cand = len(trends.candidates())
    return text + (f"; {fmt.plural(n_cand, 'unconfirmed timing candidate')}, not counted" if n_cand else "")


def regressions_table(prepared, only_regressions: bool = False, candidates: bool = False):
    """Steps as a rich table: the counted ones (deterministic, confirmed), or the timing candidates."""
    trends = prepared.trends
    steps = trends.candidates() if candidates else trends.counted()
    if only_regressions and len(steps):
        steps = steps[steps["kind"] == "regression"]
    rows = list(steps.itertuples(index=False))
    varying, fixed = case_layout([r.case for r in rows])
    what = "candidates: timing steps not confirmed (not counted)" if candidates else "detected steps"
    title = f"{what} over {fmt.plural(trends.n_commits, 'commit')} ({prepared.source})"
    table = fitted(f"{title}: {fixed}" if fixed else title,
                   [("kind", "left"), ("status", "left"), *((c, "left") for c in varying), ("metric", "left"),
                    ("between commits", "left"), ("date", "left"), ("before", "right"), ("after", "right"),
                    ("change", "right"), ("p", "right")], label=2 + len(varying))
    for r in rows:
        info = metric(r.metric)
        style = ("red" if r.kind == "regression" else "green") if not candidates else "yellow"
        date = r.date_after.strftime("%Y-%m-%d") if hasattr(r.date_after, "strftime") and r.date_after == r.date_after else ""
        table.add_row(Text(r.kind, style=style), r.status, *case_cells(r.case, varying), info.brief,
                      f"{r.label_before} → {r.label_after}", date,
                      fmt.value(r.before, info.unit), fmt.value(r.after, info.unit), Text(fmt.change(r.change), style=style),
                      fmt.p_value(r.p_value) if r.p_value == r.p_value else "")
    return table


def bisect_hints(ranges) -> list[str]:
    """For each counted regression step more than one commit wide (``app.report.bisect_ranges``), the ``ttfg
    bisect`` command that finds its commit."""
    lines = []
    for r in ranges:
        selection = f"--model {r.model} --backend {r.backend}" + (f" --variant {r.variant}" if r.variant else "")
        lines.append(f"{r.case} {r.metric}: {r.label_before} → {r.label_after} is {fmt.plural(r.commits, 'commit')}; "
                     f"which one: ttfg bisect --good {r.good[:12]} --bad {r.bad[:12]} {selection}")
    return lines


#: Version of ``ttfg regressions --format json``'s document.
REGRESSIONS_VERSION = 1


def regressions_json(prepared, only_regressions: bool, notes: list[str], exit_code: int = 0) -> dict:
    """Every step for scripts, unformatted (the metric's unit): the counted ones (deterministic,
    confirmed) and the timing candidates alike, each with its ``status``; ``regressions`` and
    ``improvements`` count only the counted ones, ``candidates`` the others."""
    steps = prepared.trends.steps
    if only_regressions and len(steps):
        steps = steps[steps["kind"] == "regression"]

    def plain(value):
        if hasattr(value, "isoformat"):
            return None if value != value else value.isoformat()
        return strict_json(value)

    rows = [{**{k: plain(v) for k, v in zip(STEP_COLUMNS, (getattr(r, c) for c in STEP_COLUMNS))},
             "unit": metric(r.metric).unit} for r in steps.itertuples(index=False)]
    trends = prepared.trends
    return {"format": "ttfg-regressions", "version": REGRESSIONS_VERSION, "exit_code": exit_code,
            "source": prepared.source, "commits": trends.n_commits, "series": len(trends.series),
            "regressions": trends.n_regressions(), "improvements": trends.n_improvements(),
            "candidates": len(trends.candidates()), "dismissed": trends.dismissed, "notes": notes, "steps": rows}


__all__ = ["REGRESSIONS_VERSION", "bisect_hints", "regressions_json", "regressions_table", "step_counts"]
