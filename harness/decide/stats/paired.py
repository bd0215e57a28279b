"""Paired comparisons: the t-test on log ratios, equivalence (TOST) and the smallest effect a run could detect."""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ... import fmt
from .power import min_detectable_effect, sd_interval
from .verdicts import Verdict, _check_level, _exp, _paired_logs, decide, equivalent


def _t_interval(n: int, mean: float, sd: float, alpha: float, tcrit: float | None = None):
    """Ratio, CI and two-sided p of a one-sample t-test on log ratios (from n, mean, sd).

    A zero SD (identical ratios, e.g. identical samples) gives a zero-width interval
    and p = 0 (or 1 when the mean is exactly zero) instead of NaN.
    """
    if n < 2:
        return math.exp(mean) if n == 1 else math.nan, math.nan, math.nan, math.nan
    if sd == 0.0:
        r = math.exp(mean)
        return r, r, r, (1.0 if mean == 0.0 else 0.0)
    se = sd / math.sqrt(n)
    df = n - 1
    if tcrit is None:
        tcrit = float(special.stdtrit(df, 1.0 - alpha / 2))
    p = float(2.0 * special.stdtr(df, -abs(mean / se)))
    return _exp(mean), _exp(mean - tcrit * se), _exp(mean + tcrit * se), p


def _log_t(logr: np.ndarray, alpha: float):
    n = int(logr.size)
    mean = float(np.mean(logr)) if n else math.nan
    sd = float(np.std(logr, ddof=1)) if n >= 2 else math.nan
    return _t_interval(n, mean, sd, alpha)


def _tost_t(n: int, mean: float, sd: float, min_effect: float, alpha: float, tcrit_eq: float | None = None):
    """Two one-sided t-tests of ``|mean log ratio| >= log(1 + m)``: ``(eq_low, eq_high, tost_p)``.

    ``eq_low``-``eq_high`` is the ``1 - 2 alpha`` interval of the ratio (inside the band
    exactly when ``tost_p < alpha``); ``tost_p`` is the larger one-sided p-value.
    """
    nan = math.nan
    if n < 2 or not math.isfinite(sd):
        return nan, nan, nan
    bound = math.log1p(min_effect)
    if sd == 0.0:
        r = math.exp(mean)
        return r, r, (0.0 if abs(mean) < bound else 1.0)
    se = sd / math.sqrt(n)
    df = n - 1
    if tcrit_eq is None:
        tcrit_eq = float(special.stdtrit(df, 1.0 - alpha))
    p_lower = float(special.stdtr(df, -(mean + bound) / se))  # H0: ratio <= 1/(1+m)
    p_upper = float(special.stdtr(df, (mean - bound) / se))   # H0: ratio >= 1+m
    return _exp(mean - tcrit_eq * se), _exp(mean + tcrit_eq * se), max(p_lower, p_upper)


def detectable_effect(sd: float, pairs: int, alpha: float, min_effect: float, power: float = 0.95):
    """``(effect, effect_at_upper_sd)``: the slowdown a finished test would have flagged.

    :func:`min_detectable_effect` with the "regressed" rule's second condition (the
    estimate must reach ``min_effect``), at the measured SD and at the upper end of
    its 95 % interval (:func:`sd_interval`); NaN where it cannot be computed.
    """
    nan = math.nan
    if int(pairs) != pairs or pairs < 2 or not (isinstance(sd, (int, float)) and math.isfinite(sd) and sd >= 0):
        return nan, nan
    def solve(s: float) -> float:
        try:
            return min_detectable_effect(s, pairs, alpha, power, min_effect=min_effect)
        except ValueError:  # the root finder met a NaN: no number rather than a wrong one
            return nan

    high_sd = sd_interval(sd, pairs)[1]
    return solve(sd), (solve(high_sd) if math.isfinite(high_sd) else nan)


def _detectable_reason(detectable: float, high: float, pairs: str, sd: float) -> str:
    if not math.isfinite(detectable):
        return ""
    upper = f" ({fmt.percent(high)} at the upper end of its noise's 95 % interval)" if math.isfinite(high) else ""
    return (f"; with {pairs} at log-ratio SD {sd:.3g} this run could detect a slowdown of {fmt.percent(detectable)} "
            f"with 95 % power{upper}: a smaller one may have passed unseen")


def _paired_verdict(n: int, mean: float, sd: float, min_effect: float, alpha: float, method: str,
                    final: bool = True, tcrit: float | None = None, tcrit_eq: float | None = None) -> Verdict:
    """The paired t-test's verdict from the log ratios' ``n``, mean and SD (shared by the
    fixed-size comparison and every look of the sequential test)."""
    ratio, lo, hi, p = _t_interval(n, mean, sd, alpha, tcrit)
    eq_lo, eq_hi, tost_p = _tost_t(n, mean, sd, min_effect, alpha, tcrit_eq)
    if n < 2:
        verdict, reason = "inconclusive", f"{n} complete pair(s); a paired comparison needs at least 2"
    else:
        verdict, reason = decide(ratio, lo, hi, p, min_effect, alpha, eq_lo, eq_hi)
    is_eq = verdict == "unchanged" and equivalent(lo, hi, min_effect, alpha, eq_lo, eq_hi)
    detect = detect_high = math.nan
    if verdict == "inconclusive" and final and n >= 2 and math.isfinite(sd):
        detect, detect_high = detectable_effect(sd, n, alpha, min_effect)
        reason += _detectable_reason(detect, detect_high, f"{n} pairs", sd)
    return Verdict(verdict, ratio, lo, hi, p, n, n, method, reason, min_effect, eq_lo, eq_hi, tost_p, is_eq,
                   detect, detect_high)


def compare_paired(base, head, min_effect=0.05, alpha=0.01) -> Verdict:
    """Compare paired measurements: ``base[i]`` and ``head[i]`` were taken close in time.

    A one-sample t-test on ``log(head/base)``; the ratio is the geometric mean of
    the per-pair ratios. Pairing cancels the machine's slow drift, which is why the
    gate interleaves base and head.

    Parameters
    ----------
    base, head : sequence of float
        Positive times of equal length; a pair with NaN on either side is dropped.
    min_effect : float
        Smallest relative change that counts (0.05 = 5 %).
    alpha : float
        Two-sided significance level; the interval is ``1 - alpha``.

    Returns
    -------
    Verdict
        Method ``"paired-t-log"``; ``n_base == n_head`` = complete pairs. "unchanged"
        within the band comes from two one-sided tests at ``alpha``; an inconclusive
        verdict carries the smallest slowdown the pairs could have detected.

    Raises
    ------
    ValueError
        On unequal lengths, or zero, negative or infinite times.
    """
    _check_level(alpha, min_effect)
    logr = _paired_logs(base, head)
    n = int(logr.size)
    mean = float(np.mean(logr)) if n else math.nan
    sd = float(np.std(logr, ddof=1)) if n >= 2 else math.nan
    return _paired_verdict(n, mean, sd, min_effect, alpha, "paired-t-log")
