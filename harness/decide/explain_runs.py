"""The processes a gate takes after its decision, only to explain a regression: sampled stacks and Python calls.

Why apart from the loop (``gate_loop.py``): they decide nothing, run outside the budget, and only for a case that
regressed something; a side that cannot run, or an older base without the probe they need, costs the attribution
its function list, never the verdict.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from . import python_calls
from ..results.gate_outcome import BASE_BROKEN, HEAD_BROKEN, CaseOutcome

if TYPE_CHECKING:
    from .gate_policy import CaseState
    from ..measure.cases import Case
    from ..measure.sides import Side
    from ..results.model import Sample
    from ..results.writer import ResultsWriter

#: Takes one sample of a case on a side, as the gate takes them (cold, or warm from the side's cache folder):
#: ``(case, kind, index, role) -> Sample``.
Take = Callable[["Case", str, int, str], "Sample"]


def profile_regressions(outcomes: list[CaseOutcome], states: "list[CaseState]", writers: "dict[str, ResultsWriter]",
                        profiles: int, take: Take, on_note: Callable[[str], None] | None) -> None:
    """Sampled stacks of every regressed case, ``profiles`` processes per side, alternating.

    After the decision and outside the budget: they are only taken when there is a regression
    to explain, and a profile failing (an older base without the profile probe) costs the
    attribution its function list, never the verdict.
    """
    by_id = {st.case.id: st for st in states}
    for outcome in outcomes:
        st = by_id[outcome.case]
        if not outcome.regressed_anything() or BASE_BROKEN in (st.stop, outcome.stop) \
                or HEAD_BROKEN in (st.stop, outcome.stop):  # a side that cannot run has no stacks to compare
            continue
        for i in range(profiles):
            for role in ("base", "head") if i % 2 == 0 else ("head", "base"):
                sample = take(st.case, "profile", i, role)
                writers[role].append(st.case.id, sample)
                if on_note:
                    on_note(f"profile {role} {st.case.id}: "
                            + (f"{len(sample.profile_top or [])} functions" if sample.ok else f"failed: {sample.error}"))


def count_calls(outcomes: list[CaseOutcome], states: "list[CaseState]", sides: "dict[str, Side]",
                writers: "dict[str, ResultsWriter]", take: Take, on_note: Callable[[str], None] | None) -> None:
    """One calls process per side of every regressed case (``decide/python_calls.py``): counts repeat exactly, so
    one a side names the Python functions that grew. After the decision and outside the budget, like the stacks,
    and turned off with them (``--profiles 0``); a side that cannot run has nothing to count."""
    by_id = {st.case.id: st for st in states}
    for outcome in outcomes:
        st = by_id[outcome.case]
        if not outcome.regressed_anything() or {BASE_BROKEN, HEAD_BROKEN} & {st.stop, outcome.stop}:
            continue
        python_calls.take_calls(st.case, sides, lambda role, s: writers[role].append(st.case.id, s),
                                lambda role: take(st.case, "calls", 0, role), on_note)


__all__ = ["Take", "count_calls", "profile_regressions"]
