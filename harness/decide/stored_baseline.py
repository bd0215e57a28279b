"""A stored base count decides only after a fresh count of the head agrees with it: the check, and what it proves.

Why the head's fresh count and not a fresh count of the base: the store's point is to take no
base count at all, and the head is counted in any case. The issue's proof is "one fresh count
of the base agrees with the stored one within the case's margin"; the cheaper one here is
**the head's fresh count within half the margin of the stored base, on every count metric
of every stored kind** (``count_margins.judge`` says "unchanged"), and is equivalent for the
verdict:

* When it holds, the count tier would have settled "unchanged" on the stored base, and that
  is the only verdict a stored base is ever allowed to give. For that verdict to be wrong, the
  stored base must be off from what a fresh base count gives by about as much as the head
  truly moved, in the opposite direction, on every metric at once. A stored count filed under
  an exact key (same sources, environment, interpreter, ttfg, valgrind, CPU) that was edited or
  damaged is refused by its SHA-256 first; one the key failed to distinguish (a system library
  the environment's digest does not see) is off by what that change did to the base's code
  path, which has nothing to do with the change under test, so cancelling it exactly is a
  coincidence the per-metric check (the window and each phase) makes the more unlikely.
* When it does not hold (the head moved beyond half the margin, a regression or an improvement
  or the edge, or the store is off), the base is counted afresh and the case is decided exactly
  as without a store: the stored count takes no part in any regressed, improved or edge
  verdict.

So a store can never turn a regression into a pass by a count it alone holds; at worst it
costs one base count more than it saves, and the summary says why.

The gate's side of it (finding and keeping entries, naming their runs) is ``app/gate_baseline.py``;
this module is pure: samples and margins in, a verdict in words out.
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Callable, Protocol

from .. import fmt, metrics

if TYPE_CHECKING:
    from ..measure.cases import Case
    from ..results.model import Sample
    from .count_margins import Margin


class Baseline(Protocol):
    """What the count tier asks of the gate's stored baseline (``app/gate_baseline.GateBaseline``)."""

    def lookup(self, case: "Case", kinds: list[str], repeat: int) -> "dict[str, list[Sample]]":
        """The stored base samples of ``case``, per kind, for every index below ``repeat`` (a kind missing one index
        is left out); why any is missing is recorded, not raised."""

    def used(self, case: "Case", stored: "dict[str, list[Sample]]", agreed: str) -> None:
        """The stored samples decided (they are added to the base's results file)."""

    def counted(self, case: "Case", why: str) -> None:
        """The base was counted afresh, and why."""

    def keep(self, case: "Case", kind: str, index: int, sample: "Sample", role: str) -> None:
        """A fresh cold count of the ``role`` side, to keep for the next gate whose base it is."""

    def record(self, case_id: str) -> dict:
        """``gate.json``'s ``baseline`` of one case."""

    def first(self, case: "Case") -> "Sample | None":
        """The base's stored first timing process (its structural counters only, ``stored_first.py``), or None."""

    def first_used(self, case: "Case", agreed: str) -> None:
        """The stored first process stood in for the base's."""

    def keep_first(self, case: "Case", role: str, sample: "Sample") -> None:
        """A side's fresh first timing process, its structural counters kept for the next gate."""

    #: Adds a stored sample used to the base's results file (the gate sets it to the base writer's ``append``).
    append: "Callable[[str, Sample], None]"


def agreement(stored: "dict[str, list[Sample]]", head: "dict[str, list[Sample]]",
              margins: "dict[str, Margin]") -> tuple[bool, str]:
    """Whether the head's fresh counts agree with the stored base's within half of each margin on every count metric
    of the stored kinds, and in words: ``(True, "instructions +0.01 %, ... within half their margins")``, or
    ``(False, "instructions +3.1 % is beyond half its margin (±2 %) of the stored base")``."""
    from . import count_margins

    within, checked = [], 0
    for metric in count_margins.COUNT_METRICS:  # the count tier's metrics (its counters are structural)
        info = metrics.get(metric)
        if info.sample not in stored:
            continue
        base = [v for s in stored[info.sample] if (v := metrics.sample_value(s, metric)) is not None]
        mine = [v for s in head.get(info.sample, []) if s.ok and (v := metrics.sample_value(s, metric)) is not None]
        if not base and not mine:
            continue  # not split into this phase on either side
        if not mine:
            failed = next((s.error for s in head.get(info.sample, []) if not s.ok and s.error), None)
            return False, (f"the head's {info.sample} count failed ({failed})" if failed
                           else f"the head has no {info.brief} to check the stored base against")
        if not base:
            return False, f"the stored base has no {info.brief}, the head has"
        margin = margins.get(metric) or count_margins.default_margin(metric)
        ratio = statistics.median(mine) / statistics.median(base) if statistics.median(base) else float("inf")
        checked += 1
        if count_margins.judge(ratio, margin, min(len(base), len(mine))) != "unchanged":
            return False, (f"{info.brief} {fmt.change(ratio - 1)} is beyond half its margin "
                           f"(±{fmt.percent(margin.value)}) of the stored base")
        within.append(f"{info.brief} {fmt.change(ratio - 1)}")
    if not checked:
        return False, "no count metric to check the stored base against"
    return True, f"the head's fresh count is within half the margin of the stored base: {', '.join(within)}"


__all__ = ["Baseline", "agreement"]
