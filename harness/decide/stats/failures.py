"""Failures as evidence: does head fail significantly more often than base? (one-sided Fisher)."""

from __future__ import annotations

import math

from ...results.verdict import FailureTest
from .verdicts import _fmt_p

#: One-sided level of the failure test. Failures are not timing noise: a healthy case
#: does not fail at all, so evidence is weighed at 10 % rather than the timings' 1 %,
#: which flags the reported repro (head failed 3 of 4 processes, base 0 of 4:
#: p = 0.071) while one flaky timeout (1 of 60 against 0 of 60: p = 0.5) passes.
FAILURE_ALPHA = 0.10


def compare_failures(base_failed: int, base_total: int, head_failed: int, head_total: int,
                     alpha: float = FAILURE_ALPHA) -> FailureTest:
    """Failures are evidence: a head that fails where the base succeeds is a regression.

    A gate or comparison that only looks at the good samples' times sees a head that
    crashes in 3 of 4 processes as "inconclusive" (too few good samples) and passes it.
    This tests the failure counts themselves: ``regressed`` when head's failure rate is
    higher than base's with one-sided Fisher p < ``alpha``, or when head never produced a
    good sample while base did (nothing to compare is then the finding itself).
    """
    for name, v in (("base_failed", base_failed), ("base_total", base_total), ("head_failed", head_failed),
                    ("head_total", head_total)):
        if int(v) != v or v < 0:
            raise ValueError(f"{name} must be a non-negative count, got {v!r}")
    if base_failed > base_total or head_failed > head_total:
        raise ValueError("more failures than processes")
    if not (0 < alpha < 1):
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    bf, bt, hf, ht = int(base_failed), int(base_total), int(head_failed), int(head_total)
    if bt == 0 or ht == 0:
        return FailureTest(bf, bt, hf, ht, math.nan, False, "no processes on one side")
    if hf == 0:  # P(head failures >= 0) is 1 exactly: no test to run (and scipy.stats, 0.5 s to import, not needed)
        p = 1.0
    else:
        from scipy import stats

        p = float(stats.fisher_exact([[hf, ht - hf], [bf, bt - bf]], alternative="greater").pvalue)
    never = hf == ht and bf < bt
    regressed = never or (hf / ht > bf / bt and p < alpha)
    what = f"head failed {hf} of {ht} process(es), base {bf} of {bt}"
    if never:
        reason = f"{what}: head never produced a good sample where base did"
    elif regressed:
        reason = f"{what}: head fails more often (one-sided Fisher p={_fmt_p(p)} < {alpha:g})"
    else:
        reason = f"{what} (one-sided Fisher p={_fmt_p(p)}): no evidence that head fails more often"
    return FailureTest(bf, bt, hf, ht, p, regressed, reason)
