"""Whether a count may decide a case: only when its steadiness was shown for this case on this machine.

Why: a Haiku library's comment-only pull requests failed CI 2 times in 3 on an allocation count
that moved +4.9 % against a default margin of ±2.5 %, while its instructions moved 0.2 %. A
margin holds only a count that repeats, and nothing had shown that this one did. The rule
(:func:`standing`), per count metric of a case:

1. A calibrated margin (``ttfg doctor --calibrate-counts``: several processes of the same code,
   on this machine, under this case's key) shows it: the count decides by that margin.
2. Uncalibrated, the allocation counts of a process that ran a multithreaded native runtime
   (``results/runtimes.py``, measured in the probe: XLA's pool allocates as its threads happen
   to run) never decide: they are evidence, and the next count or tier decides.
3. Uncalibrated, a count the registry knows not to repeat on what the process ran
   (``Metric.unsteady``: jax's allocation counts) never decides.
4. Uncalibrated, base and head agreeing within the margin show it (two processes agreed): the
   count decides (unchanged, or the margin's edge: ``count_margins.judge``).
5. Uncalibrated and the head beyond the margin: a second count of the base side must agree with
   the first within the margin (one more process: :attr:`Standing.recount_base`); then the count
   decides, else it is evidence, said as such, and the next tier decides.

Pure: numbers in, a :class:`Standing` out; the count tier (``tier_instructions.py``) acts on it.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import fmt, metrics

if TYPE_CHECKING:
    from .count_margins import Margin

__all__ = ["Standing", "spread", "standing"]


@dataclass(frozen=True)
class Standing:
    """Whether one count metric decides, and why (or why not), in words a summary prints."""

    decides: bool
    why: str
    #: Uncalibrated, the head beyond the margin, one base count: a second base count would show whether it repeats.
    recount_base: bool = False
    #: Known not to repeat uncalibrated (a multithreaded runtime's allocations, the registry's unsteady counts): set
    #: aside, so it neither decides nor keeps the case open. A count not shown steady that moved beyond its margin
    #: (``noise`` false) keeps the case open for the next tier: it may be the one count that saw a regression.
    noise: bool = False


def spread(values: list[float]) -> float:
    """``(max - min) / min`` of positive counts: how far identical processes' counts were apart (0 for fewer than 2)."""
    v = [x for x in values if x > 0]
    return (max(v) - min(v)) / min(v) if len(v) >= 2 else 0.0


def standing(metric: str, margin: "Margin", base: list[float], head: list[float], multithreaded: str | None = None,
             unsteady: str | None = None) -> Standing:
    """Whether ``metric``'s counts (``base``, ``head``: one value per process) may decide under ``margin``.

    ``multithreaded``: why the case's processes ran a multithreaded native runtime (``Runtimes.multithreaded``), or
    None; ``unsteady``: why the registry says this metric does not repeat on what the processes ran, or None.
    """
    if margin.calibrated:
        return Standing(True, f"its margin was calibrated on this machine ({margin.source()})")
    if multithreaded and metrics.get(metric).sample == "allocations":
        return Standing(False, f"its process ran a multithreaded runtime ({multithreaded}), whose allocation counts "
                               "decide only once calibrated (ttfg doctor --calibrate-counts)", noise=True)
    if unsteady:
        return Standing(False, f"not repeatable for this backend ({unsteady})", noise=True)
    if not base or not head:
        return Standing(False, "measured on one side only")
    change = statistics.median(head) / statistics.median(base) - 1 if statistics.median(base) else 0.0
    if abs(change) <= margin.value:
        return Standing(True, "base and head agree within the margin")
    if len(base) < 2:
        return Standing(False, f"uncalibrated, moved {fmt.change(change)} beyond its margin on one base count: a "
                               "second base count shows whether it repeats", recount_base=True)
    apart = spread(base)
    if apart <= margin.value:
        return Standing(True, f"{len(base)} base counts agree within the margin ({fmt.percent(apart)} apart)")
    return Standing(False, f"uncalibrated, and {len(base)} base counts of the same code are {fmt.percent(apart)} "
                           f"apart, beyond its margin ±{fmt.percent(margin.value)}: not shown steady, so evidence")
