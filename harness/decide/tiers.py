"""The gate in tiers: settle what deterministic evidence can settle, spend wall time on the rest.

Why tiers: a wall-time gate on a 2-core machine needs about 56 cold pairs (7-8 minutes
for jax.jit resnet15) to see a 5 % change, and an A/A gate never ends better than
"inconclusive". Most changes move something that does not depend on load at all:

* **structural** (tier a): the structural counters of one timing pair (jaxpr
  equations, HLO ops, Dynamo graphs, FX nodes, autograd nodes, backend compiles ...),
  compared exactly. A counter that grew by at least the minimum effect, or a strict one
  (``--strict-counters``; by default the discrete ones) that changed at all, settles the case
  as regressed: the change made the work bigger. A smaller growth is evidence, shown in every
  output, and the later tiers decide. Counters that only fell, or did not change, settle nothing:
  a smaller graph is not yet a faster first gradient. The pair is the wall-time
  tier's first pair as well, so it costs nothing extra when that tier runs.
* **instructions** (tier b): instructions of the first-gradient window (callgrind,
  ``harness/measure/instructions.py``) and allocation counts (memray), a few
  processes per side, base and head at the same time (load changes neither count).
  Each metric's margin is the case's own (``count_margins.py``: calibrated from its
  same-code spread, else a conservative default that says so). Beyond it, the case is
  settled as regressed or improved; within half of it on every metric, as unchanged; at
  its edge, one more count a side, then the time tier. A phase under 50 M instructions is
  evidence only. Unchanged and improved are only settled when the
  instructions count the work: a backend that does part of its first gradient in
  child processes (Inductor's C++ compiler) declares that (``Backend.uncounted``),
  and its case goes on to wall time.
* **time** (tier c): the paired, interleaved sequential test of ``gate_loop.py`` on the
  cases the tiers before could not settle, within the budget.

Each case's outcome names the tier that decided it and keeps the trail of every tier
it went through (``TierStep``). The gate's loop stays in ``gate_loop.py``; this module holds
the policy and takes its samples through the callables the gate passes in, so tests
drive it with in-process samplers.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from .. import fmt, metrics
from ..errors import UsageError

if TYPE_CHECKING:
    from ..measure.cases import Case
    from .count_margins import Margin
    from .gate_settings import GateSettings
    from ..results.model import Sample
    from .stats import Verdict

STRUCTURAL, INSTRUCTIONS, TIME = "structural", "instructions", "time"
#: Every tier, in the order they run.
TIERS = (STRUCTURAL, INSTRUCTIONS, TIME)
#: What a CI user should run: the cheap exact tiers first, wall time only for what they leave.
DEFAULT_TIERS = TIERS


def parse_tiers(text: str | None) -> tuple[str, ...]:
    """``"structural,time"`` -> the named tiers in run order.

    Raises
    ------
    UsageError
        Naming the known tiers, for an unknown or empty list.
    """
    if text is None:
        return DEFAULT_TIERS
    names = [t.strip().lower() for t in str(text).split(",") if t.strip()]
    unknown = [t for t in names if t not in TIERS]
    if unknown or not names:
        raise UsageError(f"--tiers {text!r}: expected a comma-separated list of {', '.join(TIERS)} "
                         f"(default: {','.join(DEFAULT_TIERS)})")
    return tuple(t for t in TIERS if t in names)


def tier_metrics(tier: str) -> tuple[str, ...]:
    """The registry's metrics a count tier decides on (``Metric.tier``), in registry order."""
    return metrics.names(lambda m: m.tier == tier and not metrics.is_counter(m.name))


def uncounted_guards(guard: tuple[str, ...], step: "TierStep") -> tuple[str, ...]:
    """The guarded timings a settled instructions step did not cover (no count of theirs, ``Metric.counted_by``,
    on both sides, or one that was evidence only: a phase under ``count_margins.PHASE_FLOOR`` that moved). The
    import is never counted, so it is always among them."""
    counted = {e["metric"] for e in step.evidence if e.get("n_base") and e.get("n_head") and not e.get("evidence_only")}
    return tuple(m for m in guard if metrics.get(m).counted_by not in counted)


