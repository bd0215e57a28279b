"""Verdicts in words: what "unchanged" and "inconclusive" claim, and what passing the gate means.

Why a module of its own: the terminal table, ``summary.md``, ``gate.json`` and the HTML
report must say the same thing about the same verdict, and what they say has to be
exactly what the statistics showed. "unchanged" has two grounds that claim different
things (two one-sided tests put the change inside +-m, or a significant change is smaller
than m), and "inconclusive" only rules out changes larger than what the run could detect.
"""

from __future__ import annotations

import math

from .. import fmt
from ..fmt import _finite
from .. import metrics


def verdict_label(v) -> str:
    """The verdict word with what it rests on.

    * ``unchanged (within ±5 %)``: two one-sided tests showed equivalence;
    * ``unchanged (+2.1 %, under the 5 % minimum)``: a significant change below the minimum effect;
    * ``inconclusive (could detect ≥ 7.6 %)``: the smallest slowdown this run would have flagged;
    * ``unchanged (+0.1 %, margin ±1.32 %)``: a count of a gate tier within its margin.

    ``v`` is a ``results.verdict.Verdict`` (or a record with its fields); the label a ``gate.json`` stored
    beside its verdict (the words of the ttfg that wrote it) wins.
    """
    if getattr(v, "label", None):
        return v.label
    word = v.verdict
    margin = getattr(v, "margin", math.nan)
    if str(getattr(v, "method", "")).startswith("tier ") and word == "unchanged" and _finite(margin) \
            and _finite(v.ratio):  # a count within its tier margin
        return f"unchanged ({fmt.change(v.ratio - 1)}, margin ±{fmt.percent(margin)})"
    if word == "unchanged" and _finite(margin):
        if getattr(v, "equivalent", False):
            return f"unchanged (within ±{fmt.percent(margin)})"
        if _finite(v.ratio):
            return f"unchanged ({fmt.change(v.ratio - 1)}, under the {fmt.percent(margin)} minimum)"
    if word == "inconclusive" and _finite(getattr(v, "detectable", math.nan)):
        return f"inconclusive (could detect ≥ {fmt.percent(v.detectable)})"
    return word


def passing_sentence(metric: str, min_effect: float, alpha: float, detectable: list[float],
                     expectations: str | None = None, guard=None, tiers=None) -> str:
    """One sentence: what a passing gate of these settings has shown, and what it has not.

    Parameters
    ----------
    metric : str
        The gated timing.
    min_effect, alpha : float
        The gate's minimum effect and overall level.
    detectable : list of float
        The inconclusive cases' detectable slowdowns (the smallest is quoted).
    expectations : str or None
        The expectations file checked, if any.
    guard : sequence of str or None
        The guarded timings (default: ``metric`` alone, as gates before the guard recorded).
    tiers : sequence of str or None
        The tiers that could decide (default: the time tier alone).
    """
    def label(name: str) -> str:
        return metrics.get(name).brief if name in metrics.METRICS else name

    guard = list(guard or [metric])
    detect = [d for d in detectable if _finite(d)]
    inconclusive = (f", and an inconclusive case only rules out slowdowns it could detect (here down to "
                    f"{fmt.percent(min(detect))} at best)" if detect else
                    ", and an inconclusive case only rules out slowdowns as large as it states it could detect")
    checked = f", head's counters stayed within {expectations}" if expectations else ""
    timings = (f"no case's {label(guard[0])}" if len(guard) == 1 else
               f"no guarded timing ({', '.join(label(g) for g in guard)})")
    over = f"alpha {alpha:g}" if len(guard) == 1 else f"alpha {alpha:g} over all {len(guard)}"
    counts = [t for t in (tiers or ()) if t in ("structural", "instructions")]
    grew = (", no structural counter grew" if counts == ["structural"] else
            ", no instruction or allocation count grew beyond its margin" if counts == ["instructions"] else
            ", no structural counter, instruction or allocation count grew beyond its margin" if counts else "")
    return (f"Passing means: {timings} was shown {fmt.percent(min_effect)} or more slower at {over} (paired "
            f"processes){grew}, no head failed significantly more often than its base{checked}; 'unchanged (within "
            f"±{fmt.percent(min_effect)})' was shown by two one-sided tests{inconclusive}.")


