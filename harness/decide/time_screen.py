"""Short when settled: how many timing pairs a case gets once its counts settled it.

Why: a comment-only pull request of a small jax library cost 90-180 s, and most of it was timing
pairs that could only confirm what the counts had settled: the instructions tier showed the build
and the first gradient unchanged in one process a side, and the time tier still screened the import
and the whole process in one look at ``--min-pairs`` (5) pairs, because no count covers them.

What no count covers is what the counts can miss: an uncounted subprocess, a ``time.sleep``, a
large import-time cost outside the counted window. Such a slowdown is gross, so a short look finds
it. The rule (:func:`short_applies`, :func:`judge`):

1. When a count covered every guarded timing that a count can cover (:func:`short_applies`: what
   is left is only the import and the whole process, ``Metric.counted_by`` None), the time tier
   takes :data:`SHORT_PAIRS` pairs, the structural tier's first pair included: one more pair.
2. If any of those pairs' heads is slower than its base by more than :data:`SLOWDOWN` on any
   screened timing, or a pair lacks one (a failed process), the screen **escalates**: a sequential
   test of the screened timings with two looks, at ``--min-pairs`` pairs and at :func:`escalated_pairs`
   (three times as many), alpha split evenly (:func:`escalated_looks`; the short screen's pairs
   counted). It used to be one look at ``--min-pairs`` pairs, which missed +0.4 s at the import of
   a Haiku and of a torch library in one run of each (2026-12-06; their imports took 1.1-2.3 s, and
   one commit's imports varied by up to 25 %): a pair that looked slow is worth the pairs that show
   whether it is. A slowdown beyond the threshold
   is tested at least as well as before, and one inside it that the full screen could have found is
   one the two pairs both had to hide.
3. Otherwise the case keeps the count tier's verdict, and the screen says so, with the pairs' ratios.

A phase whose count was evidence only (a small phase that moved) still gets the full screen at once:
there a count could have covered it and did not.

Pure: numbers in, a :class:`~ttfg.results.gate_outcome.Screen` out; ``gate_loop.py`` acts on it.
"""

from __future__ import annotations

import math

from .. import fmt, metrics
from ..results.gate_outcome import Screen

__all__ = ["ESCALATED_FACTOR", "SHORT_PAIRS", "SLOWDOWN", "escalated_looks", "escalated_pairs", "full", "judge", "short_applies"]

#: Pairs a short screen looks at, the structural tier's first pair included (so it costs one more pair). Two
#: because one pair alone may hide a slowdown behind one unlucky process, and with a second chance a slowdown
#: is missed only when both pairs hide it (the probability of a miss is squared).
SHORT_PAIRS = 2

#: One pair's head slower than its base by more than this, on a screened timing, escalates (+10 %). Derived
#: from the smallest slowdown the short screen must not lose, +0.4 s on a 2 s import (+20 %; a jax or Flax
#: import is 1.2-2.2 s, docs/measurements.md): the threshold sits half way, so an A/A pair crosses it as
#: rarely as a +20 % pair falls under it, and two pairs both have to fall under it to miss (the square of
#: that). Relative, so a machine's speed cancels; its noise only moves how often a comment-only change
#: escalates (it costs time, never a verdict). Measured on the 2-core VM at load 7-9 (a Flax library whose
#: import took 3-5 s there, 2026-12-06): 2 of 7 A/A pairs crossed it (import 1.52x and 1.66x, in one gate, which
#: would have escalated to the 5 pairs it took before); the +0.4 s sleep crossed it in its first pair (1.17x).
SLOWDOWN = 0.10


#: An escalated screen looks up to this many times ``--min-pairs`` pairs (within ``--max-pairs`` and the budget).
ESCALATED_FACTOR = 3


def escalated_pairs(min_pairs: int, max_pairs: int) -> int:
    """The most pairs an escalated screen takes: :data:`ESCALATED_FACTOR` times ``min_pairs``, at most
    ``max_pairs``."""
    return max(min_pairs, min(max_pairs, ESCALATED_FACTOR * min_pairs))


def escalated_looks(min_pairs: int, most: int) -> dict:
    """The escalated screen's two looks: at ``min_pairs`` pairs (where the one look used to be) and at ``most``,
    alpha split evenly between them (the test's ``look_every`` and ``interim_share``), so a gross slowdown still
    ends the screen at ``min_pairs`` pairs and a smaller one gets three times the pairs."""
    if most <= min_pairs:
        return {}
    return {"look_every": most - min_pairs, "interim_share": 0.5}


def short_applies(rest: tuple[str, ...]) -> bool:
    """Whether the short screen may stand for the full one: every timing left to screen is one no count can cover
    (the import, the whole process), so a count covered every guarded timing that a count can."""
    return bool(rest) and all(metrics.get(m).counted_by is None for m in rest)


def _ratios(base: list[float], head: list[float]) -> list[float]:
    return [h / b if b > 0 else math.inf for b, h in zip(base, head)]


def judge(pairs: dict[str, tuple[list[float], list[float]]], attempted: int, threshold: float = SLOWDOWN,
          short_pairs: int = SHORT_PAIRS) -> Screen:
    """The short screen's call after ``attempted`` pairs: ``pairs`` holds each screened timing's complete pairs
    (base values, head values). Escalates when a pair is missing or any pair's head is slower than its base by
    more than ``threshold``.

    Parameters
    ----------
    pairs : dict
        Metric -> (base values, head values) of the complete pairs, in pair order.
    attempted : int
        Pairs attempted (a failed process leaves a pair incomplete).
    threshold : float
        The relative slowdown of one pair that escalates (:data:`SLOWDOWN`).
    short_pairs : int
        Pairs the short screen looks at (:data:`SHORT_PAIRS`).
    """
    names = list(pairs)
    label = lambda m: metrics.get(m).brief  # noqa: E731
    complete = min((len(b) for b, _ in pairs.values()), default=0)
    limit = f"+{fmt.percent(threshold)}"
    if complete < min(short_pairs, attempted) or complete == 0:
        short = [label(m) for m in names if len(pairs[m][0]) < short_pairs]
        return Screen(names, True, complete, True, threshold,
                      f"escalated: {', '.join(short)} missing from {attempted - complete} of {attempted} pair(s) "
                      f"(a failed or incomplete process): a sequential test of them decides")
    beyond, seen = [], []
    for m in names:
        ratios = _ratios(*pairs[m])[:short_pairs]
        seen.append(f"{label(m)} {', '.join(fmt.factor(r) for r in ratios)}")
        beyond += [f"{label(m)} {fmt.factor(r)} in pair {i + 1}" for i, r in enumerate(ratios) if r > 1 + threshold]
    shown = "; ".join(seen)
    if beyond:
        return Screen(names, True, min(complete, short_pairs), True, threshold,
                      f"escalated: {', '.join(beyond)}, beyond {limit} of its base ({shown}): a sequential test "
                      f"of them decides")
    return Screen(names, True, min(complete, short_pairs), False, threshold,
                  f"short screen, {min(complete, short_pairs)} pairs: no head slower than its base by more than "
                  f"{limit} ({shown}), so nothing gross that the counts could miss (an uncounted subprocess, a "
                  f"sleep, a large import cost)")


def full(rest: tuple[str, ...], pairs: int, why: str) -> Screen:
    """A screen that was full from the start (a count could have covered one of ``rest`` and did not)."""
    return Screen(list(rest), False, pairs, False, None, why)
