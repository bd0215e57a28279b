"""The metric registry: every fact about a metric, in one table.

Why one table: the same facts (which sample holds a metric, its unit, whether it is
deterministic, how big a change must be to count, what asv calls it) used to live in
nine places that disagreed. Every other module asks this one (``get(name)``), so a
new metric, or a changed margin, is one line here. Modelled on pyperf's
``_metadata.py``: one frozen dataclass per entry and a lookup that names the known
entries when it fails.

Names are the results file's field names (``first_grad_s``, ``alloc_count``) or
``counters.NAME`` for a structural counter in a timing sample's ``counters`` dict.
Counters not listed here get a default entry (count, deterministic, exact in
expectations, 1 % elsewhere), because backends add counters freely.

"compile" has one meaning everywhere: ``compile_s`` is the backend-compile phase
alone. The sum of the three phases before execution has its own name,
``first_grad_compile_s``, labelled "compile total (trace + lower + compile)". The
asv benchmark that tracks the total keeps its old function name,
``track_compile_seconds``, so that its history in ``results/`` continues.

Thresholds: for a deterministic metric ``threshold`` is the relative change below
which two runs count as the same (``ttfg compare``, step detection in the report);
for a timing it is the minimum effect a significant change must reach.
``expect_margin`` is the default margin of a new row of an expectations file.
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from .engines.base import GRADIENT_PHASES
from .errors import UsageError

COUNTER_PREFIX = "counters."
#: The instruction sample's field holding instructions per phase (``{phase: count}``).
INSTRUCTION_PHASES = "instructions_phases"
#: Sample kinds of the results format, in the order their metrics are listed.
SAMPLE_KINDS = ("timing", "allocations", "instructions", "profile", "calls")
#: Units, how asv calls them, and the Python type of a stored value.
UNITS = ("s", "bytes", "count", "ratio")
_ASV_UNIT = {"s": "seconds", "bytes": "bytes", "count": "count", "ratio": "ratio"}
_PY_TYPE = {"s": float, "bytes": int, "count": int, "ratio": float}
#: Report sections, in order.
GROUPS = ("time", "memory", "counters")

#: Every phase of a cold process, in order.
PROCESS_PHASES = ("import", "build", *GRADIENT_PHASES)
#: The phases that are compilation in the broad sense: their sum is the compile total.
COMPILE_PHASES = ("trace", "lower", "compile")
#: Number fields of a sample that are not metrics, and why.
NOT_METRICS = {"loss": "the first gradient's loss: checked against the reference, not tracked"}


def _number(value: Any) -> float | None:
    """A finite, non-bool number as float, else None (the one place this check lives)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _compile_total(get: Callable[[str], float | None]) -> float | None:
    """trace + lower + compile over the phases the backend split; None when it split none."""
    parts = [v for v in (get(f"{p}_s") for p in COMPILE_PHASES) if v is not None]
    return float(sum(parts)) if parts else None


def _compile_share(get: Callable[[str], float | None]) -> float | None:
    """The compile total's share of the first gradient (0 when nothing was split off as compile)."""
    first = get("first_grad_s")
    if first is None or first <= 0:
        return None
    return (_compile_total(get) or 0.0) / first


