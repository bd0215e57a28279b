"""What a gate's case cost and already has, read from its sides' results: processes by tier, counts taken.

Why a module of its own: the gate loop decides what to run next; these read what ran (``CaseOutcome.cost`` for
gate.json, and how many allocation counts ``--allocations`` still needs), over both sides' writers, and nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import tiers

if TYPE_CHECKING:
    from ..results.writer import ResultsWriter


#: The tier each sample kind's processes are spent for (timing: the first pair is the structural tier's).
COST_TIERS = {"instructions": "instructions", "allocations": "instructions", "profile": "attribution", "calls": "attribution",
              "coverage": "coverage"}


def case_cost(case_id: str, writers: dict[str, ResultsWriter]) -> dict:
    """What one case cost, by tier, over both sides' samples: processes and their own wall time summed
    (``CaseOutcome.cost``). Warm-cache populating processes are not samples and are not counted; a count sample taken
    from the count store (no wall time: the store never keeps it) is no process of this gate, counted as ``stored``."""
    cost: dict[str, dict] = {}
    for writer in writers.values():
        case = writer.results.case(case_id)
        timed = [s.pair for s in (case.samples if case else []) if s.kind == "timing" and s.pair is not None]
        first = min(timed, default=None)
        for sample in case.samples if case else []:
            tier = COST_TIERS.get(sample.kind) or (tiers.STRUCTURAL if sample.pair == first else tiers.TIME)
            entry = cost.setdefault(tier, {"processes": 0, "seconds": 0.0})
            if sample.ok and sample.process_wall_s is None and sample.kind in tiers.count_kinds():
                entry["stored"] = entry.get("stored", 0) + 1  # from the count store: no process of this gate
                continue
            entry["processes"] += 1
            entry["seconds"] += sample.process_wall_s or 0.0
    return {t: {"processes": e["processes"], "seconds": round(e["seconds"], 3),
                **({"stored": e["stored"]} if e.get("stored") else {})} for t, e in cost.items()}


def allocations_taken(case_id: str, writers: dict[str, ResultsWriter]) -> int:
    """How many allocation counts each side of a case already has (the fewer side's): ``--allocations`` takes only
    the rest of its ``--alloc-repeat``.

    Why: the instructions tier already counts allocations (memray) on both sides of every case it runs, and a
    stored base's counts are in the base's file too; counting them again after the tiers gave two more processes a
    gate that decided nothing (its allocation counts are the same kind, explained the same way): 2 x 10-15 s on a
    loaded 2-core VM for a comment-only pull request of a small jax library (issue 39)."""
    found = []
    for writer in writers.values():
        case = writer.results.case(case_id)
        found.append(sum(s.kind == "allocations" and s.ok for s in (case.samples if case else [])))
    return min(found, default=0)
