"""The bisect's search policy (``decide/bisect.py``), driven by fake comparisons: milliseconds, no git, no process.

A fake history is a list of levels (one per commit, the good end first); a comparison of two
commits says "regressed" when the newer one's level is higher, "unchanged" when equal, and
whatever a test wants for commits it marks unknown or broken.
"""

from __future__ import annotations

import pytest

from ttfg.decide import bisect as search


def commits(n: int) -> list[str]:
    return [f"c{i:02d}" for i in range(n)]


def compare(levels, broken=(), unknown=()):
    """A fake comparison of commit indices: the gate's verdict of base ``a``, head ``b``."""
    def verdict(a: int, b: int) -> str:
        if a in broken or b in broken:
            return search.BROKEN
        if a in unknown or b in unknown:
            return search.INCONCLUSIVE
        return search.REGRESSED if levels[b] > levels[a] else search.IMPROVED if levels[b] < levels[a] \
            else search.UNCHANGED
    return verdict


def bisect(levels, broken=(), unknown=(), retries=1):
    """Run the policy to the end as ``app/bisect.py`` does; returns the answer and the commits tested, in order."""
    names = commits(len(levels))
    index = {c: i for i, c in enumerate(names)}
    verdict = compare(levels, broken, unknown)
    probes: dict[str, search.Probe] = {}
    path = []
    while (c := search.next_commit(names, probes, retries)) is not None:
        b = search.bracket(names, probes)
        m = index[c]
        vs_good = verdict(b.lo, m)
        vs_bad = verdict(m, b.hi) if search.needs_bad_side(vs_good) else None
        state = search.classify(vs_good, vs_bad)
        counts_as = None
        if state == search.BETWEEN:
            counts_as = search.larger_side(levels[m] - levels[b.lo], levels[b.hi] - levels[m])
        prior = probes.get(c)
        probes[c] = search.Probe(c, state, prior.attempts + 1 if prior else 1, counts_as)
        path.append(c)
        assert len(path) < 100
    return search.answer(names, probes, retries), path


@pytest.mark.parametrize("culprit", [1, 5, 16, 31])
def test_one_step_is_found_in_log2_steps_wherever_it_is(culprit):
    levels = [0] * culprit + [1] * (32 - culprit)
    answer, path = bisect(levels)
    assert answer.status == search.FOUND and answer.culprit == f"c{culprit:02d}"
    assert len(path) <= search.most_steps(32) == 5


def test_a_range_of_one_commit_needs_no_step():
    answer, path = bisect([0, 1])
    assert answer.status == search.FOUND and answer.culprit == "c01" and path == []


def test_skipped_commits_are_stepped_around_and_named_when_they_hide_the_culprit():
    levels = [0] * 6 + [1] * 4
    answer, path = bisect(levels, broken={5})
    assert answer.status == search.RANGE and answer.candidates == ["c05", "c06"]
    assert answer.skipped == ["c05"]
    answer, _ = bisect(levels, broken={4})  # a skipped commit away from the culprit changes nothing
    assert answer.status == search.FOUND and answer.culprit == "c06" and answer.skipped == ["c04"]


def test_an_unknown_commit_is_tried_again_then_set_aside_and_said_so():
    levels = [0] * 4 + [1] * 4
    answer, path = bisect(levels, unknown={4}, retries=1)
    assert path.count("c04") == 2  # one more try before it is set aside
    assert answer.status == search.RANGE and "c04" in answer.candidates and answer.unknown == ["c04"]
    _, path = bisect(levels, unknown={4}, retries=0)
    assert path.count("c04") == 1


def test_a_commit_between_two_steps_is_reported_with_the_other_steps_range():
    levels = [0, 0, 0, 1, 1, 1, 1, 3, 3]  # a small step at c03, a larger one at c07
    answer, path = bisect(levels)
    assert answer.status == search.FOUND and answer.culprit == "c07"
    assert len(answer.others) == 1
    good, bad = answer.others[0]
    assert commits(9).index(good) < 3 <= commits(9).index(bad)


@pytest.mark.parametrize("vs_good,vs_bad,state", [
    ("unchanged", None, "good"), ("regressed", "unchanged", "bad"), ("regressed", "inconclusive", "bad"),
    ("inconclusive", "regressed", "good"), ("inconclusive", "unchanged", "bad"), ("regressed", "regressed", "between"),
    ("inconclusive", "inconclusive", "unknown"), ("improved", "regressed", "turn"), ("regressed", "improved", "turn"),
    ("improved", "unchanged", "unknown"), ("improved", "inconclusive", "unknown"), ("broken", None, "skipped"),
    ("regressed", "broken", "skipped")])
def test_each_pair_of_comparisons_classifies_the_commit(vs_good, vs_bad, state):
    assert search.classify(vs_good, vs_bad) == state


def test_the_ends_say_step_no_step_swapped_or_unknown():
    assert search.ends("regressed") == search.ENDS_STEP
    assert search.ends("unchanged") == search.ENDS_SAME
    assert search.ends("improved") == search.ENDS_SWAPPED
    assert search.ends("inconclusive") == search.ENDS_UNKNOWN


def test_cases_combine_so_that_one_regressed_case_carries_the_step():
    assert search.combined(["unchanged", "regressed"]) == "regressed"
    assert search.combined(["unchanged", "unchanged"]) == "unchanged"
    assert search.combined(["unchanged", "inconclusive"]) == "inconclusive"
    assert search.combined(["improved", "unchanged"]) == "improved"
    assert search.combined(["regressed", "broken"]) == "broken"
    assert search.combined([]) == "broken"


def test_probes_round_trip_through_json():
    p = search.Probe("abc", search.BETWEEN, 2, search.GOOD, [{"against": "good"}], "why")
    assert search.Probe.from_json(p.to_json()) == p
