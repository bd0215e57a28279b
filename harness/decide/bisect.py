"""The bisect's search policy: which commit to test next, and what a tested commit is.

Why a module of its own, and pure: ``git bisect`` assumes each test is exact; a
performance bisect's test is a paired comparison that can also end "not yet known", and a
commit can be untestable. The rules for both -- classifying a commit from its comparisons
with the two ends, choosing the next commit, telling "one culprit", "one of these commits"
and "two steps" apart -- are decisions on data, kept here with no git, process or file in
sight, so that tests drive them in milliseconds. ``app/bisect.py`` runs the comparisons
(``decide.gate_loop.run_gate``) and keeps the state; this module only reads it.

A commit M in the bracket (last known good L, first known bad H) is compared with L
(``base L, head M``) and, unless that already showed M unchanged, with H (``base M, head
H``). Each comparison's verdict is the gate's, tiers in order:

==========================  ==========================  ===========================
vs L (head M)               vs H (base M, head H)       M is
==========================  ==========================  ===========================
unchanged                   (not run)                   good (the step is after M)
regressed                   unchanged or inconclusive   bad (the step is at or before M)
inconclusive                regressed                   good
inconclusive                unchanged                   bad
regressed                   regressed                   between: two steps, one each side
regressed                   improved                    a turn (peak): worse than both ends
improved                    regressed                   a turn (dip): better than both ends
anything else                                           unknown (more pairs, or said so)
==========================  ==========================  ===========================

A turn is an answer, not a budget problem: the comparisons show the commit differs from
both ends in opposite directions, so the range holds a step into it and a step out of it,
one of each direction. The search keeps the side whose step goes the search's way (a
peak counts as bad: the step into it is the regression; a dip as good: the step out of
it is), and the other side is searched as a *reverse* search (:func:`turn_range`): the
same policy over the turn's other side with each comparison's commits swapped, so that
"regressed" there means a step the other way. Verdicts are in the search's direction
(``--improvement`` swaps base and head before they arrive here).

A commit that cannot be installed, imported or run is *skipped* (``git bisect skip``).
An unknown commit is tried again while ``retries`` allow (more pairs), then set aside
like a skipped one: the answer then names every commit the culprit can be, never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: What a tested commit is.
GOOD, BAD, BETWEEN, UNKNOWN, SKIPPED, TURN = "good", "bad", "between", "unknown", "skipped", "turn"
#: A turn's shape: worse than both ends (the step into it goes the search's way) or better (the step out of it does).
PEAK, DIP = "peak", "dip"
#: What one comparison said (the gate's verdicts, and "broken": a side that could not be measured).
REGRESSED, UNCHANGED, IMPROVED, INCONCLUSIVE, BROKEN = "regressed", "unchanged", "improved", "inconclusive", "broken"
#: How the ends compare, before any search.
ENDS_STEP, ENDS_SAME, ENDS_SWAPPED, ENDS_UNKNOWN = "step", "no step", "swapped", "unknown"
#: How a search ends.
FOUND, RANGE, RUNNING = "found", "range", "running"


def combined(verdicts: list[str]) -> str:
    """One comparison's verdict over the cases that carry the step: any regressed case regresses it, a broken
    side breaks it, every case unchanged leaves it unchanged; improvements alone (with unchanged cases) improve
    it; anything else is inconclusive."""
    if not verdicts:
        return BROKEN
    if BROKEN in verdicts:
        return BROKEN
    if REGRESSED in verdicts:
        return REGRESSED
    if all(v == UNCHANGED for v in verdicts):
        return UNCHANGED
    if IMPROVED in verdicts and all(v in (IMPROVED, UNCHANGED) for v in verdicts):
        return IMPROVED
    return INCONCLUSIVE


def ends(verdict: str) -> str:
    """What the comparison of the good end (base) with the bad end (head) means for the search."""
    return {REGRESSED: ENDS_STEP, UNCHANGED: ENDS_SAME, IMPROVED: ENDS_SWAPPED}.get(verdict, ENDS_UNKNOWN)


def needs_bad_side(vs_good: str) -> bool:
    """Whether the comparison with the bad end is needed after the one with the good end (see the table)."""
    return vs_good not in (UNCHANGED, BROKEN)


def classify(vs_good: str, vs_bad: str | None) -> str:
    """What a commit is, from its comparison with the good end (head = the commit) and with the bad end
    (base = the commit); ``vs_bad`` None when it was not run. See the module's table."""
    if BROKEN in (vs_good, vs_bad):
        return SKIPPED
    if vs_good == UNCHANGED:
        return GOOD
    if vs_good == REGRESSED:
        if vs_bad == REGRESSED:
            return BETWEEN
        if vs_bad == IMPROVED:
            return TURN
        return BAD if vs_bad in (UNCHANGED, INCONCLUSIVE, None) else UNKNOWN
    if vs_good == INCONCLUSIVE:
        return {REGRESSED: GOOD, UNCHANGED: BAD}.get(vs_bad, UNKNOWN)
    if vs_good == IMPROVED and vs_bad == REGRESSED:
        return TURN
    return UNKNOWN  # an improvement with nothing the other way: not a step the search can place


