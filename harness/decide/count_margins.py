"""Each case's count margin: from that case's own same-code spread when calibrated, else a conservative default.

Why per case: the count tier's registry margin (±1.32 % of window instructions) was measured
on one case, jax.jit resnet15, and compiled code does not vary alike everywhere. XLA's compile
of the flaxlab example moves about 1.6 % between processes of the same code, so a comment-only
pull request failed CI there; a small JAX library moved under 0.3 %. PyTorch's compile-time
benchmarks keep a margin per benchmark for the same reason (``expected_results.csv``).

What is kept (``count_margins.json`` in the cache folder, ``$TTFG_CACHE_DIR`` or the platform's,
beside the time calibration of ``ttfg doctor --calibrate``): per :class:`~ttfg.results.fact_key.FactKey`
(the case, the environment with its editable installs' files, the interpreter, the measuring ttfg,
the probe and valgrind settings, the CPU model and count) and count metric, the median count, the
margin (twice the relative spread of the calibrating processes, at least the metric's threshold),
the date, the number of processes and whether the counts fell into two modes (jax.jit resnet15's
compile switches between two values 0.42 % apart, a discrete switch). A refresh replaces a stored
entry only when its value or margin moved by more than a third of the stored margin (PyTorch's
hysteresis), so that the margins do not wander with every calibration.

A margin applies only under its own key: margins were keyed by case id alone, and a
dependency-bump gate (base autograd 1.9.1, head 1.8.0) applied a margin calibrated in another
environment to both sides; a cache copied from another machine applied that machine's. A gate
looks a case up under each side's key (:func:`for_sides`): both sides calibrated, the wider margin
decides; else the default, and the verdict says why ("not calibrated here: the stored calibration
of this case differs in the environment ..."). Stored values are checked on read
(:func:`check_margin`): a margin outside :data:`MARGIN_RANGE` (0.05 %-10 %; a margin of 10.0 written
by hand turned instructions ×1.741 into "unchanged, margin ±1,000 %") or calibrated from fewer than
:data:`MIN_PROCESSES` processes (two agree by chance too often to be a spread) is set aside, named,
and the default applies.

How a count is judged against its margin (:func:`judge`): beyond the margin, a verdict;
within half of it, unchanged; between half and the whole margin (the band's edge), or beyond a
quarter of it for a case known to be bimodal counted once a side, no verdict: the count tier
takes one more count a side when allowed, else hands the case to the time tier, and says which.
An uncalibrated case gets :data:`DEFAULT_FLOOR` (2.5 %; 4.5 % for a case on jaxlib, whose compile pool
moved the flaxlab example's count 2.2 % between processes even on one CPU) or the registry margin, the
larger, and every verdict names the margin that decided it and where it came from (:meth:`Margin.source`).
"""

from __future__ import annotations

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
    from ..measure.runner import RunSettings
    from ..results.fact_key import FactKey
    from ..results.fact_store import FactFile
    from ..results.model import Sample

#: Takes one count sample: ``(case, kind, index) -> Sample`` (a cold process under callgrind or memray).
CountSampler = Callable[["Case", str, int], "Sample"]

__all__ = ["COUNT_METRICS", "CountSampler", "calibrate_counts", "refresh_case", "DEFAULT_FLOOR", "EDGE",
           "XLA_DEFAULT_FLOOR", "FORMAT", "HYSTERESIS", "MARGIN_RANGE", "MIN_PROCESSES", "Margin", "PHASE_FLOOR",
           "STORE_NAME", "calibrated", "check_margin", "default_margin", "for_sides", "judge", "load", "margins_for",
           "mode_split", "refreshed", "save", "store_path"]

