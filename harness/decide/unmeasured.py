"""A case with no good sample on a side is never "unchanged" or "passed": the one rule every outcome path asks.

Why one rule: each path that turns samples into a verdict (the gate's loop, the bisect's comparisons,
``regressions --confirm``, ``merge gate`` and the release sweep) used to decide for itself what a side
that never ran means, through the stop the time tier sets after repeated failures. A gate whose time
tier was not selected (``--tiers structural``), or whose budget ran out first, never set that stop:
with the plugin failing to import on both sides it said "gate passed: no regression shown", exit 0.
Here the rule reads only how many good samples each side produced (of any kind) and says:

* the base has none: nothing to compare the head against -- ``base cannot run``, inconclusive, exit 2
  (also when the head has none: a run that measured nothing exits 2);
* the head has none while the base ran: the change broke the case -- ``head cannot run``, regressed,
  exit 1 (and never accepted by a ``Ttfg-Accept`` trailer: ``accept.py``);
* both have some: the tiers decide, as before.

Every function here is pure: counts and records in, a side or a verdict out.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Mapping

from ..results.format import MAX_ERROR_CHARS, clip
from ..results.gate_outcome import BASE_BROKEN, HEAD_BROKEN

__all__ = ["estimated_good", "good_counts", "held_verdict", "side_of", "unmeasured_side"]

ROLES = ("base", "head")


def unmeasured_side(good: Mapping[str, int]) -> str | None:
    """``"base"`` when the base has no good sample (whatever the head has), ``"head"`` when only the head has
    none, None when both sides ran."""
    for role in ROLES:
        if not good.get(role):
            return role
    return None


def good_counts(results: Mapping, case_id: str) -> tuple[dict[str, int], dict[str, int], dict[str, str]]:
    """Per side, from its results (``results.model.Results``): good samples of every kind, failed ones, and the
    first error."""
    good, failed, errors = {}, {}, {}
    for role in ROLES:
        res = results.get(role)
        case = res.case(case_id) if res is not None else None
        samples = case.samples if case is not None else []
        good[role] = sum(1 for s in samples if s.ok)
        failed[role] = sum(1 for s in samples if not s.ok)
        first = next((s.error for s in samples if not s.ok and s.error), None)
        if first:
            errors[role] = first
    return good, failed, errors


def held_verdict(verdict, stop: str, good: Mapping[str, int], failed: Mapping[str, int],
                 first_error: Mapping[str, str]):
    """``(verdict, stop)`` to report instead, when a side has no good sample and the case does not already say so;
    else None."""
    side = unmeasured_side(good)
    if side is None or stop == (BASE_BROKEN if side == "base" else HEAD_BROKEN):
        return None
    error = clip(first_error.get(side) or "no sample was taken", MAX_ERROR_CHARS)
    said = f"; the tiers alone said: {verdict.verdict}, {verdict.reason}" if verdict.reason else ""
    nan = math.nan
    if side == "base":
        words = "inconclusive"
        reason = (f"base cannot run: none of its {failed.get('base', 0)} sample(s) was good ({error}); nothing to "
                  f"compare head against" + ("" if good.get("head") else ", and head had no good sample either"))
    else:
        words = "regressed"
        reason = (f"head cannot run: none of its {failed.get('head', 0)} sample(s) was good ({error}) while base "
                  f"ran")
    return replace(verdict, verdict=words, ratio=nan, ci_low=nan, ci_high=nan, p_value=nan, equivalent=False,
                   detectable=nan, detectable_high=nan, n_base=good.get("base", 0), n_head=good.get("head", 0),
                   method="failure", reason=reason + said), (BASE_BROKEN if side == "base" else HEAD_BROKEN)


def estimated_good(case) -> dict[str, int]:
    """A gate case's good samples per side (``gate_outcome.CaseOutcome``): as recorded (``good``), else, for a
    document written before it was, the timing pairs that did not fail and the count tiers' evidence."""
    if case.good is not None:
        return dict(case.good)
    out = {}
    for role in ROLES:
        timed = max(0, (case.attempted or 0) - (case.failed or {}).get(role, 0))
        counted = max((e.get(f"n_{role}") or 0 for step in case.trail for e in step.evidence), default=0)
        out[role] = max(timed, counted)
    return out


def side_of(case) -> str | None:
    """The side of a gate case (``gate_outcome.CaseOutcome``) with no good sample, or None (the rule above)."""
    return unmeasured_side(estimated_good(case))
