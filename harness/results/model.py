"""The typed contents of a results file: samples, cases, the file, and its gate and study sections.

These classes are what every stage holds in memory; JSON is only their file form
(``to_json`` here, parsing and validation in ``validate``, the file in ``io``). A
sample is one dataclass for all kinds: the fields of the other kinds stay ``None``,
which is also how the file says "does not apply".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable

from .runtimes import Runtimes
from .format import (COMMON_FIELDS, FORMAT, MEMORY_TOLERANCE, SAMPLE_FIELDS, TIMING_FIELDS, VERSION, differing,
                     is_number, now_iso)


@dataclass
class ColdEvidence:
    """Proof (or disproof) that a timing sample started cold."""

    cache: str
    #: Files in the sample's cache folder when the probe started.
    files_at_start: int
    backend_compiles: int | None = None
    persistent_cache_hits: int | None = None
    fxgraph_cache_misses: int | None = None
    fxgraph_cache_hits: int | None = None
    #: The persistent-cache lookups and hits the whole process showed, read by the probe from the frameworks it had
    #: loaded whatever its backend (``measure/cache_watch.py``): ``jax_lookups``, ``jax_hits``, ``inductor_lookups``,
    #: ``inductor_hits``, a framework's keys only when it was loaded; None from a probe that did not read them.
    lookups: dict[str, int] | None = None

    @classmethod
    def observe(cls, counters: dict, cache: str, files_at_start: int,
                lookups: dict[str, int] | None = None) -> "ColdEvidence":
        """The evidence from a probe's counters, the cache folder's file count at start and the process's lookups."""
        ev = cls(cache, files_at_start, lookups=dict(lookups) if lookups is not None else None)
        if "backend_compiles" in counters:
            ev.backend_compiles = counters["backend_compiles"]
            ev.persistent_cache_hits = counters.get("persistent_cache_hits", 0)
        if "fxgraph_cache_misses" in counters:
            ev.fxgraph_cache_misses = counters["fxgraph_cache_misses"]
            ev.fxgraph_cache_hits = counters.get("fxgraph_cache_hits", 0)
        return ev

    @property
    def text(self) -> str:
        """One line, as version 1 stored it."""
        parts = [f"{self.cache} cache: {self.files_at_start} files in the cache folder at start"]
        if self.backend_compiles is not None:
            parts.append(f"XLA backend compiles in first gradient: {self.backend_compiles}, "
                         f"persistent cache hits: {self.persistent_cache_hits or 0}")
        if self.fxgraph_cache_misses is not None:
            parts.append(f"Inductor FX graph cache: {self.fxgraph_cache_misses} misses, "
                         f"{self.fxgraph_cache_hits or 0} hits")
        return "; ".join(parts)

    def __str__(self) -> str:
        return self.text

    _TEXT = re.compile(r"(?P<cache>\w+) cache: (?P<files>\d+) files(?: in the cache folder at start)?"
                       r"(?:; XLA backend compiles in first gradient: (?P<xla>\d+), persistent cache hits: (?P<hits>\d+))?"
                       r"(?:; Inductor FX graph cache: (?P<miss>\d+) misses, (?P<fxhits>\d+) hits)?$")

    @classmethod
    def parse(cls, text: str) -> "ColdEvidence | None":
        """Version 1's line back into its parts; None when it does not have that shape."""
        m = cls._TEXT.match(text.strip())
        if not m:
            return None
        as_int = lambda g: None if m.group(g) is None else int(m.group(g))  # noqa: E731
        return cls(m.group("cache"), int(m.group("files")), as_int("xla"), as_int("hits"), as_int("miss"),
                   as_int("fxhits"))

    def to_json(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if out["lookups"] is None:  # a probe that did not read them: the file stays as it was before they existed
            del out["lookups"]
        return out


@dataclass
class Sample:
    """One cold process's report (``kind``: timing, allocations, instructions or profile)."""

    kind: str
    ok: bool = False
    index: int = 0
    cache: str = "cold"
    error: str | None = None
    stderr_tail: str | None = None
    started_at: str = field(default_factory=now_iso)
    process_wall_s: float | None = None
    pair: int | None = None
    pair_position: int | None = None
    # timing
    import_s: float | None = None
    build_s: float | None = None
    first_grad_s: float | None = None
    first_grad_cpu_s: float | None = None
    second_grad_s: float | None = None
    trace_s: float | None = None
    lower_s: float | None = None
    compile_s: float | None = None
    execute_s: float | None = None
    process_ttfg_s: float | None = None
    cpu_s: float | None = None
    peak_rss_bytes: int | None = None
    compile_share: float | None = None
    loss: float | None = None
    counters: dict[str, int | float] | None = None
    cold_evidence: ColdEvidence | None = None
    #: What the process had loaded after its first gradient (timing, allocations, instructions); None in older files.
    runtimes: Runtimes | None = None
    # allocations
    alloc_count: int | None = None
    alloc_bytes: int | None = None
    alloc_peak_bytes: int | None = None
    alloc_tool: str | None = None
    python_allocators: bool | None = None
    # instructions
    instructions: int | None = None
    instructions_tool: str | None = None
    instructions_scope: str | None = None
    #: Instructions per phase of the first gradient (jax.jit: trace, lower, compile, execute); None when unsplit.
    instructions_phases: dict[str, int] | None = None
    #: The window's top functions by inclusive count: ``{"fn", "file", "line", "incl", "self"}`` each.
    instructions_top: list[dict[str, Any]] | None = None
    #: What was not counted, or which fallback was used.
    instructions_note: str | None = None
    instructions_window_s: float | None = None
    instructions_cpu_s: float | None = None
    # profile
    profile_top: list[dict[str, Any]] | None = None
    profile_tool: str | None = None
    # calls
    calls_top: list[dict[str, Any]] | None = None
    calls_tool: str | None = None
    #: Compiled code per model line: ``{"kind", "file", "line", "fn", "n"}`` (+ ``"reason"`` for a graph break).
    source_lines: list[dict[str, Any]] | None = None
    source_lines_note: str | None = None

    def value(self, metric: str) -> float | None:
        """A finite number for ``metric`` (a field or ``counters.NAME``), else None."""
        v = (self.counters or {}).get(metric[9:]) if metric.startswith("counters.") else getattr(self, metric, None)
        return float(v) if is_number(v) else None

    # Read access by name, for code that picks a field from a string (a metric name).
    def get(self, name: str, default: Any = None) -> Any:
        v = getattr(self, name, None) if name in _FIELD_NAMES else None
        return default if v is None else v

    def __getitem__(self, name: str) -> Any:
        if name not in _FIELD_NAMES:
            raise KeyError(name)
        return getattr(self, name)

    def fields(self) -> dict[str, Any]:
        """The fields this kind of sample has, in file order (cold evidence as its line of text)."""
        out = {k: getattr(self, k) for k in COMMON_FIELDS}
        out.update({k: getattr(self, k) for k in SAMPLE_FIELDS.get(self.kind, {})})
        if isinstance(out.get("cold_evidence"), ColdEvidence):
            out["cold_evidence"] = out["cold_evidence"].text
        if isinstance(out.get("runtimes"), Runtimes):
            out["runtimes"] = out["runtimes"].to_json()
        return out

    def to_json(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in COMMON_FIELDS}
        for k in SAMPLE_FIELDS.get(self.kind, {}):
            v = getattr(self, k)
            out[k] = v.to_json() if isinstance(v, (ColdEvidence, Runtimes)) else v
        return out


_FIELD_NAMES = frozenset(f.name for f in fields(Sample))


@dataclass
class CaseResult:
    id: str
    model: str
    backend: str
    variant: dict[str, str]
    skipped: str | None = None
    samples: list[Sample] = field(default_factory=list)

    def good(self, kind: str = "timing", cache: str | None = None) -> list[Sample]:
        return [s for s in self.samples if s.kind == kind and s.ok and (cache is None or s.cache == cache)]

    def values(self, metric: str, kind: str = "timing", cache: str | None = "cold") -> list[float]:
        """Finite values of ``metric`` (a sample field or ``counters.NAME``) over good samples."""
        return [v for v in (s.value(metric) for s in self.good(kind, cache)) if v is not None]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "model": self.model, "backend": self.backend, "variant": self.variant,
                "skipped": self.skipped, "samples": [s.to_json() for s in self.samples]}