def turn_shape(vs_good: str) -> str:
    """A turn's shape from its comparison with the good end: PEAK when it regressed from there, else DIP."""
    return PEAK if vs_good == REGRESSED else DIP


def turn_counts_as(shape: str) -> str:
    """Which side the search keeps a turn on: a peak counts as bad (the step into it is the search's), a dip as
    good (the step out of it is)."""
    return BAD if shape == PEAK else GOOD


def turn_range(commits: list[str], at: int, lo: int, hi: int, shape: str) -> list[str]:
    """The commits of a turn's reverse search, its own good end first: for a peak at ``at`` (bracket ``lo``..``hi``
    when it was found) the peak to the bad end (the step out of it); for a dip the good end to the dip (the step
    into it)."""
    return commits[at:hi + 1] if shape == PEAK else commits[lo:at + 1]


def more_time_helps(stops: list[str]) -> bool:
    """Whether a larger per-comparison budget can decide what these comparisons' cases left undecided: only when
    one stopped on its budget (``budget``) or said nothing. A case that stopped at ``--max-pairs``, or that the
    selected tiers left unsettled (``decided`` with no verdict), is not helped by more time."""
    return not stops or any(s in ("budget", "", None) for s in stops)


@dataclass
class Probe:
    """One commit's finding so far: what it is, how many times it was tried, and for a commit between two
    steps, which side the search keeps (``counts_as``)."""

    commit: str
    state: str
    attempts: int = 1
    #: For the search: good or bad (BETWEEN: the side of the larger step); None for unknown and skipped.
    counts_as: str | None = None
    #: The comparisons' records (``app/bisect.py`` writes them; here they are only carried).
    evidence: list[dict] = field(default_factory=list)
    reason: str = ""

    def __post_init__(self):
        if self.counts_as is None and self.state in (GOOD, BAD):
            self.counts_as = self.state

    def to_json(self) -> dict:
        return {"commit": self.commit, "state": self.state, "attempts": self.attempts, "counts_as": self.counts_as,
                "evidence": self.evidence, "reason": self.reason}

    @classmethod
    def from_json(cls, data: dict) -> "Probe":
        return cls(str(data["commit"]), str(data["state"]), int(data.get("attempts") or 1), data.get("counts_as"),
                   list(data.get("evidence") or []), str(data.get("reason") or ""))


def larger_side(vs_good_ratio: float | None, vs_bad_ratio: float | None) -> str:
    """For a commit between two steps: BAD when the step before it (good end to it) is the larger, so the
    search goes on before it; GOOD when the step after it is. Unknown ratios keep the earlier step."""
    a = vs_good_ratio if vs_good_ratio is not None else 0.0
    b = vs_bad_ratio if vs_bad_ratio is not None else 0.0
    return GOOD if b > a else BAD


@dataclass
class Bracket:
    """The search's state over ``commits`` (the good end first, the bad end last)."""

    lo: int
    hi: int

    def width(self) -> int:
        return self.hi - self.lo


