"""Views of ``ttfg study`` results files, for the report's Studies section.

A study's results file is an ordinary results file whose ``settings["study"]`` holds
the analysis ``harness.decide.study`` made when the study finished: effects (params, chain)
or power-law fits per backend and phase (depth). The report shows that stored
analysis as it is, never a recomputation, so the page and the terminal table of
``ttfg study`` agree. The one thing read from the raw samples is each effect arm's
median over the paired samples, to show what the ratio is a ratio of.

The analysis is file content, so it is read defensively: a study that does not have
the expected shape is reported as a note naming the file and the field, and the rest
of the report is still made. Nothing here imports an AD framework (nor
``harness.decide.study``, which pulls in the runner and the engine registry).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from .. import metrics
from . import fmt

#: The studies ``ttfg study`` runs (harness.decide.study.STUDIES).
KINDS = ("params", "chain", "depth")
#: Metrics a depth study fits, in display order (the registry's list, as harness.decide.study uses it).
DEPTH_METRICS = metrics.DEPTH_METRICS
GROWTHS = ("linear", "super-linear", "sub-linear", "undetermined")


class StudyFormatError(ValueError):
    """A stored study analysis without the expected shape; the message names the field."""


def study_of(results) -> dict | None:
    """The stored analysis when ``results`` is a study's file, else None."""
    study = (results.settings or {}).get("study")
    if isinstance(study, dict) and study.get("study") in KINDS:
        return study
    return None


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
class EffectRow:
    """One backend x metric of an effect study: treatment / control over paired processes."""

    backend: str
    metric: str
    control: str
    treatment: str
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    n: int | None
    note: str = ""
    control_median: float | None = None    # seconds, over the pairs
    treatment_median: float | None = None


@dataclass
class Study:
    kind: str
    model: str
    file: str
    created: str
    notes: list[str] = field(default_factory=list)
    effects: list[EffectRow] = field(default_factory=list)
    depth: list[DepthSeries] = field(default_factory=list)

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


def _number(value: Any, where: str, *, optional: bool = True) -> float | None:
    """A finite float, or None for null / NaN (stored NaN means "not estimable")."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise StudyFormatError(f"{where}: expected a number, got {value!r}")
    value = float(value)
    return value if math.isfinite(value) else None


def _text(value: Any, where: str, default: str | None = None) -> str:
    if value is None and default is not None:
        return default
    if not isinstance(value, str):
        raise StudyFormatError(f"{where}: expected text, got {value!r}")
    return value


def _list(value: Any, where: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise StudyFormatError(f"{where}: expected a list, got {type(value).__name__}")
    return value


def _dict(value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise StudyFormatError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _fit(raw: Any, where: str) -> Fit | None:
    if raw is None:
        return None
    raw = _dict(raw, where)
    values = {k: _number(raw.get(k), f"{where}.{k}") for k in ("a", "b", "k", "k_ci_low", "k_ci_high")}
    if values["a"] is None or values["b"] is None or values["k"] is None:
        return None  # nothing to draw; the table says why through the growth verdict
    n = _number(raw.get("n"), f"{where}.n")
    low, high = (math.nan if values[k] is None else values[k] for k in ("k_ci_low", "k_ci_high"))
    return Fit(values["a"], values["b"], values["k"], low, high, int(n or 0),
               _text(raw.get("method"), f"{where}.method", ""))


def _depth_row(raw: Any, where: str) -> DepthSeries:
    raw = _dict(raw, where)
    points = []
    for j, p in enumerate(_list(raw.get("points"), f"{where}.points")):
        if not isinstance(p, (list, tuple)) or len(p) != 2:
            raise StudyFormatError(f"{where}.points[{j}]: expected [depth, seconds], got {p!r}")
        d, t = _number(p[0], f"{where}.points[{j}][0]"), _number(p[1], f"{where}.points[{j}][1]")
        if d is not None and t is not None and d > 0 and t > 0:  # drawn on log axes
            points.append((d, t))
    growth = _text(raw.get("growth"), f"{where}.growth", "undetermined")
    return DepthSeries(_text(raw.get("backend"), f"{where}.backend"), _text(raw.get("metric"), f"{where}.metric"),
                       growth if growth in GROWTHS else "undetermined", _fit(raw.get("fit"), f"{where}.fit"),
                       sorted(points), _text(raw.get("note"), f"{where}.note", ""))


def _effect_row(raw: Any, where: str) -> EffectRow:
    raw = _dict(raw, where)
    eff = raw.get("effect")
    values: dict[str, float | None] = {k: None for k in ("ratio", "ci_low", "ci_high", "p_value", "n")}
    if eff is not None:
        eff = _dict(eff, f"{where}.effect")
        values = {k: _number(eff.get(k), f"{where}.effect.{k}") for k in values}
    return EffectRow(_text(raw.get("backend"), f"{where}.backend"), _text(raw.get("metric"), f"{where}.metric"),
                     _text(raw.get("control"), f"{where}.control"), _text(raw.get("treatment"), f"{where}.treatment"),
                     values["ratio"], values["ci_low"], values["ci_high"], values["p_value"],
                     None if values["n"] is None else int(values["n"]), _text(raw.get("note"), f"{where}.note", ""))


def _paired(case, metric: str) -> dict[int, float]:
    """Sample index -> value, as harness.decide.study.paired_values pairs the two arms."""
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
    """The stored analysis of one study's results file; raises StudyFormatError on a bad shape."""
    raw = study_of(results)
    if raw is None:
        raise StudyFormatError("settings.study: not a study's results file")
    kind = raw["study"]
    name = str(results.path) if results.path else "(in memory)"
    notes = [_text(n, f"settings.study.notes[{i}]")
             for i, n in enumerate(_list(raw.get("notes"), "settings.study.notes"))]
    study = Study(kind, _text(raw.get("model"), "settings.study.model", "?"), name, results.created, notes)
    if kind == "depth":
        study.depth = [_depth_row(r, f"settings.study.depth[{i}]")
                       for i, r in enumerate(_list(raw.get("depth"), "settings.study.depth"))]
    else:
        study.effects = [_effect_row(r, f"settings.study.effects[{i}]")
                         for i, r in enumerate(_list(raw.get("effects"), "settings.study.effects"))]
        for row in study.effects:
            # Both effect studies name their variant axis after themselves (harness.decide.study.ARMS).
            row.control_median, row.treatment_median = arm_medians(results, row.backend, kind, row.control,
                                                                   row.treatment, row.metric)
    return study


def read_studies(runs: Iterable) -> tuple[list[Study], list[str]]:
    """Every study among ``runs``, oldest first, and a note for each that could not be read."""
    studies, notes = [], []
    for res in runs:
        if study_of(res) is None:
            continue
        try:
            studies.append(read_study(res))
        except StudyFormatError as exc:
            notes.append(f"{Path(str(res.path)).name if res.path else 'a study'}: study not shown: {exc}")
    studies.sort(key=lambda s: s.created)
    return studies, notes


__all__ = ["DEPTH_METRICS", "DepthSeries", "EffectRow", "Fit", "KINDS", "Study", "StudyFormatError", "arm_medians",
           "read_studies", "read_study", "split_runs", "study_of"]
