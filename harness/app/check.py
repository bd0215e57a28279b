"""``ttfg check`` as one use case: every selected case's gradient against the float64 reference, and the exit code.

The CLI selects the cases (and the shard), shows progress through ``on_result`` and prints
the table; this function computes each reference once per model and decides the code:
0 every case that ran agrees, 1 a mismatch or an error, 2 nothing could run.
"""

from __future__ import annotations

from typing import Callable


def run(cases: list, skipped: list, tolerance: float, on_result: Callable | None = None) -> tuple[list, int]:
    """``(results, exit code)``: one ``measure.check.CheckResult`` per case, skipped ones included."""
    from ..measure.check import exit_code, run_check

    results = run_check(cases, skipped, tolerance, on_result=on_result)
    return results, exit_code(results)


__all__ = ["run"]