@dataclass
class GateSection:
    """What a gate results file adds: which side it is, of which revision, under which gate settings."""

    role: str                      # "base" or "head"
    rev: str
    commit: str
    subject: str
    settings: dict[str, Any]       # ttfg.decide.gate_settings.GateSettings.to_json()

    def to_json(self) -> dict[str, Any]:
        return {"role": self.role, "rev": self.rev, "commit": self.commit, "subject": self.subject,
                "settings": self.settings}


@dataclass
class NoiseEntry:
    """What the noise of one case says a gate can detect: the paired log-ratio SD and its reach."""

    case: str
    metric: str
    #: Values the SD rests on: A/A or base/head pairs, or (unpaired estimate) samples.
    n: int
    log_ratio_sd: float | None
    sd_low: float | None = None
    sd_high: float | None = None
    #: Median wall seconds of one pair (two cold processes); None when not known.
    seconds_per_pair: float | None = None
    #: ``(gate budget s, pairs it buys, smallest detectable effect or None)``.
    gates: list[tuple[float, int, float | None]] = field(default_factory=list)

    def effect_at(self, budget_s: float) -> float | None:
        return next((e for b, _, e in self.gates if b == budget_s), None)

    def to_json(self) -> dict[str, Any]:
        return {"case": self.case, "metric": self.metric, "n": self.n, "log_ratio_sd": self.log_ratio_sd,
                "sd_ci95": [self.sd_low, self.sd_high], "seconds_per_pair": self.seconds_per_pair,
                "gates": [{"budget_s": b, "pairs": p, "min_detectable_effect": e} for b, p, e in self.gates]}


