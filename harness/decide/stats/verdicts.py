"""The verdict rule: summaries, the four verdicts and the one rule that reaches them (:func:`decide`)."""

from __future__ import annotations

import math

import numpy as np

from ... import fmt
# The records themselves live below decide/, where gate.json reads them back (``results/verdict.py``).
from ...results.verdict import VERDICTS, Summary, Verdict, to_json as _to_json


# --------------------------------------------------------------------------- input checks


def _as_float_array(values, what: str) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise ValueError(f"{what} must be a one-dimensional sequence of numbers, got shape {arr.shape}")
    return arr


def _check_timings(arr: np.ndarray, what: str) -> None:
    """Timing data must be positive and finite (NaN is allowed: it marks a missing sample)."""
    bad = arr[~np.isnan(arr) & ~((arr > 0) & np.isfinite(arr))]
    if bad.size:
        raise ValueError(
            f"{what} must be positive and finite (NaN marks a missing sample); "
            f"got {bad.size} invalid value(s), e.g. {float(bad[0])!r}; "
            "a zero or negative time means a broken measurement"
        )


def _timings(values, what: str) -> np.ndarray:
    """Positive finite times with NaN removed."""
    arr = _as_float_array(values, what)
    _check_timings(arr, what)
    return arr[~np.isnan(arr)]


def _paired_logs(base, head) -> np.ndarray:
    """``log(head/base)`` for the pairs where both sides are present."""
    b = _as_float_array(base, "base")
    h = _as_float_array(head, "head")
    if b.shape != h.shape:
        raise ValueError(f"paired samples need equal lengths, got {b.size} base and {h.size} head values")
    _check_timings(b, "base")
    _check_timings(h, "head")
    keep = ~(np.isnan(b) | np.isnan(h))
    return np.log(h[keep]) - np.log(b[keep])


def _check_level(alpha: float, min_effect: float | None = None) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if min_effect is not None and not min_effect > 0:
        raise ValueError(f"min_effect must be positive, got {min_effect!r}")


# --------------------------------------------------------------------------- summaries


def summarize(values) -> Summary:
    """Summarise one set of samples.

    Parameters
    ----------
    values : sequence of float
        Samples; NaN entries (failed or missing runs) are ignored.

    Returns
    -------
    Summary
        ``n`` counts the non-NaN samples; all float fields are NaN when ``n == 0``
        and ``cv`` is NaN when ``n < 2``.
    """
    arr = _as_float_array(values, "values")
    arr = arr[~np.isnan(arr)]
    n = int(arr.size)
    if n == 0:
        nan = math.nan
        return Summary(0, nan, nan, nan, nan, nan)
    mean = float(np.mean(arr))
    cv = float(np.std(arr, ddof=1) / mean) if n >= 2 and mean != 0 else math.nan
    return Summary(n, float(np.median(arr)), mean, float(arr.min()), float(arr.max()), cv)


# --------------------------------------------------------------------------- verdicts


def _pct(ratio: float) -> str:
    """``1.123 -> "12.3 % slower"``, ``0.9 -> "10 % faster"`` (relative to base; the one formatter)."""
    if ratio >= 1:
        return f"{fmt.percent(ratio - 1)} slower"
    return f"{fmt.percent(1 - ratio)} faster"


def _level(confidence: float) -> str:
    """A confidence level in percent with the digits it needs: ``99%``, ``99.1%``, ``99.998%`` (never ``100%``)."""
    for digits in range(4, 12):
        text = f"{confidence * 100:.{digits}g}"
        if float(text) < 100 or confidence >= 1:
            return f"{text}%"
    return f"{confidence * 100:.12g}%"


def _fmt_p(p: float) -> str:
    return f"{p:.3g}" if p >= 1e-4 else f"{p:.1e}"


def _within(low: float, high: float, min_effect: float) -> bool:
    """Whether ``[low, high]`` lies inside the band ``[1/(1+m), 1+m]``."""
    hi = 1.0 + min_effect
    return math.isfinite(low) and math.isfinite(high) and 1.0 / hi <= low and high <= hi


