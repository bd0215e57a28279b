"""Per-case count margins (harness/decide/count_margins.py): calibration, hysteresis, modes, the band's edge."""

from __future__ import annotations

import sys

import pytest

from ttfg.decide import count_margins as cm
from ttfg.measure.cases import select
from tests.test_gate_policy import sides  # noqa: F401  (the fixture: base and head folders)
from tests.test_gate_tiers import Side_, count, gate_with  # noqa: F401  (gate_with: a fixture)

#: jax.jit resnet15, six processes of one commit (issue 31): two modes of the compile, 0.42 % apart.
RESNET15 = [8_795e6, 8_759e6, 8_790e6, 8_786e6, 8_787e6, 8_750e6]


def test_a_calibrated_margin_is_twice_the_spread_at_least_the_threshold():
    wide = cm.calibrated("instructions", [100, 101.6, 100.8], "2026-12-04T10:00:00+00:00")
    assert wide.value == pytest.approx(0.032) and wide.processes == 3 and wide.calibrated
    assert wide.source() == "calibrated 2026-12-04 from 3 processes"
    tight = cm.calibrated("instructions", [100, 100.1, 100.05])
    assert tight.value == 0.01  # the metric's threshold is the floor
    with pytest.raises(ValueError, match="at least 3 counts"):
        cm.calibrated("instructions", [100, 100.1])  # two counts that agree by chance are no spread


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
    margins = cm.margins_for(cm.load(), [], ["instructions"], engines.runs_on("jax.jit"))
    assert margins["instructions"].describe().startswith("margin ±4.5 %, default")


def test_calibrate_counts_stores_each_cases_margins_and_refreshes_with_hysteresis(tmp_path):
    from ttfg.measure import fact_keys
    from ttfg.measure.runner import RunSettings

    (case,) = select(["resnet15:blocks=2"], ["autograd"], None, check_availability=False)[0]
    values = {"allocations": [5_000, 5_020, 5_010], "instructions": [1_000_000, 1_010_000, 1_005_000]}
    asked = []

    def sample(c, kind, index):  # the processes run a CPU each at once: each answers by its kind and index
        asked.append((kind, index))
        return count(kind, index, values[kind][index])

    path = tmp_path / "margins.json"
    lines = cm.calibrate_counts([case], 3, sample, path, jobs=2)
    assert sorted(asked) == [(k, i) for k in ("allocations", "instructions") for i in range(3)]
    key = fact_keys.key(case, None, RunSettings(repeat=1), counted=True)
    stored = cm.load(path).get(key)
    assert stored["instructions"].value == pytest.approx(0.02) and stored["instructions"].processes == 3
    assert stored["alloc_count"].value == pytest.approx(0.01)
    assert any(line.startswith(f"{case.id} instructions: 3 processes spread 1 %; stored ±2 %") for line in lines)
    again = cm.calibrate_counts([case], 3, sample, path)
    assert any("kept the stored ±2 %" in line for line in again)


def test_an_unreadable_store_means_defaults_and_says_why(tmp_path):
    path = tmp_path / "margins.json"
    path.write_text("{not json")
    store = cm.load(path)
    assert not store.entries and "not valid JSON" in store.problem
    (key,) = keys_of("autograd")
    margin = cm.margins_for(store, [key], ["instructions"])["instructions"]
    assert margin.value == cm.default_margin("instructions").value and "not valid JSON" in margin.source()


def test_doctor_calibrate_counts_refuses_two_processes(capsys):
    from ttfg.cli import main

    assert main(["doctor", "--calibrate-counts", "2"]) == 2
    assert "--calibrate-counts must be between 3 and 100" in capsys.readouterr().err


def keys_of(*backends, threads: int = 1):
    """Each backend's resnet15:blocks=2 case's key in this interpreter, as a gate side and a calibration have it."""
    from ttfg.measure import fact_keys
    from ttfg.measure.runner import RunSettings

    cases = select(["resnet15:blocks=2"], list(backends), None, check_availability=False)[0]
    return [fact_keys.key(c, None, RunSettings(repeat=1, threads=threads), counted=True) for c in cases]