@dataclass(frozen=True)
class Metric:
    """One metric and everything the harness needs to know about it."""

    name: str
    #: For plot titles and table headings; says what is summed for a derived metric.
    label: str
    #: "s", "bytes", "count" or "ratio": decides formatting, axes and the asv unit.
    unit: str
    #: The sample kind holding it: "timing", "allocations" or "instructions".
    sample: str
    #: True when repeated runs of the same code give the same value (within ``threshold``).
    deterministic: bool
    #: Deterministic: relative change that counts; timing: minimum effect of a significant change.
    threshold: float
    #: Report section: "time", "memory" or "counters".
    group: str
    #: For table cells; the label when empty.
    short: str = ""
    #: "lower" when lower is better; None when neither direction is better (a share).
    direction: str | None = "lower"
    #: Default margin of a new expectations row (deterministic metrics only).
    expect_margin: float | None = None
    #: The ``track_*`` function of ``suites/ttfg.py`` that records it in asv, if any.
    asv_benchmark: str | None = None
    #: Computes the value from a sample's other fields (``get(field) -> float | None``).
    derive: Callable[[Callable[[str], float | None]], float | None] | None = None
    #: Whether the results file stores it (a derived metric may be stored by the probe).
    stored: bool = True
    #: Plotted as a trend in the report.
    trend: bool = False
    #: Compared by ``ttfg compare`` (and explained by the gate) when no metric is named.
    compared_by_default: bool = False
    #: Tracked by an expectations file when no metric is named.
    expected_by_default: bool = False
    #: Deterministic metrics: the largest relative spread, (max - min) / min, measured between
    #: cold processes of the same code (the worst backend; where it was measured is noted at the
    #: constant). None: not measured, the threshold alone stands.
    spread: float | None = None
    #: The gate tier that decides on it (``harness/decide/tiers.py``): "structural" for the
    #: structural counters, "instructions" for the counts of the count tier; None: the time tier's.
    tier: str | None = None
    #: ``(module, why)`` pairs: a process running on that module (a framework or one a backend imports)
    #: gives this metric different values for the same code, so the gate's count tier shows it but
    #: never lets it settle a case (see :meth:`unsteady_for`).
    unsteady: tuple[tuple[str, str], ...] = ()
    #: Timings: guarded by the gate's time tier by default, as a phase every cold start pays
    #: (``decide/gate_loop.py``: one paired test each, alpha shared among them).
    guarded: bool = False
    #: Timings: the instruction count that covers it, so that the count tier settling a case settles
    #: it too; None: the counts miss it (the import: under callgrind it would cost about 65 times its
    #: native time, a minute per jax sample) and the time tier screens it.
    counted_by: str | None = None
    #: Structural counters: strict, a change of any size settles the case (the gate's ``--strict-counters``
    #: default). Only counters whose change is discrete by nature: one more backend compile, graph, graph
    #: break or recompile is a whole compile (or a fallback to eager) of its own, whatever share of the count
    #: it is. Sizes of a graph (jaxpr equations, HLO ops, FX or autograd nodes) are judged by the minimum effect.
    strict: bool = False
    #: Timings of a part of the first gradient: reported only by a backend that splits one of these phases
    #: (``Backend.phases``); empty: every backend reports it.
    phases: tuple[str, ...] = ()

    def split_by(self, phases) -> bool:
        """Whether a backend whose first gradient reports ``phases`` reports this metric."""
        return not self.phases or any(p in phases for p in self.phases)

    def unsteady_for(self, runs_on: Iterable[str]) -> str | None:
        """Why this metric is not repeatable in a process that runs on ``runs_on`` (a backend's framework and the
        modules it imports: ``engines.runs_on``), or None when it is."""
        names = set(runs_on)
        return next((why for module, why in self.unsteady if module in names), None)

    @property
    def tier_margin(self) -> float:
        """The margin of the gate's count tier: twice the measured spread, at least the threshold.

        Why twice: the tier compares a few base processes with a few head processes, whose
        difference can span the whole measured range, and few measurements understate it.
        """
        return max(self.threshold, 2 * self.spread) if self.spread else self.threshold

    @property
    def brief(self) -> str:
        return self.short or self.label

    @property
    def heading(self) -> str:
        """The label as a heading: its first letter raised, the rest as written ("CPU time ...", "Peak RSS ...";
        a template's ``capitalize`` would lower the rest: "Cpu time", "Peak rss")."""
        return self.label[:1].upper() + self.label[1:]

    @property
    def asv_unit(self) -> str:
        return _ASV_UNIT[self.unit]

    @property
    def py_type(self) -> type:
        return _PY_TYPE[self.unit]

    @property
    def cache_applies(self) -> bool:
        """Only timing samples have a cache mode (cold / warm)."""
        return self.sample == "timing"


def _timing(name, label, short="", *, threshold=0.05, unit="s", group="time", **kw) -> Metric:
    return Metric(name, label, unit, "timing", False, threshold, group, short, **kw)


def _counter(name, label, short="", *, asv=True, **kw) -> Metric:
    kw.setdefault("expect_margin", 0.0)
    kw.setdefault("tier", "structural")
    return Metric(name, label, "count", "timing", True, 0.01, "counters", short,
                  asv_benchmark=f"track_{name[len(COUNTER_PREFIX):]}" if asv else None, **kw)


