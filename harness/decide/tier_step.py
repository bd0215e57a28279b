"""What every tier of the gate shares: the step it records per case, the trail, and the protocol a tier implements.

Why a protocol: the gate's tiers (``tiers.py`` lists them, in order) used to be an if-chain in
``run_tiers``, so adding one touched the chain, the loop's arguments and the gate. Now a tier is
an object with a ``name`` (what ``--tiers`` calls it), what it ``needs`` (the sample kinds it
takes), and ``run``, which yields a :class:`TierStep` per case it looked at; one loop
(``tiers.run_tiers``) runs the selected tiers in order and records every step (:func:`record`:
the trail, the settlement, a note). pytest's ``hookspec.py`` is the model: a plugin declares what
it provides through one named protocol, and the core loops over the implementations.

A tier takes its samples through the callables of a :class:`TierContext` (the gate passes
processes, tests pass in-process fakes) and reads a backend's facts through ``engines.facts``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterator, Protocol

from .. import metrics
# What one tier found for one case: a record of the layer below, where gate.json reads it back.
from ..results.gate_outcome import TierStep

if TYPE_CHECKING:
    from ..measure.cases import Case
    from .count_margins import Margin
    from ..results.model import Sample
    from .stats import Verdict
    from .source_proof import SourceProof
    from .stored_baseline import Baseline


def tier_metrics(tier: str) -> tuple[str, ...]:
    """The registry's metrics a count tier decides on (``Metric.tier``), in registry order."""
    return metrics.names(lambda m: m.tier == tier and not metrics.is_counter(m.name))


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
    #: The case's first timing pair (``{role: Sample}``), kept by the tier that took it for the tiers after it.
    first_pair: "dict[str, Sample] | None" = None
    #: The first pair's base came from the count store (``stored_first.py``): a good base process no results file
    #: of this gate holds.
    base_stored: bool = False

    @property
    def tier(self) -> str | None:
        return self.settled.tier if self.settled else None


def metric_evidence(metric: str, verdict: "Verdict", margin: float, base: list[float], head: list[float],
                    unsteady: bool = False) -> dict:
    """One metric's finding: medians, their ratio and the range the samples allow (None where 0 vs 0: no ratio)."""
    import statistics

    mb, mh = (statistics.median(v) if v else None for v in (base, head))
    measured = bool(mb or mh)
    return {"metric": metric, "base": mb, "head": mh, "ratio": verdict.ratio if measured else None,
            "ci_low": verdict.ci_low if measured else None, "ci_high": verdict.ci_high if measured else None,
            "margin": margin, "verdict": verdict.verdict, "n_base": len(base), "n_head": len(head),
            "unsteady": unsteady}


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


#: Samples the gate's wall-time tier: the paired, interleaved sequential tests of ``gate_loop`` over ``cases``,
#: reading the trails (what a tier before it settled, which it screens) and deciding by the states it keeps.
TimeLoop = Callable[["list[Case]", "dict[str, CaseTrail]"], None]


@dataclass
class TierContext:
    """What the gate gives its tiers: how to take samples, and the settings that judge them."""

    #: One interleaved timing pair of a case (the structural tier reads its counters; it is the time tier's first).
    take_pair: TakePair
    #: One sample of a kind for a case on a side (a count; base and head of one kind and round run at the same time),
    #: or the head's lone first timing process (``stored_first.py``).
    take_sample: TakeSample
    #: The selected tiers' names, in run order (``--tiers``).
    selected: tuple[str, ...] = ()
    #: Count samples per side, kind and case (``--count-repeat``).
    repeat: int = 1
    #: A counter grown by less settles nothing, unless it is strict (``--min-effect``, ``--strict-counters``; None:
    #: the registry's discrete counters).
    min_effect: float = 0.0
    strict: tuple[str, ...] | None = None
    #: Extra counts a side a count at its margin's edge gets (``--recount``).
    recount: int = 0
    #: The sides run in environments with different packages (``tier_structural.structural_step``).
    across_envs: bool = False
    #: A line of text per event worth telling (a tier's finding, a missing tool).
    note: Callable[[str], None] = lambda text: None
    #: The gate's sequential tests on timing pairs (``gate_loop``); None: no time tier can run here.
    timed: TimeLoop | None = None
    #: Case -> its count margins under both sides' keys (``count_margins.for_sides``); None: every case takes the
    #: default, saying the sides' conditions are unknown.
    margins: "Callable[[Case], dict[str, Margin]] | None" = None
    #: The stored base counts (``stored_baseline.Baseline``); None: every base count is taken afresh.
    baseline: "Baseline | None" = None
    #: Whether the head runs the base's program (``source_proof.SourceProof``, read from git by the gate); None: not
    #: asked (a bisect's step, a test), and the source tier looks at nothing.
    source: "SourceProof | None" = None


class Tier(Protocol):
    """One tier of the gate: registered in ``tiers.REGISTERED``, run in that order by ``tiers.run_tiers``."""

    #: Its name on the command line (``--tiers``), in every trail and in ``gate.json``.
    name: str
    #: The sample kinds it takes (``timing``, ``instructions``, ``allocations``).
    needs: tuple[str, ...]

    def run(self, cases: "list[Case]", trails: "dict[str, CaseTrail]",
            ctx: TierContext) -> "Iterator[tuple[Case, TierStep]]":
        """What it found per case, as it finds it (a settled step decides the case). ``trails`` say what the tiers
        before it found: a tier skips the cases they settled, or screens them."""
        ...


def record(trail: CaseTrail, step: TierStep, note: Callable[[str], None]) -> None:
    """A tier's step, on the case's trail (a settled one decides the case), and told."""
    trail.steps.append(step)
    if step.settled:
        trail.settled = Settlement(step.tier, settled_verdict(step), step)
    note(f"{step.tier} tier: {trail.case.id}: {step.verdict}{' (settled)' if step.settled else ''}: {step.reason}")


__all__ = ["CaseTrail", "Settlement", "TakePair", "TakeSample", "Tier", "TierContext", "TierStep", "TimeLoop",
           "deciding_evidence", "metric_evidence", "record", "settled_verdict", "tier_metrics"]
