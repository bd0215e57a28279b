"""Per-case count margins (harness/decide/count_margins.py): calibration, hysteresis, modes, the band's edge."""

from __future__ import annotations

import pytest

from ttfg.decide import count_margins as cm
from ttfg.measure.cases import select
from tests.test_gate_tiers import count

#: jax.jit resnet15, six processes of one commit (issue 31): two modes of the compile, 0.42 % apart.
RESNET15 = [8_795e6, 8_759e6, 8_790e6, 8_786e6, 8_787e6, 8_750e6]


def test_a_calibrated_margin_is_twice_the_spread_at_least_the_threshold():
    wide = cm.calibrated("instructions", [100, 101.6, 100.8], "2026-12-04T10:00:00+00:00")
    assert wide.value == pytest.approx(0.032) and wide.processes == 3 and wide.calibrated
    assert wide.source() == "calibrated 2026-12-04 from 3 processes"
    tight = cm.calibrated("instructions", [100, 100.1])
    assert tight.value == 0.01  # the metric's threshold is the floor


def test_the_compile_modes_of_jax_jit_resnet15_are_found():
    assert cm._bimodal([8_268, 8_268.5, 8_235, 8_235.3, 8_268.2])
    assert not cm._bimodal(RESNET15[:2]) and not cm._bimodal([100, 100.1, 100.2, 100.3])


def test_hysteresis_keeps_an_entry_unless_it_moved_by_more_than_a_third_of_its_margin():
    old = cm.Margin(0.03, "2026-12-01", 10, False, 1_000.0)
    assert cm.refreshed(old, cm.Margin(0.035, "2026-12-04", 10, False, 1_005.0)) == (old, False)
    new = cm.Margin(0.045, "2026-12-04", 10, False, 1_000.0)
    assert cm.refreshed(old, new) == (new, True)
    moved = cm.Margin(0.03, "2026-12-04", 10, False, 1_020.0)  # the count moved 2 % > a third of 3 %
    assert cm.refreshed(old, moved) == (moved, True)
    assert cm.refreshed(None, new) == (new, True)


@pytest.mark.parametrize("ratio, margin, samples, word", [
    (1.016, cm.Margin(0.025), 1, "edge"), (1.010, cm.Margin(0.025), 1, "unchanged"),
    (1.03, cm.Margin(0.025), 1, "regressed"), (0.97, cm.Margin(0.025), 1, "improved"),
    (1.004, cm.Margin(0.01, "d", 6, True), 1, "edge"), (1.004, cm.Margin(0.01, "d", 6, True), 2, "unchanged"),
])
def test_judge(ratio, margin, samples, word):
    assert cm.judge(ratio, margin, samples) == word


def test_the_default_says_it_is_the_default_and_is_above_the_flaxlab_spread():
    m = cm.default_margin("instructions")
    assert m.value == 0.025 > 0.016 and not m.calibrated and m.source().startswith("default: ")
    assert cm.default_margin("instructions").describe().startswith("margin ±2.5 %, default")


def test_an_uncalibrated_case_on_xla_takes_the_wider_default_whatever_its_framework_is_named():
    """XLA's compile pool moved the flaxlab example's compile count 2.2 % between processes, even on one CPU: an
    uncalibrated case running on jaxlib gets twice that (what calibrating would set), decided by what it runs on."""
    from ttfg import engines

    assert cm.default_margin("instructions_compile", engines.runs_on("jax.jit")).value == 0.045
    assert cm.default_margin("instructions_compile", frozenset({"flax", "jax", "jaxlib"})).value == 0.045
    assert cm.default_margin("instructions", engines.runs_on("autograd")).value == 0.025
    margins = cm.margins_for({}, "resnet15/jax.jit/x", ["instructions"], engines.runs_on("jax.jit"))
    assert margins["instructions"].describe().startswith("margin ±4.5 %, default")


def test_calibrate_counts_stores_each_cases_margins_and_refreshes_with_hysteresis(tmp_path):
    (case,) = select(["resnet15:blocks=2"], ["autograd"], None, check_availability=False)[0]
    values = {"allocations": [5_000, 5_020, 5_010], "instructions": [1_000_000, 1_010_000, 1_005_000]}
    asked = []

    def sample(c, kind, index):  # the processes run a CPU each at once: each answers by its kind and index
        asked.append((kind, index))
        return count(kind, index, values[kind][index])

    path = tmp_path / "margins.json"
    lines = cm.calibrate_counts([case], 3, sample, path, jobs=2)
    assert sorted(asked) == [(k, i) for k in ("allocations", "instructions") for i in range(3)]
    stored = cm.load(path)[case.id]
    assert stored["instructions"].value == pytest.approx(0.02) and stored["instructions"].processes == 3
    assert stored["alloc_count"].value == pytest.approx(0.01)
    assert any(line.startswith(f"{case.id} instructions: 3 processes spread 1 %; stored ±2 %") for line in lines)
    again = cm.calibrate_counts([case], 3, sample, path)
    assert any("kept the stored ±2 %" in line for line in again)


def test_an_unreadable_store_means_defaults(tmp_path):
    path = tmp_path / "margins.json"
    path.write_text("{not json")
    assert cm.load(path) == {}
    assert cm.margins_for({}, "x", ["instructions"])["instructions"] == cm.default_margin("instructions")


def test_doctor_calibrate_counts_refuses_one_process(capsys):
    from ttfg.cli import main

    assert main(["doctor", "--calibrate-counts", "1"]) == 2
    assert "--calibrate-counts must be between 2 and 100" in capsys.readouterr().err