#: Measured spreads (see ``Metric.spread``). Instructions of the first-gradient window, in total and
#: per phase: the worst backend is jax.jit resnet15 (the only one split into phases), 30 samples
#: under valgrind's fair scheduler on this VM, 2026-12-03 (ten for the cost table, twenty in ten
#: A/A gates of benchmarks/gate_power.py); every other backend spreads 0.13 % or less (docs/measurements.md,
#: "Instruction counts"). Allocation counts of the first gradient, jax.jit resnet15, three memray
#: processes (docs/measurements.md, "Allocations and warm caches").
#: The build (counted in its own dump since the gate guards it): autograd resnet15 4,954,945-4,955,202
#: instructions in three samples (0.0052 %), jax.jit resnet15 210,103,141 and 210,107,927 in two
#: (0.0023 %), 2026-12-03; the threshold (1 %) is the margin.
INSTRUCTION_SPREADS = {"instructions": 0.0066, "build": 0.000052, "trace": 0.0025, "lower": 0.0076, "compile": 0.0069,
                       "execute": 0.0121}
ALLOC_COUNT_SPREAD = 0.0118
#: jax's allocation counts vary between identical processes: XLA's thread pool allocates as its
#: threads happen to run (jax.jit resnet15: 2,191,746 vs 2,354,081 allocations, +7.4 %, in two
#: A/A processes of benchmarks/gate_power.py whose instruction counts agreed to 0.08 %).
#: Keyed by the module that brings XLA, not by a framework's name: a library on jax (flaxlab's
#: Flax NNX backend, framework "flax") runs the same pool, and its allocation counts moved +4.0 % and
#: +7.1 % in A/A gates whose instruction counts agreed to 0.2 % (2026-12-05).
_XLA_ALLOCS = (("jaxlib", "XLA's thread pool allocates as its threads happen to run; +7.4 % seen between "
                "identical jax.jit processes, +7.1 % between identical Flax NNX ones"),)

