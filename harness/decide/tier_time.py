"""The time tier (tier c): wall time, in the paired, interleaved sequential tests of ``gate_loop.py``, in the budget.

It takes the cases the tiers before it could not settle, and screens the ones a count settled
for the guarded timings no count covers (:func:`uncounted_guards`: the import, a phase whose
count was evidence only). Its sampling and its tests are the gate loop's (the loop keeps each
case's state, its clock and its budget): the loop hands them to the tiers as ``ctx.timed``, and
this tier runs them in its place in the order. Its verdicts come from those tests when the gate
decides each case (``gate_policy``), not from steps recorded here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from .. import metrics
from .tier_source import SOURCE
from .tier_step import CaseTrail, TierContext, TierStep

if TYPE_CHECKING:
    from ..measure.cases import Case

TIME = "time"


def uncounted_guards(guard: tuple[str, ...], step: TierStep) -> tuple[str, ...]:
    """The guarded timings a settled instructions step did not cover (no count of theirs, ``Metric.counted_by``,
    on both sides, or one that was evidence only: a phase under ``count_margins.PHASE_FLOOR`` that moved). The
    import is never counted, so it is always among them. A source step (``tier_source.py``) leaves none: the head
    runs the base's program, every phase of it."""
    if step.tier == SOURCE:
        return ()
    counted = {e["metric"] for e in step.evidence if e.get("n_base") and e.get("n_head") and not e.get("evidence_only")}
    return tuple(m for m in guard if metrics.get(m).counted_by not in counted)


class TimeTier:
    """Tier (c): the gate loop's timing pairs and sequential tests (``ctx.timed``) over every case."""

    name = TIME
    needs = ("timing",)

    def run(self, cases: "list[Case]", trails: "dict[str, CaseTrail]",
            ctx: TierContext) -> "Iterator[tuple[Case, TierStep]]":
        if ctx.timed is not None:
            ctx.timed(cases, trails)
        return iter(())


__all__ = ["TIME", "TimeTier", "uncounted_guards"]
