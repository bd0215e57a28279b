"""The source tier: a case settled as unchanged when the head runs the base's program, shown by one process a side.

Why a tier: a comment-only pull request has nothing for the counts or the clock to find, yet it paid for a
callgrind count of the head (114-127 s of CPU for a small jax library) and a timing screen. The proof
(``source_proof.py``: every changed file is Python with the base's syntax tree, one environment) is read from
git before anything runs; the tier then asks for what only a measurement can give: the case's first timing pair
(the structural tier's, taken by it when that tier did not run) ran on both sides, and its structural counters
and cache lookups did not move. Only then is the case settled, "unchanged", and every guarded timing with it (the
time tier screens nothing: ``tier_time.uncounted_guards``). Without a proof, or when the pair failed or its
counters moved, the next tiers measure as usual (the gate says why: a note, and ``source`` in ``gate.json``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from .stored_first import SOURCE, first_pair
from .tier_step import CaseTrail, TierContext, TierStep
from .tier_structural import STRUCTURAL, structural_step

if TYPE_CHECKING:
    from ..measure.cases import Case


def source_step(proof, pair: dict, structural: list[TierStep], base_stored: bool = False) -> TierStep:
    """The tier's finding for one case under a proven ``proof`` (``source_proof.SourceProof``), from the case's first
    timing pair (``{role: Sample}``; ``base_stored``: its base is the count store's, ``stored_first.py``) and the
    structural steps read from it."""
    failed = [role for role in ("base", "head") if pair.get(role) is None or not pair[role].ok]
    if failed:
        return TierStep(SOURCE, False, "inconclusive", f"{proof.why}, but the {' and '.join(failed)} side's first "
                        "process gave no first gradient: later tiers decide")
    moved = [s for s in structural if s.verdict in ("regressed", "improved")]
    if moved:
        return TierStep(SOURCE, False, "inconclusive", f"{proof.why}, yet the first pair's structural evidence "
                        f"moved ({moved[0].reason}): later tiers decide")
    counters = next((s for s in structural if s.evidence), None)
    seen = (f"{len(counters.evidence)} structural counters equal" if counters is not None
            else "no structural counters to compare")
    evidence = [{**e, "evidence_only": True} for e in (counters.evidence if counters is not None else [])]
    ran = ("the head's first process gave its first gradient against the base's stored one" if base_stored else
           "one process a side gave its first gradient")
    return TierStep(SOURCE, True, "unchanged", f"the head runs the base's program: {proof.why}; {ran} ({seen}), so no "
                    "count or timing is taken", evidence)


class SourceTier:
    """The source tier: settles a case whose code the pull request did not change (``ctx.source``), after its first
    pair ran (:func:`source_step`). Without a proof in the context (a bisect, a test) it looks at nothing."""

    name = SOURCE
    needs = ("timing",)

    def run(self, cases: "list[Case]", trails: "dict[str, CaseTrail]",
            ctx: TierContext) -> "Iterator[tuple[Case, TierStep]]":
        if ctx.source is None:
            return
        for case in cases:
            trail = trails[case.id]
            if trail.settled:
                continue
            if not ctx.source.proven:  # said once by the gate (a note, gate.json's "source"), not on every trail
                return
            pair = trail.first_pair
            structural = [s for s in trail.steps if s.tier == STRUCTURAL]
            if pair is None:  # the structural tier did not run: this tier takes the pair and reads its counters
                pair = first_pair(case, trail, ctx)
                structural = [structural_step(pair.get("base"), pair.get("head"), ctx.across_envs, ctx.min_effect,
                                              ctx.strict)]
            yield case, source_step(ctx.source, pair, structural, trail.base_stored)


__all__ = ["SOURCE", "SourceTier", "source_step"]
