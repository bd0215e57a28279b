"""The instructions tier (tier b): instruction and allocation counts against each case's margins.

Instructions of the first-gradient window (callgrind, ``harness/measure/instructions.py``) and
allocation counts (memray), a few processes per side, base and head at the same time (load
changes neither count). Each metric's margin is the case's own (``count_margins.py``: calibrated
from its same-code spread, else a conservative default that says so). Beyond it, the case is
settled as regressed or improved; within half of it on every metric, as unchanged; at its edge,
one more count a side, then the time tier. A phase under 50 M instructions is evidence only.
Unchanged and improved are only settled when the instructions count the work: a backend that
does part of its first gradient in child processes (Inductor's C++ compiler) declares that
(``Backend.uncounted``), and its case goes on to wall time.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Iterator

from .. import fmt, metrics
from .tier_step import CaseTrail, TierContext, TierStep, metric_evidence, tier_metrics
from .tier_time import TIME

if TYPE_CHECKING:
    from ..measure.cases import Case
    from ..results.model import Sample
    from .count_margins import Margin
    from ..results.runtimes import Runtimes

INSTRUCTIONS = "instructions"


def count_step(base: dict[str, list["Sample"]], head: dict[str, list["Sample"]], uncounted: str | None,
               unavailable: str | None = None, unsteady: dict[str, str] | None = None,
               margins: "dict[str, Margin] | None" = None, multithreaded: str | None = None) -> TierStep:
    """Tier (b): instruction and allocation counts against each case's margins.

    Parameters
    ----------
    base, head : dict of sample kind -> list of Sample
        The count samples each side produced (failed ones included).
    uncounted : str or None
        The backend's work the instructions do not count (``Backend.uncounted``); when
        set, only a regression settles the case.
    unavailable : str or None
        Why instructions could not be counted on this machine (then only a regression
        of another count settles).
    unsteady : dict or None
        Metric -> why this backend's count of it is not repeatable (``Backend.unsteady_counts``):
        shown as evidence, never settles (a margin cannot hold what varies by itself).
    margins : dict or None
        Metric -> the case's margin (``count_margins.margins_for``); a metric missing takes the default,
        which says so. A change at the edge of its margin (``count_margins.judge``) settles nothing: the step
        is marked ``edge`` and the gate counts once more or hands the case to the time tier. A phase of fewer
        than ``count_margins.PHASE_FLOOR`` instructions is evidence only.
    multithreaded : str or None
        Why the case's count processes ran a multithreaded native runtime (measured: ``Runtimes.multithreaded``).

    A count decides only when shown steady (``steadiness.standing``): calibrated, or base and head within the
    margin, or two base counts that agree; else it is evidence, said in the reason, and a step whose only
    obstacle is a missing second base count names the kinds to count again (``TierStep.recount_base``).
    """
    from . import count_margins
    from .stats import compare_counter

    from . import steadiness

    evidence, regressed, improved, unchanged, missing, aside, edge, recount = [], [], [], [], [], [], [], []
    broken = next((s.error for side in (base, head) for samples in side.values() for s in samples
                   if not s.ok and s.error), None)
    if unavailable:
        missing.append("instructions: not countable on this machine")
    for metric in tier_metrics(INSTRUCTIONS):
        info = metrics.get(metric)
        values = {role: [v for s in side.get(info.sample, []) if s.ok
                         and (v := metrics.sample_value(s, metric)) is not None]
                  for role, side in (("base", base), ("head", head))}
        if not values["base"] or not values["head"]:
            errors = [s.error for side in (base, head) for s in side.get(info.sample, []) if not s.ok and s.error]
            if errors:
                missing.append(f"{metric}: {errors[0]}")
            elif values["base"] or values["head"]:
                missing.append(f"{metric}: measured on one side only")
            continue  # not measured, or not split into phases by this backend
        margin = (margins or {}).get(metric) or count_margins.default_margin(metric)
        verdict = compare_counter(values["base"], values["head"], threshold=margin.value)
        short = (metric.startswith("instructions_")
                 and max(max(values["base"]), max(values["head"])) < count_margins.PHASE_FLOOR)
        floor = f"a phase under {count_margins.PHASE_FLOOR // 10**6} M instructions: evidence unless unchanged"
        stand = (steadiness.Standing(True, floor) if short else
                 steadiness.standing(metric, margin, values["base"], values["head"], multithreaded,
                                     (unsteady or {}).get(metric)))
        found = metric_evidence(metric, verdict, margin.value, values["base"], values["head"], not stand.decides)
        found["margin_source"] = margin.source()
        found["steadiness"] = stand.why
        evidence.append(found)
        if not stand.decides:
            found["evidence_only"] = True
            if stand.recount_base:
                recount.append(info.sample)
            (aside if stand.noise else missing).append(
                f"{metric}: {stand.why}" if stand.why.startswith("not repeatable") else
                f"{info.brief} {fmt.change(verdict.ratio - 1)} is evidence, not a verdict: {stand.why}")
            continue
        spread = [v for v in (verdict.ci_low, verdict.ci_high) if math.isfinite(v)]
        label = f"{info.brief} {fmt.change(verdict.ratio - 1)} ({margin.describe()})"
        judged = count_margins.judge(verdict.ratio, margin, min(len(values["base"]), len(values["head"])))
        if len(spread) == 2 and spread[1] - spread[0] > 2 * margin.value:
            missing.append(f"{metric}: the samples spread over ratios {spread[0]:.4f}-{spread[1]:.4f}, wider than "
                           "its margin allows")
        elif short and judged != "unchanged":
            found["verdict"], found["evidence_only"] = "inconclusive", True
            aside.append(f"{label}: a phase under {count_margins.PHASE_FLOOR / 1e6:g} M instructions is evidence, "
                         "not a verdict")
        elif judged == "edge":
            found["verdict"] = "inconclusive"
            edge.append(label)
        elif judged == "regressed":
            regressed.append(label)
        elif judged == "improved":
            improved.append(label)
        else:
            found["verdict"] = "unchanged"
            unchanged.append(label)
    step = _step(evidence, regressed, improved, unchanged, missing, aside, edge, uncounted, broken)
    step.recount_base = tuple(dict.fromkeys(recount))
    return step


def _step(evidence, regressed, improved, unchanged, missing, aside, edge, uncounted, broken) -> TierStep:
    """The tier's step from each metric's judgement (:func:`count_step`)."""
    gaps = f"; not used: {'; '.join(missing + aside)}" if missing or aside else ""
    if regressed:
        others = improved + unchanged + edge
        total = [o for o in others if o.startswith(metrics.get("instructions").brief + " ")]
        rest = len(others) - len(total)
        within = "; ".join(filter(None, [", ".join(total), f"{rest} other count(s) within their margins" if rest
                                         else ""]))
        within = f"; {within}" if within else ""
        return TierStep(INSTRUCTIONS, True, "regressed", "beyond the margin: " + ", ".join(regressed) + within + gaps,
                        evidence)
    counted = any(e["metric"] == "instructions" for e in evidence)
    missing = list(dict.fromkeys(missing))
    if not counted:
        what = "; ".join(missing) or "no count metric"
        return TierStep(INSTRUCTIONS, False, "inconclusive", f"instructions not counted ({what})", evidence, broken)
    if edge:
        n = min(e["n_base"] for e in evidence if e.get("verdict") == "inconclusive" and not e.get("evidence_only"))
        return TierStep(INSTRUCTIONS, False, "inconclusive", f"at the edge of the margin after {n} count(s) a side, "
                        "so no verdict: " + ", ".join(edge) + (f"; {', '.join(improved + unchanged)}"
                                                                if improved or unchanged else "") + gaps,
                        evidence, broken, edge=True)
    verdict = "improved" if improved else "unchanged"
    words = ", ".join(improved + unchanged)
    if uncounted:
        return TierStep(INSTRUCTIONS, False, verdict, f"{words}, but the instructions miss part of the work "
                        f"({uncounted}), so wall time decides{gaps}", evidence)
    if missing:
        return TierStep(INSTRUCTIONS, False, verdict, f"{words}{gaps}", evidence, broken)
    return TierStep(INSTRUCTIONS, True, verdict, (f"improved beyond the margin: {words}" if improved else
                                                  f"within the margins: {words}") + gaps, evidence)


def count_kinds() -> tuple[str, ...]:
    """The sample kinds the count tier needs, from the registry."""
    return tuple(dict.fromkeys(metrics.get(m).sample for m in tier_metrics(INSTRUCTIONS)))


def unsteady_counts(backend: str, measured: "Runtimes | None" = None) -> dict[str, str]:
    """The count-tier metrics ``backend``'s processes do not repeat (registry ``Metric.unsteady``), by what they ran:
    the runtimes the probes measured (``measured``, ``results/runtimes.py``), else what the backend declares
    (``engines.facts``: for samples of files written before the probes measured it)."""
    from .. import engines
    from ..results.runtimes import runs_on

    on = runs_on(measured, engines.runs_on(backend))  # declared: empty for a plugin that cannot load
    found = {m: metrics.get(m).unsteady_for(on) for m in tier_metrics(INSTRUCTIONS)}
    return {m: why for m, why in found.items() if why}


def measured_runtimes(*sides: dict[str, list["Sample"]]) -> "Runtimes | None":
    """What the count processes of a case ran, over every side and kind (``runtimes.merged``); None: no record."""
    from ..results.runtimes import merged

    return merged(s.runtimes for side in sides for samples in side.values() for s in samples if s.ok)


class InstructionsTier:
    """Tier (b): count processes per case, base and head at once (:func:`count_step`), on the cases not settled yet."""

    name = INSTRUCTIONS

    @property
    def needs(self) -> tuple[str, ...]:
        return count_kinds()

    def run(self, cases: "list[Case]", trails: "dict[str, CaseTrail]",
            ctx: TierContext) -> "Iterator[tuple[Case, TierStep]]":
        from ..measure import instructions as counting

        usable, why = counting.availability()
        if not usable:
            ctx.note(f"instructions tier: {why}")
        kinds = [k for k in count_kinds() if usable or k != "instructions"]
        with ThreadPoolExecutor(max_workers=2) as pool:
            try:
                for case in cases:
                    if not trails[case.id].settled:
                        yield case, _count_case(case, kinds, pool, ctx, None if usable else why)
            except BaseException:  # Ctrl-C: end the probes in flight, or leaving the pool waits for them
                from ..measure.runner import stop_running_probes

                stop_running_probes()
                raise


def _count_case(case: "Case", kinds: list[str], pool: ThreadPoolExecutor, ctx: TierContext,
                unavailable: str | None) -> TierStep:
    """One case's counts: base and head of each kind and round at the same time; a count that lands at its margin's
    edge gets up to ``ctx.recount`` more rounds, one at a time, then goes to the time tier."""
    from .. import engines
    from . import count_margins

    facts = engines.facts(case.backend)
    got: dict[str, dict[str, list]] = {"base": {}, "head": {}}
    margins = ctx.margins(case) if ctx.margins is not None else {
        m: count_margins.default_margin(m, facts.runs_on, "the sides' conditions are unknown")
        for m in tier_metrics(INSTRUCTIONS)}

    def rounds(first: int, last: int) -> None:
        for kind in kinds:
            for i in range(first, last):
                futures = {role: pool.submit(ctx.take_sample, case, kind, i, role) for role in ("base", "head")}
                for role, fut in futures.items():
                    got[role].setdefault(kind, []).append(fut.result())

    def step_now() -> TierStep:
        from ..results.runtimes import runs_on

        measured = measured_runtimes(got["base"], got["head"])
        on = runs_on(measured, facts.runs_on)
        # An uncalibrated margin's floor is that of what the processes ran (jaxlib's wider one), not what was declared.
        judged = {m: e if e.calibrated else count_margins.default_margin(m, on, e.why) for m, e in margins.items()}
        return count_step(got["base"], got["head"], facts.uncounted, unavailable,
                          unsteady_counts(case.backend, measured), judged,
                          measured.multithreaded if measured else None)

    stored = ctx.baseline.lookup(case, kinds, ctx.repeat) if ctx.baseline is not None else {}
    if stored:
        _with_stored_base(case, kinds, stored, got, pool, ctx, margins, facts.runs_on)
    else:
        rounds(0, ctx.repeat)
    step = step_now()
    if step.recount_base:  # a count beyond an uncalibrated margin: does the base repeat it? (one more process)
        for kind in step.recount_base:
            got["base"][kind].append(ctx.take_sample(case, kind, len(got["base"][kind]), "base"))
        step = step_now()
    extra = 0
    while step.edge and extra < ctx.recount:
        rounds(ctx.repeat + extra, ctx.repeat + extra + 1)
        extra += 1
        step = step_now()
    if step.edge:
        took = f"after {extra} more count(s) a side" if extra else "no more counts allowed (--recount 0)"
        step.reason += (f"; {took}: the time tier decides" if TIME in ctx.selected else
                        f"; {took}, and the time tier is not selected")
    return step


def _with_stored_base(case: "Case", kinds: list[str], stored: "dict[str, list[Sample]]",
                      got: "dict[str, dict[str, list[Sample]]]", pool: ThreadPoolExecutor, ctx: TierContext,
                      margins: "dict[str, Margin]", declared) -> None:
    """The first round with a stored base (``stored_baseline.py``): the head's counts and the base's of the kinds not
    stored, at the same time; the stored base is then used only when the head's fresh counts agree with it within
    half of every margin, else the base is counted afresh, as without a store, and the reason is kept."""
    from . import count_margins
    from .stored_baseline import agreement
    from ..results.runtimes import runs_on

    # The stored kinds' head counts first: each runs alone, so on two workers the kinds still counted on both sides
    # (jax's allocations) run beside it, not in a round of their own before it.
    order = sorted(kinds, key=lambda kind: kind not in stored)
    for i in range(ctx.repeat):
        futures = [(role, kind, pool.submit(ctx.take_sample, case, kind, i, role)) for kind in order
                   for role in ("head", "base") if role == "head" or kind not in stored]
        for role, kind, fut in futures:
            got[role].setdefault(kind, []).append(fut.result())
    measured = measured_runtimes(got["head"], stored)
    on = runs_on(measured, declared)
    judged = {m: e if e.calibrated else count_margins.default_margin(m, on, e.why) for m, e in margins.items()}
    agreed, words = agreement(stored, got["head"], judged)
    if agreed:
        for kind, samples in stored.items():
            got["base"][kind] = list(samples)
        ctx.baseline.used(case, stored, words)
        return
    ctx.baseline.counted(case, f"stored base counted afresh: {words}")
    ctx.note(f"{case.id}: stored base counts not used ({words}): counting the base afresh")
    for i in range(ctx.repeat):
        futures = [(kind, pool.submit(ctx.take_sample, case, kind, i, "base")) for kind in stored]
        for kind, fut in futures:
            got["base"].setdefault(kind, []).append(fut.result())


__all__ = ["INSTRUCTIONS", "InstructionsTier", "count_kinds", "count_step", "measured_runtimes", "unsteady_counts"]