@dataclass
class TierStep:
    """What one tier found for one case."""

    tier: str
    #: True when this tier decided the case.
    settled: bool
    #: regressed, improved, unchanged, inconclusive (what the evidence says, settled or not).
    verdict: str
    reason: str
    #: Per metric: base and head values (medians), ratio, margin, verdict.
    evidence: list[dict] = field(default_factory=list)
    #: The first error of a sample this tier needed and could not get (a valgrind failure), else None.
    broken: str | None = None
    #: A count landed at the edge of its margin (``count_margins.judge``): one more count a side may settle it.
    edge: bool = False

    def to_json(self) -> dict:
        """The step as ``gate.json`` keeps it: the outcome's plain record's JSON (``gate_outcome.TierData``)."""
        from ..results.gate_outcome import TierData

        return TierData.of(self).to_json()


@dataclass
class Settlement:
    """A case decided before the wall-time tier: by which tier, with which verdict, on which metric's numbers."""

    tier: str
    verdict: "Verdict"
    step: TierStep | None = None

    @property
    def evidence(self) -> dict | None:
        return deciding_evidence(self.step) if self.step is not None else None


@dataclass
class CaseTrail:
    """Every tier a case went through; ``settled`` when one of them decided it."""

    case: "Case"
    steps: list[TierStep] = field(default_factory=list)
    settled: Settlement | None = None

    @property
    def tier(self) -> str | None:
        return self.settled.tier if self.settled else None


def _evidence(metric: str, verdict: "Verdict", margin: float, base: list[float], head: list[float],
              unsteady: bool = False) -> dict:
    """One metric's finding: medians, their ratio and the range the samples allow (None where 0 vs 0: no ratio)."""
    import statistics

    mb, mh = (statistics.median(v) if v else None for v in (base, head))
    measured = bool(mb or mh)
    return {"metric": metric, "base": mb, "head": mh, "ratio": verdict.ratio if measured else None,
            "ci_low": verdict.ci_low if measured else None, "ci_high": verdict.ci_high if measured else None,
            "margin": margin, "verdict": verdict.verdict, "n_base": len(base), "n_head": len(head),
            "unsteady": unsteady}


def strict_counters(names=None) -> tuple[str, ...]:
    """The structural counters a change of any size settles (``--strict-counters``): ``names`` (counter metric
    names, ``counters.`` optional, or ``none``), else the registry's discrete ones (``Metric.strict``).

    Raises
    ------
    UsageError
        For a name that is not a structural counter, naming them.
    """
    known = metrics.names(lambda m: m.tier == STRUCTURAL)
    if names is None:
        return metrics.names(lambda m: m.tier == STRUCTURAL and m.strict)
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    if [n.lower() for n in names] == ["none"]:
        return ()
    out = []
    for name in names:
        full = name if name.startswith(metrics.COUNTER_PREFIX) else metrics.COUNTER_PREFIX + name
        if full not in known:
            raise UsageError(f"--strict-counters {name!r}: not a structural counter; expected a comma-separated list "
                             f"of {', '.join(k[len(metrics.COUNTER_PREFIX):] for k in known)}, or none")
        out.append(full)
    return tuple(dict.fromkeys(out))


