"""The results format's vocabulary: its name and version, the sample fields, the number rule.

The field list here is the format's own (what a version-2 file may hold and of which
type); which metric means what is the metric registry's business, not this module's.
Everything else in ``harness.results`` reads these tables, so a field is added in one
place: here, with its type, and in ``model.Sample``.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any

from ..errors import TtfgError

FORMAT = "ttfg-results"
#: The version written; ``migrate`` reads every older one (its docstring is the format history).
VERSION = 2

#: Phases of a first gradient, in order, as ``{phase}_s`` fields of a timing sample.
GRADIENT_PHASES = ("trace", "lower", "compile", "execute")
#: Every phase of a cold process, in order.
PHASES = ("import", "build", *GRADIENT_PHASES)

#: Field types. ``"number"``: finite int or float, never bool; ``"count"``: a non-negative int;
#: ``"seconds"``/``"bytes"``: a number that is positive (seconds) or non-negative (bytes).
COMMON_FIELDS = {
    "kind": "text", "ok": "bool", "index": "int", "cache": "text", "error": "text", "stderr_tail": "text",
    "started_at": "text", "process_wall_s": "seconds",
    # Only in gate files: which base/head pair the sample belongs to, and its place in that pair.
    "pair": "count", "pair_position": "count",
}
SAMPLE_FIELDS = {
    "timing": {
        "import_s": "seconds", "build_s": "seconds", "first_grad_s": "seconds", "second_grad_s": "seconds",
        "trace_s": "seconds", "lower_s": "seconds", "compile_s": "seconds", "execute_s": "seconds",
        "process_ttfg_s": "seconds", "cpu_s": "seconds", "peak_rss_bytes": "bytes", "compile_share": "number",
        "loss": "number", "counters": "counters", "cold_evidence": "cold_evidence",
    },
    "allocations": {
        "alloc_count": "count", "alloc_bytes": "bytes", "alloc_peak_bytes": "bytes", "alloc_tool": "text",
        "python_allocators": "bool",
    },
    "instructions": {
        "instructions": "count", "instructions_tool": "text", "instructions_scope": "text",
    },
}
KINDS = tuple(SAMPLE_FIELDS)
#: The studies whose analysis a results file's ``study`` section may hold.
STUDY_KINDS = ("params", "chain", "depth")
#: Fields a good sample of each kind must have (a field that does not apply is null, but present).
REQUIRED_WHEN_OK = {
    "timing": ("import_s", "build_s", "first_grad_s", "second_grad_s"),
    "allocations": ("alloc_count", "alloc_bytes"),
    "instructions": ("instructions",),
}
#: Which measurements may legitimately be zero (a phase the backend skipped, a tiny build).
ZERO_ALLOWED = {"trace_s", "lower_s", "compile_s", "execute_s", "build_s", "second_grad_s", "process_wall_s"}


class ResultsError(TtfgError):
    """A results file that cannot be read or does not follow the format; names file and field."""


def is_number(value: Any) -> bool:
    """A finite int or float, and not a bool: the one test for "this is a measured number"."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def describe(value: Any) -> str:
    """A value as a person reads it in an error message: "the string 'abc'", "null", "a list"."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {shown!r}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"the non-finite number {value}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "a list"
    return f"a {type(value).__name__}"
