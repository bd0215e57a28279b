"""Verdicts in words: what "unchanged" and "inconclusive" claim, and what passing the gate means.

Why a module of its own: the terminal table, ``summary.md``, ``gate.json`` and the HTML
report must say the same thing about the same verdict, and what they say has to be
exactly what the statistics showed. "unchanged" has two grounds that claim different
things (two one-sided tests put the change inside +-m, or a significant change is smaller
than m), and "inconclusive" only rules out changes larger than what the run could detect.
"""

from __future__ import annotations

import math

from . import fmt
from .fmt import _finite
from .. import metrics


def verdict_label(v) -> str:
    """The verdict word with what it rests on.

    * ``unchanged (within ±5 %)``: two one-sided tests showed equivalence;
    * ``unchanged (+2.1 %, under the 5 % minimum)``: a significant change below the minimum effect;
    * ``inconclusive (could detect ≥ 7.6 %)``: the smallest slowdown this run would have flagged.
    """
    word = v.verdict
    margin = getattr(v, "margin", math.nan)
    if word == "unchanged" and _finite(margin):
        if getattr(v, "equivalent", False):
            return f"unchanged (within ±{fmt.percent(margin)})"
        if _finite(v.ratio):
            return f"unchanged ({fmt.change(v.ratio - 1)}, under the {fmt.percent(margin)} minimum)"
    if word == "inconclusive" and _finite(getattr(v, "detectable", math.nan)):
        return f"inconclusive (could detect ≥ {fmt.percent(v.detectable)})"
    return word


def passing_means(outcome, check=None) -> str:
    """One sentence: what a passing gate of these settings has shown, and what it has not.

    Parameters
    ----------
    outcome : gate.GateOutcome
    check : expect.ExpectationCheck or None
        When expectations were checked, the sentence includes them.
    """
    s = outcome.settings
    label = metrics.get(s.metric).brief if s.metric in metrics.METRICS else s.metric
    detect = [c.verdict.detectable for c in outcome.cases if c.verdict.verdict == "inconclusive"
              and _finite(getattr(c.verdict, "detectable", math.nan))]
    inconclusive = (f"; an inconclusive case only rules out slowdowns it could detect (here down to "
                    f"{fmt.percent(min(detect))} at best)" if detect else
                    "; an inconclusive case only rules out slowdowns as large as it states it could detect")
    expectations = f", and head's counters stayed within {check.path}" if check is not None else ""
    return (f"Passing means: no case's {label} got slower by {fmt.percent(s.min_effect)} or more with significance "
            f"at alpha {s.alpha:g} (paired base/head processes, sequential test), no head failed significantly more "
            f"often than its base{expectations}; a case marked 'unchanged (within ±{fmt.percent(s.min_effect)})' was shown "
            f"by two one-sided tests to lie inside that band{inconclusive}.")


__all__ = ["passing_means", "verdict_label"]
