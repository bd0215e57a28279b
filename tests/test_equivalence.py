"""Honest verdicts: "unchanged" only where two one-sided tests show it, "inconclusive" with the
smallest slowdown the run could have detected, and the words every output uses for them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ttfg.decide.stats.simulate import _simulate_logs
from ttfg.decide.stats import (SequentialPairedTest, compare_paired, compare_unpaired,
                                  detectable_effect, min_detectable_effect)
from ttfg.present.verdicts import verdict_label


def pairs_with(logs, base=1.0):
    """Base times and head times whose log ratios are exactly ``logs``."""
    b = [base * math.exp(0.01 * (i % 3)) for i in range(len(logs))]
    return b, [x * math.exp(d) for x, d in zip(b, logs)]


def test_tost_shows_equivalence_where_the_two_sided_interval_alone_would_not():
    """40 pairs with log-ratio SD 0.12 around 0: the 99 % interval reaches past +-5 %, the
    98 % interval (two one-sided tests at 1 %) does not: unchanged, within the band."""
    rng = np.random.default_rng(3)
    logs = rng.normal(0, 1, 40)
    logs = (logs - logs.mean()) / logs.std(ddof=1) * 0.12
    b, h = pairs_with(logs)
    v = compare_paired(b, h, min_effect=0.05, alpha=0.01)
    assert v.ci_high > 1.05 or v.ci_low < 1 / 1.05  # the old rule would say inconclusive
    assert v.verdict == "unchanged" and v.equivalent
    assert 1 / 1.05 <= v.eq_low < 1 < v.eq_high <= 1.05 and v.tost_p < 0.01
    assert "two one-sided tests" in v.reason and "98% CI" in v.reason
    assert verdict_label(v) == "unchanged (within ±5 %)"


def test_tost_p_and_the_interval_agree():
    rng = np.random.default_rng(5)
    for sd in (0.03, 0.06, 0.09, 0.12):
        logs = rng.normal(0.01, sd, 30)
        v = compare_paired(*pairs_with(logs), min_effect=0.05, alpha=0.01)
        inside = 1 / 1.05 <= v.eq_low and v.eq_high <= 1.05
        assert inside == (v.tost_p < 0.01), sd


def test_a_significant_change_below_the_minimum_is_not_called_equivalent():
    logs = np.full(30, math.log(1.03)) + np.tile([0.01, -0.01, 0.02, -0.02, 0.0], 6)
    v = compare_paired(*pairs_with(logs), min_effect=0.05, alpha=0.01)
    assert v.verdict == "unchanged" and v.p_value < 0.01
    assert v.equivalent == (v.eq_high <= 1.05)
    logs = np.full(12, math.log(1.035)) + np.tile([0.03, -0.03, 0.02, -0.02], 3)
    v = compare_paired(*pairs_with(logs), min_effect=0.05, alpha=0.01)
    assert v.verdict == "unchanged" and not v.equivalent and v.eq_high > 1.05
    assert verdict_label(v) == "unchanged (+3.5 %, under the 5 % minimum)"
    assert "not shown to be within" in v.reason


def test_an_inconclusive_verdict_states_what_it_could_have_detected():
    logs = np.tile([0.15, -0.12, 0.08, -0.05, 0.1, -0.1], 2)
    v = compare_paired(*pairs_with(logs), min_effect=0.05, alpha=0.01)
    assert v.verdict == "inconclusive"
    sd = float(np.std(logs, ddof=1))
    assert v.detectable == pytest.approx(min_detectable_effect(sd, 12, 0.01, min_effect=0.05))
    assert v.detectable > 0.05 and v.detectable_high > v.detectable
    assert "could detect a slowdown of" in v.reason and "may have passed unseen" in v.reason
    assert verdict_label(v).startswith("inconclusive (could detect ≥ ")


def test_detectable_effect_has_the_power_it_claims_for_the_regressed_rule():
    """Seeded simulation of the paired test at the claimed effect: about 95 % are flagged as
    "regressed" (significant and the estimate at least the minimum effect)."""
    from scipy import special

    sd, n, alpha, m = 0.1, 20, 0.01, 0.05
    effect = min_detectable_effect(sd, n, alpha, min_effect=m)
    assert effect > min_detectable_effect(sd, n, alpha) and effect > m
    rng = np.random.default_rng(11)
    logs = rng.normal(math.log1p(effect), sd, (4000, n))
    mean, s = logs.mean(axis=1), logs.std(axis=1, ddof=1)
    t = mean / (s / math.sqrt(n))
    flagged = (t > special.stdtrit(n - 1, 1 - alpha / 2)) & (np.exp(mean) >= 1 + m)
    assert flagged.mean() == pytest.approx(0.95, abs=0.015)
    assert min_detectable_effect(0.0, 10, min_effect=m) == m
    assert all(math.isnan(x) for x in detectable_effect(math.nan, 10, 0.01, m))


def test_unpaired_equivalence_by_two_one_sided_rank_tests():
    rng = np.random.default_rng(2)
    b = list(np.exp(rng.normal(0, 0.01, 20)))
    h = list(np.exp(rng.normal(0, 0.01, 20)))
    v = compare_unpaired(b, h, min_effect=0.05, alpha=0.01)
    assert v.verdict == "unchanged" and v.equivalent and v.tost_p < 0.01
    noisy = compare_unpaired(b[:4], [x * 1.06 for x in h[:4]], min_effect=0.05, alpha=0.01)
    assert noisy.verdict == "inconclusive" and not noisy.equivalent


def test_unpaired_inconclusive_states_an_approximate_detectable_effect():
    rng = np.random.default_rng(4)
    b = list(np.exp(rng.normal(0, 0.1, 6)))
    h = list(np.exp(rng.normal(0.03, 0.1, 6)))
    v = compare_unpaired(b, h, min_effect=0.05, alpha=0.01)
    assert v.verdict == "inconclusive" and v.detectable > 0.05
    assert "could detect a slowdown of about" in v.reason


def test_sequential_looks_keep_false_equivalence_below_alpha():
    """A true 5 % slowdown (the band's edge) is called "within +-5 %" by at most about alpha of gates."""
    rng = np.random.default_rng(1)
    lb, lh = _simulate_logs(300, 60, 0.05, 0.06, 0.05, rng)
    equivalent = 0
    for t in range(300):
        test = SequentialPairedTest()
        for b, h in zip(np.exp(lb[t]), np.exp(lh[t])):
            test.add(b, h)
            if test.done():
                break
        equivalent += test.verdict().equivalent
    assert equivalent / 300 <= 0.02


def test_a_quiet_aa_gate_ends_unchanged_within_the_band():
    rng = np.random.default_rng(8)
    lb, lh = _simulate_logs(50, 60, 0.0, 0.06, 0.05, rng)
    verdicts = []
    for t in range(50):
        test = SequentialPairedTest()
        for b, h in zip(np.exp(lb[t]), np.exp(lh[t])):
            test.add(b, h)
            if test.done():
                break
        verdicts.append(test.verdict())
    assert not any(v.verdict == "regressed" for v in verdicts)
    assert sum(v.equivalent for v in verdicts) >= 40
    assert all(math.isfinite(v.detectable) for v in verdicts if v.verdict == "inconclusive")
