"""Views of ``ttfg study`` results files, for the report's Studies section.

A study's results file is an ordinary results file whose typed ``study`` section
(``ttfg.results.model.StudySection``) holds the analysis ``ttfg.decide.study``
made when the study finished: effects (params, chain) or power-law fits per backend
and phase (depth). The report shows that stored analysis as it is, never a
recomputation, so the page and the terminal table of ``ttfg study`` agree. The one
thing read from the raw samples is each effect arm's median over the paired samples,
to show what the ratio is a ratio of.

The section was checked field by field when the file was loaded (a broken one is
refused there, naming the file and the field), so nothing here validates. Nothing here
imports an AD framework (nor ``ttfg.decide.study``, which pulls in the runner and
the engine registry).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Iterable

from rich.table import Table

from ..results.model import DepthEntry, EffectEntry, StudySection

from .. import metrics
from .. import fmt
from .terminal import fitted

#: The studies ``ttfg study`` runs (ttfg.decide.study.STUDIES).
KINDS = ("params", "chain", "depth")
#: Metrics a depth study fits, in display order (the registry's list, as ttfg.decide.study uses it).
DEPTH_METRICS = metrics.DEPTH_METRICS
GROWTHS = ("linear", "super-linear", "sub-linear", "undetermined")


def study_of(results) -> StudySection | None:
    """The stored analysis when ``results`` is a study's file, else None."""
    return results.study


def split_runs(runs: Iterable) -> tuple[list, list]:
    """``(ordinary results files, study results files)``, each in the given order."""
    ordinary, studies = [], []
    for res in runs:
        (studies if study_of(res) is not None else ordinary).append(res)
    return ordinary, studies


# ---------------------------------------------------------------------------- shapes


@dataclass
class Fit:
    """``t = a + b * depth**k`` with the 95 % interval of ``k``."""

    a: float
    b: float
    k: float
    k_low: float
    k_high: float
    n: int
    method: str

    def curve(self, depths) -> list[float]:
        return [self.a + self.b * d ** self.k for d in depths]

    @property
    def interval(self) -> str:
        """``[low, high]`` of ``k``, or empty when the bootstrap gave none."""
        if math.isfinite(self.k_low) and math.isfinite(self.k_high):
            return fmt.interval(self.k_low, self.k_high, lambda v: f"{v:.2f}")
        return ""


@dataclass
class DepthSeries:
    """One backend x metric of a depth study: median seconds per depth and the fit."""

    backend: str
    metric: str
    growth: str
    fit: Fit | None
    points: list[tuple[float, float]]  # (depth, median seconds), depth ascending
    note: str = ""


@dataclass
class Study:
    kind: str
    model: str
    file: str
    created: str
    notes: list[str] = field(default_factory=list)
    #: The effects as the results file's study section holds them (``results.model.EffectEntry``).
    effects: list[EffectEntry] = field(default_factory=list)
    depth: list[DepthSeries] = field(default_factory=list)
    #: Per (backend, metric) of an effect: each arm's median over the samples that form pairs, in seconds.
    medians: dict[tuple[str, str], tuple[float | None, float | None]] = field(default_factory=dict)

    @property
    def control(self) -> str:
        return self.effects[0].control if self.effects else "control"

    @property
    def treatment(self) -> str:
        return self.effects[0].treatment if self.effects else "treatment"

    def depth_metrics(self) -> list[str]:
        """Metrics with at least one plottable series, in display order (unknown ones last)."""
        present = {s.metric for s in self.depth if s.points}
        return [m for m in DEPTH_METRICS if m in present] + sorted(present - set(DEPTH_METRICS))


# ---------------------------------------------------------------------------- reading


def _fit(entry: DepthEntry) -> Fit | None:
    f = entry.fit
    if f is None or f.a is None or f.b is None or f.k is None:
        return None  # nothing to draw; the table says why through the growth verdict
    low, high = (math.nan if v is None else v for v in (f.k_ci_low, f.k_ci_high))
    return Fit(f.a, f.b, f.k, low, high, f.n, f.method)


