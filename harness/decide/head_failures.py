"""A head that failed, with too few complete pairs left to compare, is not a pass.

Why: a failed sample leaves its pair incomplete, and the timing test only sees the
complete pairs. A head that timed out in 2 of its 3 processes left one complete
pair: the final look said "inconclusive (at least 2 pairs are needed)", Fisher's
test on 0 of 3 against 2 of 3 failures is not significant at 10 % (p = 0.2), and the
gate exited 0, "no regression shown", with only the budget in its summary. Failures
that the head alone had are evidence that something broke; with too few complete
pairs there is also nothing to show the opposite. Such a case is held inconclusive
and the gate exits 2 (it could not compare), never 0: its stop is ``gate_outcome.HEAD_FAILING``.

The rule: the verdict is not already "regressed", the head failed more often than its
base, and the complete pairs are fewer than the gate's ``--min-pairs`` (the fewest
it ever decides on). A single flaky failure in a case that went on to its pairs is
left to the failure test, as before.
"""

from __future__ import annotations

from dataclasses import replace

from ..results.format import MAX_ERROR_CHARS, clip

__all__ = ["held_for_head_failures"]


def held_for_head_failures(verdict, failed: dict[str, int], attempted: int, complete_pairs: int, min_pairs: int,
                           first_error: dict[str, str]):
    """The verdict to report instead of ``verdict`` when the rule above holds, else None.

    Parameters
    ----------
    verdict : stats.Verdict
        The case's verdict so far (tiers, final look and failure test applied).
    failed : dict
        Failed timing samples per side (``base``, ``head``).
    attempted, complete_pairs, min_pairs : int
        Pairs started, pairs with both samples good, and the gate's ``--min-pairs``.
    first_error : dict
        The first error text per side that failed.
    """
    head, base = failed.get("head", 0), failed.get("base", 0)
    if verdict.verdict == "regressed" or head <= base or complete_pairs >= min_pairs:
        return None
    error = clip(first_error.get("head") or "unknown error", MAX_ERROR_CHARS)
    return replace(verdict, verdict="inconclusive", equivalent=False,
                   reason=f"head failed in {head} of {attempted} process(es), base in {base}, leaving "
                          f"{complete_pairs} complete pair(s), fewer than the {min_pairs} a decision needs: not a "
                          f"pass (the head's first error: {error}); the times alone said: {verdict.verdict}, "
                          f"{verdict.reason}")