def bracket(commits: list[str], probes: dict[str, Probe]) -> Bracket:
    """The last commit that counts as good before the first that counts as bad (the ends count as themselves)."""
    n = len(commits)
    hi = next((i for i in range(1, n - 1) if (p := probes.get(commits[i])) and p.counts_as == BAD), n - 1)
    lo = max((i for i in range(1, hi) if (p := probes.get(commits[i])) and p.counts_as == GOOD), default=0)
    return Bracket(lo, hi)


def testable(probe: Probe | None, retries: int) -> bool:
    """Whether a commit inside the bracket may be tested (again): untested, or unknown with retries left."""
    return probe is None or probe.state == UNKNOWN and probe.attempts <= retries


def next_commit(commits: list[str], probes: dict[str, Probe], retries: int = 1) -> str | None:
    """The commit to test next: the testable one nearest the bracket's middle (the earlier on a tie);
    None when nothing inside the bracket can be tested any more."""
    b = bracket(commits, probes)
    inside = [i for i in range(b.lo + 1, b.hi) if testable(probes.get(commits[i]), retries)]
    if not inside:
        return None
    middle = (b.lo + b.hi) / 2
    return commits[min(inside, key=lambda i: (abs(i - middle), i))]


@dataclass
class Answer:
    """Where the search stands: FOUND (one culprit), RANGE (the culprit is one of ``candidates``: untestable or
    unknown commits hide it) or RUNNING; ``others`` are the ranges of further steps, as (good, bad) pairs."""

    status: str
    candidates: list[str]
    good: str
    bad: str
    others: list[tuple[str, str]] = field(default_factory=list)
    #: Commits set aside: skipped (untestable) and unknown after every retry.
    skipped: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)

    @property
    def culprit(self) -> str | None:
        return self.candidates[0] if self.status == FOUND else None


def answer(commits: list[str], probes: dict[str, Probe], retries: int = 1) -> Answer:
    """The search's answer from the probes so far."""
    b = bracket(commits, probes)
    others = []
    for i in range(1, len(commits) - 1):
        p = probes.get(commits[i])
        if p is not None and p.state == BETWEEN:  # the step on the side the search did not keep (a turn's other
            # step is searched, by a reverse search, not named as a range)
            if p.counts_as == BAD:
                later = next((j for j in range(i + 1, len(commits)) if j == len(commits) - 1
                              or (q := probes.get(commits[j])) and q.counts_as == BAD and q.state != BETWEEN),
                             len(commits) - 1)
                others.append((commits[i], commits[later]))
            else:
                earlier = max((j for j in range(0, i) if j == 0 or (q := probes.get(commits[j]))
                               and q.counts_as == GOOD and q.state != BETWEEN), default=0)
                others.append((commits[earlier], commits[i]))
    skipped = [c for c in commits[1:-1] if (p := probes.get(c)) and p.state == SKIPPED]
    unknown = [c for c in commits[1:-1] if (p := probes.get(c)) and p.state == UNKNOWN]
    good, bad = commits[b.lo], commits[b.hi]
    if next_commit(commits, probes, retries) is not None:
        return Answer(RUNNING, [], good, bad, others, skipped, unknown)
    candidates = commits[b.lo + 1:b.hi + 1]
    return Answer(FOUND if len(candidates) == 1 else RANGE, candidates, good, bad, others, skipped, unknown)


def most_steps(n_commits: int) -> int:
    """The steps a search of ``n_commits`` (both ends included) needs with every answer clear: ceil(log2(n - 1))."""
    steps, width = 0, max(1, n_commits - 1)
    while width > 1:
        width = (width + 1) // 2
        steps += 1
    return steps


__all__ = ["Answer", "BAD", "BETWEEN", "BROKEN", "Bracket", "DIP", "ENDS_SAME", "ENDS_STEP", "ENDS_SWAPPED",
           "ENDS_UNKNOWN", "FOUND", "GOOD", "IMPROVED", "INCONCLUSIVE", "PEAK", "Probe", "RANGE", "REGRESSED", "RUNNING",
           "SKIPPED", "TURN", "UNCHANGED", "UNKNOWN", "answer", "bracket", "classify", "combined", "ends",
           "larger_side", "more_time_helps", "most_steps", "needs_bad_side", "next_commit", "testable", "turn_counts_as",
           "turn_range", "turn_shape"]