CALIBRATED = {"margin": 0.01, "date": "2026-12-04T10:00:00+00:00", "processes": 10, "bimodal": False,
              "median": 1e7}


def write_store(path, entries):
    """A store as a person or another ttfg might have left it: ``[(key, {metric: raw margin})]``."""
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"format": cm.FORMAT, "version": 2, "entries": [
        {"key": key.to_json(), "fact": {"metrics": metrics}} for key, metrics in entries]}))


@pytest.mark.parametrize("field, bad, says", [
    ("margin", 10.0, "margin: 10.0 (±1,000 %) is outside 0.05 %-10 %"),
    ("margin", 0.0, "margin: 0.0 (±0 %) is outside 0.05 %-10 %"),
    ("margin", "1 %", "margin: expected a number, got '1 %'"),
    ("processes", 2, "processes: calibrated from 2 process(es), fewer than 3"),
    ("processes", 3.5, "processes: expected a whole number"),
    ("date", "yesterday", "date: expected an ISO date"),
    ("bimodal", "no", "bimodal: expected true or false"),
    ("median", -5, "median: expected a positive count"),
])
def test_a_stored_margin_out_of_range_or_of_the_wrong_type_is_set_aside_and_named(tmp_path, field, bad, says):
    path = tmp_path / "margins.json"
    (key,) = keys_of("autograd")
    write_store(path, [(key, {"instructions": {**CALIBRATED, field: bad}, "alloc_count": CALIBRATED})])
    margins = cm.margins_for(cm.load(path), [key], ["instructions", "alloc_count"])
    assert not margins["instructions"].calibrated and margins["instructions"].value == 0.025
    assert says in margins["instructions"].source() and "set aside" in margins["instructions"].source()
    assert margins["alloc_count"].calibrated  # the entry's other metric stays usable


def test_a_hand_written_margin_of_ten_no_longer_hides_a_regression(tmp_path):
    """The finding: margin 10.0 turned instructions ×1.741 into "unchanged (+74.1 %, margin ±1,000 %)"."""
    path = tmp_path / "margins.json"
    (key,) = keys_of("autograd")
    write_store(path, [(key, {"instructions": {**CALIBRATED, "margin": 10.0}})])
    margin = cm.margins_for(cm.load(path), [key], ["instructions"])["instructions"]
    assert cm.judge(1.741, margin, 1) == "regressed"
    assert "10.0 (±1,000 %) is outside" in margin.source()


def test_a_margin_applies_only_under_its_own_key_and_the_default_says_why(tmp_path):
    path = tmp_path / "margins.json"
    autograd, torch = keys_of("autograd", "torch.eager")
    write_store(path, [(torch, {"instructions": CALIBRATED})])  # another project's case calibrated here
    store = cm.load(path)
    mine = cm.margins_for(store, [autograd], ["instructions"])["instructions"]
    assert not mine.calibrated and "not calibrated here: no calibration of this case" in mine.source()
    (threads2,) = keys_of("torch.eager", threads=2)  # the same case, sampled with other settings
    other = cm.margins_for(store, [threads2], ["instructions"])["instructions"]
    assert "not calibrated here: the stored calibration of this case differs in the probe's settings (threads)" \
        in other.source()
    # A gate whose sides differ (a dependency bump): both sides must be calibrated, the wider margin decides.
    both = cm.margins_for(store, [torch, threads2], ["instructions"])["instructions"]
    assert not both.calibrated and both.source().startswith("default: the head side is not calibrated here")
    assert cm.margins_for(store, [torch, torch], ["instructions"])["instructions"].calibrated


