"""Each case's count margin: from that case's own same-code spread when calibrated, else a conservative default.

Why per case: the count tier's registry margin (±1.32 % of window instructions) was measured
on one case, jax.jit resnet15, and compiled code does not vary alike everywhere. XLA's compile
of the flaxlab example moves about 1.6 % between processes of the same code, so a comment-only
pull request failed CI there; a small JAX library moved under 0.3 %. PyTorch's compile-time
benchmarks keep a margin per benchmark for the same reason (``expected_results.csv``).

What is kept (``count_margins.json`` in the user cache folder, beside the time calibration of
``ttfg doctor --calibrate``): per case and count metric, the median count, the margin (twice the
relative spread of the calibrating processes, at least the metric's threshold), the date, the
number of processes and whether the counts fell into two modes (jax.jit resnet15's compile
switches between two values 0.42 % apart, a discrete switch). A refresh replaces a stored entry
only when its value or margin moved by more than a third of the stored margin (PyTorch's
hysteresis), so that the margins do not wander with every calibration.

How a count is judged against its margin (:func:`judge`): beyond the margin, a verdict;
within half of it, unchanged; between half and the whole margin (the band's edge), or beyond a
quarter of it for a case known to be bimodal counted once a side, no verdict: the count tier
takes one more count a side when allowed, else hands the case to the time tier, and says which.
An uncalibrated case gets :data:`DEFAULT_FLOOR` (2.5 %; 4.5 % for a case on jaxlib, whose compile pool
moved the flaxlab example's count 2.2 % between processes even on one CPU) or the registry margin, the
larger, and every verdict names the margin that decided it and where it came from (:meth:`Margin.source`).
"""

from __future__ import annotations

import json
import math
import os
import statistics
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from .. import fmt, metrics
from ..errors import UsageError

if TYPE_CHECKING:
    from ..measure.cases import Case
    from ..results.model import Sample

#: Takes one count sample: ``(case, kind, index) -> Sample`` (a cold process under callgrind or memray).
CountSampler = Callable[["Case", str, int], "Sample"]

__all__ = ["COUNT_METRICS", "CountSampler", "calibrate_counts", "refresh_case", "DEFAULT_FLOOR", "EDGE", "XLA_DEFAULT_FLOOR", "HYSTERESIS", "Margin", "PHASE_FLOOR", "STORE_NAME", "calibrated",
           "default_margin", "judge", "load", "margins_for", "mode_split", "refreshed", "save", "store_path"]

STORE_NAME = "count_margins.json"
#: An uncalibrated case's margin at least, for a case not on jaxlib: their same-code spreads measured 0.0003-0.033 %
#: over 10 processes (autograd, torch.func, torch.compile.aot_eager; docs/measurements.md).
DEFAULT_FLOOR = 0.025
#: An uncalibrated case that runs on jaxlib (XLA's compile pool) at least: twice the widest same-code spread
#: measured on one, the flaxlab example's compile count on one CPU (2.2 % over 26 processes, 2026-12-05), as a
#: calibration would set it. Calibrated, jax.jit resnet15 decides at ±1 %.
XLA_DEFAULT_FLOOR = 0.045
#: A change between ``EDGE`` times the margin and the margin is no verdict (the band's edge).
EDGE = 0.5
#: PyTorch's rule: a stored entry is refreshed only when it moved by more than this share of its margin.
HYSTERESIS = 1 / 3
#: A phase counting fewer instructions than this (on both sides) is evidence, never a verdict on its own:
#: 50 M instructions is about 10-20 ms of compile work, where one allocation pattern moves the count by percent.
PHASE_FLOOR = 50_000_000
#: The count tier's metrics (``Metric.tier == "instructions"``), each calibrated per case.
COUNT_METRICS = metrics.names(lambda m: m.tier == "instructions" and not metrics.is_counter(m.name))


