"""The gate's decisions as pure functions: a case's state in, a verdict, its numbers or a stop out.

Why apart from the loop (``gate_loop.py``): these rules are what a reader checks against the
design (how a guard's verdict leads, what a final look at the budget may conclude, when failures
make a regression, when a case stops), and a bisection or a confirmation reuses them with
another loop. Nothing here samples, reads a clock or touches a file; each function reads the
case's state (:class:`CaseState`, which the loop fills) and the settings, and returns.

The rules, in the loop's order:

* after each pair (:func:`stop_after_pair`): a side that never ran stops the case (a base: nothing
  to compare, exit 2; a head while the base ran: a regression), a guarded timing missing stops it,
  a decided test or ``max_pairs`` stops it;
* per guarded timing (:func:`metric_verdict`): the sequential test's verdict, or when the budget ran
  out before its last look, that look taken on the pairs there are at the level the test reserved
  for it (``stats.compare_paired``): the interim looks spent at most ``interim_share * alpha`` and
  this one the rest, so the Bonferroni bound still holds;
* over the guard (:func:`leading`, :func:`combined_verdict`): a regression (the largest) leads, else
  the weakest inconclusive one, else an improvement, else the gated metric;
* a count tier's settlement stands unless the screen of what counts do not cover found a regression
  (:func:`settled_and_screened`); a short screen (``time_screen.py``) that found nothing gross says so, one that
  escalated is the full screen, and says why it escalated;
* failures are evidence (:func:`failure_test`, :func:`with_failures`): a head failing significantly
  more often than its base (one-sided Fisher at 10 %) regressed, whatever its good samples' times say.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from .. import fmt, metrics
from . import tiers
from .gate_settings import DEFAULT_INTERIM_SHARE, GateSettings
from ..results.gate_outcome import (BASE_BROKEN, BUDGET, DECIDED, FAILING, HEAD_BROKEN, MAX_PAIRS, NO_METRIC, Figure, Guard,
                                    Screen)
from ..measure.cases import Case
from ..results.model import Sample

if TYPE_CHECKING:
    from .stats import SequentialPairedTest

__all__ = ["CaseState", "brief", "broken_verdict", "combined_verdict", "count_context", "evidence_figure",
           "failure_test", "failure_verdict", "geometric_mean", "guards_of", "leading", "metric_verdict",
           "not_settled_verdict", "settled_and_screened", "stop_after_pair", "time_context", "value", "verdict_words",
           "with_failures", "with_not_split", "within_margins"]


@dataclass
class CaseState:
    """One case's sampling so far: its tests, every pair's values, its failures and why it stopped."""

    case: Case
    #: The gated metric (progress lines, the noise floor).
    metric: str
    #: One sequential test per guarded timing still tested (all of the guard, or the screen's part).
    tests: "dict[str, SequentialPairedTest]"
    #: Per guarded timing and side, every attempted pair's value (NaN: failed, or not reported).
    values: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    pair_wall_s: list[float] = field(default_factory=list)
    ok: dict[str, int] = field(default_factory=lambda: {"base": 0, "head": 0})
    failed: dict[str, int] = field(default_factory=lambda: {"base": 0, "head": 0})
    streak: dict[str, int] = field(default_factory=lambda: {"base": 0, "head": 0})
    first_error: dict[str, str] = field(default_factory=dict)
    stop: str | None = None
    #: True when the count tier settled the case and the time tier screens what the counts do not cover.
    screened: bool = False
    #: Guarded timings the case's backend never reports (a phase it does not split), with why: not tested here.
    not_split: dict[str, str] = field(default_factory=dict)
    #: The timings a short screen still has to look at (``time_screen``); empty once it looked, or when none runs.
    short: tuple[str, ...] = ()
    #: What the screen did (``time_screen.judge`` or ``time_screen.full``), for the trail and ``gate.json``.
    screen: "Screen | None" = None

    @property
    def attempted(self) -> int:
        return len(self.pair_wall_s)

    @property
    def test(self) -> "SequentialPairedTest":
        """The gated metric's test (the first one tested when it is not screened)."""
        return self.tests.get(self.metric) or next(iter(self.tests.values()))

    def complete(self, metric: str | None = None) -> tuple[list[float], list[float]]:
        """The complete pairs (both values there) of ``metric`` (default: the gated one)."""
        found = self.values.get(metric or self.metric, {"base": [], "head": []})
        pairs = [(b, h) for b, h in zip(found["base"], found["head"]) if not (math.isnan(b) or math.isnan(h))]
        return [b for b, _ in pairs], [h for _, h in pairs]

    def regressed(self) -> bool:
        return any(t.done() and t.verdict().verdict == "regressed" for t in self.tests.values())

    def decided(self) -> bool:
        """A guarded timing regressed (that settles the case), or every test is done."""
        return self.regressed() or all(t.done() for t in self.tests.values())

    def fits(self, elapsed: float, budget: float) -> bool:
        """Whether one more pair is expected to end within the budget."""
        if elapsed >= budget:
            return False
        recent = sorted(self.pair_wall_s[-5:])
        estimate = recent[len(recent) // 2] if recent else 0.0
        return elapsed + estimate <= budget


def value(sample: Sample, metric: str) -> float | None:
    """The metric of a good sample; NaN for a failed one; None when a good sample lacks it."""
    if not sample.ok:
        return math.nan
    found = metrics.sample_value(sample, metric)
    return found if found is not None and found > 0 else None


def failure_verdict(verdict: str, reason: str, st: CaseState):
    from .stats import Verdict

    nan = math.nan
    return Verdict(verdict, nan, nan, nan, nan, st.ok["base"], st.ok["head"], "failure", reason)


def broken_verdict(st: CaseState, settings: GateSettings):
    """The verdict of a case that stopped for a side that cannot run or a metric not reported; else None."""
    if st.stop == BASE_BROKEN:
        return failure_verdict("inconclusive", f"base cannot run: its first {st.failed['base']} sample(s) failed "
                                f"({st.first_error.get('base')}); nothing to compare head against", st)
    if st.stop == HEAD_BROKEN:
        return failure_verdict("regressed", f"head cannot run: its first {st.failed['head']} sample(s) failed "
                                f"({st.first_error.get('head')}) while base ran", st)
    if st.stop == NO_METRIC:
        return failure_verdict("inconclusive", f"this backend does not report {settings.metric}", st)
    return None


def metric_verdict(st: CaseState, metric: str, settings: GateSettings):
    """One guarded timing's verdict: its test's, or a final look at the level the test reserved for it."""
    from .stats import compare_paired

    test = st.tests[metric]
    if test.done():
        return test.verdict()
    base, head = st.complete(metric)
    why = {BUDGET: "the time budget ran out", FAILING: "sampling stopped after repeated failures"}.get(st.stop, st.stop)
    level = test.look_alphas[-1] if hasattr(test, "look_alphas") else settings.guard_alpha * (1 - DEFAULT_INTERIM_SHARE)
    if len(base) < 2:
        verdict = test.verdict()
        return replace(verdict, verdict="inconclusive",
                       reason=f"{why} after {len(base)} complete pair(s); at least 2 are needed")
    verdict = compare_paired(base, head, min_effect=settings.min_effect, alpha=level)
    return replace(verdict, method=f"{getattr(test, 'method', 'sequential')}, final look",
                   reason=f"{why} after {len(base)} of at most {test.max_pairs} pairs; final look at the level "
                          f"reserved for it (alpha {level:.3g}): {verdict.reason}")


def geometric_mean(values: list[float]) -> float:
    return math.exp(math.fsum(math.log(v) for v in values) / len(values)) if values else math.nan


def guards_of(st: CaseState, settings: GateSettings) -> list[Guard]:
    out = []
    for m in st.tests:
        base, head = st.complete(m)
        out.append(Guard(m, metric_verdict(st, m, settings), geometric_mean(base),
                         geometric_mean(head), len(base)))
    return out


def brief(metric: str) -> str:
    return metrics.get(metric).brief


def leading(guards: list[Guard], metric: str) -> Guard:
    """The guard whose verdict stands for the case: a regression (the largest), else the weakest
    inconclusive one (it bounds what the case rules out), else an improvement, else the gated metric."""
    def worst(values):
        return max(values, key=lambda v: v if math.isfinite(v) else -math.inf)

    by_word: dict[str, list[Guard]] = {}
    for g in guards:
        by_word.setdefault(g.verdict.verdict, []).append(g)
    if "regressed" in by_word:
        return max(by_word["regressed"], key=lambda g: worst([g.verdict.ratio]))
    if "inconclusive" in by_word:
        return max(by_word["inconclusive"], key=lambda g: worst([g.verdict.detectable]))
    if "improved" in by_word:
        return min(by_word["improved"], key=lambda g: g.verdict.ratio)
    return next((g for g in guards if g.metric == metric), guards[0])


def combined_verdict(guards: list[Guard], metric: str):
    """The case's verdict over its guarded timings, naming the one that decided and what the others found."""
    lead = leading(guards, metric)
    others = "; ".join(f"{brief(g.metric)} {g.verdict.verdict} ({fmt.factor(g.verdict.ratio)})"
                       for g in guards if g is not lead)
    tail = f" (other guarded timings: {others})" if others else ""
    return lead, replace(lead.verdict, reason=f"{brief(lead.metric)}: {lead.verdict.reason}{tail}")


def failure_test(st: CaseState):
    """Fisher's test on the timing samples' failures; None when neither side failed."""
    from .stats import compare_failures

    if not (st.failed["base"] or st.failed["head"]):
        return None
    return compare_failures(st.failed["base"], st.ok["base"] + st.failed["base"], st.failed["head"],
                            st.ok["head"] + st.failed["head"])


def with_failures(verdict, test, st: CaseState):
    """A head that fails significantly more often than its base regressed, whatever its times say."""
    if test is None or not test.regressed or verdict.verdict == "regressed" or st.stop in (BASE_BROKEN, HEAD_BROKEN):
        return verdict
    example = st.first_error.get("head")
    return replace(verdict, verdict="regressed", p_value=test.p_value, method="fisher-failures",
                   equivalent=False, detectable=math.nan, detectable_high=math.nan,
                   reason=f"{test.reason}" + (f"; e.g. {example}" if example else "")
                          + f" (the times of the complete pairs alone: {verdict.verdict}, {verdict.reason})")


def with_not_split(verdict, st: CaseState):
    """The verdict's reason, saying which guarded timings the case's backend never reports (and why)."""
    if not st.not_split:
        return verdict
    return replace(verdict, reason=f"{verdict.reason}; not guarded: " + "; ".join(st.not_split.values()))


def stop_after_pair(st: CaseState, settings: GateSettings, values: dict[str, float | None]) -> None:
    for role in ("base", "head"):
        if values[role] is None:
            st.stop = NO_METRIC
            return
    for role, broken in (("base", BASE_BROKEN), ("head", HEAD_BROKEN)):
        if st.streak[role] >= settings.max_failures:
            st.stop = broken if st.ok[role] == 0 else FAILING
            return
    if st.decided():
        ended = not st.regressed() and any(t.verdict().verdict == "inconclusive" for t in st.tests.values())
        st.stop = MAX_PAIRS if ended else DECIDED
    elif len(st.complete()[0]) >= max(t.max_pairs for t in st.tests.values()):
        st.stop = MAX_PAIRS  # a guarded timing missing from some pairs: its test ends here, with a final look


def not_settled_verdict(trail: "tiers.CaseTrail", st: CaseState):
    """Inconclusive: the selected tiers did not settle the case and the time tier was not selected."""
    found = "; ".join(f"{t.tier}: {t.verdict} ({t.reason})" for t in trail.steps) or "no tier ran"
    return failure_verdict("inconclusive", f"not settled by the selected tiers, and the time tier was not "
                            f"selected: {found}", st)


def time_context(st: CaseState) -> list[Figure]:
    """The gated timing over the pairs taken so far, as context for a verdict of a count tier."""
    base, head = st.complete()
    if not base:
        return []
    gb, gh = geometric_mean(base), geometric_mean(head)
    return [Figure(st.metric, tiers.TIME, gb, gh, gh / gb, None, None,
                   f"geometric mean of {len(base)} pair{'s' if len(base) != 1 else ''}", len(base))]


def count_context(trail: "tiers.CaseTrail") -> list[Figure]:
    """The first-gradient window's instruction count, as context for a verdict of the time tier."""
    for step in trail.steps:
        for e in step.evidence:
            if step.tier == tiers.INSTRUCTIONS and e["metric"] == "instructions":
                return [evidence_figure(step.tier, e)]
    return []


def settled_and_screened(st: CaseState, settings: GateSettings, trail: "tiers.CaseTrail", verdict, tier: str,
                          figure: Figure | None):
    """A case a count tier settled: its verdict stands unless the time tier's screen of the timings the counts
    do not cover found a regression. Either way the trail says what guarded those timings."""
    # a case the source tier settled ran one pair, whose timings are noise beside a proof: not shown as context
    context = [] if tier == tiers.SOURCE else time_context(st)
    if not st.screened:
        rest = tiers.uncounted_guards(settings.guard, trail.settled.step) if trail.settled.step else ()
        rest = tuple(m for m in rest if m not in st.not_split)
        if rest and verdict.verdict != "regressed" and tiers.TIME not in settings.tiers:
            names = ", ".join(brief(m) for m in rest)
            trail.steps.append(tiers.TierStep(tiers.TIME, False, "inconclusive",
                                                f"not run: {names} are not counted by the tiers before it, and the "
                                                "time tier was not selected, so they were not guarded"))
        return verdict, tier, figure, context, []
    if st.screen is not None and st.screen.short and not st.screen.escalated:  # ``time_screen.judge``: nothing gross
        trail.steps.append(tiers.TierStep(tiers.TIME, False, "inconclusive", st.screen.why))
        return verdict, tier, figure, context, []
    guards = guards_of(st, settings)
    lead, screened = combined_verdict(guards, settings.metric)
    escalated = f"short screen {st.screen.why}; " if st.screen is not None and st.screen.escalated else ""
    if screened.verdict == "regressed":
        return screened, tiers.TIME, lead.figure(), [figure] if figure else [], guards
    names = ", ".join(brief(g.metric) for g in guards)
    found = "; ".join(f"{brief(g.metric)} {verdict_words(g.verdict)}" for g in guards)
    trail.steps.append(tiers.TierStep(
        tiers.TIME, False, screened.verdict,
        f"{escalated}screen of what the counts do not cover ({names}), {lead.pairs} pairs, one look for gross "
        f"regressions: {found}"))
    return verdict, tier, figure, context, guards


def verdict_words(v) -> str:
    """``inconclusive (could detect ≥ 52 %)``, ``unchanged (1.003×)``: a guard's verdict in a few words."""
    if v.verdict == "inconclusive" and math.isfinite(v.detectable):
        return f"no regression shown (could detect ≥ {fmt.percent(v.detectable)})"
    return f"{v.verdict} ({fmt.factor(v.ratio)})"


def evidence_figure(tier: str, e: dict) -> Figure:
    """A count tier's evidence for one metric as a :class:`Figure` (medians, their ratio, the samples' range)."""
    n = max(e.get("n_base") or 0, e.get("n_head") or 0)
    statistic = "1 sample" if n == 1 else f"median of {n} samples"
    source = e.get("margin_source")
    if source and e.get("margin"):  # which margin decided, and where it came from (count_margins.Margin.source)
        statistic += f", margin ±{fmt.percent(e['margin'])} " + ("(default)" if source.startswith("default")
                                                                 else f"({source})")
    return Figure(e["metric"], tier, e.get("base"), e.get("head"), e.get("ratio"), e.get("ci_low"), e.get("ci_high"),
                  statistic, n)


def within_margins(changes: list, trail: "tiers.CaseTrail") -> list:
    """The explanation's compared rows (``compare.compare_results``, judged by each metric's registry threshold)
    made ``inconclusive`` where the count tier judged the same count within the case's own margin: a build count
    +1.1 % beyond the registry's 1 % but inside the case's ±4.5 % is no change. Before, such a row called for
    attribution: 8 processes of sampled stacks and calls (22 s) after an A/A gate of a jax library settled
    "unchanged" by that very count (2026-12-07)."""
    judged = {e["metric"]: e for step in trail.steps if step.tier == tiers.INSTRUCTIONS for e in step.evidence}
    out = []
    for row in changes:
        e = judged.get(row.metric)
        if e is not None and row.compared_as == "counter" and row.verdict.verdict in ("regressed", "improved") \
                and e.get("verdict") not in ("regressed", "improved"):
            margin = e.get("margin")
            within = f"within the case's margin (±{fmt.percent(margin)})" if margin else "not beyond the case's margin"
            row = replace(row, verdict=replace(row.verdict, verdict="inconclusive",
                                               reason=f"{row.verdict.reason}; {within} by the instructions tier: "
                                                      "not a change"))
        out.append(row)
    return out