def decide(ratio, ci_low, ci_high, p_value, min_effect, alpha, eq_low=None, eq_high=None,
           tost_p=None) -> tuple[str, str]:
    """The shared decision rule (see the module docstring).

    Parameters
    ----------
    ratio : float
        Point estimate of head/base.
    ci_low, ci_high : float
        ``1 - alpha`` two-sided confidence interval of the ratio.
    p_value : float
        Two-sided p-value of "ratio == 1".
    min_effect : float
        Smallest relative change worth reporting, e.g. 0.05 for 5 %.
    alpha : float
        Significance level the p-value and interval were computed for.
    eq_low, eq_high : float or None
        The ``1 - 2 alpha`` interval: inside the band, two one-sided tests at ``alpha``
        show equivalence. None: the ``1 - alpha`` interval stands in (stricter).
    tost_p : float or None
        The two one-sided tests' p-value where it is computed directly (rank tests);
        it then decides equivalence (``tost_p < alpha``).

    Returns
    -------
    tuple of (str, str)
        ``(verdict, reason)``: a member of :data:`VERDICTS` and one sentence.
    """
    _check_level(alpha, min_effect)
    hi = 1.0 + min_effect
    lo = 1.0 / hi
    level = _level(1 - alpha)
    if not all(map(math.isfinite, (ratio, ci_low, ci_high))) or math.isnan(p_value):
        return "inconclusive", "not enough valid samples to estimate the ratio and its interval"
    ci = f"{level} CI {fmt.interval(ci_low, ci_high)}"
    significant = p_value < alpha and (ci_low > 1.0 or ci_high < 1.0)
    band = fmt.percent(min_effect)
    if significant and ratio >= hi:
        return "regressed", (f"head is {_pct(ratio)} (ratio {fmt.factor(ratio)}, {ci}, p={_fmt_p(p_value)} < {alpha:g}), "
                             f"at least the {band} minimum effect")
    if significant and ratio <= lo:
        return "improved", (f"head is {_pct(ratio)} (ratio {fmt.factor(ratio)}, {ci}, p={_fmt_p(p_value)} < {alpha:g}), "
                            f"at least the {band} minimum effect")
    if equivalent(ci_low, ci_high, min_effect, alpha, eq_low, eq_high, tost_p):
        if eq_low is None or eq_high is None or not (math.isfinite(eq_low) and math.isfinite(eq_high)):
            eq_low, eq_high, eq_level = ci_low, ci_high, level
        else:
            eq_level = _level(1 - 2 * alpha)
        tost = f", TOST p={_fmt_p(tost_p)}" if tost_p is not None and math.isfinite(tost_p) else ""
        return "unchanged", (f"within +/-{band}: two one-sided tests at alpha {alpha:g} put the ratio inside the "
                             f"band ({eq_level} CI {fmt.interval(eq_low, eq_high)}, ratio {fmt.factor(ratio)}{tost})")
    if significant:
        return "unchanged", (f"head is {_pct(ratio)} (ratio {fmt.factor(ratio)}, {ci}, p={_fmt_p(p_value)}): "
                             f"significant but smaller than the {band} minimum effect (not shown to be within "
                             f"+/-{band}: the interval reaches beyond it)")
    return "inconclusive", (f"ratio {fmt.factor(ratio)} with {ci} (p={_fmt_p(p_value)}) still reaches beyond the "
                            f"+/-{band} band without being significant; more samples would help")


def equivalent(ci_low, ci_high, min_effect, alpha, eq_low=None, eq_high=None, tost_p=None) -> bool:
    """Whether two one-sided tests at ``alpha`` show the ratio inside ``[1/(1+m), 1+m]``.

    From ``tost_p`` when given (``< alpha``), else from the ``1 - 2 alpha`` interval
    ``eq_low``-``eq_high`` (the same thing for a t-test), else, stricter, from the
    ``1 - alpha`` interval.
    """
    if tost_p is not None and math.isfinite(tost_p):
        return tost_p < alpha
    if eq_low is not None and eq_high is not None:
        return _within(eq_low, eq_high, min_effect)
    return _within(ci_low, ci_high, min_effect)

def _exp(x: float) -> float:
    """``exp`` that saturates to infinity instead of raising ``OverflowError``.

    Tiny samples at a strict level give huge t quantiles (df = 1 at alpha 1e-4 is about
    6,000), and one outlier pair then puts the interval's upper end past ``exp(709)``.
    An infinite bound is the honest answer: the data cannot bound the ratio.
    """
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf
