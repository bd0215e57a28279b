"""What the points say across commits: per-series arrays, detected steps, the summary.

Kept apart from rendering so ``ttfg regressions`` (terminal) and ``ttfg report``
(HTML) report the very same steps, and so both can be tested without matplotlib.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .points import PRIMARY, commits
from .steps import DEFAULT_MIN_CHANGE, detect_steps, min_change_for

STEP_COLUMNS = ("case", "model", "backend", "variant", "metric", "pos", "commit_before", "commit_after",
                "label_before", "label_after", "date_after", "before", "after", "change", "kind")


@dataclass
class Series:
    """One case's one metric across commits (``pos`` ascending, values finite)."""

    case: str
    model: str
    backend: str
    variant: str
    metric: str
    pos: np.ndarray
    values: np.ndarray
    steps: list = field(default_factory=list)


@dataclass
class Trends:
    series: dict[tuple[str, str], Series]
    commits: pd.DataFrame          # pos, commit, label, date
    steps: pd.DataFrame            # STEP_COLUMNS, regressions first (largest first), then improvements

    @property
    def n_commits(self) -> int:
        return len(self.commits)

    def cases(self) -> list[tuple[str, str, str, str]]:
        """Distinct ``(case, model, backend, variant)``, sorted for display."""
        seen = {(s.case, s.model, s.backend, s.variant) for s in self.series.values()}
        return sorted(seen, key=lambda c: (c[1], c[2], c[3]))


def analyse(points: pd.DataFrame, threshold: float = DEFAULT_MIN_CHANGE) -> Trends:
    """Split points into series and detect steps in each (``threshold``: smallest relative step)."""
    table = commits(points)
    labels = table["label"].astype(str).to_numpy() if len(table) else np.array([], dtype=str)
    names = table["commit"].astype(str).to_numpy() if len(table) else np.array([], dtype=str)
    dates = table["date"].to_numpy() if len(table) else np.array([])
    series: dict[tuple[str, str], Series] = {}
    rows = []
    if len(points):
        pos_all = points["pos"].to_numpy()
        val_all = points["value"].to_numpy(dtype=float)
        meta = points[["case", "model", "backend", "variant", "metric"]]
        for key, idx in points.groupby(["case", "metric"], observed=True, sort=False).indices.items():
            idx = np.asarray(idx)
            pos, values = pos_all[idx], val_all[idx]
            keep = np.isfinite(values)
            pos, values = pos[keep], values[keep]
            if not len(pos):
                continue
            order = np.argsort(pos, kind="stable")
            pos, values = pos[order], values[order]
            first = meta.iloc[int(idx[0])]
            s = Series(str(first["case"]), str(first["model"]), str(first["backend"]), str(first["variant"]),
                       str(first["metric"]), pos, values)
            s.steps = detect_steps(values, min_change=min_change_for(s.metric, threshold))
            series[(s.case, s.metric)] = s
            for step in s.steps:
                before_pos, after_pos = int(pos[step.index - 1]), int(pos[step.index])
                rows.append((s.case, s.model, s.backend, s.variant, s.metric, after_pos,
                             names[before_pos], names[after_pos], labels[before_pos], labels[after_pos],
                             dates[after_pos], step.before, step.after, step.change,
                             "regression" if step.regression else "improvement"))
    steps = pd.DataFrame(rows, columns=list(STEP_COLUMNS))
    if len(steps):
        steps["_rank"] = np.where(steps["kind"] == "regression", -steps["change"], 1 + steps["change"])
        steps = steps.sort_values(["kind", "_rank"], ascending=[False, True], kind="stable").drop(columns="_rank")
        steps = steps.reset_index(drop=True)
    return Trends(series, table, steps)


def at_or_before(s: Series, pos: int) -> float | None:
    """The series' value at the newest commit at or before ``pos`` (None if none)."""
    i = int(np.searchsorted(s.pos, pos, side="right")) - 1
    return float(s.values[i]) if i >= 0 else None


def rel(new: float | None, old: float | None) -> float | None:
    if new is None or old is None or not old or not math.isfinite(old):
        return None
    return new / old - 1


@dataclass
class SummaryRow:
    case: str
    model: str
    backend: str
    variant: str
    metric: str | None            # the headline metric shown (first gradient, else process TTFG)
    latest: float | None
    latest_label: str | None
    vs_previous: float | None
    vs_back: float | None
    back_label: str | None
    history: np.ndarray | None     # the headline series' values, oldest first (for a sparkline)
    process: float | None
    allocations: float | None
    regressions: int


def summary(trends: Trends, back: int = 10) -> list[SummaryRow]:
    """One row per case: headline value now, against the previous commit and ``back`` commits ago."""
    labels = trends.commits["label"].astype(str).to_numpy() if trends.n_commits else []
    n_reg = {}
    if len(trends.steps):
        reg = trends.steps[trends.steps["kind"] == "regression"]
        n_reg = reg.groupby("case").size().to_dict()
    rows = []
    for case, model, backend, variant in trends.cases():
        head = next((trends.series[(case, m)] for m in PRIMARY if (case, m) in trends.series), None)
        latest = prev = old = None
        latest_label = back_label = None
        if head is not None:
            last_pos = int(head.pos[-1])
            latest, latest_label = float(head.values[-1]), str(labels[last_pos])
            prev = float(head.values[-2]) if len(head.values) > 1 else None
            if len(head.values) > 1:
                target = max(int(head.pos[0]), last_pos - back)
                old = at_or_before(head, target)
                back_label = str(labels[int(head.pos[np.searchsorted(head.pos, target, side="right") - 1])])
        proc = trends.series.get((case, "process_ttfg_s"))
        alloc = trends.series.get((case, "alloc_count"))
        rows.append(SummaryRow(
            case, model, backend, variant, head.metric if head is not None else None, latest, latest_label,
            rel(latest, prev), rel(latest, old), back_label, head.values if head is not None else None,
            float(proc.values[-1]) if proc is not None else None,
            float(alloc.values[-1]) if alloc is not None else None,
            int(n_reg.get(case, 0)),
        ))
    return rows


__all__ = ["STEP_COLUMNS", "Series", "SummaryRow", "Trends", "analyse", "summary"]
