"""Views of a single results file: where a cold process's time goes, and what a warm cache saves.

These answer "how does the latest run look", not "what changed", so they read one
``Results`` directly rather than the cross-commit points.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

#: Stacked segments of a cold process, in time order, with display names. The last two
#: make the bar add up to process TTFG: first-gradient time the backend could not split
#: into phases, and interpreter start-up plus harness overhead outside every phase.
PHASE_SEGMENTS = (
    ("startup", "interpreter start & other"),
    ("import_s", "framework import"),
    ("build_s", "model build"),
    ("trace_s", "trace"),
    ("lower_s", "lower"),
    ("compile_s", "compile"),
    ("execute_s", "execute"),
    ("unsplit", "first gradient, not split"),
)


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
        med = {k: _median(case.values(k, "timing", cache))
               for k in ("process_ttfg_s", "import_s", "build_s", "first_grad_s", "trace_s", "lower_s",
                         "compile_s", "execute_s")}
        first = med["first_grad_s"] or 0.0
        segments = {k: med[k] for k in ("import_s", "build_s", "trace_s", "lower_s", "compile_s", "execute_s")
                    if med[k] is not None}
        split = sum(segments.get(k, 0.0) for k in ("trace_s", "lower_s", "compile_s", "execute_s"))
        if first - split > 1e-4:
            segments["unsplit"] = first - split
        total = med["process_ttfg_s"]
        if total is None:
            total = sum(segments.values())
        accounted = (med["import_s"] or 0.0) + (med["build_s"] or 0.0) + first
        segments = {"startup": max(total - accounted, 0.0), **segments}
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
            _median(case.values("first_grad_s", "timing", "cold")), _median(case.values("first_grad_s", "timing", "warm")),
            _median(case.values("process_ttfg_s", "timing", "cold")), _median(case.values("process_ttfg_s", "timing", "warm")),
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


__all__ = ["CachePair", "PHASE_SEGMENTS", "PhaseBar", "cache_pairs", "latest", "phase_bars"]
