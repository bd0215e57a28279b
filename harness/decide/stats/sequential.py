"""The sequential paired test of the gate: looks after every pair, alpha spent by the union bound."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from scipy import special

from .paired import _paired_verdict
from .verdicts import Verdict, _check_level, _check_timings


class SequentialPairedTest:
    """The gate's test: pairs arrive one at a time; after each look decide whether to stop.

    Looks happen at ``min_pairs, min_pairs + look_every, ...`` and always at
    ``max_pairs``. Each look runs the paired t-test on ``log(head/base)`` at its own
    nominal level and applies :func:`decide`. The levels follow a Haybittle-Peto
    style split justified by the Bonferroni bound: the interim looks share
    ``interim_share * alpha`` equally, the final look gets
    ``(1 - interim_share) * alpha``. The per-look levels sum to ``alpha``, so the
    probability that any look declares a false significant change is at most
    ``alpha`` (and a false "regressed" at most ``alpha / 2``), for any look schedule.
    Interim looks are strict (they stop for gross regressions and clear
    improvements, or for equivalence shown at that strict level); the final look
    is almost as powerful as a fixed-size test of ``max_pairs`` pairs.

    The bound assumes independent pairs: A B B A interleaving leaves only the
    drift between a pair's two samples in each log ratio, and a random-walk
    drift's steps are independent.

    A look with a verdict other than "inconclusive" is final: :meth:`done` turns
    True and further :meth:`add` calls raise. At ``max_pairs`` the verdict is final
    whatever it is. Each look's "unchanged (within +/-m)" comes from two one-sided
    tests at that look's level. Under no change, how often the test can say so
    depends on the noise (simulated with :func:`simulate_pairs`, 400 trials, 60 pairs,
    5 %): at a paired SD of 0.144 only about 16 % of A/A runs end "unchanged" and the
    rest "inconclusive", each stating the slowdown it could have detected; at 0.085
    about 96 % end "unchanged". At a true 5 % change, "unchanged (within +/-5 %)" came
    out in 0.6 % and 0.8 % of 1000 runs (the bound is alpha = 1 %).

    Parameters
    ----------
    min_effect : float
        Smallest relative change that counts (0.05 = 5 %).
    alpha : float
        Overall two-sided significance level across all looks.
    min_pairs : int
        Pairs before the first look (at least 2).
    max_pairs : int
        The budget: the last look. 60 pairs give about 98 % power for a 10 % shift
        at a paired log-ratio SD of 0.15.
    look_every : int
        Pairs between looks.
    interim_share : float
        Fraction of ``alpha`` spent on interim looks (0 means: only the final look
        can declare significance; early stops for equivalence remain).
    """

    method = "sequential-paired-t-log"

    def __init__(self, min_effect=0.05, alpha=0.01, min_pairs=5, max_pairs=60, look_every=1, interim_share=0.1):
        _check_level(alpha, min_effect)
        if int(min_pairs) != min_pairs or min_pairs < 2:
            raise ValueError(f"min_pairs must be an integer >= 2, got {min_pairs!r}")
        if int(max_pairs) != max_pairs or max_pairs < min_pairs:
            raise ValueError(f"max_pairs must be an integer >= min_pairs ({min_pairs}), got {max_pairs!r}")
        if int(look_every) != look_every or look_every < 1:
            raise ValueError(f"look_every must be an integer >= 1, got {look_every!r}")
        if not 0 <= interim_share < 1:
            raise ValueError(f"interim_share must be in [0, 1), got {interim_share!r}")
        self.min_effect, self.alpha = float(min_effect), float(alpha)
        self.min_pairs, self.max_pairs, self.look_every = int(min_pairs), int(max_pairs), int(look_every)
        self.interim_share = float(interim_share)
        interim = list(range(self.min_pairs, self.max_pairs, self.look_every))
        #: pair counts at which looks happen, and each look's nominal two-sided level
        self.looks: tuple[int, ...] = (*interim, self.max_pairs)
        if interim:
            a_interim = self.alpha * self.interim_share / len(interim)
            levels = [a_interim] * len(interim) + [self.alpha * (1 - self.interim_share)]
        else:
            levels = [self.alpha]
        self.look_alphas: tuple[float, ...] = tuple(levels)
        dfs = np.asarray(self.looks, dtype=float) - 1
        self._tcrit = special.stdtrit(dfs, 1.0 - np.asarray(levels) / 2)
        self._tcrit_eq = special.stdtrit(dfs, 1.0 - np.asarray(levels))  # each look's TOST
        self._look_index = {n: i for i, n in enumerate(self.looks)}
        # Welford running mean / sum of squares of the log ratios.
        self._n, self._mean, self._m2 = 0, 0.0, 0.0
        self.n_dropped = 0
        self._verdict: Verdict | None = None
        self._final = False

    @property
    def n(self) -> int:
        """Complete pairs added so far."""
        return self._n

    def add(self, base: float, head: float) -> None:
        """Add one pair, measured close in time.

        A pair with NaN on either side (a failed run) is dropped and does not count
        towards the looks or ``max_pairs``; callers bound their own retries.

        Raises
        ------
        RuntimeError
            When the verdict is already final (:meth:`done`).
        ValueError
            On zero, negative or infinite times.
        """
        if self._final:
            raise RuntimeError(f"the sequential test is done after {self._n} pairs; its verdict is final")
        b, h = float(base), float(head)
        _check_timings(np.array([b, h]), "pair")
        if math.isnan(b) or math.isnan(h):
            self.n_dropped += 1
            return
        x = math.log(h) - math.log(b)
        self._n += 1
        delta = x - self._mean
        self._mean += delta / self._n
        self._m2 += delta * (x - self._mean)
        i = self._look_index.get(self._n)
        if i is not None:
            self._look(i)

    def _look(self, i: int) -> None:
        n = self._n
        a = self.look_alphas[i]
        sd = math.sqrt(self._m2 / (n - 1)) if n > 1 else math.nan
        last = i == len(self.looks) - 1
        v = _paired_verdict(n, self._mean, sd, self.min_effect, a, self.method, final=last,
                            tcrit=float(self._tcrit[i]), tcrit_eq=float(self._tcrit_eq[i]))
        where = f"look {i + 1} of {len(self.looks)}, {n} pairs, per-look alpha {a:.2g}"
        if v.verdict == "inconclusive" and last:
            reason = f"budget of {n} pairs spent ({where}): {v.reason}"
        else:
            reason = f"{where}: {v.reason}"
        self._verdict = replace(v, reason=reason)
        self._final = last or v.verdict != "inconclusive"

    def done(self) -> bool:
        """True when the verdict is final: a look decided, or ``max_pairs`` was reached."""
        return self._final

    def verdict(self) -> Verdict:
        """The verdict of the latest look (final once :meth:`done`).

        Before the first look it is "inconclusive" with the running estimate only.
        """
        if self._verdict is not None:
            return self._verdict
        nan = math.nan
        ratio = math.exp(self._mean) if self._n else nan
        return Verdict("inconclusive", ratio, nan, nan, nan, self._n, self._n, self.method,
                       f"{self._n} pair(s) so far; the first look is at {self.looks[0]} pairs")
