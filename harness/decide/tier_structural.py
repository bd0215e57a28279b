"""The structural tier (tier a): a timing pair's structural counters compared exactly, and a warm pair's cache misses.

The counters of one timing pair (jaxpr equations, HLO ops, Dynamo graphs, FX nodes, autograd
nodes, backend compiles ...), compared exactly. A counter that grew by at least the minimum
effect, or a strict one (``--strict-counters``; by default the discrete ones) that changed at
all, settles the case as regressed: the change made the work bigger. A smaller growth is
evidence, shown in every output, and the later tiers decide. Counters that only fell, or did not
change, settle nothing: a smaller graph is not yet a faster first gradient. The pair is the
wall-time tier's first pair as well, so it costs nothing extra when that tier runs.

In a warm gate the same pair's persistent-cache misses are compared too (:func:`cache_step`),
read through the counters of the caches the case's backend declares, then of jax's and Inductor's,
which the probe reads in every process whatever the backend (``measure/cache_watch.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from .. import fmt, metrics
from ..errors import UsageError
from .stored_first import first_pair
from .tier_step import CaseTrail, TierContext, TierStep, metric_evidence

if TYPE_CHECKING:
    from ..engines import PersistentCache
    from ..measure.cases import Case
    from ..results.model import Sample

STRUCTURAL = "structural"


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
        evidence.append(metric_evidence(metric, verdict, 0.0, [bv], [hv]))
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


def _cache_counts(sample: "Sample | None", caches) -> "tuple[PersistentCache, int, int] | None":
    """A warm sample's persistent-cache misses and hits, with the cache they are of, or None (cold, or none counted)."""
    if sample is None or not sample.ok or sample.cache != "warm":
        return None
    counters = sample.counters or {}
    for cache in caches:
        counts = cache.counts(counters)
        if counts is not None:
            return cache, *counts
    return None


def cache_step(base: "Sample | None", head: "Sample | None",
               caches: "tuple[PersistentCache, ...]" = ()) -> TierStep | None:
    """A structural check of warm samples, beside the counters: the persistent caches' misses, compared exactly.

    Each side's cache was populated by its own revision, so a head whose warm process misses
    where the base hits computes a different cache key in every process (a constant that
    changes between processes, an object's id in a traced function): every warm start is a
    cold one. That settles the case as regressed at once. ``caches`` are those the case's
    backend declares (``Backend.persistent_caches``), then the frameworks' (``engines.probe_caches``):
    the first whose counters both samples report is compared. None for cold samples, or when no cache
    lookups were counted.
    """
    found = {role: _cache_counts(s, caches) for role, s in (("base", base), ("head", head))}
    if found["base"] is None or found["head"] is None:
        return None
    cache, base_misses, base_hits = found["base"]
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
                        f"processes, so every warm start compiles again; {cache.miss_reasons()}", evidence)
    if head_misses < base_misses:
        return TierStep(STRUCTURAL, False, "improved", f"{counts}: the head's warm starts miss less; later tiers "
                        "decide", evidence)
    return TierStep(STRUCTURAL, False, "unchanged", f"{counts}: both warm starts read their caches alike", evidence)


class StructuralTier:
    """Tier (a): one timing pair per case, its counters (:func:`structural_step`), then its caches
    (:func:`cache_step`)."""

    name = STRUCTURAL
    needs = ("timing",)

    def run(self, cases: "list[Case]", trails: "dict[str, CaseTrail]",
            ctx: TierContext) -> "Iterator[tuple[Case, TierStep]]":
        from .. import engines

        for case in cases:
            if trails[case.id].settled:
                continue
            pair = first_pair(case, trails[case.id], ctx)
            yield case, structural_step(pair.get("base"), pair.get("head"), ctx.across_envs, ctx.min_effect, ctx.strict)
            declared = engines.facts(case.backend).caches  # a plugin's own first, then every framework's the probe reads
            cached = cache_step(pair.get("base"), pair.get("head"),
                                declared + tuple(c for c in engines.probe_caches() if c not in declared))
            if cached is not None:
                yield case, cached


__all__ = ["STRUCTURAL", "StructuralTier", "cache_step", "strict_counters", "structural_step"]