#: Where a noise floor comes from: a stored ``ttfg doctor --calibrate``, or the run's own samples.
NOISE_SOURCES = ("calibration", "in-run")


@dataclass
class NoiseFloor:
    """How noisy the machine was, and so what a gate could detect on it (``environment.noise``).

    ``ttfg.decide.noise`` builds it; the doctor stores one after ``--calibrate``, and
    ``ttfg run`` and ``ttfg gate`` record one in every results file.
    """

    source: str
    #: How the SD was obtained, in words (it is printed with the number).
    method: str
    #: When the underlying samples were measured, and how old they were when recorded.
    measured_at: str
    age_s: float | None
    #: hostname, cpu, cpu_count of the machine measured.
    machine: dict[str, Any]
    alpha: float
    power: float
    entries: list[NoiseEntry] = field(default_factory=list)
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "method": self.method, "measured_at": self.measured_at, "age_s": self.age_s,
                "machine": dict(self.machine), "alpha": self.alpha, "power": self.power, "note": self.note,
                "entries": [e.to_json() for e in self.entries]}


@dataclass
class Fingerprint:
    """The machine a results file was measured on, as far as it changes the numbers.

    Why: timings from a 2-core AMD VM and an 8-core Intel runner differ by the machine,
    not by the code, and a sharded run or a merge that mixed them would report the
    machine as a regression. Two fingerprints are compared field by field
    (:meth:`differences`) and the difference is named in words.
    """

    cpu_model: str
    cpu_arch: str
    #: Sorted CPU feature flags (``/proc/cpuinfo``: ``flags`` on x86, ``Features`` on ARM).
    cpu_flags: list[str]
    cores: int
    memory_bytes: int | None
    kernel: str
    python: str
    packages: dict[str, str | None]
    #: Thread settings of the measured processes (OMP/MKL/OPENBLAS_NUM_THREADS, XLA_FLAGS, ...).
    threads: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def _differs(self, other: "Fingerprint", name: str) -> str | None:
        a, b = getattr(self, name), getattr(other, name)
        if name == "memory_bytes":
            if a is None or b is None or abs(a - b) <= MEMORY_TOLERANCE * max(a, b):
                return None
            return f"memory_bytes {a:,} vs {b:,}"
        if a == b:
            return None
        if name == "cpu_flags":
            only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
            shown = lambda v: " ".join(v[:6]) + (f" (+{len(v) - 6} more)" if len(v) > 6 else "")  # noqa: E731
            return ("cpu_flags" + (f" only in the first: {shown(only_a)}" if only_a else "")
                    + (f" only in the second: {shown(only_b)}" if only_b else ""))
        if isinstance(a, dict) and isinstance(b, dict):
            return f"{name} " + ", ".join(differing(a, b))
        return f"{name} {a!r} vs {b!r}"

    def differences(self, other: "Fingerprint", names: tuple[str, ...] = TIMING_FIELDS) -> list[str]:
        """The fields of ``names`` that differ, each as ``"cores 2 vs 8"``; empty when the machines match."""
        return [d for d in (self._differs(other, n) for n in names) if d]


#: The most shards a selection is split into, everywhere (``--shard I/N``, ``ttfg shards N``, a file's
#: ``shard.count``): a CI matrix beyond 256 jobs is refused by GitHub Actions anyway, and an unbounded N
#: built a partition of 10**9 empty shards (3.7 GB, then MemoryError) before any check.
MAX_SHARDS = 256