@dataclass(frozen=True)
class Margin:
    """One count metric's margin for one case, and where it came from."""

    value: float
    #: ISO date of the calibration; None: the default.
    date: str | None = None
    processes: int = 0
    bimodal: bool = False
    #: The median count of the calibration (None for the default).
    median: float | None = None

    @property
    def calibrated(self) -> bool:
        return self.date is not None

    def source(self) -> str:
        """``calibrated 2026-12-04 from 10 processes`` or ``default: this case is not calibrated``."""
        if not self.calibrated:
            return "default: this case is not calibrated (ttfg doctor --calibrate-counts)"
        return (f"calibrated {self.date[:10]} from {self.processes} processes"
                + (", two modes" if self.bimodal else ""))

    def describe(self) -> str:
        return f"margin ±{fmt.percent(self.value)}, {self.source()}"

    def to_json(self) -> dict:
        return {"margin": self.value, "date": self.date, "processes": self.processes, "bimodal": self.bimodal,
                "median": self.median}

    @classmethod
    def from_json(cls, data: dict) -> "Margin":
        value = float(data["margin"])
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"margin {value!r} is not a positive number")
        return cls(value, str(data["date"]) if data.get("date") else None, int(data.get("processes") or 0),
                   bool(data.get("bimodal")), None if data.get("median") is None else float(data["median"]))


def default_margin(metric: str, runs_on: frozenset[str] | set[str] = frozenset()) -> Margin:
    """An uncalibrated case's margin: the registry's ``tier_margin`` or the floor, the larger; the floor is
    :data:`XLA_DEFAULT_FLOOR` for a case whose backend runs on jaxlib (``engines.runs_on``: what it imports,
    not its framework's name), else :data:`DEFAULT_FLOOR`."""
    floor = XLA_DEFAULT_FLOOR if "jaxlib" in runs_on else DEFAULT_FLOOR
    return Margin(max(metrics.get(metric).tier_margin, floor))


def mode_split(values: list[float]) -> float | None:
    """The count between two modes (the middle of the largest gap), or None: two modes when the largest gap between
    sorted counts is at least half their range and more than twice the range within either side, each side
    holding at least two counts."""
    v = sorted(values)
    if len(v) < 4 or v[-1] == v[0]:
        return None
    gap, at = max((v[i + 1] - v[i], i + 1) for i in range(len(v) - 1))
    low, high = v[:at], v[at:]
    if len(low) < 2 or len(high) < 2:
        return None
    within = max(low[-1] - low[0], high[-1] - high[0])
    return (v[at - 1] + v[at]) / 2 if gap >= (v[-1] - v[0]) / 2 and gap > 2 * within else None


def _bimodal(values: list[float]) -> bool:
    return mode_split(values) is not None


def calibrated(metric: str, values: list[float], date: str | None = None) -> Margin:
    """The margin of ``values`` (one count per process of the same code): twice their relative spread
    ``(max - min) / min``, at least the metric's threshold (as the registry's ``tier_margin``)."""
    values = [float(x) for x in values if x and x > 0]
    if len(values) < 2:
        raise ValueError(f"{metric}: at least 2 counts are needed to calibrate, got {len(values)}")
    spread = (max(values) - min(values)) / min(values)
    when = date or datetime.now(timezone.utc).isoformat(timespec="seconds")
    return Margin(max(metrics.get(metric).threshold, 2 * spread), when, len(values), _bimodal(values),
                  statistics.median(values))


def refreshed(old: Margin | None, new: Margin) -> tuple[Margin, bool]:
    """PyTorch's hysteresis: ``new`` replaces ``old`` only when the margin or the median moved by more than a third
    of ``old``'s margin (or when nothing was stored); returns the entry to keep and whether it changed."""
    if old is None:
        return new, True
    moved_margin = abs(new.value - old.value) > HYSTERESIS * old.value
    moved_value = (old.median is not None and new.median is not None
                   and abs(new.median - old.median) / old.median > HYSTERESIS * old.value)
    if moved_margin or moved_value or old.bimodal != new.bimodal:
        return new, True
    return old, False


