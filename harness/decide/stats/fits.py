"""Study fits: the power law of depth, its linearity, and paired effects with intervals."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from .paired import _log_t
from .verdicts import (
    _as_float_array,
    _check_level,
    _check_timings,
    _paired_logs,
    _to_json,
)


@dataclass
class PowerLawFit:
    """``time = a + b * depth**k``: constant overhead ``a``, growth ``b * depth**k``.

    ``k_ci_low``/``k_ci_high`` bound the exponent (bootstrap percentile interval);
    ``n`` counts the (depth, time) points used.
    """

    a: float
    b: float
    k: float
    k_ci_low: float
    k_ci_high: float
    n: int
    method: str

    def predict(self, depth):
        """Predicted time at ``depth`` (a float for a scalar, an array for an array)."""
        d = np.asarray(depth, dtype=float)
        out = self.a + self.b * d**self.k
        return float(out) if out.ndim == 0 else out

    def to_json(self) -> dict:
        """Plain dict for result files; NaN becomes ``None``."""
        return _to_json(self)


_K_BOUNDS = (1e-3, 8.0)


def _power_residuals(theta, d, logd, logt):
    a, logb, k = theta
    growth = np.exp(logb + k * logd)
    return np.log(a + growth) - logt


def _power_jac(theta, d, logd, logt):
    a, logb, k = theta
    growth = np.exp(logb + k * logd)
    m = a + growth
    return np.column_stack([1.0 / m, growth / m, growth * logd / m])


def _fit_once(d, logd, logt, starts):
    """Best least-squares fit on log times over several starting points; None if all fail."""
    best = None
    lower = [0.0, -np.inf, _K_BOUNDS[0]]
    upper = [np.inf, np.inf, _K_BOUNDS[1]]
    for x0 in starts:
        try:
            res = optimize.least_squares(_power_residuals, x0, jac=_power_jac, bounds=(lower, upper),
                                         args=(d, logd, logt), method="trf", x_scale="jac")
        except (ValueError, FloatingPointError):
            continue
        if np.all(np.isfinite(res.x)) and (best is None or res.cost < best.cost):
            best = res
    return None if best is None else best.x


def _starts(d, t):
    """Starting points: a at 0, half and most of the smallest time; k from a log-log line."""
    out = []
    tmin = float(np.min(t))
    for frac in (0.0, 0.5, 0.9):
        a0 = frac * tmin
        y = np.log(np.maximum(t - a0, 1e-12 * tmin))
        k0, c0 = np.polyfit(np.log(d), y, 1)
        out.append([a0, c0, float(np.clip(k0, 0.05, _K_BOUNDS[1] - 0.1))])
    return out


def fit_power_law(depths, times, alpha=0.05, n_boot=2000, seed=0) -> PowerLawFit:
    """Fit ``times = a + b * depth**k`` (a >= 0, b > 0, k > 0) by least squares on log times.

    Log residuals match multiplicative timing noise, so a deep model's seconds do
    not drown a shallow one's. The fit (scipy ``least_squares`` with bounds, several
    starts) minimises ``sum((log(a + b d^k) - log t)^2)``. The interval for ``k`` is
    a percentile bootstrap: when every depth has at least two samples, cases are
    resampled *within* each depth (keeps the design, makes no assumption about the
    noise's shape or constancy), with the replicate spread widened by
    ``sqrt(m/(m-1))`` (``m`` samples per depth) because resampling ``m`` points
    shrinks their variance by ``(m-1)/m``; otherwise the log residuals, scaled by
    ``sqrt(n/(n-3))``, are resampled onto the fitted curve. Percentile intervals of
    a three-parameter nonlinear fit run slightly narrow: in simulations with
    lognormal noise SD 0.1, 7 depths and 3-6 samples per depth, the nominal 95 %
    interval covered the true ``k`` in about 88-93 % of data sets. Prefer more
    samples per depth and a wide depth range (at least 1.5 decades) over more
    replicates.

    Parameters
    ----------
    depths : sequence of float
        Positive sizes (blocks, layers, chain length).
    times : sequence of float
        Positive times, one per depth entry; pairs with NaN are dropped.
    alpha : float
        The interval for ``k`` is ``1 - alpha``.
    n_boot : int
        Bootstrap replicates.
    seed : int
        Seed of the bootstrap.

    Returns
    -------
    PowerLawFit

    Raises
    ------
    ValueError
        On unequal lengths, non-positive depths or times, or fewer than 3 distinct
        depths (three parameters).
    """
    _check_level(alpha)
    d = _as_float_array(depths, "depths")
    t = _as_float_array(times, "times")
    if d.shape != t.shape:
        raise ValueError(f"depths and times need equal lengths, got {d.size} and {t.size}")
    _check_timings(t, "times")
    _check_timings(d, "depths")
    keep = ~(np.isnan(d) | np.isnan(t))
    d, t = d[keep], t[keep]
    levels, inverse = np.unique(d, return_inverse=True)
    if levels.size < 3:
        raise ValueError(f"a power-law fit needs at least 3 distinct depths, got {levels.size}")
    logd, logt = np.log(d), np.log(t)
    theta = _fit_once(d, logd, logt, _starts(d, t))
    if theta is None:
        raise ValueError("the power-law fit did not converge")
    a, logb, k = (float(v) for v in theta)

    rng = np.random.default_rng(seed)
    groups = [np.flatnonzero(inverse == g) for g in range(levels.size)]
    stratified = all(g.size >= 2 for g in groups)
    fitted = np.log(a + np.exp(logb + k * logd))
    # Residuals scaled up for the 3 fitted parameters (Davison & Hinkley 1997, 6.2.3).
    resid = (logt - fitted) * math.sqrt(d.size / max(d.size - 3, 1))
    ks = []
    for _ in range(int(n_boot)):
        if stratified:
            idx = np.concatenate([rng.choice(g, size=g.size, replace=True) for g in groups])
            bd, bld, blt = d[idx], logd[idx], logt[idx]
        else:
            bd, bld, blt = d, logd, fitted + rng.choice(resid, size=resid.size, replace=True)
        th = _fit_once(bd, bld, blt, [theta])
        if th is not None:
            ks.append(th[2])
    ks = np.asarray(ks)
    if stratified:
        # Resampling m points within a depth reproduces their variance times (m-1)/m;
        # undo that shrinkage of the spread (m: harmonic mean of the group sizes).
        m = len(groups) / sum(1.0 / g.size for g in groups)
        ks = k + math.sqrt(m / (m - 1)) * (ks - k)
    if ks.size >= 10:
        k_lo, k_hi = (float(v) for v in np.quantile(ks, [alpha / 2, 1 - alpha / 2]))
    else:
        k_lo = k_hi = math.nan
    scheme = "stratified case" if stratified else "residual"
    method = f"log-least-squares; {scheme} bootstrap ({ks.size} replicates, {(1 - alpha) * 100:.4g}% percentile)"
    return PowerLawFit(a, math.exp(logb), k, k_lo, k_hi, int(d.size), method)


def linearity(fit: PowerLawFit, tol=0.15) -> str:
    """Classify the growth exponent's interval.

    Returns
    -------
    str
        ``"super-linear"`` if ``k_ci_low > 1`` (provably faster than linear, however
        slightly); ``"sub-linear"`` if ``k_ci_high < 1``; ``"linear"`` if the interval
        contains 1 and lies within ``[1 - tol, 1 + tol]``; otherwise
        ``"undetermined"`` (too wide to tell; more depths or samples would help).
    """
    lo, hi = fit.k_ci_low, fit.k_ci_high
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "undetermined"
    if lo > 1:
        return "super-linear"
    if hi < 1:
        return "sub-linear"
    if 1 - tol <= lo and hi <= 1 + tol:
        return "linear"
    return "undetermined"


@dataclass
class Effect:
    """Ratio of treatment over control with its ``1 - alpha`` interval (paired), e.g. scan vs unrolled."""

    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    n: int

    def to_json(self) -> dict:
        """Plain dict for result files; NaN becomes ``None``."""
        return _to_json(self)


def paired_effect(control, treatment, alpha=0.05) -> Effect:
    """Geometric-mean ratio treatment/control of paired measurements, with t interval.

    For studies (``params`` or ``chain`` variants) that report an effect size
    rather than a verdict.

    Parameters
    ----------
    control, treatment : sequence of float
        Positive times of equal length, measured as pairs; pairs with NaN dropped.
    alpha : float
        The interval is ``1 - alpha`` two-sided; ``p_value`` tests ratio == 1.

    Returns
    -------
    Effect
        NaN interval and p-value with fewer than 2 pairs.
    """
    _check_level(alpha)
    logr = _paired_logs(control, treatment)
    ratio, lo, hi, p = _log_t(logr, alpha)
    return Effect(ratio, lo, hi, p, int(logr.size))
