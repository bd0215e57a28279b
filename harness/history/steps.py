"""Step detection in a metric's history: where did a series jump, and by how much?

Why not ``asv.step_detect``: its Potts-model fit is pure Python and costs about 0.2 s
per 1000-point series (a 1000-commit x 50-case history has ~500 series: 100 s), and it
missed a 30 % step in 8 of 20 noisy 50-point series in our trials. This module fits a
piecewise-constant model to log values with a robust noise estimate instead, in a few
numpy passes per series, so the whole report's detection stays well under a second.

Model: a series is piecewise constant in ``log(value)`` plus noise. The cuts minimise
the squared error plus a BIC-like penalty per cut, growing with ``log n`` in units of the
series' noise variance (optimal partitioning). Then two sides' medians must differ by at
least ``min_change`` (relative), and every segment holds at least ``min_size`` points, so
one outlier is never a step. Every metric here is "lower is better", so an upward step
is a regression and a downward one an improvement.

Why optimal rather than binary segmentation (which this module used before): binary
segmentation judges the best single split of the whole series first, and a history that
rose and fell back (machine drift) before a real step at its tip has no single split
worth the penalty, so it stopped there and never looked inside. In a recorded history
of that shape (benchmarks/trend_false_alarms.py, run 3: a plateau 7 % up in the middle,
then a 10 % step in the newest 3 commits) it proposed 13 of 20 injected steps and the
optimal fit 19. The exact fit (PELT) costs about 23 ms per 1000-point series, too slow for
a 1000-commit report, so it runs over candidate cuts: those of binary segmentation at a
third of the penalty, each widened by ``min_size`` either side. On 30 two-step
1000-point series that gave the exact fit's cuts in 29, in 0.6 ms per series.

That is the proposal. For a timing, each commit counts with the faster half of its
samples (:func:`timing_levels`: interference only adds time), and levels moving is not
enough: :func:`test_steps` keeps a proposed step only when those samples on its two
sides differ significantly (``ttfg.decide.stats.compare_segments``: the commit is the
unit, so drift between recordings counts as noise, and the within-commit spread sets
the floor). Deterministic
metrics (counters, allocations, instructions) repeat exactly or within their registry
margin (at least twice their measured spread: :func:`min_change_for`), so for them the
margin alone decides; except where the registry says a framework does not repeat them
(:func:`unsteady`: jax's allocation counts, +7.4 % between identical processes), whose
steps are tested on the commits' values like a timing's and never counted outright.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from .. import metrics

#: Significance level of a timing step's test on its samples (two-sided). A step that passes is a
#: candidate, not a regression: ``ttfg regressions --confirm`` decides with the paired gate at
#: 0.01. In benchmarks/trend_false_alarms.py (20 A/A commits, 20 injected 10 % steps of the first
#: gradient's CPU time), 11 of the 20 steps were proposed at 0.01 and 17 at 0.05 (every one then
#: confirmed), with the same 6 candidates in the A/A commits and none confirmed (docs/measurements.md). That was
#: with every sample of a commit counted; with the faster half (:func:`timing_levels`) runs 1 and 2
#: propose all 20 at either level, and their A/A histories the same candidates (8 and 4).
STEP_ALPHA = 0.05

#: Smallest relative change reported for a timing, by default: timings are noisy (CV
#: 10-25 % per cold sample). Deterministic metrics use their registry threshold (1 %).
DEFAULT_MIN_CHANGE = metrics.get("first_grad_s").threshold
#: Multiplier of ``log n`` in the cut penalty (in units of noise variance). Measured
#: false-step rate per series on 12 % Gaussian noise (2000 series each; 500 at n = 200):
#: 9 % at n = 10, 5 % at n = 20, 3 % at n = 50, 0.2 % at n = 200; a 30 % step in the middle
#: is found within 3 commits 74 % / 93 % / 98 % / 98 % of the time (binary segmentation: the same).
PENALTY = 3.0
#: Most cuts binary segmentation proposes as candidates for the optimal fit (before widening).
MAX_CANDIDATES = 60


@dataclass(frozen=True)
class Step:
    """A level change between ``index - 1`` and ``index`` of the (NaN-free) input positions."""

    index: int       # position in the input array of the first value after the step
    before: float    # median of the segment before
    after: float     # median of the segment after

    @property
    def change(self) -> float:
        """Relative change, ``after / before - 1`` (positive: got bigger, i.e. worse)."""
        return self.after / self.before - 1 if self.before else math.inf

    @property
    def regression(self) -> bool:
        return self.after > self.before


def _noise(x: np.ndarray) -> float:
    """Noise SD from the mean absolute first difference.

    Differences cancel the level, so a few steps inflate the estimate only by
    ``step / n``. The mean (not the median) of ``|diff|`` is used because timing noise
    is heavy-tailed: a median-based scale underestimates it and doubled the false-step
    rate on t(3) noise in our trials.
    """
    if len(x) < 3:
        return 0.0
    return float(np.mean(np.abs(np.diff(x)))) * math.sqrt(math.pi) / 2


def _best_split(x: np.ndarray, min_size: int) -> tuple[int, float]:
    """Split index (left size) maximising the between-segment sum of squares, and that gain."""
    n = len(x)
    cs = np.cumsum(x)
    k = np.arange(min_size, n - min_size + 1)
    left = cs[k - 1] / k
    right = (cs[-1] - cs[k - 1]) / (n - k)
    gain = k * (n - k) / n * (left - right) ** 2
    i = int(np.argmax(gain))
    return int(k[i]), float(gain[i])


def _candidate_cuts(x: np.ndarray, threshold: float, min_size: int) -> list[int]:
    """Binary segmentation's cuts down to ``threshold``, each widened by ``min_size`` either side."""
    n = len(x)
    cuts: list[int] = []
    todo = [(0, n)]
    while todo and len(cuts) < MAX_CANDIDATES:
        lo, hi = todo.pop()
        if hi - lo < 2 * min_size:
            continue
        k, gain = _best_split(x[lo:hi], min_size)
        if gain <= threshold:
            continue
        cuts.append(lo + k)
        todo += [(lo, lo + k), (lo + k, hi)]
    return sorted({c + d for c in cuts for d in range(-min_size, min_size + 1) if min_size <= c + d <= n - min_size})


