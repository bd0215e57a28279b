"""Power: the smallest change a paired test flags with given power, the noise model's pair SD, and an SD's interval."""

from __future__ import annotations

import math

from scipy import optimize, special

from .verdicts import _exp


def paired_log_sd(sample_sd: float = 0.10, drift_sd: float = 0.3, n_pairs: int = 60) -> float:
    """SD of one pair's ``log(head/base)`` under :func:`simulate_pairs`' noise model.

    Two independent sample noises plus one drift step between the two samples:
    ``sqrt(2 * sample_sd**2 + drift_sd**2 / (2 * n_pairs))``.
    """
    return math.sqrt(2 * sample_sd**2 + drift_sd**2 / (2 * n_pairs))


def min_detectable_effect(sd: float, pairs: int, alpha: float = 0.01, power: float = 0.95,
                          min_effect: float | None = None) -> float:
    """Smallest true relative change a paired t-test on log ratios flags with the given power.

    Why: a user wants to know what a gate *can* see on this machine before spending its
    budget. With a paired log-ratio SD ``sd`` and ``pairs`` complete pairs, the one-sample
    t-test of :func:`compare_paired` at two-sided level ``alpha`` rejects a true shift
    ``delta = log(1 + effect)`` with probability given by the noncentral t distribution
    (df ``pairs - 1``, noncentrality ``delta * sqrt(pairs) / sd``); this solves for the
    ``delta`` whose power is ``power``. For many pairs it approaches the normal formula
    ``(z[1 - alpha/2] + z[power]) * sd / sqrt(pairs)``: at SD 0.087, 56 pairs see 5.2 %;
    with few pairs the t quantiles make it larger (14 pairs: 12 %, where the normal
    formula says 10 %).

    The gate's "regressed" also needs the estimate itself to reach ``--min-effect``, and
    its final look runs at ``0.9 * alpha``; both make it slightly more conservative.

    Parameters
    ----------
    sd : float
        SD of one pair's ``log(head/base)`` (a calibration measures it).
    pairs : int
        Complete pairs the test will have (at least 2).
    alpha : float
        Two-sided significance level.
    power : float
        Probability of flagging the effect, in (alpha, 1).
    min_effect : float or None
        When given, a flag also needs the estimate to reach this relative change (the
        "regressed" rule of :func:`decide`), and only slowdowns count: the critical t
        becomes ``max(t[1 - alpha/2], log(1 + min_effect) * sqrt(pairs) / sd)``.

    Returns
    -------
    float
        The effect as a relative change (0.05 = 5 %); 0 when ``sd`` is 0 (``min_effect``
        when given: nothing smaller can be flagged).

    Raises
    ------
    ValueError
        On a negative or non-finite SD, fewer than 2 pairs, or a level or power outside (0, 1).
    """
    if not (isinstance(sd, (int, float)) and math.isfinite(sd) and sd >= 0):
        raise ValueError(f"sd must be a finite number >= 0, got {sd!r}")
    if int(pairs) != pairs or pairs < 2:
        raise ValueError(f"pairs must be an integer >= 2, got {pairs!r}")
    if not 0 < alpha < 1 or not alpha < power < 1:
        raise ValueError(f"need 0 < alpha < power < 1, got alpha {alpha!r} and power {power!r}")
    if min_effect is not None and not (math.isfinite(min_effect) and min_effect >= 0):
        raise ValueError(f"min_effect must be a finite number >= 0, got {min_effect!r}")
    if sd == 0:
        return 0.0 if min_effect is None else float(min_effect)
    n = int(pairs)
    df = n - 1
    tcrit = float(special.stdtrit(df, 1.0 - alpha / 2))
    upper_crit = tcrit if min_effect is None else max(tcrit, math.log1p(min_effect) * math.sqrt(n) / sd)

    def shortfall(delta: float) -> float:
        nc = delta * math.sqrt(n) / sd
        upper = 1.0 - float(special.nctdtr(df, nc, upper_crit))
        if not math.isfinite(upper):  # scipy's noncentral t gives NaN at extreme arguments: the normal limit
            upper = float(special.ndtr(nc - upper_crit))
        if min_effect is not None:
            return upper - power
        lower = float(special.nctdtr(df, nc, -tcrit))  # wrong-sign rejections; tiny, and NaN in some scipy
        return upper + (lower if math.isfinite(lower) else 0.0) - power

    high = (special.ndtri(1 - alpha / 2) + special.ndtri(power)) * sd / math.sqrt(n)
    for _ in range(200):
        if shortfall(high) >= 0:
            break
        high *= 2
    else:
        return math.inf
    return _exp(optimize.brentq(shortfall, 0.0, high, xtol=1e-10)) - 1.0


def sd_interval(sd: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """Chi-square interval for an SD estimated from ``n`` normal values (``(nan, nan)`` below 2).

    A calibration of a minute yields few pairs; the interval says how far its SD can be trusted.
    """
    if n < 2 or not math.isfinite(sd):
        return math.nan, math.nan
    from scipy import stats  # here: scipy.stats takes 0.5 s to import, and a gate's budget check needs none of it

    df = n - 1
    tail = (1 - level) / 2
    return (sd * math.sqrt(df / stats.chi2.ppf(1 - tail, df)), sd * math.sqrt(df / stats.chi2.ppf(tail, df)))
