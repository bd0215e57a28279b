"""The statistics never raise on data a real run can produce, however small or extreme.

A gate with ``--min-pairs 2`` and one outlier pair used to die with ``OverflowError``
in the t-interval (exit 1, read by CI as a regression). Hypothesis throws tiny and
extreme samples at every entry point the gate, compare and studies use.
"""

from __future__ import annotations

import math
import os

import pytest
from hypothesis import given, settings, strategies as st

from ttfg.decide import stats

#: Draws per property: 60 in make test, 200 in make test-all (TTFG_THOROUGH=1), where time is not short.
EXAMPLES = 200 if os.environ.get("TTFG_THOROUGH") else 60

times = st.floats(min_value=1e-9, max_value=1e9, allow_nan=False, allow_infinity=False)
levels = st.sampled_from([1e-6, 1e-4, 0.01, 0.05, 0.2])


def test_one_outlier_pair_at_min_pairs_2_gives_an_unbounded_interval_not_an_error():
    seq = stats.SequentialPairedTest(min_effect=0.05, alpha=0.01, min_pairs=2, max_pairs=3)
    seq.add(1.0, 1.0)
    seq.add(1.0, 1e6)  # one absurd outlier
    v = seq.verdict()
    assert v.verdict in stats.VERDICTS and v.verdict != "regressed"
    assert v.ci_high == math.inf and v.to_json()["ci_high"] is None


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(st.tuples(times, times), min_size=1, max_size=8), levels, st.integers(2, 4))
def test_sequential_test_never_raises(pairs, alpha, min_pairs):
    seq = stats.SequentialPairedTest(min_effect=0.05, alpha=alpha, min_pairs=min_pairs, max_pairs=min_pairs + 4)
    for b, h in pairs:
        if seq.done():
            break
        seq.add(b, h)
    v = seq.verdict()
    assert v.verdict in stats.VERDICTS
    assert not (math.isnan(v.ratio) and seq.n)


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(times, min_size=0, max_size=6), st.lists(times, min_size=0, max_size=6), levels)
def test_unpaired_and_paired_comparisons_never_raise(base, head, alpha):
    v = stats.compare_unpaired(base, head, min_effect=0.05, alpha=alpha)
    assert v.verdict in stats.VERDICTS
    n = min(len(base), len(head))
    p = stats.compare_paired(base[:n], head[:n], min_effect=0.05, alpha=alpha)
    assert p.verdict in stats.VERDICTS
    e = stats.paired_effect(base[:n], head[:n], alpha=alpha)
    assert e.n == n


def test_failures_are_evidence():
    assert stats.compare_failures(0, 4, 3, 4).regressed           # the reported repro: p = 0.071
    assert stats.compare_failures(0, 4, 4, 4).regressed           # head never ran
    assert not stats.compare_failures(0, 60, 1, 60).regressed     # one flaky timeout
    assert not stats.compare_failures(3, 4, 0, 4).regressed       # base worse: not head's regression
    assert not stats.compare_failures(2, 4, 2, 4).regressed
    assert stats.compare_failures(0, 4, 3, 4).to_json()["p_value"] == pytest.approx(1 / 14)



@pytest.mark.parametrize("base_failed, base_total, head_total", [(0, 4, 4), (3, 4, 4), (1, 60, 60), (5, 5, 3), (0, 1, 9)])
def test_a_head_that_never_failed_has_fishers_p_of_one_without_running_the_test(base_failed, base_total, head_total):
    """No head failure: P(head failures >= 0) = 1, which scipy's one-sided Fisher test gives too (the gate skips
    importing scipy.stats for it)."""
    from scipy.stats import fisher_exact

    found = stats.compare_failures(base_failed, base_total, 0, head_total)
    table = [[0, head_total], [base_failed, base_total - base_failed]]
    assert found.p_value == fisher_exact(table, alternative="greater").pvalue == 1.0 and not found.regressed