def _depth_row(entry: DepthEntry) -> DepthSeries:
    points = sorted((float(d), float(t)) for d, t in entry.points if d > 0 and t > 0)  # drawn on log axes
    growth = entry.growth if entry.growth in GROWTHS else "undetermined"
    return DepthSeries(entry.backend, entry.metric, growth, _fit(entry), points, entry.note)


def _paired(case, metric: str) -> dict[int, float]:
    """Sample index -> value, as ttfg.decide.study.paired_values pairs the two arms."""
    return {s["index"]: v for s in case.good() if (v := metrics.sample_value(s, metric)) is not None and v > 0}


def arm_medians(results, backend: str, axis: str, control: str, treatment: str,
                metric: str) -> tuple[float | None, float | None]:
    """Median ``metric`` of each arm over the samples that form pairs (same round)."""
    def arm(value):
        return next((c for c in results.cases if c.backend == backend and not c.skipped
                     and c.variant.get(axis) == value), None)

    c_case, t_case = arm(control), arm(treatment)
    if c_case is None or t_case is None:
        return None, None
    a, b = _paired(c_case, metric), _paired(t_case, metric)
    common = sorted(set(a) & set(b))
    if not common:
        return None, None
    return statistics.median(a[i] for i in common), statistics.median(b[i] for i in common)


def read_study(results) -> Study:
    """The stored analysis of one study's results file."""
    raw = study_of(results)
    if raw is None:
        raise ValueError("not a study's results file (it has no study section)")
    name = str(results.path) if results.path else "(in memory)"
    study = Study(raw.study, raw.model, name, results.created, list(raw.notes))
    if raw.study == "depth":
        study.depth = [_depth_row(e) for e in raw.depth]
    else:
        study.effects = list(raw.effects)
        for e in study.effects:
            # Both effect studies name their variant axis after themselves (ttfg.decide.study.ARMS).
            study.medians[e.backend, e.metric] = arm_medians(results, e.backend, raw.study, e.control, e.treatment,
                                                             e.metric)
    return study


def read_studies(runs: Iterable) -> list[Study]:
    """Every study among ``runs``, oldest first."""
    studies = [read_study(res) for res in runs if study_of(res) is not None]
    studies.sort(key=lambda s: s.created)
    return studies


# ---------------------------------------------------------------------------- terminal tables (``ttfg study``)


def effects_table(study) -> Table:
    axis = {"params": "params", "chain": "chain", "env": "env"}[study.study]
    table = fitted(f"{study.study} study on {study.model}: effect = treatment / control, "
                   f"paired cold processes, 95 % interval",
                   [(col, "right" if col in ("pairs", "p") else "left")
                    for col in ("backend", "metric", f"{axis}: control -> treatment", "effect", "pairs", "p", "note")],
                   label=2)
    for e in study.effects:
        paired = e.n is not None  # a paired effect was computed (its numbers may still be None)
        effect = f"{fmt.factor(e.ratio)} {fmt.interval(e.ci_low, e.ci_high)}" if paired else fmt.MISSING
        table.add_row(e.backend, e.metric, f"{e.control} -> {e.treatment}", effect,
                      str(e.n) if paired else fmt.MISSING, fmt.p_value(e.p_value) if paired else fmt.MISSING, e.note)
    return table


def depth_table(study) -> Table:
    table = fitted(f"depth study on {study.model}: t = a + b * depth^k, 95 % interval for k",
                   [(col, "right" if col in ("a", "b") else "left")
                    for col in ("backend", "metric", "k", "growth", "a", "b", "median by depth", "note")], label=2)
    for row in study.depth:
        points = " ".join(f"{d}:{fmt.seconds(v)}" for d, v in row.points)
        fit = row.fit
        growth = fmt.exponent(fit.k, fit.k_ci_low, fit.k_ci_high) if fit else fmt.MISSING
        table.add_row(row.backend, row.metric, growth, row.growth,
                      fmt.seconds(fit.a) if fit else fmt.MISSING, fmt.seconds(fit.b) if fit else fmt.MISSING, points,
                      row.note)
    return table


__all__ = ["DEPTH_METRICS", "DepthSeries", "Fit", "KINDS", "Study", "arm_medians", "depth_table",
           "effects_table", "read_studies", "read_study", "split_runs", "study_of"]
