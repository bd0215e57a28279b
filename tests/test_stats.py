"""ttfg.decide.stats on synthetic data with known answers; every random generator is seeded."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from scipy import stats as sps

from ttfg.decide import stats as S
from ttfg.decide.stats import simulate, unpaired
from ttfg.decide.stats import (
    VERDICTS, Effect, PowerLawFit, SequentialPairedTest, Summary, Verdict, compare_counter, compare_paired,
    compare_unpaired, decide, false_alarm_rate, fit_power_law, linearity, paired_effect, power, simulate_pairs,
    summarize,
)


def lognormal(rng, n, ratio=1.0, sd=0.15):
    return ratio * np.exp(rng.normal(0.0, sd, n))


# --------------------------------------------------------------------------- summarize


def test_summarize_known_values():
    s = summarize([1.0, 2.0, 3.0, 4.0])
    assert (s.n, s.median, s.mean, s.min, s.max) == (4, 2.5, 2.5, 1.0, 4.0)
    assert s.cv == pytest.approx(np.std([1, 2, 3, 4], ddof=1) / 2.5)


def test_summarize_ignores_nan_and_handles_small_n():
    assert summarize([1.0, math.nan, 3.0]) == summarize([1.0, 3.0])
    one = summarize([2.0, math.nan])
    assert one.n == 1 and one.median == 2.0 and math.isnan(one.cv)
    empty = summarize([math.nan])
    assert empty.n == 0
    assert all(math.isnan(getattr(empty, f)) for f in ("median", "mean", "min", "max", "cv"))
    assert summarize([]).n == 0


def test_to_json_is_plain_and_strict():
    payload = summarize([math.nan]).to_json()
    assert payload == {"n": 0, "median": None, "mean": None, "min": None, "max": None, "cv": None}
    v = compare_counter([5, 5], [5, 5]).to_json()
    assert v["p_value"] is None and v["verdict"] == "unchanged"
    json.dumps(v, allow_nan=False)
    json.dumps(Effect(1.0, 0.9, 1.1, 0.5, 3).to_json(), allow_nan=False)
    json.dumps(PowerLawFit(0.1, 1.0, 1.0, math.nan, math.nan, 3, "x").to_json(), allow_nan=False)


# --------------------------------------------------------------------------- decide


@pytest.mark.parametrize("args, expected", [
    ((1.30, 1.20, 1.40, 1e-6), "regressed"),
    ((1.05, 1.01, 1.09, 1e-3), "regressed"),          # exactly the minimum effect counts
    ((0.75, 0.70, 0.80, 1e-6), "improved"),
    ((1.00, 0.98, 1.02, 0.90), "unchanged"),          # equivalence shown
    ((1.02, 1.01, 1.03, 1e-5), "unchanged"),          # significant but below the minimum effect
    ((0.97, 0.96, 0.98, 1e-5), "unchanged"),
    ((1.10, 0.95, 1.27, 0.20), "inconclusive"),       # interval reaches beyond the band
    ((1.30, 1.20, 1.40, 0.02), "inconclusive"),       # p above alpha: not significant
    ((math.nan, math.nan, math.nan, math.nan), "inconclusive"),
])
def test_decide_rule(args, expected):
    verdict, reason = decide(*args, min_effect=0.05, alpha=0.01)
    assert verdict == expected and verdict in VERDICTS
    assert isinstance(reason, str) and reason and "\n" not in reason


def test_decide_rejects_bad_levels():
    with pytest.raises(ValueError):
        decide(1.0, 0.9, 1.1, 0.5, min_effect=0.05, alpha=1.5)
    with pytest.raises(ValueError):
        decide(1.0, 0.9, 1.1, 0.5, min_effect=0.0, alpha=0.01)


# --------------------------------------------------------------------------- paired


def test_paired_clear_regression_flagged():
    base, head = simulate_pairs(20, shift=0.30, rng=1)
    v = compare_paired(base, head)
    assert v.verdict == "regressed" and v.method == "paired-t-log"
    assert v.ci_low <= 1.30 <= v.ci_high and v.p_value < 0.01
    assert (v.n_base, v.n_head) == (20, 20)
    assert "slower" in v.reason


def test_paired_improvement_detected():
    base, head = simulate_pairs(20, shift=-0.25, rng=2)
    v = compare_paired(base, head)
    assert v.verdict == "improved" and v.ci_low <= 0.75 <= v.ci_high


def test_paired_identical_samples_unchanged():
    base = lognormal(np.random.default_rng(3), 10)
    v = compare_paired(base, base.copy())
    assert v.verdict == "unchanged" and v.ratio == 1.0 and v.ci_low == v.ci_high == 1.0


def test_paired_constant_ratio_without_noise_is_exact():
    base = lognormal(np.random.default_rng(4), 6)
    v = compare_paired(base, base * 1.3)
    assert v.verdict == "regressed" and v.ratio == pytest.approx(1.3) and v.p_value < 1e-12
    assert v.ci_low == pytest.approx(1.3) and v.ci_high == pytest.approx(1.3)


def test_paired_three_noisy_pairs_inconclusive():
    base, head = simulate_pairs(3, shift=0.10, rng=5)
    v = compare_paired(base, head)
    assert v.verdict == "inconclusive" and v.ci_low < 1 / 1.05 and v.ci_high > 1.05


def test_paired_matches_scipy_ttest():
    base, head = simulate_pairs(15, shift=0.08, rng=6)
    logr = np.log(head / base)
    ref = sps.ttest_1samp(logr, 0.0)
    ci = ref.confidence_interval(0.99)
    v = compare_paired(base, head, alpha=0.01)
    assert v.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    assert (v.ci_low, v.ci_high) == pytest.approx((math.exp(ci.low), math.exp(ci.high)), rel=1e-9)
    assert v.ratio == pytest.approx(math.exp(logr.mean()))


def test_paired_drops_nan_pairs_and_needs_two():
    base, head = simulate_pairs(8, shift=0.30, rng=7)
    base[2], head[5] = math.nan, math.nan
    v = compare_paired(base, head)
    assert v.n_base == v.n_head == 6
    assert v == compare_paired(np.delete(base, [2, 5]), np.delete(head, [2, 5]))
    one = compare_paired([1.0, math.nan], [1.2, 1.0])
    assert one.verdict == "inconclusive" and one.n_base == 1 and math.isnan(one.p_value)
    assert compare_paired([], []).verdict == "inconclusive"


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf])
def test_timings_must_be_positive_and_finite(bad):
    with pytest.raises(ValueError, match="positive and finite"):
        compare_paired([1.0, bad, 1.0], [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="positive and finite"):
        compare_unpaired([1.0, 1.1, 1.2], [1.0, bad, 1.0])
    with pytest.raises(ValueError, match="positive and finite"):
        paired_effect([1.0, 1.0], [bad, 1.0])
    with pytest.raises(ValueError, match="positive and finite"):
        fit_power_law([1, 2, 4], [1.0, bad, 2.0], n_boot=10)
    with pytest.raises(ValueError, match="positive and finite"):
        SequentialPairedTest().add(1.0, bad)


def test_paired_unequal_lengths():
    with pytest.raises(ValueError, match="equal lengths"):
        compare_paired([1.0, 2.0], [1.0])


# --------------------------------------------------------------------------- unpaired


def test_unpaired_clear_regression_and_improvement():
    rng = np.random.default_rng(10)
    base = lognormal(rng, 20)
    v = compare_unpaired(base, lognormal(rng, 25, 1.3))
    assert v.verdict == "regressed" and v.method == "mann-whitney-hl"
    assert v.ci_low <= 1.3 <= v.ci_high and (v.n_base, v.n_head) == (20, 25)
    w = compare_unpaired(base, lognormal(rng, 20, 0.7))
    assert w.verdict == "improved" and w.ci_low <= 0.7 <= w.ci_high


def test_unpaired_same_distribution_not_flagged():
    rng = np.random.default_rng(11)
    flagged = 0
    for _ in range(200):
        v = compare_unpaired(lognormal(rng, 12), lognormal(rng, 12))
        flagged += v.verdict in ("regressed", "improved")
    assert flagged <= 4  # alpha = 1 % two-sided: ~2 expected


def test_unpaired_interval_covers_true_ratio():
    rng = np.random.default_rng(12)
    covered = sum(
        (v := compare_unpaired(lognormal(rng, 10), lognormal(rng, 10, 1.2), alpha=0.05)).ci_low <= 1.2 <= v.ci_high
        for _ in range(300)
    )
    assert covered / 300 >= 0.92  # nominal 95 %, exact for continuous data


def test_unpaired_hl_estimate_is_median_of_pairwise_ratios():
    base, head = [1.0, 2.0, 4.0], [3.0, 5.0, 8.0, 16.0]
    expected = math.exp(np.median([math.log(h / b) for b in base for h in head]))  # geometric: on logs
    assert compare_unpaired(base, head).ratio == pytest.approx(expected)


def test_unpaired_small_samples_inconclusive():
    v = compare_unpaired([1.0, 1.1], [2.0, 2.1])
    assert v.verdict == "inconclusive" and "too few" in v.reason
    w = compare_unpaired([1.0, math.nan], [2.0, 2.1, 2.2])
    assert w.verdict == "inconclusive" and w.n_base == 1
    same = compare_unpaired([1.0] * 5, [1.0] * 5)
    assert same.ratio == 1.0 and same.p_value == 1.0


@pytest.mark.parametrize("m, n", [(1, 1), (2, 3), (3, 4), (4, 6), (5, 5)])
def test_mann_whitney_null_distribution_exact(m, n):
    counts = np.zeros(m * n + 1)
    for xs in itertools.combinations(range(m + n), m):
        ys = [j for j in range(m + n) if j not in xs]
        counts[sum(y < x for x in xs for y in ys)] += 1
    assert unpaired._mwu_null_cdf(m, n) == pytest.approx(np.cumsum(counts) / counts.sum(), abs=1e-12)


# --------------------------------------------------------------------------- counters


def test_counter_half_percent_unchanged_two_percent_regressed():
    base = [1_000_000, 1_000_000, 1_000_100]
    v = compare_counter(base, [1_005_000] * 3, threshold=0.01)
    assert v.verdict == "unchanged" and v.ratio == pytest.approx(1.005)
    assert v.method == "counter-threshold" and math.isnan(v.p_value)
    w = compare_counter(base, [1_020_000] * 3, threshold=0.01)
    assert w.verdict == "regressed" and w.ratio == pytest.approx(1.02)
    x = compare_counter(base, [980_000] * 3, threshold=0.01)
    assert x.verdict == "improved"


def test_counter_zero_counts_and_bad_values():
    assert compare_counter([0, 0], [0, 0]).verdict == "unchanged"
    v = compare_counter([0], [3])
    assert v.verdict == "regressed" and math.isinf(v.ratio)
    assert compare_counter([math.nan], [1]).verdict == "inconclusive"
    with pytest.raises(ValueError, match="non-negative"):
        compare_counter([-1, 2], [2, 2])


def test_counter_flags_non_deterministic_spread():
    v = compare_counter([100, 110, 90], [100, 100, 100])
    assert v.verdict == "unchanged" and "not deterministic" in v.reason


# --------------------------------------------------------------------------- simulation


def test_simulation_is_seeded_and_calibrated():
    b1, h1 = simulate_pairs(60, rng=42)
    b2, h2 = simulate_pairs(60, rng=42)
    assert np.array_equal(b1, b2) and np.array_equal(h1, h2) and b1.shape == (60,)
    # Per-pair log-ratio SD matches the CI machine's measured 0.13-0.15 at the gate's budget.
    lb, lh = simulate._simulate_logs(4000, 60, 0.0, 0.10, 0.3, np.random.default_rng(0))
    sd = float(np.std(lh - lb))
    assert 0.13 <= sd <= 0.15
    assert sd == pytest.approx(S.paired_log_sd(0.10, 0.3, 60), rel=0.02)
    # Single samples drift far more than pairs do: the reason for interleaving.
    assert float(np.mean(np.std(lb, axis=1))) > 0.14
    # The shift is multiplicative on head.
    lb, lh = simulate._simulate_logs(4000, 60, 0.10, 0.10, 0.3, np.random.default_rng(1))
    assert math.exp(float(np.mean(lh - lb))) == pytest.approx(1.10, rel=0.005)


def test_interleaving_cancels_a_linear_trend():
    """With A B B A ordering a steady slow-down adds no bias to the mean log ratio."""
    n = 40
    slot_drift = np.linspace(0.0, 0.5, 2 * n)  # machine gets 65 % slower over the run
    i = np.arange(n)
    base = np.exp(slot_drift[2 * i + i % 2])
    head = np.exp(slot_drift[2 * i + 1 - i % 2])
    assert compare_paired(base, head).ratio == pytest.approx(1.0, abs=1e-12)


# --------------------------------------------------------------------------- sequential gate


def test_sequential_schedule_spends_exactly_alpha():
    t = SequentialPairedTest()
    assert t.looks[0] == 5 and t.looks[-1] == 60 and len(t.looks) == 56
    assert sum(t.look_alphas) == pytest.approx(0.01)
    assert t.look_alphas[-1] == pytest.approx(0.009)
    u = SequentialPairedTest(min_pairs=10, max_pairs=40, look_every=10)
    assert u.looks == (10, 20, 30, 40) and sum(u.look_alphas) == pytest.approx(0.01)
    single = SequentialPairedTest(min_pairs=30, max_pairs=30)
    assert single.looks == (30,) and single.look_alphas == (0.01,)
    for bad in ({"min_pairs": 1}, {"max_pairs": 3}, {"look_every": 0}, {"alpha": 0}, {"interim_share": 1.0}):
        with pytest.raises(ValueError):
            SequentialPairedTest(**bad)


def test_sequential_single_look_equals_fixed_test():
    base, head = simulate_pairs(30, shift=0.07, rng=20)
    t = SequentialPairedTest(min_pairs=30, max_pairs=30)
    for b, h in zip(base, head):
        t.add(b, h)
    v, ref = t.verdict(), compare_paired(base, head)
    assert t.done()
    assert v.verdict == ref.verdict
    assert (v.ratio, v.ci_low, v.ci_high, v.p_value) == pytest.approx(
        (ref.ratio, ref.ci_low, ref.ci_high, ref.p_value), rel=1e-9)


def test_sequential_stops_early_on_gross_regression_and_is_final():
    base, head = simulate_pairs(60, shift=0.30, rng=21)
    t = SequentialPairedTest()
    assert t.verdict().verdict == "inconclusive" and not t.done()
    for b, h in zip(base, head):
        t.add(b, h)
        if t.done():
            break
    v = t.verdict()
    assert v.verdict == "regressed" and t.n < 30 and v.method == "sequential-paired-t-log"
    assert "look" in v.reason
    with pytest.raises(RuntimeError):
        t.add(1.0, 1.0)


def test_sequential_nan_pairs_do_not_count_and_budget_ends_it():
    t = SequentialPairedTest(min_pairs=3, max_pairs=4)
    t.add(1.0, math.nan)
    assert t.n == 0 and t.n_dropped == 1
    for b, h in [(1.0, 1.3), (1.0, 0.8), (1.0, 1.1), (1.0, 0.95)]:
        t.add(b, h)
    assert t.done() and t.n == 4 and t.verdict().verdict == "inconclusive"
    assert "budget" in t.verdict().reason


def test_false_alarm_rate_at_most_one_percent():
    """2000 A/A comparisons with lognormal noise plus drift, the gate at its defaults."""
    rate = false_alarm_rate(trials=2000, seed=1)
    assert rate <= 0.01


def test_false_alarm_rate_holds_with_noisier_machine():
    """Type-I control does not depend on the noise level: per-sample SD 0.15 (paired SD 0.21)."""
    assert false_alarm_rate(trials=1000, seed=2, sample_sd=0.15, drift_sd=0.5) <= 0.01


def test_power_for_ten_percent_shift():
    """At the default budget (60 pairs) for the default noise (paired SD 0.144) and for SD 0.15."""
    assert power(0.10, trials=1000, seed=3) >= 0.95
    assert S.paired_log_sd(0.105, 0.3, 60) == pytest.approx(0.151, abs=0.001)
    assert power(0.10, trials=1000, seed=4, sample_sd=0.105) >= 0.95


def test_simulate_gate_rejects_unknown_arguments():
    with pytest.raises(TypeError, match="unknown"):
        S.simulate_gate(10, sample_ssd=0.1)


# --------------------------------------------------------------------------- study fits

#: Seven depths over 1.8 decades, 8 cold samples each: the kind of design that separates
#: linear from quadratic growth when a constant overhead is present.
DEPTHS = np.repeat([2, 4, 8, 16, 32, 64, 128], 8).astype(float)


def synthetic_times(k, seed, a=0.5, b=0.05, sd=0.1):
    rng = np.random.default_rng(seed)
    return (a + b * DEPTHS**k) * np.exp(rng.normal(0.0, sd, DEPTHS.size))


def test_power_law_recovers_linear():
    fit = fit_power_law(DEPTHS, synthetic_times(1.0, seed=31))
    assert fit.k_ci_low <= 1.0 <= fit.k_ci_high
    assert linearity(fit) == "linear"
    assert fit.n == DEPTHS.size and "stratified" in fit.method
    assert fit.a == pytest.approx(0.5, rel=0.3) and fit.b == pytest.approx(0.05, rel=0.3)
    assert fit.predict(64) == pytest.approx(0.5 + 0.05 * 64, rel=0.1)
    assert fit.predict(np.array([2.0, 4.0])).shape == (2,)


def test_power_law_recovers_quadratic():
    fit = fit_power_law(DEPTHS, synthetic_times(2.0, seed=32))
    assert fit.k_ci_low <= 2.0 <= fit.k_ci_high
    assert linearity(fit) == "super-linear"


def test_power_law_one_sample_per_depth_uses_residual_bootstrap():
    d = np.array([1, 2, 4, 8, 16, 32, 64, 128], float)
    t = (0.2 + 0.1 * d) * np.exp(np.random.default_rng(32).normal(0, 0.05, d.size))
    fit = fit_power_law(d, t, n_boot=200)
    assert "residual" in fit.method and fit.k_ci_low <= 1.0 <= fit.k_ci_high


def test_power_law_input_errors():
    with pytest.raises(ValueError, match="3 distinct depths"):
        fit_power_law([1, 1, 2, 2], [1.0, 1.1, 2.0, 2.1])
    with pytest.raises(ValueError, match="equal lengths"):
        fit_power_law([1, 2, 3], [1.0, 2.0])
    with pytest.raises(ValueError, match="positive"):
        fit_power_law([0, 2, 3], [1.0, 2.0, 3.0])


@pytest.mark.parametrize("lo, hi, expected", [
    (0.95, 1.08, "linear"),
    (1.02, 1.10, "super-linear"),
    (0.50, 0.90, "sub-linear"),
    (0.70, 1.40, "undetermined"),
    (math.nan, math.nan, "undetermined"),
])
def test_linearity_rules(lo, hi, expected):
    assert linearity(PowerLawFit(0.0, 1.0, (lo + hi) / 2, lo, hi, 10, "test")) == expected


def test_paired_effect_recovers_known_ratio():
    rng = np.random.default_rng(40)
    control = lognormal(rng, 30)
    treatment = control * 0.8 * np.exp(rng.normal(0.0, 0.1, 30))
    e = paired_effect(control, treatment)
    assert e.ci_low <= 0.8 <= e.ci_high and e.n == 30 and e.p_value < 0.05
    ref = sps.ttest_1samp(np.log(treatment / control), 0.0)
    assert e.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    small = paired_effect([1.0], [2.0])
    assert small.n == 1 and small.ratio == 2.0 and math.isnan(small.ci_low)


def test_verdict_fields():
    v = compare_paired(*simulate_pairs(10, rng=50))
    assert isinstance(v, Verdict) and v.verdict in VERDICTS
    assert set(v.to_json()) == {"verdict", "ratio", "ci_low", "ci_high", "p_value", "n_base", "n_head",
                                "method", "reason", "margin", "eq_low", "eq_high", "tost_p", "equivalent",
                                "detectable", "detectable_high"}
    assert isinstance(summarize([1.0]), Summary)