def structural_step(base: "Sample | None", head: "Sample | None", across_envs: bool = False,
                    min_effect: float = 0.0, strict: tuple[str, ...] | None = None) -> TierStep:
    """Tier (a): every structural counter of a base and a head timing sample, compared exactly.

    ``across_envs``: the sides run different framework releases (an upgrade gate, a dependency
    bump). A jaxpr or HLO count of another release is another compiler's view of the program,
    not the same program grown: it is shown as evidence and never settles the case (jax 0.4.38
    against 0.10.2 differ by one HLO op, 370 against 371, while their instructions differ by a
    third); the later tiers decide.

    ``min_effect``: a counter that grew by less is evidence, not a verdict, unless it is one of
    ``strict`` (:func:`strict_counters`; None: the registry's discrete counters). A refactor that
    added 3 HLO ops to 503 (+0.6 %) while its first gradient moved 0.98x failed CI on counters alone;
    the counts and the time decide such a case, and every output shows the growth. A counter that
    appeared, or grew by at least ``min_effect``, still settles the case at once.
    """
    from .stats import compare_counter

    strict = strict_counters() if strict is None else tuple(strict)
    if base is None or head is None or not base.ok or not head.ok:
        return TierStep(STRUCTURAL, False, "inconclusive", "no good timing sample on both sides to read counters from")
    b, h = base.counters or {}, head.counters or {}
    if not b and not h:
        return TierStep(STRUCTURAL, False, "inconclusive", "this backend reports no structural counters")
    evidence, grew, small, fell = [], [], [], []
    for name in sorted(set(b) | set(h)):
        metric = metrics.COUNTER_PREFIX + name
        bv, hv = b.get(name), h.get(name)
        if bv is None or hv is None:
            evidence.append({"metric": metric, "base": bv, "head": hv, "ratio": None, "ci_low": None, "ci_high": None,
                             "margin": 0.0, "verdict": "regressed" if bv is None else "improved", "n_base": 1,
                             "n_head": 1, "unsteady": False})
            (grew if bv is None else fell).append(f"{name} {'appeared' if bv is None else 'vanished'}")
            continue
        verdict = compare_counter([bv], [hv], threshold=0.0)
        evidence.append(_evidence(metric, verdict, 0.0, [bv], [hv]))
        if verdict.verdict == "regressed":
            large = metric in strict or not bv or hv / bv - 1 >= min_effect
            if large:
                by_rule = metric in strict and bv and hv / bv - 1 < min_effect
                grew.append(f"{name} {bv:g} -> {hv:g}" + (" (strict counter)" if by_rule else ""))
            else:
                small.append(f"{name} {bv:g} -> {hv:g} ({fmt.change(hv / bv - 1)})")
                evidence[-1]["below_min_effect"] = True
        elif verdict.verdict == "improved":
            fell.append(f"{name} {bv:g} -> {hv:g}")
    if (grew or small) and across_envs:
        return TierStep(STRUCTURAL, False, "regressed", "structural counters grew: " + ", ".join(grew + small)
                        + "; the sides run different framework releases, so this is evidence, not a verdict: "
                          "later tiers decide", evidence)
    if grew:
        return TierStep(STRUCTURAL, True, "regressed", "structural counters grew: " + ", ".join(grew + small)
                        + (f" (fell: {', '.join(fell)})" if fell else ""), evidence)
    if small:
        return TierStep(STRUCTURAL, False, "regressed", "structural counters grew by less than the minimum effect "
                        f"({fmt.percent(min_effect)}): " + ", ".join(small)
                        + (f" (fell: {', '.join(fell)})" if fell else "")
                        + "; evidence, not a verdict: the counts and the time decide", evidence)
    if fell:
        return TierStep(STRUCTURAL, False, "improved", "structural counters only fell (" + ", ".join(fell)
                        + "): a smaller graph is not yet a faster first gradient, so later tiers decide", evidence)
    return TierStep(STRUCTURAL, False, "unchanged", f"all structural counters are equal ({len(evidence)})", evidence)


#: Per backend family: the counters of a warm sample's persistent-cache lookups (lookups or misses, hits). JAX's
#: backend compile event spans the whole compile-or-read (jax 0.10.2: ``pxla`` times ``compile_or_get_cached``),
#: and with a warm cache every compile is looked up (no minimum compile time or size, ``target.child_environ``),
#: so its misses are its backend compiles less its hits; Inductor counts its misses itself.
CACHE_COUNTERS = {"JAX": ("backend_compiles", "persistent_cache_hits"),
                  "Inductor": ("fxgraph_cache_misses", "fxgraph_cache_hits")}


def _cache_counts(sample: "Sample") -> tuple[str, int, int] | None:
    """A warm sample's persistent-cache misses and hits, with the cache's family, or None (cold, or none counted)."""
    if sample is None or not sample.ok or sample.cache != "warm":
        return None
    counters = sample.counters or {}
    for family, (misses, hits) in CACHE_COUNTERS.items():
        if isinstance(counters.get(misses), int):
            hit = int(counters.get(hits) or 0)
            return family, max(counters[misses] - hit, 0) if family == "JAX" else counters[misses], hit
    return None


