"""Unpaired comparisons: Mann-Whitney on log times with the Hodges-Lehmann ratio, and history segments."""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ... import fmt
from .paired import detectable_effect
from .verdicts import (
    Verdict,
    _check_level,
    _exp,
    _fmt_p,
    _level,
    _timings,
    decide,
    equivalent,
)


def _mwu_null_cdf(m: int, n: int) -> np.ndarray | None:
    """Exact null CDF of the Mann-Whitney U statistic (no ties), or None if too large.

    The counts of arrangements with ``U = u`` are the coefficients of the Gaussian
    binomial ``[m+n choose m]_q = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i)``; each
    factor is applied as a shift-subtract and a strided cumulative sum.
    """
    if m + n > 300:
        return None
    size = m * n + 1
    f = np.zeros(size)
    f[0] = 1.0
    for i in range(1, m + 1):
        shift = n + i
        if shift < size:
            f[shift:] -= f[:-shift].copy()
        pad = (-size) % i
        g = np.concatenate([f, np.zeros(pad)]).reshape(-1, i)
        f = np.cumsum(g, axis=0).reshape(-1)[:size]
    f = np.clip(f, 0.0, None)
    return np.cumsum(f) / f.sum()


def _hodges_lehmann(x: np.ndarray, y: np.ndarray, alpha: float):
    """Hodges-Lehmann shift of ``y`` over ``x`` and its distribution-free interval.

    The interval is ``[D_(k), D_(mn+1-k)]`` over the sorted pairwise differences
    ``D = y_j - x_i``, with ``k`` the largest integer such that ``P(U <= k-1) <= alpha/2``
    under the null (exact for ``m + n <= 300``, normal approximation beyond).
    Returns ``(shift, low, high)``; low/high are infinite when the samples are too
    small for the requested level.
    """
    m, n = x.size, y.size
    d = np.sort((y[None, :] - x[:, None]).ravel())
    shift = float(np.median(d))
    cdf = _mwu_null_cdf(m, n)
    if cdf is not None:
        k = int(np.searchsorted(cdf, alpha / 2, side="right"))  # number of u with P(U <= u) <= alpha/2
    else:
        z = float(special.ndtri(1 - alpha / 2))
        k = int(math.floor(m * n / 2 - z * math.sqrt(m * n * (m + n + 1) / 12.0)))
    if k < 1:
        return shift, -math.inf, math.inf
    return shift, float(d[k - 1]), float(d[m * n - k])


