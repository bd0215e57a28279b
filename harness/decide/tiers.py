"""The gate in tiers: settle what deterministic evidence can settle, spend wall time on the rest.

Why tiers: a wall-time gate on a 2-core machine needs about 56 cold pairs (7-8 minutes
for jax.jit resnet15) to see a 5 % change, and an A/A gate never ends better than
"inconclusive". Most changes move something that does not depend on load at all:

* **structural** (tier a, ``tier_structural.py``): the structural counters of one timing pair,
  compared exactly, and in a warm gate the pair's persistent-cache misses;
* **source** (``tier_source.py``): a case whose code the pull request did not change (every changed file is
  Python with the base's syntax tree, one environment: ``source_proof.py``) is settled as unchanged once the
  structural tier's pair ran on both sides with equal counters;
* **instructions** (tier b, ``tier_instructions.py``): instruction and allocation counts of a few
  processes per side against each case's margins;
* **time** (tier c, ``tier_time.py``): the paired, interleaved sequential test of ``gate_loop.py`` on
  the cases the tiers before could not settle, within the budget.

Each tier is an object (``tier_step.Tier``: a name, the sample kinds it needs, ``run``) in
:data:`REGISTERED`, in the order they run; :func:`run_tiers` is the one loop that runs the selected
ones and records what they find. Adding a tier is its module and one line in :data:`REGISTERED`.
Each case's outcome names the tier that decided it and keeps the trail of every tier it went
through (``TierStep``). The gate's loop stays in ``gate_loop.py``; the tiers take their samples
through the callables the gate passes in (``tier_step.TierContext``), so tests drive them with
in-process samplers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import UsageError
from .tier_instructions import INSTRUCTIONS, InstructionsTier, count_kinds, count_step, unsteady_counts
from .tier_step import (CaseTrail, Settlement, TakePair, TakeSample, Tier, TierContext, TierStep, deciding_evidence,
                        record, settled_verdict, tier_metrics)
from .tier_source import SOURCE, SourceTier
from .tier_structural import STRUCTURAL, StructuralTier, cache_step, strict_counters, structural_step
from .tier_time import TIME, TimeTier, uncounted_guards

if TYPE_CHECKING:
    from ..measure.cases import Case

#: Every tier, in the order they run.
REGISTERED: list[Tier] = [StructuralTier(), SourceTier(), InstructionsTier(), TimeTier()]


def names() -> tuple[str, ...]:
    """The registered tiers' names, in run order."""
    return tuple(tier.name for tier in REGISTERED)


#: What a CI user should run: the cheap exact tiers first, wall time only for what they leave.
DEFAULT_TIERS = names()


def parse_tiers(text: str | None) -> tuple[str, ...]:
    """``"structural,time"`` -> the named tiers in run order.

    Raises
    ------
    UsageError
        Naming the known tiers, for an unknown or empty list.
    """
    if text is None:
        return DEFAULT_TIERS
    known = names()
    chosen = [t.strip().lower() for t in str(text).split(",") if t.strip()]
    unknown = [t for t in chosen if t not in known]
    if unknown or not chosen:
        raise UsageError(f"--tiers {text!r}: expected a comma-separated list of {', '.join(known)} "
                         f"(default: {','.join(DEFAULT_TIERS)})")
    if set(chosen) == {SOURCE}:  # a pull request that changed code would then be measured by nothing
        raise UsageError(f"--tiers {text!r}: the source tier only settles a pull request that changed no code; "
                         f"name a tier that measures the others beside it ({', '.join(t for t in known if t != SOURCE)})")
    return tuple(t for t in known if t in chosen)


def run_tiers(cases: "list[Case]", ctx: TierContext) -> dict[str, CaseTrail]:
    """Run the selected tiers (``ctx.selected``) over ``cases``, in their registered order; the trail of each case,
    settled or not.

    Every step a tier yields is recorded as it comes (``tier_step.record``: the trail, the settlement, a note
    through ``ctx.note``), so a step is told while the next case is measured.
    """
    trails = {case.id: CaseTrail(case) for case in cases}
    for tier in REGISTERED:
        if tier.name in ctx.selected:
            for case, step in tier.run(cases, trails, ctx):
                record(trails[case.id], step, ctx.note)
    return trails


__all__ = ["CaseTrail", "DEFAULT_TIERS", "INSTRUCTIONS", "REGISTERED", "SOURCE", "STRUCTURAL", "Settlement", "TIME", "TakePair",
           "TakeSample", "Tier", "TierContext", "TierStep", "cache_step", "count_kinds", "count_step",
           "deciding_evidence", "names", "parse_tiers", "run_tiers", "settled_verdict", "strict_counters",
           "structural_step", "tier_metrics", "uncounted_guards", "unsteady_counts"]