@dataclass
class ShardSection:
    """What a shard's output adds: which shard of how many, its cases, and the partition it belongs to.

    ``partition`` is a digest of the whole partition (every shard's case ids), so files
    cut from different selections or cost files are told apart when merged.
    """

    index: int
    count: int
    cases: list[str]
    partition: str
    #: Every case of the partition, in the selection's order: a merge checks that none is lost
    #: and puts the merged cases back in this order.
    all_cases: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "count": self.count, "cases": list(self.cases), "partition": self.partition,
                "all_cases": list(self.all_cases)}


@dataclass
class Fit:
    """``t = a + b * depth**k``; a field that could not be estimated is None."""

    a: float | None
    b: float | None
    k: float | None
    k_ci_low: float | None
    k_ci_high: float | None
    n: int
    method: str

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass
class DepthEntry:
    backend: str
    metric: str
    growth: str
    fit: Fit | None
    points: list[tuple[float, float]]   # (depth, median seconds)
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"backend": self.backend, "metric": self.metric, "growth": self.growth, "note": self.note,
                "fit": None if self.fit is None else self.fit.to_json(), "points": [list(p) for p in self.points]}


@dataclass
class EffectEntry:
    """treatment / control of one backend and metric; ``ratio`` None when not estimable (see ``note``)."""

    backend: str
    metric: str
    control: str
    treatment: str
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None
    n: int | None = None
    note: str = ""

    @property
    def estimated(self) -> bool:
        return self.ratio is not None

    def to_json(self) -> dict[str, Any]:
        effect = None if not self.estimated else {"ratio": self.ratio, "ci_low": self.ci_low, "ci_high": self.ci_high,
                                                  "p_value": self.p_value, "n": self.n}
        return {"backend": self.backend, "metric": self.metric, "control": self.control, "treatment": self.treatment,
                "effect": effect, "note": self.note}


@dataclass
class StudySection:
    """The analysis ``ttfg study`` made when it finished (effects, or depth fits)."""

    study: str                     # params, chain or depth
    model: str
    notes: list[str] = field(default_factory=list)
    effects: list[EffectEntry] = field(default_factory=list)
    depth: list[DepthEntry] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"study": self.study, "model": self.model, "notes": list(self.notes),
                "effects": [e.to_json() for e in self.effects], "depth": [d.to_json() for d in self.depth]}


@dataclass
class Results:
    environment: dict[str, Any]
    settings: dict[str, Any]
    cases: list[CaseResult] = field(default_factory=list)
    created: str = field(default_factory=now_iso)
    complete: bool = False
    path: Path | None = None
    gate: GateSection | None = None
    study: StudySection | None = None
    shard: ShardSection | None = None
    #: Stored as ``environment.fingerprint``; None in files written before fingerprints existed.
    fingerprint: Fingerprint | None = None
    #: The noise floor, stored as ``environment.noise`` (None in files written before it existed).
    noise: NoiseFloor | None = None

    def case(self, case_id: str) -> CaseResult | None:
        return next((c for c in self.cases if c.id == case_id), None)

    def to_json(self) -> dict[str, Any]:
        environment = self._environment_json()
        if self.fingerprint is not None:
            environment["fingerprint"] = self.fingerprint.to_json()
        return {"format": FORMAT, "version": VERSION, "created": self.created, "complete": self.complete,
                "environment": environment, "settings": self.settings,
                "gate": None if self.gate is None else self.gate.to_json(),
                "study": None if self.study is None else self.study.to_json(),
                "shard": None if self.shard is None else self.shard.to_json(),
                "cases": [c.to_json() for c in self.cases]}

    def _environment_json(self) -> dict[str, Any]:
        env = {k: v for k, v in self.environment.items() if k != "noise"}
        if self.noise is not None:
            env["noise"] = self.noise.to_json()
        return env

    def frame(self):
        """One row per sample: case columns, sample fields, counters as ``counters.NAME``."""
        return to_frame([self])


def to_frame(results: Iterable[Results]):
    """A pandas DataFrame with one row per sample across results files."""
    import pandas as pd

    rows = []
    for res in results:
        for case in res.cases:
            for s in case.samples:
                row = {"file": str(res.path) if res.path else None, "created": res.created,
                       "commit": res.environment.get("git", {}).get("commit"),
                       "case": case.id, "model": case.model, "backend": case.backend,
                       **{f"variant.{k}": v for k, v in case.variant.items()}}
                row.update({k: v for k, v in s.fields().items() if k != "counters"})
                row.update({f"counters.{k}": v for k, v in (s.counters or {}).items()})
                rows.append(row)
    return pd.DataFrame(rows)
