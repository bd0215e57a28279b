"""What the points say across commits: per-series arrays, detected steps, the summary.

Kept apart from rendering so ``ttfg regressions`` (terminal) and ``ttfg report``
(HTML) report the very same steps, and so both can be tested without matplotlib.

Steps are listed oldest to newest (``sort_steps``), in the history's commit order
(git's first-parent order of the branch, ``ttfg.history.git_order``). Two kinds of step:

* deterministic metrics (counters, allocations, instructions): a step beyond the
  metric's margin (at least twice its measured spread between processes) is a
  regression or improvement outright; a count the registry says a framework does
  not repeat (jax's allocation counts: ``steps.unsteady``) is tested like a timing
  on its commits' values and stays a candidate;
* timings: a step is reported only when its samples differ significantly
  (``steps.test_steps``, on the faster half of each commit's samples:
  ``steps.timing_levels``), and even then it is a *candidate* until a paired re-run of
  the two commits around it confirms it (``ttfg regressions --confirm``,
  ``ttfg.history.confirm``). Only confirmed timing regressions count as
  regressions; the ``status`` column says which is which.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .points import PRIMARY, commits
from .points import metric as metric_info
from .steps import (DEFAULT_MIN_CHANGE, STEP_ALPHA, detect_steps, min_change_for, shown_unsteady, test_steps,
                    timing_levels, unsteady)

STEP_COLUMNS = ("key", "case", "model", "backend", "variant", "metric", "pos", "commit_before", "commit_after",
                "label_before", "label_after", "date_after", "before", "after", "change", "kind", "deterministic",
                "status", "p_value", "ci_low", "ci_high", "commits_before", "commits_after", "n_before", "n_after",
                "evidence", "confirmation")
#: ``status`` of a step. Deterministic steps are decided by their margin; a timing step is
#: unconfirmed until a paired re-run confirms it or fails to reproduce it.
DETERMINISTIC, CONFIRMED, NOT_REPRODUCED, UNCONFIRMED = "deterministic", "confirmed", "not reproduced", "unconfirmed"


def step_key(case: str, metric: str, commit_before: str, commit_after: str) -> str:
    """A short stable id of a step: anchors in the report, keys of the confirmations file."""
    return hashlib.sha1(f"{case}\0{metric}\0{commit_before}\0{commit_after}".encode()).hexdigest()[:12]


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
    #: Per value, the samples behind it (float arrays; None where only the median was kept).
    samples: np.ndarray | None = None
    #: Per value: how many samples, their min and max (0 and NaN where only the median was kept).
    n: np.ndarray | None = None
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None


@dataclass
class Trends:
    series: dict[tuple[str, str], Series]
    commits: pd.DataFrame          # pos, commit, label, date
    steps: pd.DataFrame            # STEP_COLUMNS: oldest to newest (``sort_steps``)
    #: Timing steps the commits' levels proposed but their samples did not support (not in ``steps``).
    dismissed: int = 0

    @property
    def n_commits(self) -> int:
        return len(self.commits)

    def counted(self) -> pd.DataFrame:
        """The steps that count as findings: deterministic ones, and confirmed timing ones."""
        if not len(self.steps):
            return self.steps
        return self.steps[self.steps["status"].isin((DETERMINISTIC, CONFIRMED))]

    def candidates(self) -> pd.DataFrame:
        """Timing steps not (yet) confirmed: shown apart, never counted."""
        if not len(self.steps):
            return self.steps
        return self.steps[~self.steps["status"].isin((DETERMINISTIC, CONFIRMED))]

    def n_regressions(self) -> int:
        counted = self.counted()
        return int((counted["kind"] == "regression").sum()) if len(counted) else 0

    def n_improvements(self) -> int:
        counted = self.counted()
        return int((counted["kind"] == "improvement").sum()) if len(counted) else 0

    def cases(self) -> list[tuple[str, str, str, str]]:
        """Distinct ``(case, model, backend, variant)``, sorted for display."""
        seen = {(s.case, s.model, s.backend, s.variant) for s in self.series.values()}
        return sorted(seen, key=lambda c: (c[1], c[2], c[3]))


def analyse(points: pd.DataFrame, threshold: float = DEFAULT_MIN_CHANGE, alpha: float = STEP_ALPHA,
            runs_on: "dict[str, frozenset[str]] | None" = None) -> Trends:
    """Split points into series and detect steps in each.

    ``threshold``: smallest relative step (deterministic metrics use their registry
    margin when tighter); ``alpha``: significance level of a timing step's test on its samples;
    ``runs_on``: case id -> the native runtimes its processes were measured to load (``steps.measured_runs_on``).
    """
    table = commits(points)
    labels = table["label"].astype(str).to_numpy() if len(table) else np.array([], dtype=str)
    names = table["commit"].astype(str).to_numpy() if len(table) else np.array([], dtype=str)
    dates = table["date"].to_numpy() if len(table) else np.array([])
    series: dict[tuple[str, str], Series] = {}
    rows = []
    dismissed = 0
    if len(points):
        pos_all = points["pos"].to_numpy()
        val_all = points["value"].to_numpy(dtype=float)
        samples_all = (points["samples"].to_numpy(dtype=object) if "samples" in points.columns
                       else np.full(len(points), None, dtype=object))
        spread = {c: points[c].to_numpy() if c in points.columns else None for c in ("n", "lo", "hi")}
        meta = points[["case", "model", "backend", "variant", "metric"]]
        for key, idx in points.groupby(["case", "metric"], observed=True, sort=False).indices.items():
            idx = np.asarray(idx)
            idx = idx[np.isfinite(val_all[idx])]
            if not len(idx):
                continue
            idx = idx[np.argsort(pos_all[idx], kind="stable")]
            pos, values, samples = pos_all[idx], val_all[idx], samples_all[idx]
            first = meta.iloc[int(idx[0])]
            s = Series(str(first["case"]), str(first["model"]), str(first["backend"]), str(first["variant"]),
                       str(first["metric"]), pos, values, samples=samples,
                       **{c: (arr[idx] if arr is not None else None) for c, arr in spread.items()})
            min_change = min_change_for(s.metric, threshold)
            # Whether a count repeats is read from what was measured: the runtimes the case's processes loaded
            # (``runs_on``, from the results files) and the spread between one commit's processes; the backend's
            # declared modules only where no file recorded what its processes ran.
            not_repeatable = (unsteady(s.metric, s.backend, (runs_on or {}).get(s.case))
                              or shown_unsteady(s.metric, samples, min_change))
            deterministic = metric_info(s.metric).deterministic and not_repeatable is None
            # A timing's steps are found and tested in each commit's faster half of samples; a count
            # that processes do not repeat, in its values as they are (interference is no slowdown there).
            levels, tested_samples = ((values, samples) if deterministic or not_repeatable
                                      else timing_levels(values, samples))
            proposed = detect_steps(levels, min_change=min_change)
            if deterministic or not proposed:
                tested = [(st, None) for st in proposed]
            else:
                tested, dropped = test_steps(proposed, levels, tested_samples, min_change, alpha)
                dismissed += len(dropped)
            s.steps = [st for st, _ in tested]
            series[(s.case, s.metric)] = s
            bounds = [0, *(st.index for st, _ in tested), len(values)]
            for i, (step, verdict) in enumerate(tested):
                lo, cut, hi = bounds[i], bounds[i + 1], bounds[i + 2]
                before, after = float(np.median(levels[lo:cut])), float(np.median(levels[cut:hi]))
                before_pos, after_pos = int(pos[cut - 1]), int(pos[cut])
                n_b = sum(len(x) if x is not None else 1 for x in samples[lo:cut])
                n_a = sum(len(x) if x is not None else 1 for x in samples[cut:hi])
                if verdict is None:
                    status, p, ci_low, ci_high = DETERMINISTIC, math.nan, math.nan, math.nan
                    evidence = f"medians beyond the {min_change:.3g} margin of a deterministic metric"
                elif not_repeatable:
                    status, p, ci_low, ci_high = UNCONFIRMED, verdict.p_value, verdict.ci_low, verdict.ci_high
                    evidence = (f"not repeatable between {s.backend} processes ({not_repeatable}): "
                                f"{verdict.method} on each commit's values: {verdict.reason}; a candidate, "
                                "which --confirm cannot re-measure (it re-runs timings)")
                else:
                    status, p, ci_low, ci_high = UNCONFIRMED, verdict.p_value, verdict.ci_low, verdict.ci_high
                    evidence = f"{verdict.method} on each commit's faster half: {verdict.reason}"
                rows.append((step_key(s.case, s.metric, names[before_pos], names[after_pos]),
                             s.case, s.model, s.backend, s.variant, s.metric, after_pos,
                             names[before_pos], names[after_pos], labels[before_pos], labels[after_pos],
                             dates[after_pos], before, after, after / before - 1 if before else math.inf,
                             "regression" if after > before else "improvement", verdict is None,
                             status, p, ci_low, ci_high, cut - lo, hi - cut, n_b, n_a, evidence, None))
    steps = sort_steps(pd.DataFrame(rows, columns=list(STEP_COLUMNS)))
    return Trends(series, table, steps, dismissed)


def sort_steps(steps: pd.DataFrame) -> pd.DataFrame:
    """Oldest to newest (the commit after the step); at one commit, deterministic steps first, then
    regressions first, largest first. A history is read forwards: the newest step listed first
    reads as the cause of the older ones."""
    if not len(steps):
        return steps
    rank = np.where(steps["kind"] == "regression", -steps["change"], 1 + steps["change"])
    steps = steps.assign(_det=~steps["deterministic"].astype(bool), _reg=steps["kind"] != "regression", _rank=rank)
    return (steps.sort_values(["pos", "_det", "_reg", "_rank"], kind="stable")
            .drop(columns=["_det", "_reg", "_rank"]).reset_index(drop=True))


def by_size(steps: pd.DataFrame) -> pd.DataFrame:
    """Deterministic steps first, then timings; within each, regressions first, largest first
    (what to re-measure first when the budget is short)."""
    if not len(steps):
        return steps
    rank = np.where(steps["kind"] == "regression", -steps["change"], 1 + steps["change"])
    steps = steps.assign(_det=~steps["deterministic"].astype(bool), _reg=steps["kind"] != "regression", _rank=rank)
    return steps.sort_values(["_det", "_reg", "_rank"], kind="stable").drop(columns=["_det", "_reg", "_rank"])


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
    counted = trends.counted()
    if len(counted):
        reg = counted[counted["kind"] == "regression"]
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


__all__ = ["CONFIRMED", "DETERMINISTIC", "NOT_REPRODUCED", "STEP_COLUMNS", "Series", "SummaryRow", "Trends",
           "UNCONFIRMED", "analyse", "by_size", "sort_steps", "step_key", "summary"]
