"""Views of a single results file: where a cold process's time goes, and what a warm cache saves.

These answer "how does the latest run look", not "what changed", so they read one
``Results`` directly rather than the cross-commit points.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from .. import metrics

#: The two segments of a cold process that are not metrics: they make the bar add up to
#: process TTFG. Interpreter start-up plus harness overhead outside every phase, and
#: first-gradient time the backend could not split into phases.
STARTUP, UNSPLIT = "startup", "unsplit"
#: The measured segments, in time order: the phases of a cold process (registry names).
MEASURED = tuple(f"{p}_s" for p in metrics.PROCESS_PHASES)


def segments() -> tuple[tuple[str, str], ...]:
    """Stacked segments of a cold process, in time order, with display names (labels from the registry)."""
    return ((STARTUP, "interpreter start & other"), *((k, metrics.get(k).brief) for k in MEASURED),
            (UNSPLIT, "first gradient, not split"))


#: Kept as a name for readers: the segments as ``(key, label)`` pairs.
PHASE_SEGMENTS = segments()


@dataclass
class PhaseBar:
    case: str
    model: str
    backend: str
    variant: str
    segments: dict[str, float]   # PHASE_SEGMENTS key -> median seconds (absent: not measured)
    total: float                 # median process TTFG
    samples: int


def _variant(case) -> str:
    return ",".join(f"{k}={v}" for k, v in case.variant.items())


def _median(values):
    return statistics.median(values) if values else None


def phase_bars(results, cache: str = "cold") -> list[PhaseBar]:
    """Median phase durations per case; the segments add up to the median process TTFG."""
    bars = []
    for case in results.cases:
        if case.skipped or not case.good("timing", cache):
            continue
        med = {k: _median(metrics.case_values(case, k, cache)) for k in ("process_ttfg_s", "first_grad_s", *MEASURED)}
        first = med["first_grad_s"] or 0.0
        segments = {k: med[k] for k in MEASURED if med[k] is not None}
        split = sum(segments.get(f"{p}_s", 0.0) for p in metrics.GRADIENT_PHASES)
        if first - split > 1e-4:
            segments[UNSPLIT] = first - split
        total = med["process_ttfg_s"]
        if total is None:
            total = sum(segments.values())
        accounted = (med["import_s"] or 0.0) + (med["build_s"] or 0.0) + first
        segments = {STARTUP: max(total - accounted, 0.0), **segments}
        bars.append(PhaseBar(case.id, case.model, case.backend, _variant(case), segments, total,
                             len(case.good("timing", cache))))
    return bars


@dataclass
class CachePair:
    case: str
    model: str
    backend: str
    variant: str
    cold_first: float | None
    warm_first: float | None
    cold_process: float | None
    warm_process: float | None

    @property
    def speedup(self) -> float | None:
        """How many times faster the first gradient is with a warm compile cache."""
        if self.cold_first and self.warm_first:
            return self.cold_first / self.warm_first
        return None


def cache_pairs(results) -> list[CachePair]:
    """Cases measured with both cold and warm compile caches (``ttfg run --cache both``)."""
    out = []
    for case in results.cases:
        if case.skipped or not case.good("timing", "cold") or not case.good("timing", "warm"):
            continue
        out.append(CachePair(
            case.id, case.model, case.backend, _variant(case),
            _median(metrics.case_values(case, "first_grad_s", "cold")),
            _median(metrics.case_values(case, "first_grad_s", "warm")),
            _median(metrics.case_values(case, "process_ttfg_s", "cold")),
            _median(metrics.case_values(case, "process_ttfg_s", "warm")),
        ))
    return out


def latest(runs, need=None):
    """The newest results file (by creation time, then given order) that satisfies ``need``."""
    best = None
    for res in runs:
        if need is not None and not need(res):
            continue
        if best is None or res.created >= best.created:
            best = res
    return best


def _stats(values: list[float]) -> dict | None:
    if not values:
        return None
    mean = statistics.fmean(values)
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values),
            "cv": statistics.stdev(values) / mean if len(values) >= 2 and mean else None}


#: Version of ``ttfg run --format json``'s document.
RUN_SUMMARY_VERSION = 1


def run_summary(results, exit_code: int, interrupted: bool = False) -> dict:
    """``ttfg run --format json``: per case and cache, every metric's median, min, max, n and CV.

    The values are the terminal tables' (unformatted, in the registry's units: seconds,
    bytes, counts); the results file (``file``) holds every sample.
    """
    cases = []
    for case in results.cases:
        if case.skipped:
            cases.append({"case": case.id, "model": case.model, "backend": case.backend, "variant": case.variant,
                          "skipped": case.skipped})
            continue
        caches = sorted({s.cache for s in case.samples if s.kind == "timing"}) or ["cold"]
        for cache in caches:
            timing = [s for s in case.samples if s.kind == "timing" and s.cache == cache]
            good = case.good("timing", cache)
            values = {}
            for name in metrics.names():
                found = _stats(metrics.case_values(case, name, cache))
                if found is not None:
                    values[name] = found
            counters = good[-1].get("counters", {}) if good else {}
            cases.append({"case": case.id, "model": case.model, "backend": case.backend, "variant": case.variant,
                          "cache": cache, "samples": len(timing), "ok": len(good),
                          "errors": [s.error for s in case.samples if not s.ok],
                          "metrics": values, "counters": dict(counters)})
    return {"format": "ttfg-run", "version": RUN_SUMMARY_VERSION, "exit_code": exit_code,
            "interrupted": interrupted, "file": str(results.path) if results.path else None,
            "created": results.created, "complete": results.complete,
            "noise": results.noise.to_json() if results.noise else None, "cases": cases}


__all__ = ["CachePair", "PHASE_SEGMENTS", "PhaseBar", "cache_pairs", "latest", "phase_bars", "run_summary"]