#: The registry, in display order (trend plots, default comparisons).
_ENTRIES = (
    _timing("first_grad_s", "first gradient", asv_benchmark="track_first_grad_seconds", trend=True,
            compared_by_default=True, guarded=True, counted_by="instructions"),
    # CPU time does not count the time the probe waits for a core, so a machine that gets busier
    # between two recordings moves it less than the wall time (docs/measurements.md, "Does the trend report cry wolf?").
    _timing("first_grad_cpu_s", "CPU time of the first gradient (every thread of the probe)", "first gradient CPU",
            asv_benchmark="track_first_grad_cpu_seconds", trend=True, counted_by="instructions"),
    _timing("process_ttfg_s", "process TTFG (spawn to first gradient)", "process TTFG",
            asv_benchmark="track_process_ttfg_seconds", trend=True, compared_by_default=True, guarded=True),
    _timing("compile_s", "compile phase (backend compile alone)", "compile phase", trend=True,
            compared_by_default=True, counted_by="instructions_compile", phases=("compile",)),
    _timing("first_grad_compile_s", "compile total (trace + lower + compile)", "compile total",
            asv_benchmark="track_compile_seconds", derive=_compile_total, stored=False, trend=True,
            counted_by="instructions", phases=COMPILE_PHASES),
    _timing("import_s", "framework import", "import", asv_benchmark="track_import_seconds", trend=True,
            compared_by_default=True, guarded=True),
    _timing("second_grad_s", "second (warm) gradient", "second gradient", asv_benchmark="track_second_grad_seconds",
            trend=True, compared_by_default=True),
    _timing("build_s", "model build", "build", guarded=True, counted_by="instructions_build"),
    _timing("trace_s", "trace phase", "trace", counted_by="instructions_trace", phases=("trace",)),
    _timing("lower_s", "lower phase", "lower", counted_by="instructions_lower", phases=("lower",)),
    _timing("execute_s", "execute phase", "execute", counted_by="instructions_execute"),
    _timing("cpu_s", "CPU time of the process tree", "CPU time"),
    _timing("compile_share", "compile total's share of the first gradient", "compile share", unit="ratio",
            direction=None, derive=_compile_share),
    _timing("peak_rss_bytes", "peak RSS of the process", "peak RSS", unit="bytes", group="memory",
            asv_benchmark="track_peak_rss_bytes", trend=True, compared_by_default=True),
    Metric("alloc_count", "allocations in the first gradient", "count", "allocations", True, 0.01, "memory",
           "allocations", expect_margin=0.02, asv_benchmark="track_alloc_count", trend=True,
           compared_by_default=True, expected_by_default=True, spread=ALLOC_COUNT_SPREAD, tier="instructions",
           unsteady=_XLA_ALLOCS),
    Metric("alloc_bytes", "bytes allocated in the first gradient", "bytes", "allocations", True, 0.01, "memory",
           "allocated bytes", expect_margin=0.02, asv_benchmark="track_alloc_bytes", trend=True,
           compared_by_default=True),
    Metric("alloc_peak_bytes", "peak allocated in the first gradient", "bytes", "allocations", True, 0.01, "memory",
           "peak allocated", expect_margin=0.05),
    Metric("instructions", "instructions in the first gradient (all threads)", "count", "instructions", True, 0.01,
           "counters", "instructions", expect_margin=0.015, compared_by_default=True, spread=INSTRUCTION_SPREADS["instructions"],
           tier="instructions"),
    *(Metric(f"instructions_{p}", f"instructions in the {p} phase", "count", "instructions", True, 0.01, "counters",
             f"{p} instructions", expect_margin=0.015, spread=INSTRUCTION_SPREADS[p], tier="instructions",
             compared_by_default=True, stored=False, derive=lambda get, p=p: get(f"{INSTRUCTION_PHASES}.{p}"))
      for p in ("build", *GRADIENT_PHASES)),
    Metric("instructions_window_s", "wall time of the counted window under callgrind", "s", "instructions", False,
           0.05, "time", "counted window"),
    Metric("instructions_cpu_s", "CPU time of an instruction sample's process tree (under valgrind)", "s",
           "instructions", False, 0.05, "time", "instruction sample CPU"),
    _counter("counters.jaxpr_eqns", "jaxpr equations", "jaxpr eqns"),
    _counter("counters.hlo_ops", "HLO ops"),
    _counter("counters.backend_compiles", "backend compiles", strict=True),
    _counter("counters.graphs", "graphs", strict=True),
    _counter("counters.graph_breaks", "graph breaks", strict=True),
    _counter("counters.recompiles", "recompiles", strict=True),
    _counter("counters.fx_nodes", "FX nodes"),
    _counter("counters.captured_ops", "ops Dynamo captured", "captured ops", asv=False),
    _counter("counters.autograd_nodes", "autograd nodes"),
    _counter("counters.autograd_primitives", "autograd primitives"),
)
METRICS: Mapping[str, Metric] = {m.name: m for m in _ENTRIES}
#: The headline of the report's summary: the first one a case has wins.
HEADLINE = ("first_grad_s", "process_ttfg_s")
#: What a depth study fits: the first gradient and each of its phases.
DEPTH_METRICS = ("first_grad_s", *(f"{p}_s" for p in GRADIENT_PHASES))
#: What an effect study (params, chain) compares.
EFFECT_METRICS = ("first_grad_s", "process_ttfg_s", "compile_s")
#: Fields a good sample of each kind must carry (the results format refuses one without them).
REQUIRED_WHEN_OK = {
    "timing": ("import_s", "build_s", "first_grad_s", "second_grad_s"),
    "allocations": ("alloc_count", "alloc_bytes"),
    "instructions": ("instructions",),
    "profile": ("profile_top",),  # sampled stacks: no metric, the attribution's function list
    "calls": ("calls_top",),  # Python call counts: no metric, the attribution's Python-level diff
}
#: Measurements that may legitimately be zero: a phase the backend skipped, a tiny build.
ZERO_ALLOWED = frozenset({"trace_s", "lower_s", "compile_s", "execute_s", "build_s", "second_grad_s"})


def is_counter(name: str) -> bool:
    return name.startswith(COUNTER_PREFIX) and len(name) > len(COUNTER_PREFIX)


def known_names() -> str:
    return ", ".join((*(m.name for m in _ENTRIES if not is_counter(m.name)), "counters.NAME"))