def passing_means(outcome, check=None) -> str:
    """:func:`passing_sentence` for a gate's outcome (``gate_outcome.GateOutcome``) and its expectations check, when
    it ran one, followed by :func:`evidence_note` when a case carries evidence that was not a verdict."""
    s = outcome.settings
    detect = [c.verdict.detectable for c in outcome.cases if c.verdict.verdict == "inconclusive"]
    sentence = passing_sentence(s.metric, s.min_effect, s.alpha, detect,
                                str(check.path) if check is not None else None, s.guard, s.tiers)
    proven = [c for c in outcome.cases if c.tier == "source"]
    stored = sum(1 for c in proven if c.base_first_stored)
    ran = ("one process a side gave its first gradient with equal structural counters" if not stored else
           "the head's first process gave its first gradient with the base's structural counters (the base's first "
           f"process{'' if stored == len(proven) else f', for {stored} of them,'} stored by an earlier gate of the "
           "same base: the count store)")
    source = (f"{'Every case was' if len(proven) == len(outcome.cases) else f'{len(proven)} case(s) were'} settled by "
              "the source tier: every changed file is Python with the base's syntax tree (comments and layout only), "
              f"in one environment, and {ran}; nothing was counted or timed for it." if proven else "")
    notes = [n for n in (source, acceptance_note(outcome.cases, outcome.acceptances), evidence_note(outcome.cases)) if n]
    return " ".join([sentence, *notes])


def accepted_decision(n: int) -> str:
    """What a gate that passed only because trailers accepted ``n`` regressions is called, in every output's verdict
    line (terminal, ``summary.md``, the report page): never "no regression shown"."""
    return f"passed with {n} accepted regression(s)"


def acceptance_note(cases, acceptances) -> str:
    """``Accepted, so not failing: case (instructions +3.0 %) by trailer 'glob metric' of A <a@b> in 1234567890:
    reason. ...``: every regression a commit trailer accepted, naming the trailer, who and why; every trailer that
    also matched an accepted one, that matched only failures (never accepted), or that matched nothing or cannot be
    read. Empty when the head's commits carry none."""
    parts = []
    accepted = [c for c in cases if c.verdict.verdict == "regressed" and c.accepted]
    if accepted:
        parts.append("Accepted, so not failing: " + "; ".join(
            f"{c.case} ({c.metric or 'failures'} {fmt.factor(c.verdict.ratio)}) by trailer "
            f"'{c.accepted['case']} {c.accepted['metric']}' of {c.accepted['author']} in "
            f"{str(c.accepted['commit'])[:10]}: {c.accepted['reason']}" for c in accepted) + ".")
    found = acceptances or []
    also = [a for a in found if a.get("also_matched")]
    if also:
        parts.append("Also matched (accepted by an earlier trailer): " + "; ".join(
            f"'{a['case']} {a['metric']}' matched {', '.join(a['also_matched'])}" for a in also) + ".")
    refused = [a for a in found if a.get("refused")]
    if refused:
        parts.append("Not accepted, a failure is not a performance change: " + "; ".join(
            f"'{a['case']} {a['metric']}' matched " + ", ".join(f"{c} ({why})" for c, why in a["refused"].items())
            for a in refused) + ".")
    unused = [a for a in found if not (a.get("used_by") or a.get("also_matched") or a.get("refused"))]
    if unused:
        parts.append("Unused Ttfg-Accept trailer(s): " + "; ".join(
            f"'{a['case']} {a['metric']} {a['reason']}' by {a['author']} in {str(a['commit'])[:10]} "
            + (f"({a['problem']})" if a.get("problem") else "(matched no regression)") for a in unused) + ".")
    return " ".join(parts)


def evidence_note(cases) -> str:
    """``Evidence, not a verdict: case: structural counters grew by less than ...`` for every case whose
    structural counters grew without deciding it (under the minimum effect, or across framework releases): a
    growth the gate let pass is never silent. Empty when there is none."""
    found = [f"{c.case}: {t.reason}" for c in cases for t in c.trail
             if t.tier == "structural" and not t.settled and t.verdict == "regressed"]
    return f"Evidence, not a verdict: {'; '.join(found)}." if found else ""


def failures_note(failed: dict | None, attempted: int | None, first_error: dict | None) -> str:
    """`` (failed: base 0 of 3, head 2 of 3; head: timed out after 4 s)`` for a case whose processes
    failed, escaped for Markdown (the error is the measured code's text); empty when none failed.

    Why in the row: a head that times out in 2 of 3 processes passed with "no regression
    shown", and the summary mentioned only the budget.
    """
    from .untrusted import md

    failed = failed or {}
    if not any(failed.get(side) for side in ("base", "head")):
        return ""
    of = f" of {attempted}" if attempted else ""
    errors = first_error or {}
    first = next(((side, errors[side]) for side in ("head", "base") if errors.get(side)), None)
    return (f" (failed: base {failed.get('base', 0)}{of}, head {failed.get('head', 0)}{of}"
            + (f"; {first[0]}: {md(first[1], 160)}" if first else "") + ")")


__all__ = ["acceptance_note", "evidence_note", "failures_note", "passing_means", "passing_sentence", "verdict_label"]