def compare_unpaired(base, head, min_effect=0.05, alpha=0.01) -> Verdict:
    """Compare independent samples, e.g. two result files measured at different times.

    A two-sided Mann-Whitney U test (scipy) on log times; the ratio is
    ``exp`` of the Hodges-Lehmann shift (median of all pairwise log differences),
    with the matching distribution-free ``1 - alpha`` interval. Rank-based, so one
    stray slow process does not decide the outcome. Drift between the two
    measurement sessions is indistinguishable from a real change: prefer
    :func:`compare_paired` for gating.

    Parameters
    ----------
    base, head : sequence of float
        Positive times; NaN entries are dropped. Lengths may differ.
    min_effect : float
        Smallest relative change that counts.
    alpha : float
        Two-sided significance level.

    Returns
    -------
    Verdict
        Method ``"mann-whitney-hl"``.

    Raises
    ------
    ValueError
        On zero, negative or infinite times.
    """
    from scipy import stats  # here: scipy.stats takes 0.5 s to import, and most commands never compare unpaired

    _check_level(alpha, min_effect)
    b = _timings(base, "base")
    h = _timings(head, "head")
    nb, nh = int(b.size), int(h.size)
    method = "mann-whitney-hl"
    if nb < 2 or nh < 2:
        nan = math.nan
        ratio = float(np.exp(np.median(np.log(h)) - np.median(np.log(b)))) if nb and nh else nan
        return Verdict("inconclusive", ratio, nan, nan, nan, nb, nh, method,
                       f"{nb} base and {nh} head sample(s); an unpaired comparison needs at least 2 of each")
    lb, lh = np.log(b), np.log(h)
    shift, lo, hi = _hodges_lehmann(lb, lh, alpha)
    bound = math.log1p(min_effect)
    if np.ptp(np.concatenate([lb, lh])) == 0:
        p = 1.0  # all samples identical: scipy would divide by a zero variance
        tost_p = 0.0
    else:
        p = float(stats.mannwhitneyu(lh, lb, alternative="two-sided").pvalue)
        # Two one-sided rank tests of the shifted samples: head at least m faster, at least m slower.
        tost_p = max(float(stats.mannwhitneyu(lh + bound, lb, alternative="greater").pvalue),
                     float(stats.mannwhitneyu(lh - bound, lb, alternative="less").pvalue))
    _, eq_lo, eq_hi = _hodges_lehmann(lb, lh, 2 * alpha) if alpha < 0.5 else (0.0, -math.inf, math.inf)
    ratio, ci_low, ci_high = _exp(shift), _exp(lo), _exp(hi)
    eq_low, eq_high = _exp(eq_lo), _exp(eq_hi)
    verdict, reason = decide(ratio, ci_low, ci_high, p, min_effect, alpha, eq_low, eq_high, tost_p)
    is_eq = verdict == "unchanged" and equivalent(ci_low, ci_high, min_effect, alpha, eq_low, eq_high, tost_p)
    if not (math.isfinite(ci_low) and math.isfinite(ci_high)) and not is_eq:
        verdict = "inconclusive"
        reason = (f"{nb} base and {nh} head samples are too few for a {_level(1 - alpha)} rank interval "
                  f"(ratio {fmt.factor(ratio)}, p={_fmt_p(p)}); more samples would help")
    detect = detect_high = math.nan
    if verdict == "inconclusive":
        # The rank test's power is about the t-test's (efficiency 0.95 for normal data): a two-sample t with the
        # pooled SD of the log times, as a paired one of 2 m n / (m + n) pairs of SD sqrt(2) times it.
        pooled = math.sqrt(((nb - 1) * float(np.var(lb, ddof=1)) + (nh - 1) * float(np.var(lh, ddof=1)))
                           / (nb + nh - 2))
        pairs = max(2, int(2 * nb * nh / (nb + nh)))
        detect, detect_high = detectable_effect(pooled * math.sqrt(2), pairs, alpha, min_effect)
        if math.isfinite(detect):
            upper = (f" ({fmt.percent(detect_high)} at the upper end of its noise's 95 % interval)"
                     if math.isfinite(detect_high) else "")
            reason += (f"; at the log-time SD {pooled:.3g} of these {nb} + {nh} samples this comparison could detect "
                       f"a slowdown of about {fmt.percent(detect)} with 95 % power{upper}: a smaller one may have "
                       "passed unseen")
    return Verdict(verdict, ratio, ci_low, ci_high, p, nb, nh, method, reason, min_effect, eq_low, eq_high,
                   tost_p, is_eq, detect, detect_high)