def store_path() -> Path:
    """Beside the doctor's time calibration: the user cache folder (``$XDG_CACHE_HOME/ttfg``)."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("ttfg")) / STORE_NAME


def load(path: Path | None = None) -> dict[str, dict[str, Margin]]:
    """Case -> metric -> calibrated margin; empty when nothing is stored or the file cannot be read (every case
    then takes the default and says so)."""
    path = path or store_path()
    try:
        data = json.loads(path.read_text())
        return {case: {m: Margin.from_json(e) for m, e in by_metric.items() if metrics.get(m).tier}
                for case, by_metric in (data.get("cases") or {}).items()}
    except (OSError, ValueError, TypeError, KeyError, AttributeError, UsageError):
        return {}


def save(store: dict[str, dict[str, Margin]], path: Path | None = None) -> Path:
    from ..files import atomic_write_text

    doc = {"version": 1, "cases": {case: {m: e.to_json() for m, e in sorted(by.items())}
                                   for case, by in sorted(store.items())}}
    return atomic_write_text(path or store_path(), json.dumps(doc, indent=1, allow_nan=False) + "\n")


def margins_for(store: dict[str, dict[str, Margin]], case_id: str, names,
                runs_on: frozenset[str] | set[str] = frozenset()) -> dict[str, Margin]:
    """Each metric's margin for one case: calibrated where stored, else the default for what it runs on."""
    found = store.get(case_id) or {}
    return {m: found.get(m) or default_margin(m, runs_on) for m in names}


def judge(ratio: float, margin: Margin, samples: int) -> str:
    """``regressed``/``improved`` beyond the margin, ``unchanged`` within half of it, ``edge`` in between, or beyond
    a quarter of the margin of a bimodal case counted once a side (``samples``: the fewer of the sides' counts)."""
    change = ratio - 1
    if change > margin.value:
        return "regressed"
    if change < -margin.value:
        return "improved"
    if margin.bimodal and samples < 2 and abs(change) > margin.value / 4:
        return "edge"
    return "edge" if abs(change) > EDGE * margin.value else "unchanged"


def refresh_case(store: dict[str, dict[str, Margin]], case_id: str, samples: list["Sample"],
                 date: str | None = None) -> list[str]:
    """Calibrate ``case_id`` from its count samples (same code, one process each) into ``store``, with
    :func:`refreshed`'s hysteresis; one line per metric saying what was measured and kept."""
    lines = []
    for metric in COUNT_METRICS:
        info = metrics.get(metric)
        values = [v for s in samples if s.ok and s.kind == info.sample
                  and (v := metrics.sample_value(s, metric)) is not None and v > 0]
        if len(values) < 2:
            continue
        new = calibrated(metric, values, date)
        old = store.get(case_id, {}).get(metric)
        kept, changed = refreshed(old, new)
        store.setdefault(case_id, {})[metric] = kept
        spread = (max(values) - min(values)) / min(values)
        what = (f"stored ±{fmt.percent(kept.value)}" if changed else
                f"kept the stored ±{fmt.percent(kept.value)} ({kept.date[:10]}): moved by at most a third of it")
        lines.append(f"{case_id} {metric}: {len(values)} processes spread {fmt.percent(spread)}"
                     + (", two modes" if new.bimodal else "") + f"; {what}")
    return lines


def calibrate_counts(cases: list["Case"], processes: int, sample: CountSampler | None = None,
                     path: Path | None = None, on_line: Callable[[str], None] | None = None,
                     jobs: int | None = None) -> list[str]:
    """``processes`` count processes of each kind per case, the same code each time, and their margins stored with
    hysteresis (``ttfg doctor --calibrate-counts N``); the lines say what was found and kept.

    ``jobs`` processes run at a time (default: one per CPU this process may use): a count does not depend on the
    load, and each counted probe runs on a CPU of its own (``measure/instructions.next_cpu``)."""
    if processes < 2:
        raise UsageError(f"--calibrate-counts needs at least 2 processes, got {processes}")
    if sample is None:
        from ..measure.runner import RunSettings, run_sample

        settings = RunSettings(repeat=1)

        def sample(case, kind, index):
            return run_sample(case, kind, "cold", index, settings)

    kinds = tuple(dict.fromkeys(metrics.get(m).sample for m in COUNT_METRICS))
    store = load(path)
    lines = []
    if not jobs:
        from ..measure.instructions import usable_cpus

        jobs = len(usable_cpus()) or os.cpu_count() or 1
    for case in cases:
        jobs_of_case = [(kind, i) for kind in kinds for i in range(processes)]
        with ThreadPoolExecutor(max_workers=min(jobs, len(jobs_of_case))) as pool:
            taken = list(pool.map(lambda job: sample(case, *job), jobs_of_case))
        for line in refresh_case(store, case.id, taken) or [f"{case.id}: no two good count samples"]:
            lines.append(line)
            if on_line:
                on_line(line)
    save(store, path)
    return lines
