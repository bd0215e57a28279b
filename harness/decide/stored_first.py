"""A case's first pair when the head runs the base's program: the head's process alone, against the base's stored one.

Why: once the source tier has proven from git that the head runs the base's program (``source_proof.py``), the
base's first process only repeats, under the same key, what an earlier gate of the same base already ran: a first
gradient and its structural counters. The count store keeps each side's first timing process's structural counters
(kind ``structural``, nothing timed: ``results/count_store.py``); here the stored one of the base stands in for a
fresh base process, and a pull request that changed no code runs its own side alone.

Why that proof is enough (the rule of ``stored_baseline.py``, made exact): the stored record is used only under its
exact key (the base's tree, the case, the environment's digest, interpreter, probe settings, ttfg's source, the
CPU), after its SHA-256 check, and only once the head's fresh first process gave a first gradient with every
structural counter equal to it. The head runs the base's program, so a fresh base process would have shown the same
counters; a damaged, edited or mistaken record shows other counters than the head's, and then both sides run afresh,
as without a store (the gate says why). The stored record can only ever let the source tier settle "unchanged",
which the tier would settle on a fresh pair with the same counters; timing takes no part (the source tier times
nothing), and a case the tier does not settle takes its time tier's pairs afresh.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .tier_step import CaseTrail, TierContext

if TYPE_CHECKING:
    from ..measure.cases import Case
    from ..results.model import Sample

#: The source tier's name (``tier_source`` imports it from here: that module imports this one).
SOURCE = "source"


def first_pair(case: "Case", trail: CaseTrail, ctx: TierContext) -> "dict[str, Sample]":
    """The case's first pair, kept on its ``trail``: the base's stored first process and the head's fresh one, where
    the source tier can use them (:func:`_stored_pair`; ``trail.base_stored``), else a fresh pair
    (``ctx.take_pair``); the fresh first processes are kept for the next gate (the head's: once merged, its tree is
    the next pull request's base)."""
    pair = _stored_pair(case, ctx)
    trail.base_stored = pair is not None
    if pair is None:
        pair = ctx.take_pair(case)
    if ctx.baseline is not None:
        for role, sample in pair.items():
            if not (role == "base" and trail.base_stored):
                ctx.baseline.keep_first(case, role, sample)
    trail.first_pair = pair
    return pair


def _stored_pair(case: "Case", ctx: TierContext) -> "dict[str, Sample] | None":
    """``{"base": stored, "head": fresh}`` when the source tier is selected and proven, the base's first process is
    stored, and the head's fresh first process agrees with it; None otherwise (a head process that disagreed is
    recorded on the head's side and said)."""
    if ctx.baseline is None or ctx.source is None or not ctx.source.proven or SOURCE not in ctx.selected:
        return None
    stored = ctx.baseline.first(case)
    if stored is None:
        return None
    head = ctx.take_sample(case, "timing", 0, "head")
    mine, theirs = head.counters or {}, stored.counters or {}
    if head.ok and mine == theirs:
        ctx.baseline.first_used(case, f"the head's first process gave a first gradient with the stored base's "
                                      f"structural counters, all {len(theirs)} equal")
        return {"base": stored, "head": head}
    differ = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
    why = (f"the head's first process failed ({head.error})" if not head.ok else
           "the head's structural counters differ from the stored base's: " + ", ".join(
               f"{k} {theirs.get(k, 'none')} -> {mine.get(k, 'none')}" for k in differ[:5]))
    ctx.note(f"{case.id}: the base's stored first process not used ({why}): both sides run afresh")
    return None


__all__ = ["first_pair"]