STORE_NAME = "count_margins.json"
FORMAT = "ttfg-count-margins"
#: A stored margin outside this range is no margin of a count that repeats (0.05 % to 10 %): set aside, named.
MARGIN_RANGE = (0.0005, 0.10)
#: Fewer processes than this calibrate nothing: two counts that happen to agree give a margin of the threshold.
MIN_PROCESSES = 3
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
    #: For the default: why no calibrated margin applies (none stored, another key, one set aside).
    why: str | None = None

    @property
    def calibrated(self) -> bool:
        return self.date is not None

    def source(self) -> str:
        """``calibrated 2026-12-04 from 10 processes`` or ``default: this case is not calibrated``."""
        if not self.calibrated:
            return f"default: {self.why or NOT_CALIBRATED}"
        return (f"calibrated {self.date[:10]} from {self.processes} processes"
                + (", two modes" if self.bimodal else ""))

    def describe(self) -> str:
        return f"margin ±{fmt.percent(self.value)}, {self.source()}"

    def to_json(self) -> dict:
        return {"margin": self.value, "date": self.date, "processes": self.processes, "bimodal": self.bimodal,
                "median": self.median}


NOT_CALIBRATED = "this case is not calibrated (ttfg doctor --calibrate-counts)"


def check_margin(data, where: str) -> Margin:
    """A stored margin, every field checked: its type, and its range (:data:`MARGIN_RANGE`, :data:`MIN_PROCESSES`).

    Raises
    ------
    ValueError
        Naming the field and the value (``...instructions.margin: 10.0 (±1,000 %) is outside 0.05 %-10 %``).
    """
    def number(name: str, optional: bool = False):
        value = data.get(name)
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"{where}.{name}: expected a number, got {value!r}"[:200])
        return float(value)

    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected an object")
    value = number("margin")
    low, high = MARGIN_RANGE
    if not low <= value <= high:
        raise ValueError(f"{where}.margin: {value!r} (±{fmt.percent(value)}) is outside "
                         f"{fmt.percent(low)}-{fmt.percent(high)}")
    processes = data.get("processes")
    if isinstance(processes, bool) or not isinstance(processes, int):
        raise ValueError(f"{where}.processes: expected a whole number, got {processes!r}"[:200])
    if processes < MIN_PROCESSES:
        raise ValueError(f"{where}.processes: calibrated from {processes} process(es), fewer than {MIN_PROCESSES}")
    date = data.get("date")
    try:
        when = datetime.fromisoformat(date) if isinstance(date, str) else None
    except ValueError:
        when = None
    if when is None:
        raise ValueError(f"{where}.date: expected an ISO date, got {date!r}"[:200])
    if not isinstance(data.get("bimodal"), bool):
        raise ValueError(f"{where}.bimodal: expected true or false, got {data.get('bimodal')!r}"[:200])
    median = number("median", optional=True)
    if median is not None and median <= 0:
        raise ValueError(f"{where}.median: expected a positive count, got {median!r}")
    return Margin(value, date, processes, data["bimodal"], median)