def _jax_explains_misses() -> str | None:
    """The installed jax's version when its ``jax_explain_cache_misses`` also names persistent-cache misses (read
    from its source files, without importing jax), else None."""
    from importlib import metadata
    from pathlib import Path

    try:
        dist = metadata.distribution("jax")
        text = Path(str(dist.locate_file("jax/_src/compiler.py"))).read_text()
    except (metadata.PackageNotFoundError, OSError, ValueError):
        return None
    return dist.version if "PERSISTENT COMPILATION CACHE MISS" in text else None


def cache_miss_reasons(family: str) -> str:
    """What the backend can say about which function's cache key changed."""
    if family == "JAX":
        version = _jax_explains_misses()
        if version:
            return (f"to name the function, run the head's case with JAX_EXPLAIN_CACHE_MISSES=1: jax {version}'s "
                    "jax_explain_cache_misses logs 'PERSISTENT COMPILATION CACHE MISS for <function>' with its key")
        return "the installed jax cannot name the function (its jax_explain_cache_misses does not log persistent misses)"
    return ("Inductor's cache-miss reasons are not available here (the probe does not collect them; "
            "TORCH_LOGS=+torch._inductor.codecache logs each FX graph's cache key details)")


def cache_step(base: "Sample | None", head: "Sample | None") -> TierStep | None:
    """A structural check of warm samples, beside the counters: the persistent caches' misses, compared exactly.

    Each side's cache was populated by its own revision, so a head whose warm process misses
    where the base hits computes a different cache key in every process (a constant that
    changes between processes, an object's id in a traced function): every warm start is a
    cold one. That settles the case as regressed at once. None for cold samples, or when
    the backend counts no cache lookups.
    """
    found = {role: _cache_counts(s) for role, s in (("base", base), ("head", head))}
    if found["base"] is None or found["head"] is None:
        return None
    family, base_misses, base_hits = found["base"]
    _, head_misses, head_hits = found["head"]
    evidence = [{"metric": metrics.COUNTER_PREFIX + "persistent_cache_misses", "base": base_misses,
                 "head": head_misses, "ratio": None, "ci_low": None, "ci_high": None, "margin": 0.0,
                 "verdict": ("regressed" if head_misses > base_misses else
                             "improved" if head_misses < base_misses else "unchanged"),
                 "n_base": 1, "n_head": 1, "unsteady": False},
                {"metric": metrics.COUNTER_PREFIX + "persistent_cache_hits", "base": base_hits, "head": head_hits,
                 "ratio": None, "ci_low": None, "ci_high": None, "margin": 0.0,
                 "verdict": ("regressed" if head_hits < base_hits else
                             "improved" if head_hits > base_hits else "unchanged"),
                 "n_base": 1, "n_head": 1, "unsteady": False}]
    counts = f"persistent cache misses {base_misses} -> {head_misses} (hits {base_hits} -> {head_hits})"
    if head_misses > base_misses:
        return TierStep(STRUCTURAL, True, "regressed", f"{counts}: the head's compile cache key changes between "
                        f"processes, so every warm start compiles again; {cache_miss_reasons(family)}", evidence)
    if head_misses < base_misses:
        return TierStep(STRUCTURAL, False, "improved", f"{counts}: the head's warm starts miss less; later tiers "
                        "decide", evidence)
    return TierStep(STRUCTURAL, False, "unchanged", f"{counts}: both warm starts read their caches alike", evidence)