def _optimal_cuts(x: np.ndarray, candidates: list[int], penalty: float, min_size: int) -> list[int]:
    """The subset of ``candidates`` minimising squared error + ``penalty`` per cut (dynamic programming)."""
    n = len(x)
    at = np.array([0, *candidates, n])
    s1 = np.concatenate([[0.0], np.cumsum(x)])
    s2 = np.concatenate([[0.0], np.cumsum(x * x)])
    best = np.full(len(at), np.inf)
    best[0] = -penalty
    back = np.zeros(len(at), dtype=int)
    for j in range(1, len(at)):
        a, b = at[:j], at[j]
        size = b - a
        total = best[:j] + s2[b] - s2[a] - (s1[b] - s1[a]) ** 2 / size + penalty
        total[size < min_size] = np.inf
        back[j] = int(np.argmin(total))
        best[j] = total[back[j]]
    cuts, j = [], len(at) - 1
    while (j := back[j]) > 0:
        cuts.append(int(at[j]))
    return cuts[::-1]


def detect_steps(values, min_change: float = DEFAULT_MIN_CHANGE, min_size: int = 2,
                 penalty: float = PENALTY) -> list[Step]:
    """Steps in ``values`` (in order; NaN or None = missing), earliest first."""
    y = np.asarray([np.nan if v is None else v for v in values], dtype=float)
    where = np.flatnonzero(np.isfinite(y))
    y = y[where]
    n = len(y)
    if n < 2 * min_size:
        return []
    positive = bool(np.all(y > 0))
    scale = float(np.median(np.abs(y))) or 1.0
    x = np.log(y) if positive else y / scale
    sigma = max(_noise(x), 1e-4)
    cost = penalty * math.log(max(n, 3)) * sigma ** 2
    candidates = _candidate_cuts(x, cost / 3, min_size)
    cuts = _optimal_cuts(x, candidates, cost, min_size) if candidates else []
    cuts = _drop_blips(y, cuts, min_change, max_len=max(min_size, 2))
    cuts = _merge_small(y, cuts, min_change)
    medians = _medians(y, cuts)
    return [Step(int(where[c]), medians[i], medians[i + 1]) for i, c in enumerate(cuts)]