def _read_fact(raw, where: str) -> dict[str, "Margin | str"]:
    """One key's margins, ``{metric: Margin}``; a metric whose stored margin fails :func:`check_margin` maps to why
    (it is set aside: named in every verdict that would have used it, never applied)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("metrics"), dict):
        raise ValueError(f"{where}.metrics: expected an object")
    out: dict[str, Margin | str] = {}
    for metric, data in raw["metrics"].items():
        if metric not in COUNT_METRICS:
            raise ValueError(f"{where}.metrics: {metric!r} is not a count metric ({', '.join(COUNT_METRICS)})")
        try:
            out[metric] = check_margin(data, f"{where}.metrics.{metric}")
        except ValueError as exc:
            out[metric] = str(exc)
    return out


def _fact_json(fact: dict[str, "Margin | str"]) -> dict:
    return {"metrics": {m: e.to_json() for m, e in sorted(fact.items()) if isinstance(e, Margin)}}


def default_margin(metric: str, runs_on: frozenset[str] | set[str] = frozenset(), why: str | None = None) -> Margin:
    """An uncalibrated case's margin: the registry's ``tier_margin`` or the floor, the larger; the floor is
    :data:`XLA_DEFAULT_FLOOR` for a case whose backend runs on jaxlib (``engines.runs_on``: what it imports,
    not its framework's name), else :data:`DEFAULT_FLOOR`. ``why``: why no calibrated margin applies."""
    floor = XLA_DEFAULT_FLOOR if "jaxlib" in runs_on else DEFAULT_FLOOR
    return Margin(max(metrics.get(metric).tier_margin, floor), why=why)


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
    if len(values) < MIN_PROCESSES:
        raise ValueError(f"{metric}: at least {MIN_PROCESSES} counts are needed to calibrate, got {len(values)}")
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
    """In the cache folder, beside the doctor's time calibration: ``$TTFG_CACHE_DIR``, else the platform's."""
    from ..provision import cache

    return cache.root() / STORE_NAME


def load(path: Path | None = None) -> "FactFile[dict[str, Margin | str]]":
    """The stored margins, every entry checked (:func:`check_margin`); what cannot be applied is set aside and
    named (``FactFile.set_aside``, ``FactFile.problem``), and the cases it concerned take the default, saying why."""
    from ..results import fact_store

    store = fact_store.read(path or store_path(), FORMAT, _read_fact)
    store.set_aside += [f"{store.path}: {why}: set aside" for _, fact in store.entries.values()
                        for why in fact.values() if isinstance(why, str)]
    return store


def save(margins: "dict[FactKey, dict[str, Margin]]", path: Path | None = None) -> Path:
    """Put ``margins`` (per key, per metric) into the store, keeping every other key's entry."""
    from ..results import fact_store

    path = path or store_path()
    fact_store.update(path, FORMAT, _read_fact, _fact_json,
                      lambda store: {key.digest: (key, dict(by_metric)) for key, by_metric in margins.items()})
    return path


def _one_side(store: "FactFile", key: "FactKey", metric: str) -> "Margin | str":
    """The calibrated margin stored under ``key``, or why there is none (set aside, another key, nothing stored)."""
    from ..results.fact_key import not_here

    if store.problem:
        return store.problem
    found = store.get(key)
    if found is None:
        return not_here(key, store.keys(), "calibration", "ttfg doctor --calibrate-counts")
    entry = found.get(metric)
    if entry is None:
        return f"{metric} was not calibrated with the case (ttfg doctor --calibrate-counts)"
    if isinstance(entry, str):
        return f"its calibrated margin was set aside ({entry})"
    return entry


def margins_for(store: "FactFile", keys: "list[FactKey]", names,
                runs_on: frozenset[str] | set[str] = frozenset()) -> dict[str, Margin]:
    """Each metric's margin for one case measured under ``keys`` (one per side; equal keys count once): calibrated
    where every side's key has one (the widest), else the default for what it runs on, saying why."""
    unique = list({k.digest: k for k in keys}.values())
    out = {}
    for m in names:
        found = [(_one_side(store, key, m), role) for key, role in
                 zip(unique, ("base", "head") if len(unique) == 2 else ("",) * len(unique))]
        missing = [(why, role) for why, role in found if isinstance(why, str)]
        if unique and not missing:
            out[m] = max((e for e, _ in found), key=lambda e: e.value)
            continue
        why = missing[0][0] if missing else NOT_CALIBRATED
        if missing and missing[0][1]:
            why = f"the {missing[0][1]} side is {why}" if why.startswith("not calibrated") else \
                f"the {missing[0][1]} side: {why}"
        out[m] = default_margin(m, runs_on, why)
    return out


def for_sides(case: "Case", sides, run: "RunSettings", store: "FactFile | None" = None) -> dict[str, Margin]:
    """The count tier's margins of ``case`` in a gate of ``sides`` (``{role: Side}``) sampled with ``run``: each
    side's key (``measure/fact_keys.py``), looked up in ``store`` (default: the stored margins)."""
    from .. import engines
    from ..measure import fact_keys

    keys = [fact_keys.key(case, side.env, side.run_settings(run, opening=False), counted=True)
            for side in sides.values()]
    return margins_for(load() if store is None else store, keys, COUNT_METRICS, engines.runs_on(case.backend))


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


def refresh_case(old: "dict[str, Margin | str]", case_id: str, samples: list["Sample"],
                 date: str | None = None) -> tuple[dict[str, Margin], list[str]]:
    """Calibrate ``case_id`` from its count samples (same code, one process each) over its stored margins ``old``
    (one key's), with :func:`refreshed`'s hysteresis; the margins to keep and one line per metric saying what was
    measured and kept. A spread too wide for a margin (beyond :data:`MARGIN_RANGE`) is said, never stored."""
    lines, kept_all = [], {}
    for metric in COUNT_METRICS:
        info = metrics.get(metric)
        values = [v for s in samples if s.ok and s.kind == info.sample
                  and (v := metrics.sample_value(s, metric)) is not None and v > 0]
        if len(values) < MIN_PROCESSES:
            if values:
                lines.append(f"{case_id} {metric}: {len(values)} good count(s), fewer than {MIN_PROCESSES}: "
                             "nothing stored")
            continue
        new = calibrated(metric, values, date)
        spread = (max(values) - min(values)) / min(values)
        if new.value > MARGIN_RANGE[1]:
            lines.append(f"{case_id} {metric}: {len(values)} processes spread {fmt.percent(spread)}: a margin of "
                         f"±{fmt.percent(new.value)} is beyond the {fmt.percent(MARGIN_RANGE[1])} a count margin may "
                         "be; not stored (these counts do not repeat: the time tier decides this case)")
            continue
        stored = old.get(metric)
        kept, changed = refreshed(stored if isinstance(stored, Margin) else None, new)
        kept_all[metric] = kept
        what = (f"stored ±{fmt.percent(kept.value)}" if changed else
                f"kept the stored ±{fmt.percent(kept.value)} ({kept.date[:10]}): moved by at most a third of it")
        lines.append(f"{case_id} {metric}: {len(values)} processes spread {fmt.percent(spread)}"
                     + (", two modes" if new.bimodal else "") + f"; {what}")
    return kept_all, lines


def calibrate_counts(cases: list["Case"], processes: int, sample: CountSampler | None = None,
                     path: Path | None = None, on_line: Callable[[str], None] | None = None,
                     jobs: int | None = None) -> list[str]:
    """``processes`` count processes of each kind per case, the same code each time, and their margins stored with
    hysteresis under each case's key (``ttfg doctor --calibrate-counts N``); the lines say what was found and kept.

    ``jobs`` processes run at a time (default: one per CPU this process may use): a count does not depend on the
    load, and each counted probe runs on a CPU of its own (``measure/instructions.next_cpu``)."""
    from ..measure import fact_keys
    from ..measure.runner import RunSettings

    if processes < MIN_PROCESSES:
        raise UsageError(f"--calibrate-counts needs at least {MIN_PROCESSES} processes, got {processes}")
    settings = RunSettings(repeat=1)
    if sample is None:
        from ..measure.runner import run_sample

        def sample(case, kind, index):
            return run_sample(case, kind, "cold", index, settings)

    kinds = tuple(dict.fromkeys(metrics.get(m).sample for m in COUNT_METRICS))
    store = load(path)
    lines = [f"set aside: {line}" for line in store.set_aside] + ([store.problem] if store.problem else [])
    for line in lines:
        if on_line:
            on_line(line)
    if not jobs:
        from ..measure.instructions import usable_cpus

        jobs = len(usable_cpus()) or os.cpu_count() or 1
    found: dict = {}
    for case in cases:
        key = fact_keys.key(case, None, settings, counted=True)
        jobs_of_case = [(kind, i) for kind in kinds for i in range(processes)]
        with ThreadPoolExecutor(max_workers=min(jobs, len(jobs_of_case))) as pool:
            taken = list(pool.map(lambda job: sample(case, *job), jobs_of_case))
        old = store.get(key) or {}
        kept, case_lines = refresh_case(old, case.id, taken)
        if kept:  # the metrics not calibrated this time keep their stored margins
            found[key] = {**{m: e for m, e in old.items() if isinstance(e, Margin)}, **kept}
        for line in case_lines or [f"{case.id}: no {MIN_PROCESSES} good count samples"]:
            lines.append(line)
            if on_line:
                on_line(line)
    if found:
        save(found, path)
    return lines
