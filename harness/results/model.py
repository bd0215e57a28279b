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

from .format import COMMON_FIELDS, FORMAT, SAMPLE_FIELDS, VERSION, is_number, now_iso


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

    @classmethod
    def observe(cls, counters: dict, cache: str, files_at_start: int) -> "ColdEvidence":
        """The evidence from a probe's counters and the cache folder's file count at start."""
        ev = cls(cache, files_at_start)
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
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass
class Sample:
    """One cold process's report (``kind``: timing, allocations or instructions)."""

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
        return out

    def to_json(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in COMMON_FIELDS}
        for k in SAMPLE_FIELDS.get(self.kind, {}):
            v = getattr(self, k)
            out[k] = v.to_json() if isinstance(v, ColdEvidence) else v
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
    settings: dict[str, Any]       # harness.decide.gate.GateSettings.to_json()

    def to_json(self) -> dict[str, Any]:
        return {"role": self.role, "rev": self.rev, "commit": self.commit, "subject": self.subject,
                "settings": self.settings}


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

    def case(self, case_id: str) -> CaseResult | None:
        return next((c for c in self.cases if c.id == case_id), None)

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": VERSION, "created": self.created, "complete": self.complete,
                "environment": self.environment, "settings": self.settings,
                "gate": None if self.gate is None else self.gate.to_json(),
                "study": None if self.study is None else self.study.to_json(),
                "cases": [c.to_json() for c in self.cases]}

    def save(self, path=None) -> Path:
        """Validate and write atomically (strict JSON); see ``harness.results.io.save``."""
        from .io import save

        return save(self, path if path is not None else self.path)

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