def _medians(y: np.ndarray, cuts: list[int]) -> list[float]:
    bounds = [0, *cuts, len(y)]
    return [float(np.median(y[a:b])) for a, b in zip(bounds[:-1], bounds[1:])]


def _drop_blips(y: np.ndarray, cuts: list[int], min_change: float, max_len: int) -> list[int]:
    """Remove short interior excursions that come back to where they left.

    An outlier next to a normal point forms a two-point segment and would read as a
    step up and a step down; if the levels on both sides agree, nothing changed.
    A short segment at the end stays: it is the newest commits' change.
    """
    changed = True
    while changed and len(cuts) >= 2:
        changed = False
        med = _medians(y, cuts)
        bounds = [0, *cuts, len(y)]
        for i in range(1, len(med) - 1):
            short = bounds[i + 1] - bounds[i] <= max_len
            if short and med[i - 1] and abs(med[i + 1] / med[i - 1] - 1) < min_change:
                del cuts[i - 1:i + 1]
                changed = True
                break
    return cuts


def _merge_small(y: np.ndarray, cuts: list[int], min_change: float) -> list[int]:
    """Drop cuts whose neighbouring segment medians differ by less than ``min_change``."""
    while cuts:
        med = _medians(y, cuts)
        rel = [abs(b / a - 1) if a else math.inf for a, b in zip(med[:-1], med[1:])]
        worst = int(np.argmin(rel))
        if rel[worst] >= min_change:
            break
        del cuts[worst]
    return cuts


def faster_half(samples) -> np.ndarray:
    """The faster half of one commit's samples (all of them when there are one or two).

    Interference only ever adds time: another job on the runner, a cold cache, a
    slower core. Its share of a commit's samples varies from commit to commit, so
    the slow samples carry the machine's state rather than the code's. Measured in
    benchmarks/trend_false_alarms.py on this VM's first-gradient CPU time (5 samples
    per commit, load 2.5-6.9): commits of identical code read 21 ms and 27 ms, and
    within one commit samples split 22.7, 23.0 | 26.6, 27.5, 28.4. With each commit
    counted by its faster half, 20 of 20 injected 10 % steps passed the sample test
    (17 with all samples), and the A/A history gave 2 candidates either way.
    ``timeit``'s advice is the same reasoning taken to the extreme (the minimum); a
    single sample per commit lost the within-commit spread and found 7 of 20.
    """
    x = np.asarray(samples, dtype=float)
    x = np.sort(x[np.isfinite(x)])  # a sample that failed (NaN) is no measurement of the code
    return x[:int(_kept(len(x)))]


