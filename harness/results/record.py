"""The results file: one JSON document per ``ttfg run``, owned by this module alone.

Layout (``format: "ttfg-results"``)::

    {
      "format": "ttfg-results", "version": 1, "created": ISO-8601 UTC,
      "complete": bool,           # false while running or after an interruption
      "environment": {...},       # harness.measure.metadata.collect(): versions, CPU, git, ...
      "settings": {...},          # repeat, timeout_s, threads, cache modes, ...
      "cases": [
        {"id": "resnet15/jax.jit/params=args,chain=unrolled", "model": "resnet15",
         "backend": "jax.jit", "variant": {"params": "args", "chain": "unrolled"},
         "skipped": null | "reason",
         "samples": [ {"kind": "timing" | "allocations" | "instructions", "ok": bool, ...} ]}
      ]
    }

Every number says its unit in its name (``first_grad_s``, ``alloc_bytes``,
``peak_rss_bytes``). Sample fields are listed in ``SAMPLE_FIELDS``; a field that does
not apply is ``null``. Structural counters sit in the sample's ``counters`` dict.

Format history:

* version 1 (2026-12): first version.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

from ..errors import TtfgError

FORMAT = "ttfg-results"
VERSION = 1

#: Phases of a first gradient, in order, as ``{phase}_s`` fields of a timing sample.
GRADIENT_PHASES = ("trace", "lower", "compile", "execute")
#: Every phase of a cold process, in order.
PHASES = ("import", "build", *GRADIENT_PHASES)

#: Fields of a sample by kind (besides the common ones), with their types.
COMMON_FIELDS = {
    "kind": str, "ok": bool, "index": int, "cache": str, "error": (str, type(None)),
    "stderr_tail": (str, type(None)), "started_at": str, "process_wall_s": (float, int, type(None)),
}
SAMPLE_FIELDS = {
    "timing": {
        "import_s": float, "build_s": float, "first_grad_s": float, "second_grad_s": float,
        "trace_s": float, "lower_s": float, "compile_s": float, "execute_s": float,
        "process_ttfg_s": float, "cpu_s": float, "peak_rss_bytes": int, "compile_share": float,
        "loss": float, "counters": dict, "cold_evidence": str,
    },
    "allocations": {
        "alloc_count": int, "alloc_bytes": int, "alloc_peak_bytes": int, "alloc_tool": str,
        "python_allocators": bool,
    },
    "instructions": {
        "instructions": int, "instructions_tool": str, "instructions_scope": str,
    },
}
KINDS = tuple(SAMPLE_FIELDS)


class ResultsError(TtfgError):
    """A results file that cannot be read or does not follow the format; names file and field."""


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass
class CaseResult:
    id: str
    model: str
    backend: str
    variant: dict[str, str]
    skipped: str | None = None
    samples: list[dict[str, Any]] = field(default_factory=list)

    def good(self, kind: str = "timing", cache: str | None = None) -> list[dict[str, Any]]:
        return [s for s in self.samples if s["kind"] == kind and s["ok"] and (cache is None or s.get("cache") == cache)]

    def values(self, metric: str, kind: str = "timing", cache: str | None = "cold") -> list[float]:
        """Finite values of ``metric`` (a sample field or ``counters.NAME``) over good samples."""
        out = []
        for s in self.good(kind, cache):
            v = s.get("counters", {}).get(metric[9:]) if metric.startswith("counters.") else s.get(metric)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                out.append(float(v))
        return out

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "model": self.model, "backend": self.backend, "variant": self.variant,
                "skipped": self.skipped, "samples": self.samples}


@dataclass
class Results:
    environment: dict[str, Any]
    settings: dict[str, Any]
    cases: list[CaseResult] = field(default_factory=list)
    created: str = field(default_factory=now_iso)
    complete: bool = False
    path: Path | None = None

    def case(self, case_id: str) -> CaseResult | None:
        return next((c for c in self.cases if c.id == case_id), None)

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": VERSION, "created": self.created, "complete": self.complete,
                "environment": self.environment, "settings": self.settings,
                "cases": [c.to_json() for c in self.cases]}

    def save(self, path: str | os.PathLike) -> Path:
        """Write atomically: a temporary file in the same folder, then rename over ``path``."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(self.to_json(), fh, indent=1, allow_nan=True)
                fh.write("\n")
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self.path = path
        return path

    def frame(self):
        """One row per sample: case columns, sample fields, counters as ``counters.NAME``."""
        return to_frame([self])