def compare_segments(before, after, min_effect=0.05, alpha=0.01) -> Verdict:
    """Did a history's level change between two stretches of commits, given every sample?

    The trend report proposes a step where the commits' medians move; whether the
    samples behind them moved is decided here. Each stretch is a list of commits and
    each commit a sequence of positive samples (one sample: the commit kept only its
    median). Why the commit is the unit: history is recorded commit by commit, minutes
    or days apart, so the machine's drift moves all samples of one commit together;
    pooling samples across commits would count that drift as signal.

    * Per commit, the mean of its log samples. The between-commit variance is pooled
      over both stretches (``k_b + k_a - 2`` degrees of freedom): the machine drifts alike
      before and after a code change, and a step is tested as soon as two commits follow
      it. (Welch's per-stretch variance left a two-commit stretch one degree of freedom,
      so a newly landed 10 % step of a metric that hardly drifts, such as the first
      gradient's CPU time, could not be told from noise until many more commits came.)
    * Per stretch, the variance of its mean is the larger of that pooled variance and
      what the pooled within-commit variance alone implies (``s_w² / n_i``): commits that
      agree by luck are never trusted more than their samples allow.
    * A t-test on the two stretches' means, with the ``1 - alpha`` interval of the
      ratio ``exp(mean_after - mean_before)``.
    * When both stretches hold commits with several samples, a Mann-Whitney test on
      the pooled log samples too; the larger p-value counts (both must agree).

    The verdict follows :func:`decide` (``regressed``: after is slower). Fewer than two
    commits on a side: inconclusive.
    """
    from scipy import stats  # here: scipy.stats takes 0.5 s to import, and most commands never compare unpaired

    _check_level(alpha, min_effect)
    sides = []
    for what, stretch in (("before", before), ("after", after)):
        # One pass over all samples of a stretch (a long history has thousands of commits).
        sizes = np.fromiter((len(c) for c in stretch), dtype=np.int64, count=len(stretch))
        flat = np.log(_timings(np.concatenate([np.asarray(c, dtype=float) for c in stretch])
                               if len(stretch) else np.array([]), what)) if sizes.sum() else np.array([])
        sizes = sizes[sizes > 0]
        starts = np.r_[0, np.cumsum(sizes)[:-1]].astype(np.int64)
        means = np.add.reduceat(flat, starts) / sizes if len(sizes) else np.array([])
        ss = np.add.reduceat((flat - np.repeat(means, sizes)) ** 2, starts) if len(sizes) else np.array([])
        sides.append((sizes, means, ss, flat))
    (kb, mb, ssb, pb), (ka, ma, ssa, pa) = sides
    n_b, n_a = int(kb.sum()), int(ka.sum())
    method = "commit-t"
    nan = math.nan
    if len(mb) < 2 or len(ma) < 2:
        return Verdict("inconclusive", nan, nan, nan, nan, n_b, n_a, method,
                       f"{len(mb)} and {len(ma)} commit(s); a step needs at least 2 commits on each side")
    dof_w = int((kb - 1).sum() + (ka - 1).sum())
    s2w = float(ssb.sum() + ssa.sum()) / dof_w if dof_w else 0.0

    df = len(mb) + len(ma) - 2
    s2b = float(((mb - mb.mean()) ** 2).sum() + ((ma - ma.mean()) ** 2).sum()) / df

    def mean_var(means, sizes):
        floor = s2w * float(np.mean(1.0 / sizes))
        return max(s2b, floor) / len(means)

    vb, va = mean_var(mb, kb), mean_var(ma, ka)
    diff = float(ma.mean() - mb.mean())
    se = math.sqrt(vb + va)
    if se == 0:
        p, tcrit = (0.0 if diff else 1.0), 0.0
    else:
        p = float(2 * stats.t.sf(abs(diff) / se, df))
        tcrit = float(stats.t.ppf(1 - alpha / 2, df))
    ratio, ci_low, ci_high = _exp(diff), _exp(diff - tcrit * se), _exp(diff + tcrit * se)
    if (kb > 1).any() and (ka > 1).any():
        if np.ptp(np.concatenate([pb, pa])) > 0:  # identical samples everywhere: nothing to rank
            p = max(p, float(stats.mannwhitneyu(pa, pb, alternative="two-sided").pvalue))
        method = "commit-t + mann-whitney"
    verdict, reason = decide(ratio, ci_low, ci_high, p, min_effect, alpha)
    reason = f"{len(mb)} commit(s), {n_b} sample(s) before; {len(ma)} commit(s), {n_a} after: {reason}"
    return Verdict(verdict, ratio, ci_low, ci_high, p, n_b, n_a, method, reason)