def get(name: str) -> Metric:
    """The entry for ``name``; an unlisted ``counters.NAME`` gets the default counter entry.

    Raises
    ------
    UsageError
        Naming the known metrics, when ``name`` is not a metric.
    """
    if name in METRICS:
        return METRICS[name]
    if is_counter(name):
        short = name[len(COUNTER_PREFIX):]
        return _counter(name, short.replace("_", " "), asv=False)
    raise UsageError(f"unknown metric {name!r}; known metrics: {known_names()} "
                     "(glob patterns such as counters.* work too)")


def entries() -> tuple[Metric, ...]:
    """Every listed metric, in display order."""
    return _ENTRIES


def names(pred: Callable[[Metric], bool] = lambda m: True) -> tuple[str, ...]:
    """Names of the listed metrics for which ``pred`` holds, in display order."""
    return tuple(m.name for m in _ENTRIES if pred(m))


def by_sample_kind(pred: Callable[[Metric], bool] = lambda m: True) -> tuple[str, ...]:
    """Like :func:`names`, ordered by sample kind first (timing, allocations, instructions)."""
    return tuple(m.name for kind in SAMPLE_KINDS for m in _ENTRIES if m.sample == kind and pred(m))


def matching(pattern: str, candidates) -> list[str]:
    return [c for c in candidates if fnmatch.fnmatchcase(c, pattern)]


def fields_of_kind(kind: str) -> dict[str, type]:
    """Stored number fields of a sample kind with their Python types (for the results format).

    Counters are not listed: they live in the ``counters`` dict of timing samples.
    """
    if kind not in SAMPLE_KINDS:
        raise UsageError(f"unknown sample kind {kind!r}; known: {', '.join(SAMPLE_KINDS)}")
    return {m.name: m.py_type for m in _ENTRIES if m.sample == kind and m.stored and not is_counter(m.name)}


def by_benchmark(benchmark: str) -> Metric | None:
    """The metric an asv ``track_*`` function records (``ttfg.track_x`` or ``track_x``), or None."""
    name = str(benchmark).rsplit(".", 1)[-1]
    return next((m for m in _ENTRIES if m.asv_benchmark == name), None)


# ---------------------------------------------------------------------------- values


def raw(sample: Mapping[str, Any], field: str) -> float | None:
    """A stored field (``counters.NAME``, ``instructions_phases.PHASE``) of a sample as a finite float, else None."""
    if field.startswith(COUNTER_PREFIX):
        return _number((sample.get("counters") or {}).get(field[len(COUNTER_PREFIX):]))
    if field.startswith(INSTRUCTION_PHASES + "."):
        return _number((sample.get(INSTRUCTION_PHASES) or {}).get(field[len(INSTRUCTION_PHASES) + 1:]))
    return _number(sample.get(field))


def sample_value(sample: Mapping[str, Any], name: str) -> float | None:
    """The metric's value in one sample: stored, else derived from the sample's fields."""
    info = get(name)
    if info.stored:
        value = raw(sample, name)
        if value is not None or info.derive is None:
            return value
    if info.derive is not None:
        return _number(info.derive(lambda f: raw(sample, f)))
    return None


def derive(name: str, fields: Mapping[str, Any]) -> float | None:
    """Compute a derived metric from a dict of fields (e.g. the probe's report as it is being filled)."""
    info = get(name)
    if info.derive is None:
        raise UsageError(f"metric {name!r} is measured, not derived")
    return _number(info.derive(lambda f: raw(fields, f)))


def case_values(case, name: str, cache: str | None = "cold") -> list[float]:
    """Finite values of ``name`` over a case's good samples of the metric's kind.

    ``cache`` selects timing samples (cold / warm; None: both); other kinds have no cache.
    """
    info = get(name)
    return [v for s in case.good(info.sample, cache if info.cache_applies else None)
            if (v := sample_value(s, name)) is not None]


__all__ = ["COMPILE_PHASES", "COUNTER_PREFIX", "DEPTH_METRICS", "EFFECT_METRICS", "GROUPS",
           "HEADLINE", "METRICS", "Metric", "NOT_METRICS", "PROCESS_PHASES", "SAMPLE_KINDS", "by_benchmark", "by_sample_kind",
           "case_values", "derive", "entries", "fields_of_kind", "get", "is_counter", "names", "raw",
           "sample_value"]
