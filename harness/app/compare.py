"""``ttfg compare`` and ``ttfg expect`` as use cases: read the files, decide, return what the CLI prints.

Why here and not in ``cli/``: comparing two results files is reading them (checked and
migrated), pairing their cases by environment content and deciding each metric; the
CLI only turns the options into this call and prints the comparison.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..decide.compare import Comparison
    from ..decide.expect import ExpectationCheck


def compare(base: str, head: str, metrics: list[str] | None, min_effect: list[str] | None,
            threshold: list[str] | None, alpha: float, cache: str, force: bool = False,
            across_envs: bool = False) -> "Comparison":
    """Two results files compared case by case and metric by metric (``decide.compare.compare_results``).

    ``min_effect`` and ``threshold`` are the options' texts (``0.05``, ``first_grad_s=0.10``),
    parsed here so a bad one is refused naming its option.
    """
    from ..decide.compare import Thresholds, compare_results
    from ..results import record

    base_results, head_results = record.load(base), record.load(head)
    return compare_results(base_results, head_results, metrics=metrics,
                           min_effect=Thresholds.parse(min_effect, None, "--min-effect"),
                           threshold=Thresholds.parse(threshold, None, "--threshold"),
                           alpha=alpha, cache=cache, base_label=base, head_label=head, force=force,
                           across_envs=across_envs)


def check_expectations(file: str, runs: list[str], write_suggested: str | None = None) -> "ExpectationCheck":
    """``ttfg expect check``: the runs' counters against the expectations file; the suggested file written when asked."""
    from ..decide import expect
    from ..results import record

    expectations = expect.load(file)
    check = expect.check(expectations, [record.load(p) for p in runs], path=file)
    if write_suggested:
        expect.save(write_suggested, check.suggested)
    return check


def update_expectations(out: str, runs: list[str], metrics: list[str] | None, margins: list[str] | None,
                        fresh: bool = False) -> int:
    """``ttfg expect update``: the expectations file rewritten from the runs; returns the rows written (0: none found).

    ``margins`` are ``METRIC=VALUE`` texts; a bad one is refused naming it.
    """
    from ..decide import expect
    from ..decide.compare import parse_fraction
    from ..errors import UsageError
    from ..results import record

    existing = expect.load(out) if Path(out).exists() and not fresh else []
    parsed = {}
    for text in margins or ():
        key, eq, value = text.partition("=")
        if not eq:
            raise UsageError(f"--margin {text!r}: expected METRIC=VALUE, e.g. alloc_count=0.02 or 'counters.*=0'")
        parsed[key.strip()] = parse_fraction(value, f"--margin {key}")
    rows = expect.update(existing, [record.load(p) for p in runs], metrics=metrics, margins=parsed)
    if rows:
        expect.save(out, rows)
    return len(rows)


__all__ = ["check_expectations", "compare", "update_expectations"]
