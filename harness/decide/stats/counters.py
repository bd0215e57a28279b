"""Deterministic counters: medians against a relative threshold, no test."""

from __future__ import annotations

import math

import numpy as np

from ... import fmt
from .verdicts import Verdict, _as_float_array


def compare_counter(base, head, threshold=0.01) -> Verdict:
    """Compare a deterministic metric (allocation, instruction or graph-op counts).

    Such counters repeat exactly or within 0.5 %, so a test is pointless: the
    medians are compared and ``|ratio - 1| > threshold`` decides. The "interval" is
    the range the raw samples allow, ``[min(head)/max(base), max(head)/min(base)]``;
    when it is wider than the threshold the reason says the counter is not
    deterministic.

    Parameters
    ----------
    base, head : sequence of float
        Non-negative counts; NaN entries are dropped. Zero counts are allowed: 0 vs
        0 is unchanged, 0 vs a positive count is a regression (infinite ratio).
    threshold : float
        Relative change that counts (0.01 = 1 %).

    Returns
    -------
    Verdict
        Method ``"counter-threshold"``, ``p_value`` NaN.

    Raises
    ------
    ValueError
        On negative or infinite counts.
    """
    if not threshold >= 0:
        raise ValueError(f"threshold must be non-negative, got {threshold!r}")
    b = _as_float_array(base, "base")
    h = _as_float_array(head, "head")
    for arr, what in ((b, "base"), (h, "head")):
        bad = arr[~np.isnan(arr) & ~((arr >= 0) & np.isfinite(arr))]
        if bad.size:
            raise ValueError(f"{what} counters must be non-negative and finite, got e.g. {bad[0]!r}")
    b, h = b[~np.isnan(b)], h[~np.isnan(h)]
    nb, nh = int(b.size), int(h.size)
    method, nan = "counter-threshold", math.nan
    if nb == 0 or nh == 0:
        return Verdict("inconclusive", nan, nan, nan, nan, nb, nh, method,
                       f"{nb} base and {nh} head value(s); a counter comparison needs at least 1 of each")

    def div(x, y):
        return x / y if y > 0 else (1.0 if x == 0 else math.inf)

    mb, mh = float(np.median(b)), float(np.median(h))
    ratio = div(mh, mb)
    lo, hi = div(float(h.min()), float(b.max())), div(float(h.max()), float(b.min()))
    band = fmt.percent(threshold)
    change = "infinitely larger" if math.isinf(ratio) else (
        fmt.change(ratio - 1))
    # The medians themselves are in the Verdict's summaries; present/ prints them in their unit.
    if ratio > 1 + threshold:
        verdict, reason = "regressed", f"the median changed {change}, beyond the {band} threshold"
    elif ratio < 1 - threshold:
        verdict, reason = "improved", f"the median changed {change}, beyond the {band} threshold"
    else:
        verdict, reason = "unchanged", f"the median changed {change}, within the {band} threshold"
    if math.isfinite(lo) and math.isfinite(hi) and (hi - lo) > threshold and (nb > 1 or nh > 1):
        reason += f"; note the samples spread over ratios {lo:.4f}-{hi:.4f}, so this counter is not deterministic"
    return Verdict(verdict, ratio, lo, hi, nan, nb, nh, method, reason)
