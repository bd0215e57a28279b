"""Views of a single results file: its terminal tables, where a cold process's time goes, and what a warm cache saves.

These answer "how does the latest run look", not "what changed", so they read one
``Results`` directly rather than the cross-commit points. The run's tables (``ttfg run``)
and the report's run table are built from the same cells (:func:`run_rows`), so the
terminal and the page agree to the character; ``ttfg run --wide`` shows one wide table.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from rich.table import Table
from rich.text import Text

from .. import fmt
from .. import metrics
from ..engines.base import GRADIENT_PHASES
from .terminal import case_cells, case_layout, fitted, titled
from .untrusted import plain

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
        split = sum(segments.get(f"{p}_s", 0.0) for p in GRADIENT_PHASES)
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


# ---------------------------------------------------------------------------- the run's tables


def _cv(values):
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    return statistics.stdev(values) / mean if mean else None


def _brief(name: str) -> str:
    """A column's heading: the registry's short label of the metric."""
    return metrics.get(name).brief


#: Column headings of the run's tables, from the registry's labels.
FIRST = _brief("first_grad_s")
PROCESS = _brief("process_ttfg_s")
SECOND = _brief("second_grad_s")
ALLOCS = _brief("alloc_count")
IMPORT = _brief("import_s")
BUILD = _brief("build_s")
RANGE, CV, OK = "min–max", "CV", "ok"
PHASES_COLUMN = " / ".join(_brief(f"{p}_s") for p in GRADIENT_PHASES)


def _run_values(results):
    """Per case and cache mode: the medians and spreads the run tables show, unformatted."""
    for case in results.cases:
        if case.skipped:
            continue
        caches = sorted({s.cache for s in case.samples if s.kind == "timing"}) or ["cold"]
        for cache in caches:
            timing = [s for s in case.samples if s.kind == "timing" and s.cache == cache]
            good = case.good("timing", cache)
            first = metrics.case_values(case, "first_grad_s", cache)
            med = lambda m: _median(metrics.case_values(case, m, cache))  # noqa: E731
            counters = good[-1].get("counters", {}) if good else {}
            counter_text = " ".join(f"{k}={fmt.metric_value(f'counters.{k}', v)}" for k, v in counters.items()
                                    if v is not None)
            instructions = metrics.case_values(case, "instructions")
            if instructions:
                counter_text = (f"instructions={fmt.metric_value('instructions', _median(instructions))} "
                                "(whole process) " + counter_text)
            yield {"case": case.id, "cache": cache, "good": len(good), "samples": len(timing),
                   "first": _median(first), "min": min(first) if first else None, "max": max(first) if first else None,
                   "cv": _cv(first), "process": med("process_ttfg_s"), "import": med("import_s"),
                   "build": med("build_s"), **{p: med(f"{p}_s") for p in GRADIENT_PHASES},
                   "second": med("second_grad_s"), "allocs": _median(metrics.case_values(case, "alloc_count")),
                   "counters": counter_text}


def _run_rows(results):
    """Per case and cache mode: every run table's cells, each column formatted with one precision
    (``fmt.column``), so the terminal and the report print the same text."""
    rows = list(_run_values(results))
    col = lambda key, unit="s": fmt.column([r[key] for r in rows], unit)  # noqa: E731
    ranges = fmt.column([r["min"] for r in rows] + [r["max"] for r in rows], "s")
    lows, highs = ranges[:len(rows)], ranges[len(rows):]
    cells = {key: col(key) for key in ("first", "process", "import", "build", "second", *GRADIENT_PHASES)}
    cvs, allocs = col("cv", "ratio"), col("allocs", "count")
    for i, r in enumerate(rows):
        status = f"{r['good']}/{r['samples']}"
        phases = {p: cells[p][i] for p in GRADIENT_PHASES}
        yield {
            "case": r["case"], "cache": r["cache"], OK: status, FIRST: cells["first"][i],
            RANGE: f"{lows[i]} – {highs[i]}" if r["min"] is not None else fmt.MISSING,
            CV: cvs[i], PROCESS: cells["process"][i], IMPORT: cells["import"][i], BUILD: cells["build"][i],
            **{_brief(f"{p}_s"): v for p, v in phases.items()}, PHASES_COLUMN: " / ".join(phases.values()),
            SECOND: cells["second"][i], ALLOCS: allocs[i], "counters": r["counters"],
            "short": r["good"] < r["samples"],
        }


def run_rows(results) -> list[dict]:
    """The run tables' rows as plain text (no markup), for the HTML report: the terminal's very cells."""
    return list(_run_rows(results))


#: The run's tables: title and columns (besides the case's parts). ``ttfg run --wide`` shows one table.
RUN_TABLES = (
    ("time to first gradient (median over fresh processes)", (OK, FIRST, RANGE, CV, PROCESS)),
    ("where a cold process spends its time (medians)", (IMPORT, BUILD, PHASES_COLUMN, SECOND)),
    ("allocations and structural counters (counters: last good sample)", (ALLOCS, "counters")),
)
#: ``--wide``: one table, the phases in columns of their own.
WIDE_COLUMNS = (OK, FIRST, RANGE, CV, PROCESS, IMPORT, BUILD, *(_brief(f"{p}_s") for p in GRADIENT_PHASES),
                SECOND, ALLOCS, "counters")
LEFT = {"counters", "cache"}


def run_tables(results, wide: bool = False) -> list[Table]:
    """The run's tables: times, phases and counters, each with the case split into model, backend, variant.

    ``wide``: one table with every column (for a wide terminal or ``less -S``).
    """
    rows = list(_run_rows(results))
    varying, fixed = case_layout([r["case"] for r in rows])
    cache = ("cache",) if len({r["cache"] for r in rows}) > 1 else ()
    groups = ((RUN_TABLES[0][0], WIDE_COLUMNS),) if wide else RUN_TABLES
    tables = []
    for title, columns in groups:
        if title != RUN_TABLES[0][0]:  # a column nothing was measured for says nothing: left out
            columns = tuple(c for c in columns if any(r[c] not in ("", fmt.MISSING) for r in rows))
        shown = rows if title == RUN_TABLES[0][0] else [
            r for r in rows if any(r[c] not in ("", fmt.MISSING) for c in columns)]
        if not shown or not columns:
            continue
        table = fitted(titled(title, fixed), [(c, "left") for c in (*varying, *cache)]
                       + [(c, "left" if c in LEFT else "right") for c in columns], label=len(varying) + len(cache))
        for r in shown:
            cells = [Text(r[c], style="red") if c == OK and r["short"] else r[c] for c in columns]
            table.add_row(*case_cells(r["case"], varying), *(r[c] for c in cache), *cells)
        tables.append(table)
    return tables


def run_table(results) -> Table:
    """All of the run in one table (``--wide``); the default output is :func:`run_tables`."""
    return run_tables(results, wide=True)[0] if any(not c.skipped for c in results.cases) else fitted(
        RUN_TABLES[0][0], [("case", "left")])


def skipped_lines(results) -> list[str]:
    """One line per skipped case, its reason whole."""
    return [f"skipped {c.id}: {c.skipped}" for c in results.cases if c.skipped]


def failures_table(results) -> Table | None:
    rows = [(c.id, s) for c in results.cases for s in c.samples if not s.ok]
    if not rows:
        return None
    varying, fixed = case_layout([case_id for case_id, _ in rows])
    table = fitted(titled("failed samples (the results file keeps each one's stderr tail)", fixed),
                   [(c, "left") for c in varying]
                   + [("kind", "left"), ("#", "right"), ("error", "left"), ("stderr (last line)", "left")],
                   label=len(varying))
    for case_id, s in rows:
        last = (s.stderr_tail or "").strip().splitlines()[-1:] or [""]
        table.add_row(*case_cells(case_id, varying), s.kind, str(s.index), plain(s.error or ""), plain(last[0]))
    return table


__all__ = ["CachePair", "PHASE_SEGMENTS", "PhaseBar", "cache_pairs", "failures_table", "latest", "phase_bars",
           "run_rows", "run_summary", "run_table", "run_tables", "skipped_lines"]
