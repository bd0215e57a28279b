"""The results format's vocabulary: its name and version, the sample fields, the number rule.

The measured numbers of each sample kind come from the metric registry
(``ttfg.metrics``: a metric added there is a field of the format, with the type its
unit implies); the other fields (bookkeeping, text, the counters dict) are the
format's own and listed here. Everything else in ``ttfg.results`` reads these
tables, and ``model.Sample`` names every field.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any

from .. import metrics
from ..errors import TtfgError

FORMAT = "ttfg-results"
#: The version written; ``migrate`` reads every older one (its docstring is the format history).
VERSION = 2

#: Phases of a cold process, in order (the registry's); a first gradient's are the engine contract's.
PHASES = metrics.PROCESS_PHASES

#: Field types. ``"number"``: finite int or float, never bool; ``"count"``: a non-negative int;
#: ``"seconds"``/``"bytes"``: a number that is positive (seconds) or non-negative (bytes).
COMMON_FIELDS = {
    "kind": "text", "ok": "bool", "index": "int", "cache": "text", "error": "text", "stderr_tail": "text",
    "started_at": "text", "process_wall_s": "seconds",
    # Only in gate files: which base/head pair the sample belongs to, and its place in that pair.
    "pair": "count", "pair_position": "count",
}
#: The format type of a registry unit.
UNIT_TYPES = {"s": "seconds", "bytes": "bytes", "count": "count", "ratio": "number"}


def _measured(kind: str) -> dict[str, str]:
    return {name: UNIT_TYPES[metrics.get(name).unit] for name in metrics.fields_of_kind(kind)}


SAMPLE_FIELDS = {
    # ``runtimes``: what the process had loaded after its first gradient (``results/runtimes.py``); optional.
    "timing": {**_measured("timing"), "loss": "number", "counters": "counters", "cold_evidence": "cold_evidence",
               "runtimes": "runtimes"},
    "allocations": {**_measured("allocations"), "alloc_tool": "text", "python_allocators": "bool",
                    "runtimes": "runtimes"},
    "instructions": {**_measured("instructions"), "instructions_tool": "text", "instructions_scope": "text",
                     # The first-gradient window, where the tool splits it: per phase, and its top functions
                     # (``{"fn", "file", "line", "incl", "self"}``); a note on what was not counted.
                     "instructions_phases": "phase_counts", "instructions_top": "functions",
                     "instructions_note": "text", "runtimes": "runtimes"},
    # Sampled Python stacks of the first gradient: per function, inclusive and self seconds.
    "profile": {"profile_top": "functions_s", "profile_tool": "text"},
    # Each Python function's call count in the first gradient (cProfile): ``incl`` and ``self`` both the count.
    # The compiled code per model source line (``engines/source_lines.py``), and why there is none.
    "calls": {"calls_top": "functions", "calls_tool": "text", "source_lines": "source_lines",
              "source_lines_note": "text"},
}
KINDS = tuple(SAMPLE_FIELDS)
#: The studies whose analysis a results file's ``study`` section may hold.
STUDY_KINDS = ("params", "chain", "depth", "env")
#: ``environment.fingerprint``: the machine, as far as it changes the numbers (``model.Fingerprint``).
FINGERPRINT_FIELDS = {
    "cpu_model": "text", "cpu_arch": "text", "cpu_flags": "texts", "cores": "count", "memory_bytes": "bytes",
    "kernel": "text", "python": "text", "packages": "versions", "threads": "texts_by_name",
}
#: Fingerprint fields that must match for timings of two files to be compared: all of them.
#: Memory is compared within ``MEMORY_TOLERANCE`` (one VM type reports a few MiB apart).
TIMING_FIELDS = tuple(FINGERPRINT_FIELDS)
#: Instruction and structural counts follow the code path, not the machine's speed: the same CPU
#: architecture, Python and package versions suffice.
COUNT_FIELDS = ("cpu_arch", "python", "packages")
MEMORY_TOLERANCE = 0.02
#: Fields a good sample must have, and which measurements may be zero: the registry's.
REQUIRED_WHEN_OK = metrics.REQUIRED_WHEN_OK
ZERO_ALLOWED = metrics.ZERO_ALLOWED | {"process_wall_s"}


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


#: A sample's ``error`` is kept to this many characters (its ``stderr_tail`` is the last 2,000 already).
MAX_ERROR_CHARS = 2000


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters plus a note of how many were cut; unchanged when shorter.

    Why: an error text comes from the measured code (a pull request controls its head's
    exceptions), and a 2 MB exception was copied into every sample, the results files
    (6 MB) and the gate's summary (over a PR comment's size limit).
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit:,} more characters cut]"


def differing(a: dict, b: dict) -> list[str]:
    """The keys whose values differ between two dicts, each as ``"key A vs B"`` (sorted by key).

    The one wording of "these settings (or versions) differ" in merge and fingerprint messages.
    """
    return [f"{k} {a.get(k)!r} vs {b.get(k)!r}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def strict_json(value: Any) -> Any:
    """``value`` with every NaN and infinity made ``null`` (dicts and lists walked, numpy scalars
    made plain), so that ``json.dumps(..., allow_nan=False)`` holds: the one place this rule lives.

    Why: a value that could not be estimated is computed as NaN, and files ttfg writes are
    strict JSON, where "not estimable" is ``null``.
    """
    if isinstance(value, dict):
        return {k: strict_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # a numpy scalar
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