def test_two_projects_calibrating_one_machine_keep_each_others_entries(tmp_path):
    path = tmp_path / "margins.json"
    autograd, torch = keys_of("autograd", "torch.eager")
    margin = cm.Margin(0.01, "2026-12-04T10:00:00+00:00", 10, False, 1e7)
    cm.save({autograd: {"instructions": margin}}, path)
    cm.save({torch: {"instructions": cm.Margin(0.02, "2026-12-04T10:00:00+00:00", 10, False, 1e7)}}, path)
    store = cm.load(path)
    assert store.get(autograd)["instructions"] == margin and store.get(torch)["instructions"].value == 0.02


def test_the_store_moves_with_ttfg_cache_dir(tmp_path, monkeypatch, private_user_cache):
    from ttfg.decide import noise

    monkeypatch.setenv("TTFG_CACHE_DIR", str(tmp_path / "moved"))
    assert cm.store_path() == tmp_path / "moved" / "count_margins.json"
    assert noise.store_path() == tmp_path / "moved" / "calibration.json"
    monkeypatch.delenv("TTFG_CACHE_DIR")
    assert cm.store_path() == private_user_cache / "ttfg" / "count_margins.json"


def test_a_version_1_store_keyed_by_case_id_alone_is_not_applied(tmp_path):
    import json

    path = tmp_path / "margins.json"
    (key,) = keys_of("autograd")
    path.write_text(json.dumps({"version": 1, "cases": {"resnet15:blocks=2/autograd/x": {"instructions": CALIBRATED}}}))
    margin = cm.margins_for(cm.load(path), [key], ["instructions"])["instructions"]
    assert not margin.calibrated and "stored before facts were keyed" in margin.source()


def test_a_gate_refuses_a_hand_written_margin_of_ten_and_calls_the_1_741_head_regressed(gate_with):
    """Done means: a margin of 10.0 written by hand is refused and named; the ×1.741 head is then "regressed"."""
    (key,) = keys_of("autograd")  # the key the gate's sides have (this interpreter, the gate's sampling)
    write_store(cm.store_path(), [(key, {m: {**CALIBRATED, "margin": 10.0} for m in ("instructions", "alloc_count")})])
    outcome, _, _ = gate_with(Side_(), Side_(instructions=17_410_000), backends=("autograd",))
    (case,) = outcome.cases
    assert case.tier == "instructions" and case.verdict.verdict == "regressed" and outcome.exit_code() == 1
    assert "instructions +74.1 %" in case.verdict.reason
    assert "its calibrated margin was set aside" in case.verdict.reason and "10.0 (±1,000 %) is outside" in \
        case.verdict.reason


def test_a_dependency_bump_gate_does_not_apply_a_margin_calibrated_in_the_base_environment(gate_with, sides):
    """The finding: base autograd 1.9.1, head 1.8.0, and "margin ±1 %, calibrated ... from 2 processes" applied to
    both sides. The head side runs in another environment: its key has no calibration, so the default decides."""
    from ttfg.provision.environments import Environment

    (key,) = keys_of("autograd")
    write_store(cm.store_path(), [(key, {"instructions": CALIBRATED, "alloc_count": CALIBRATED})])
    sides["head"].env = Environment("head-env", sys.executable, {"autograd": "1.8.0"}, "3.11.7")
    outcome, _, _ = gate_with(Side_(), Side_(instructions=10_200_000))  # +2 %: beyond ±1 %, within the default
    (case,) = outcome.cases
    step = case.trail[1]
    assert "the head side is not calibrated here: the stored calibration of this case differs in the environment" \
        in step.reason
    assert case.verdict.verdict != "regressed"


def test_the_doctor_names_what_was_set_aside_in_the_stored_facts(private_user_cache):
    from ttfg.app.doctor import stored_facts

    assert stored_facts() == []  # nothing stored, nothing said
    (key,) = keys_of("autograd")
    write_store(cm.store_path(), [(key, {"instructions": {**CALIBRATED, "margin": 10.0}})])
    (finding,) = stored_facts()
    assert finding.section == "stored facts" and finding.item == "count margins" and finding.verdict == "warn"
    assert "entries[0].fact.metrics.instructions.margin: 10.0 (±1,000 %) is outside 0.05 %-10 %" in finding.detail