def _fail(path, where: str, problem: str) -> ResultsError:
    return ResultsError(f"{path}: {where}: {problem}")


def _check_type(path, where: str, value: Any, expected) -> None:
    if value is None:
        return
    if expected is float:
        expected = (float, int)
    if isinstance(value, bool) and expected in (int, float, (float, int)):
        raise _fail(path, where, f"expected a number, got {value!r}")
    if not isinstance(value, expected):
        raise _fail(path, where, f"expected {getattr(expected, '__name__', expected)}, got {type(value).__name__}")


def validate(data: Any, path: str | os.PathLike = "<results>") -> None:
    """Raise :class:`ResultsError` naming the file and the first offending field."""
    if not isinstance(data, dict):
        raise _fail(path, "top level", "expected a JSON object")
    if data.get("format") != FORMAT:
        raise _fail(path, "format", f"expected {FORMAT!r}, got {data.get('format')!r} (not a ttfg results file)")
    version = data.get("version")
    if version != VERSION:
        raise _fail(path, "version", f"unsupported version {version!r}; this ttfg reads version {VERSION}")
    for key, kind in (("environment", dict), ("settings", dict), ("cases", list), ("created", str)):
        if key not in data:
            raise _fail(path, key, "missing")
        _check_type(path, key, data[key], kind)
    for i, case in enumerate(data["cases"]):
        where = f"cases[{i}]"
        if not isinstance(case, dict):
            raise _fail(path, where, "expected an object")
        for key, kind in (("id", str), ("model", str), ("backend", str), ("variant", dict), ("samples", list)):
            if key not in case:
                raise _fail(path, f"{where}.{key}", "missing")
            _check_type(path, f"{where}.{key}", case[key], kind)
        for j, sample in enumerate(case["samples"]):
            swhere = f"{where}.samples[{j}]"
            if not isinstance(sample, dict):
                raise _fail(path, swhere, "expected an object")
            kind = sample.get("kind")
            if kind not in SAMPLE_FIELDS:
                raise _fail(path, f"{swhere}.kind", f"expected one of {', '.join(KINDS)}, got {kind!r}")
            for key, expected in COMMON_FIELDS.items():
                if key not in sample:
                    raise _fail(path, f"{swhere}.{key}", "missing")
                _check_type(path, f"{swhere}.{key}", sample[key], expected)
            for key, expected in SAMPLE_FIELDS[kind].items():
                if key in sample:
                    _check_type(path, f"{swhere}.{key}", sample[key], expected)
                elif sample["ok"]:
                    raise _fail(path, f"{swhere}.{key}", f"missing from a good {kind} sample")


def from_json(data: dict[str, Any], path: str | os.PathLike = "<results>") -> Results:
    validate(data, path)
    cases = [CaseResult(c["id"], c["model"], c["backend"], c["variant"], c.get("skipped"), c["samples"])
             for c in data["cases"]]
    return Results(data["environment"], data["settings"], cases, data["created"], bool(data.get("complete")),
                   Path(path) if path != "<results>" else None)


def load(path: str | os.PathLike) -> Results:
    """Read and validate a results file."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ResultsError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    return from_json(data, path)


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
                row.update({k: v for k, v in s.items() if k != "counters"})
                row.update({f"counters.{k}": v for k, v in (s.get("counters") or {}).items()})
                rows.append(row)
    return pd.DataFrame(rows)