def _kept(finite):
    """How many of a commit's ``finite`` good samples count (a count or an array of them)."""
    return np.minimum(finite, np.maximum(2, (finite + 1) // 2))


def timing_levels(values, samples) -> tuple[np.ndarray, list]:
    """Each commit's level for step detection, and the faster-half samples behind it.

    The level is the geometric mean of the faster half: the statistic the sample test
    (``compare_segments``: per commit, the mean log sample) uses, so a step is placed
    where it is then tested. Their median put a 10 % step one commit early in 2 of 20
    trials of a second recorded run of that benchmark (the last identical commit read
    5 % high); the geometric mean placed all 40 steps of both runs, and in simulation
    (``tests/test_trends.py``'s interference) found a few fewer than the median (105
    against 119 of 150; every sample: 39). A third run, recorded after this rule was
    fixed, found 13 of 20 (every sample: 12): the identical commits' CPU time rose 7 % under
    load and came back, which hid the step from binary segmentation, the detector then; the
    optimal fit (:func:`detect_steps`) proposes 19 of them from the same samples (docs/measurements.md).
    ``values[i]`` stands where ``samples[i]`` is None, empty or all failed (only the
    median was kept).
    """
    values = np.asarray(values, dtype=float)
    sizes = np.array([len(c) if c is not None else 0 for c in samples], dtype=int)
    # One matrix for the whole series (a 1000-commit series in one pass, not 1000 small sorts):
    # failed samples sort last as +inf and are not counted.
    grid = np.full((len(sizes), max(int(sizes.max(initial=0)), 1)), np.inf)
    if sizes.any():
        flat = np.array(list(itertools.chain.from_iterable(c for c in samples if c is not None)), dtype=float)
        row = np.repeat(np.arange(len(sizes)), sizes)
        column = np.arange(len(flat)) - np.repeat(np.cumsum(sizes) - sizes, sizes)  # position within its commit
        grid[row, column] = flat
    grid[~np.isfinite(grid)] = np.inf
    grid.sort(axis=1)
    finite = np.isfinite(grid).sum(axis=1)
    keep = _kept(finite)
    inside = np.arange(grid.shape[1]) < keep[:, None]
    positive = np.all(~inside | (grid > 0), axis=1)
    logs = np.log(np.where(inside & (grid > 0), grid, 1.0))
    levels = np.where(keep > 0, np.exp(logs.sum(axis=1) / np.maximum(keep, 1)), values)
    for i in np.flatnonzero((keep > 0) & ~positive):  # not a timing (no logs); the sample test refuses it anyway
        levels[i] = float(np.median(grid[i, :keep[i]]))
    return levels, [grid[i, :k] if k else None for i, k in enumerate(keep.tolist())]


def test_steps(steps: list[Step], values: np.ndarray, samples, min_change: float = DEFAULT_MIN_CHANGE,
               alpha: float = STEP_ALPHA):
    """Keep the steps whose samples differ significantly; ``[(step, verdict)]`` and the dropped ones.

    ``values`` are the series' finite values (the medians the steps were found in) and
    ``samples[i]`` the samples behind ``values[i]`` (None: the median alone). Each step is
    tested on the commits between its neighbouring steps; when one is dropped its
    neighbours' stretches grow, so the rest are tested again until none is dropped.
    """
    from ..decide.stats import compare_segments

    kept = list(steps)
    dropped: list[tuple[Step, object]] = []
    commits = [np.asarray(s, dtype=float) if s is not None and len(s) else np.asarray([v], dtype=float)
               for s, v in zip(samples, values)]
    while True:
        bounds = [0, *(st.index for st in kept), len(values)]
        tested = []
        for i, st in enumerate(kept):
            verdict = compare_segments(commits[bounds[i]:bounds[i + 1]], commits[bounds[i + 1]:bounds[i + 2]],
                                       min_effect=min_change, alpha=alpha)
            tested.append((st, verdict))
        bad = [(st, v) for st, v in tested if v.verdict not in ("regressed", "improved")
               or (v.verdict == "regressed") != st.regression]
        if not bad:
            return tested, dropped
        # Drop the weakest first: its neighbours' stretches change, so the others are tested again.
        worst = max(bad, key=lambda sv: (sv[1].p_value if sv[1].p_value == sv[1].p_value else 2.0))
        dropped.append(worst)
        kept = [st for st in kept if st is not worst[0]]
        if not kept:
            return [], dropped


def min_change_for(metric: str, default: float = DEFAULT_MIN_CHANGE) -> float:
    """``default`` (the report's ``--threshold``) for timings; deterministic metrics
    (counters, allocations, instructions) get their registry threshold when it is tighter,
    but never less than twice the spread measured between cold processes of the same code
    (``Metric.spread``: allocation counts 1.2 %, instructions up to 1.2 % per phase), since a
    step within it is what a rerun of the same commit gives."""
    info = metrics.get(metric) if metric in metrics.METRICS or metrics.is_counter(metric) else None
    if info is not None and info.deterministic:
        return max(min(default, info.threshold), 2 * info.spread if info.spread else 0.0)
    return default


def unsteady(metric: str, backend: str, runs_on: "frozenset[str] | None" = None) -> str | None:
    """Why ``metric``, deterministic in the registry, does not repeat between processes of
    ``backend``'s framework (``Metric.unsteady``: jax's allocation counts), or None.

    ``runs_on``: the native runtimes the series' processes were measured to load (``results/runtimes.py``,
    :func:`measured_runs_on`); only where no results file carries that record (asv history, older files) is it
    what the backend declares. Such a count is no exact measurement: one process per commit may differ from the
    next by more than any margin, so its steps are tested on the commits' values like a timing's.
    """
    info = metrics.get(metric) if metric in metrics.METRICS or metrics.is_counter(metric) else None
    if info is None or not info.deterministic or not info.unsteady:
        return None
    if runs_on is not None:
        return info.unsteady_for(runs_on)
    from .. import engines

    # A backend this installation does not know: its name starts with its framework (jax.jit -> jax -> jaxlib).
    found = engines.runs_on(backend) or {backend.split(".", 1)[0], *(("jaxlib",) if backend.startswith("jax.") else ())}
    return info.unsteady_for(found)


def shown_unsteady(metric: str, samples, min_change: float) -> str | None:
    """Why a count that the registry calls deterministic did not repeat in this series, measured: the widest
    relative spread between processes of one commit (``samples``: each commit's values, or None), when it exceeds
    ``min_change``; None when no commit has two samples or every one repeats within it.

    The registry's word that a count repeats is a prior; a commit whose processes disagree by more than a step
    the series would report is evidence against it (a plugin whose framework's allocations vary, whatever it
    declares), and its steps are then tested like a timing's.
    """
    info = metrics.get(metric) if metric in metrics.METRICS or metrics.is_counter(metric) else None
    if info is None or not info.deterministic:
        return None
    widest = None
    for i, values in enumerate(samples):
        if values is None or len(values) < 2:
            continue
        vals = [float(v) for v in values if v == v]
        if len(vals) < 2 or min(vals) <= 0:
            continue
        spread = max(vals) / min(vals) - 1
        if widest is None or spread > widest[0]:
            widest = (spread, i, len(vals))
    if widest is None or widest[0] <= min_change:
        return None
    return (f"its {widest[2]} processes of one commit differed by {widest[0]:.1%}, more than the "
            f"{min_change:.1%} a step needs")


def measured_runs_on(runs) -> dict[str, frozenset[str]]:
    """Case id -> the native runtimes its cold samples' processes loaded, over every results file in ``runs``
    (``results/runtimes.py``); a case no sample of which carries the record is left out (its backend's
    declared modules stand in, :func:`unsteady`)."""
    from ..results.runtimes import merged

    found: dict[str, list] = {}
    for res in runs:
        for case in res.cases:
            records = [s.runtimes for s in case.samples if getattr(s, "runtimes", None) is not None]
            if records:
                found.setdefault(case.id, []).extend(records)
    out = {}
    for case_id, records in found.items():
        record = merged(records)
        if record is not None:
            out[case_id] = record.names
    return out


__all__ = ["DEFAULT_MIN_CHANGE", "STEP_ALPHA", "Step", "detect_steps", "faster_half", "min_change_for", "test_steps",
           "measured_runs_on", "shown_unsteady", "timing_levels", "unsteady"]