def count_step(base: dict[str, list["Sample"]], head: dict[str, list["Sample"]], uncounted: str | None,
               unavailable: str | None = None, unsteady: dict[str, str] | None = None,
               margins: "dict[str, Margin] | None" = None) -> TierStep:
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
    """
    from . import count_margins
    from .stats import compare_counter

    evidence, regressed, improved, unchanged, missing, aside, edge = [], [], [], [], [], [], []
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
        found = _evidence(metric, verdict, margin.value, values["base"], values["head"],
                          bool(unsteady and metric in unsteady))
        found["margin_source"] = margin.source()
        evidence.append(found)
        if unsteady and metric in unsteady:
            aside.append(f"{metric}: not repeatable for this backend ({unsteady[metric]})")
            continue
        spread = [v for v in (verdict.ci_low, verdict.ci_high) if math.isfinite(v)]
        label = f"{info.brief} {fmt.change(verdict.ratio - 1)} ({margin.describe()})"
        judged = count_margins.judge(verdict.ratio, margin, min(len(values["base"]), len(values["head"])))
        short = (metric.startswith("instructions_")
                 and max(found["base"] or 0, found["head"] or 0) < count_margins.PHASE_FLOOR)
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


def deciding_evidence(step: TierStep) -> dict | None:
    """The metric whose numbers stand for a tier's verdict: for a regression the repeatable one that grew
    most; else the first-gradient window's instructions, where counted; never an unsteady count."""
    steady = [e for e in step.evidence if not e.get("unsteady") and not e.get("evidence_only")
              and e["verdict"] == step.verdict]
    if not steady:
        return None
    if step.verdict == "regressed":
        return max(steady, key=lambda e: math.inf if e["ratio"] is None else e["ratio"])
    return next((e for e in steady if e["metric"] == "instructions"), steady[0])


def settled_verdict(step: TierStep) -> "Verdict":
    """A settled tier step as the gate's verdict: the ratio and range of its deciding metric (``deciding_evidence``)."""
    from .stats import Verdict

    nan = math.nan
    e = deciding_evidence(step)
    number = lambda key: nan if e is None or e.get(key) is None else e[key]  # noqa: E731
    return Verdict(step.verdict, number("ratio"), number("ci_low"), number("ci_high"), nan,
                   e["n_base"] if e else 0, e["n_head"] if e else 0, f"tier {step.tier}", step.reason,
                   margin=number("margin"))


#: Takes one sample of a kind for a case on a side: ``(case, kind, index, role) -> Sample`` (and records it).
TakeSample = Callable[["Case", str, int, str], "Sample"]
#: Takes one interleaved timing pair for a case (the wall-time tier's first): ``case -> {role: Sample}``.
TakePair = Callable[["Case"], "dict[str, Sample]"]


def count_kinds() -> tuple[str, ...]:
    """The sample kinds the count tier needs, from the registry."""
    return tuple(dict.fromkeys(metrics.get(m).sample for m in tier_metrics(INSTRUCTIONS)))


def run_tiers(cases: list["Case"], tiers: tuple[str, ...], take_pair: TakePair, take_sample: TakeSample,
              repeat: int = 1, uncounted: Callable[[str], str | None] = lambda backend: None,
              on_note: Callable[[str], None] | None = None,
              unsteady: Callable[[str], dict[str, str]] = lambda backend: {},
              across_envs: bool = False, settings: "GateSettings | None" = None,
              margins: "Callable[[Case], dict[str, Margin]] | None" = None) -> dict[str, CaseTrail]:
    """Run the structural and count tiers over ``cases``; the trail of each, settled or not.

    Parameters
    ----------
    cases : list of Case
    tiers : tuple of str
        The selected tiers (``parse_tiers``); ``time`` is the gate's loop, not run here.
    take_pair : callable
        One interleaved timing pair for a case (tier a reads its counters).
    take_sample : callable
        One count sample; base and head of one kind and round run at the same time.
    repeat : int
        Count samples per side, kind and case.
    uncounted : callable
        Backend name -> the work its instruction count misses, or None.
    on_note : callable or None
        A line of text per event worth telling (a tier's finding, a missing tool).
    unsteady : callable
        Backend name -> {metric: why its count is not repeatable} (see :func:`count_step`).
    across_envs : bool
        The sides run in environments with different packages (:func:`structural_step`).
    settings : GateSettings or None
        Its ``min_effect`` and ``strict_counters`` judge structural growth (:func:`structural_step`), its
        ``recount`` bounds the extra counts a side a count at its margin's edge gets; None: any growth
        settles and no recount (as before the rules by size).
    margins : callable or None
        Case -> its count margins under the sides' keys (``count_margins.for_sides``); None: every case takes the
        default, saying the sides' conditions are unknown.
    """
    from ..measure import instructions as counting

    note = on_note or (lambda text: None)
    trails = {case.id: CaseTrail(case) for case in cases}
    min_effect = settings.min_effect if settings is not None else 0.0
    strict = settings.strict_counters if settings is not None else None
    recount = settings.recount if settings is not None else 0
    if STRUCTURAL in tiers:
        for case in cases:
            pair = take_pair(case)
            step = structural_step(pair.get("base"), pair.get("head"), across_envs, min_effect, strict)
            _record(trails[case.id], step, note)
            _record_cache_step(trails[case.id], pair, note)
    if INSTRUCTIONS not in tiers:
        return trails
    usable, why = counting.availability()
    if not usable:
        note(f"instructions tier: {why}")
    kinds = [k for k in count_kinds() if usable or k != "instructions"]
    with ThreadPoolExecutor(max_workers=2) as pool:
        try:
            _count_cases(cases, trails, kinds, pool, take_sample, repeat, uncounted, usable, why, note, unsteady,
                         recount, TIME in tiers, margins)
        except BaseException:  # Ctrl-C: end the probes in flight, or leaving the pool waits for them
            from ..measure.runner import stop_running_probes

            stop_running_probes()
            raise
    return trails


def _count_cases(cases, trails, kinds, pool, take_sample, repeat, uncounted, usable, why, note, unsteady,
                 recount: int = 0, timed: bool = True, margins_of=None) -> None:
    """The count tier's loop: per case, base and head of each kind and round at the same time; a case whose count
    lands at its margin's edge gets up to ``recount`` more rounds, one at a time, then goes to the time tier."""
    from .. import engines
    from . import count_margins

    for case in cases:
        trail = trails[case.id]
        if trail.settled:
            continue
        got: dict[str, dict[str, list]] = {"base": {}, "head": {}}
        margins = margins_of(case) if margins_of is not None else {
            m: count_margins.default_margin(m, engines.runs_on(case.backend), "the sides' conditions are unknown")
            for m in tier_metrics(INSTRUCTIONS)}

        def rounds(first: int, last: int) -> None:
            for kind in kinds:
                for i in range(first, last):
                    futures = {role: pool.submit(take_sample, case, kind, i, role) for role in ("base", "head")}
                    for role, fut in futures.items():
                        got[role].setdefault(kind, []).append(fut.result())

        def step_now() -> TierStep:
            return count_step(got["base"], got["head"], uncounted(case.backend), None if usable else why,
                              unsteady(case.backend), margins)

        rounds(0, repeat)
        step = step_now()
        extra = 0
        while step.edge and extra < recount:
            rounds(repeat + extra, repeat + extra + 1)
            extra += 1
            step = step_now()
        if step.edge:
            took = f"after {extra} more count(s) a side" if extra else "no more counts allowed (--recount 0)"
            step.reason += (f"; {took}: the time tier decides" if timed else
                            f"; {took}, and the time tier is not selected")
        _record(trail, step, note)


def _record_cache_step(trail: CaseTrail, pair: "dict[str, Sample]", note: Callable[[str], None]) -> None:
    """The warm pair's cache check (:func:`cache_step`), after the counters: a miss names the cause, so it decides."""
    step = cache_step(pair.get("base"), pair.get("head"))
    if step is not None:
        _record(trail, step, note)


def _record(trail: CaseTrail, step: TierStep, note: Callable[[str], None]) -> None:
    trail.steps.append(step)
    if step.settled:
        trail.settled = Settlement(step.tier, settled_verdict(step), step)
    note(f"{step.tier} tier: {trail.case.id}: {step.verdict}{' (settled)' if step.settled else ''}: {step.reason}")


__all__ = ["CaseTrail", "DEFAULT_TIERS", "INSTRUCTIONS", "STRUCTURAL", "Settlement", "TIERS", "TIME", "TierStep",
           "count_step", "deciding_evidence", "parse_tiers", "run_tiers", "settled_verdict", "strict_counters", "structural_step",
           "tier_metrics", "uncounted_guards"]
__all__ += ["CACHE_COUNTERS", "cache_miss_reasons", "cache_step"]  # the warm gate's check, kept apart from the list above
