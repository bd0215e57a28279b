"""The noise floor: recorded in results files (format, validation), from a stored calibration or the
samples themselves, stated in words, and the gate's warning before it starts."""

from __future__ import annotations

import json
import math
import re
import statistics
from datetime import datetime, timedelta

import pytest

from ttfg.decide import calibrate as cal
from ttfg.decide import noise
from ttfg.decide.stats import min_detectable_effect
from ttfg import fmt
from ttfg.present import noise_views
from ttfg.results import record
from ttfg.results.format import ResultsError
from ttfg.results.io import save

from .synthetic_results import CASE, OTHER, lognormal, results, timing_run, timing_sample
from .test_doctor import CASE_A, CASE_B, FakeClock, fake_sampler

MACHINE = {"hostname": "ci", "cpu": "AMD EPYC", "cpu_count": 2}


def a_calibration(sd: float = 0.1, seconds: float = 4.0):
    """A doctor's calibration of two cases from a fake sampler: 40 pairs each, seconds / 2 per process."""
    clock = FakeClock()
    values = lognormal(1.0, 400, sd / math.sqrt(2), seed=5)
    return cal.calibrate([CASE_A, CASE_B], 40 * seconds * 2 + 1, fake_sampler(clock, seconds / 2, values),
                         clock=clock)


def test_a_floor_round_trips_through_a_results_file_and_is_validated(tmp_path):
    floor = noise.from_calibration(a_calibration(), MACHINE)
    res = results({CASE: timing_run([1.0, 1.1, 1.05])}, environment={**MACHINE, "python": "3.11"})
    res.noise = floor
    path = save(res, tmp_path / "r.json")
    data = json.loads(path.read_text())
    assert data["version"] == 2 and data["environment"]["noise"]["source"] == "calibration"
    back = record.load(path)
    assert back.noise == floor and "noise" not in back.environment  # typed, one copy
    # Files without a floor (written before it existed) still read.
    del data["environment"]["noise"]
    assert record.from_json(data).noise is None

    for field, bad, says in (("source", "guess", "one of calibration, in-run"),
                             ("alpha", 2, "between 0 and 1"),
                             ("entries", [{"case": CASE, "metric": "first_grad_s", "n": 3, "log_ratio_sd": -1}],
                              "entries[0].log_ratio_sd: expected a number >= 0")):
        broken = json.loads(path.read_text())
        broken["environment"]["noise"][field] = bad
        with pytest.raises(ResultsError) as info:
            record.from_json(broken, "r.json")
        assert str(info.value).startswith(f"r.json: environment.noise.{field}") and says in str(info.value)


def test_calibration_floor_matches_the_doctors_arithmetic():
    calibration = a_calibration()
    floor = noise.from_calibration(calibration, MACHINE)
    entry = noise.entry_for(floor, CASE_B.id, "first_grad_s")
    doctor = calibration.cases[1].noise("first_grad_s")
    assert entry.case == CASE_B.id and entry.log_ratio_sd == pytest.approx(doctor.sd)
    assert entry.gates == [(b, *doctor.gates[b]) for b in noise.GATE_BUDGETS_S]


def calibration_keys(threads: int = 1) -> dict:
    """The doctor's cases' keys for a fact about wall time, in this interpreter, as a gate side has them."""
    from ttfg.measure.runner import RunSettings

    return {c: keys[0] for c, keys in noise.keys_of([CASE_A, CASE_B], RunSettings(repeat=1, threads=threads)).items()}


def test_stored_calibration_is_used_only_under_its_key_and_while_recent(tmp_path):
    path = tmp_path / "calibration.json"
    floor = noise.from_calibration(a_calibration(), MACHINE)
    keys = calibration_keys()
    noise.save(floor, keys, path)
    wanted = {c: [k] for c, k in keys.items()}
    when = datetime.fromisoformat(floor.measured_at)
    got, why = noise.stored(wanted, when + timedelta(hours=2), path)
    assert why == "" and got.age_s == pytest.approx(7200) and got.entries == floor.entries
    assert noise_views.source_text(got).startswith("from `ttfg doctor --calibrate` 2 h before this run")
    got, why = noise.stored(wanted, when + timedelta(days=3), path)
    assert got is None and "3 d old" in why
    other = {c: [k] for c, k in calibration_keys(threads=2).items()}
    got, why = noise.stored(other, when, path)
    assert got is None and f"{CASE_A.id}: not calibrated here: the stored calibration of this case differs in the " \
                           "probe's settings (threads)" in why
    only_b = noise.stored({CASE_B.id: [keys[CASE_B.id]], CASE_A.id: other[CASE_A.id]}, when, path)[0]
    assert {e.case for e in only_b.entries} == {CASE_B.id}  # one case calibrated here, the other not
    two_envs = noise.stored({CASE_A.id: [keys[CASE_A.id], other[CASE_A.id][0]]}, when, path)
    assert two_envs[0] is None and "its sides run in different environments" in two_envs[1]
    assert noise.stored(wanted, when, tmp_path / "none.json") == (None, "no stored calibration (run `ttfg doctor "
                                                                         "--calibrate`)")
    path.write_text("{broken")
    got, why = noise.stored(wanted, when, path)
    assert got is None and "unusable" in why and str(path) in why


def test_another_projects_calibration_is_never_applied_to_this_case(tmp_path):
    """The finding: a gate of mylab.autograd quoted "a 10-minute gate sees >= 17 % on hklab.jax", another user's
    calibration of another library, because a case without an entry borrowed the noisiest of the file."""
    path = tmp_path / "calibration.json"
    floor = noise.from_calibration(a_calibration(), MACHINE)
    keys = calibration_keys()
    noise.save(floor, {CASE_B.id: keys[CASE_B.id]}, path)  # the other project calibrated its case
    mine = {CASE_A.id: [keys[CASE_A.id]]}
    got, why = noise.stored(mine, datetime.fromisoformat(floor.measured_at), path)
    assert got is None and why.startswith(f"{CASE_A.id}: not calibrated here: no calibration of this case")
    assert noise.entry_for(floor, "resnet15/mylab.autograd/params=args,chain=unrolled", "first_grad_s") is None
    (w,) = noise.budget_warning([CASE_A.id], "first_grad_s", 0.01, 300.0, 60, got, why)
    assert w["sd"] == noise.DEFAULT_SD and "not calibrated here" in w["sd_source"]


def test_store_lives_in_the_cache_folder(private_user_cache, monkeypatch, tmp_path):
    assert noise.store_path() == private_user_cache / "ttfg" / "calibration.json"
    monkeypatch.setenv("TTFG_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert noise.store_path() == tmp_path / "elsewhere" / "calibration.json"


def test_in_run_estimate_is_sqrt2_times_the_sd_of_log_times():
    times = lognormal(2.0, 8, 0.05, seed=1)
    res = results({CASE: timing_run(times), OTHER: timing_run([0.01, 0.011])}, environment=MACHINE)
    floor = noise.in_run(res)
    assert floor.source == "in-run" and "upper bound" in floor.method
    (entry,) = floor.entries  # OTHER has 2 samples: too few for an estimate
    assert entry.log_ratio_sd == pytest.approx(math.sqrt(2) * statistics.stdev(map(math.log, times)))
    assert entry.seconds_per_pair == pytest.approx(2 * statistics.median(t + 2.5 for t in times))
    pairs = min(int(600 // entry.seconds_per_pair), noise.MAX_PAIRS)
    assert entry.effect_at(600.0) == pytest.approx(min_detectable_effect(entry.log_ratio_sd, pairs))
    assert noise.in_run(results({CASE: timing_run([1.0])})).entries == []


def test_gate_floor_is_the_sd_of_its_pair_log_ratios():
    base_times, ratios = [1.0, 1.2, 0.9, 1.1, 1.05], [1.10, 1.02, 1.08, 1.15, 1.04]
    base = results({CASE: [timing_sample(i, t, pair=i, pair_position=i % 2) for i, t in enumerate(base_times)]})
    head = results({CASE: [timing_sample(i, t * r, pair=i, pair_position=1 - i % 2)
                           for i, (t, r) in enumerate(zip(base_times, ratios))]})
    head.cases[0].samples[2].ok = False  # an incomplete pair is left out
    (entry,) = noise.in_gate(base, head, "first_grad_s").entries
    kept = [r for i, r in enumerate(ratios) if i != 2]
    assert entry.n == 4 and entry.log_ratio_sd == pytest.approx(statistics.stdev(map(math.log, kept)))


def test_headline_states_what_a_ten_minute_gate_sees():
    floor = noise.from_calibration(a_calibration(), MACHINE)
    entries = {e.case.split("/")[1]: e for e in floor.entries if e.metric == "first_grad_s"}
    by_backend = {b: e.effect_at(600.0) for b, e in entries.items()}
    text = noise_views.headline(floor)
    best, worst = sorted(by_backend, key=by_backend.get)
    # Quoted to the digits the calibration's pairs support (fmt.supported_digits), not three.
    shown = {b: fmt.percent(by_backend[b], fmt.supported_digits(entries[b].n)) for b in (best, worst)}
    assert text.startswith(f"on this machine a 10-minute gate sees >= {shown[best]} on {best}, "
                           f">= {shown[worst]} on {worst} (first_grad_s; from `ttfg doctor")
    assert noise_views.headline(None) == "noise floor: not recorded"
    empty = noise.in_run(results({CASE: timing_run([1.0])}))
    assert noise_views.headline(empty).startswith("noise floor: not estimated (no case has 3 good cold samples")


def test_pairs_needed_inverts_min_detectable_effect():
    n = noise.pairs_needed(0.087, 0.05)
    assert min_detectable_effect(0.087, n) <= 0.05 < min_detectable_effect(0.087, n - 1)
    assert 55 <= n <= 65  # DESIGN.md: about 56 by the normal formula; the t quantiles add a few
    assert noise.pairs_needed(5.0, 0.001) is None


def test_gate_warns_with_the_budget_it_would_need():
    calibration = a_calibration(sd=0.15, seconds=8.0)
    floor = noise.from_calibration(calibration, MACHINE)
    floor.age_s = 3600
    entry = noise.entry_for(floor, CASE_B.id, "first_grad_s")
    warnings = noise.budget_warning([CASE_B.id], "first_grad_s", 0.05, 300.0, 60, floor)
    (w,) = warnings
    assert w["pairs"] == int(300 // entry.seconds_per_pair) and w["effect"] > 0.05
    # The upper end of the SD's interval decides (a few pairs may show an SD far too low by chance).
    assert w["sd"] == entry.sd_high > entry.log_ratio_sd and "upper end of the 95 % interval" in w["sd_source"]
    assert w["needed_pairs"] == noise.pairs_needed(entry.sd_high, 0.05)
    assert w["needed_budget_s"] == pytest.approx(w["needed_pairs"] * entry.seconds_per_pair)
    (line,) = noise_views.budget_warning_lines(warnings, "first_grad_s", 0.05, 300.0)
    assert "calibrated 1 h ago" in line and f"--max-pairs {w['needed_pairs']}" in line and "--budget " in line
    # A large enough effect needs no warning; without a calibration the stated default SD is used.
    assert noise.budget_warning([CASE_B.id], "first_grad_s", 0.5, 300.0, 60, floor) == []
    (default,) = noise.budget_warning([CASE], "first_grad_s", 0.02, 600.0, 60, None, "no stored calibration")
    assert default["sd"] == noise.DEFAULT_SD and "no stored calibration" in default["sd_source"]
    assert default["pairs"] == 60 and default["needed_budget_s"] is None
    (line,) = noise_views.budget_warning_lines([default], "first_grad_s", 0.02, 600.0)
    assert "default SD" in line and "pairs (--max-pairs" in line and line.startswith("warning: ")
    # Under the source tier's proof the time tier runs only for a case whose first pair disagrees: a note of what it
    # could detect if it ran, not a warning on every comment-only pull request.
    (note,) = noise_views.budget_warning_lines([default], "first_grad_s", 0.02, 600.0, proven=True)
    assert note.startswith("if the time tier runs (the source tier's proof holds") and "warning" not in note
    assert note.split("): ", 1)[1] == line.removeprefix("warning: ")


def test_doctor_calibrate_stores_what_run_and_gate_read(monkeypatch, capsys, private_user_cache):
    from ttfg.cli import main

    import itertools
    import time

    values = itertools.cycle([1.0, 1.1, 1.05, 0.95, 1.02])

    def sampler(settings=None):
        def sample(case, index):
            time.sleep(0.02)
            return {"ok": True, "first_grad_s": next(values), "process_ttfg_s": 2.0 + next(values)}
        return sample

    monkeypatch.setattr(cal, "cold_sampler", sampler)
    code = main(["doctor", "--calibrate", "--budget", "1s", "--format", "json"])
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert code == 0, captured.err
    assert data["stored"] == str(private_user_cache / "ttfg" / "calibration.json")
    from ttfg.decide.calibrate import calibration_cases
    from ttfg.measure.runner import RunSettings

    floor, why = noise.stored(noise.keys_of(calibration_cases()[0], RunSettings(repeat=1)))
    assert why == "" and floor.source == "calibration" and floor.entries


def test_report_states_the_noise_floor(tmp_path):
    from ttfg.app.report import build_report

    res = results({CASE: timing_run(lognormal(2.0, 5, 0.05, seed=2))}, environment=MACHINE)
    res.noise = noise.in_run(res)
    save(res, tmp_path / "r.json")
    html = build_report(None, [record.load(tmp_path / "r.json")], out=tmp_path / "index.html").read_text()
    assert "Noise floor" in html and "on this machine a 10-minute gate sees &gt;= " in html
    entry = res.noise.entries[0]
    assert f"<td class=\"num\">{fmt.number(entry.log_ratio_sd, fmt.supported_digits(entry.n))}</td>" in html


def test_the_gate_warns_before_its_first_sample(tmp_path):
    """A stored calibration of a noisy machine: the warning comes before any sample is taken, with the budget needed
    (the sides are open by then: the calibration applies under their environments' keys)."""
    from ttfg.app import gate as use_case
    from ttfg.measure.cases import select

    from .fake_sides import FolderSides, two_commits

    floor = noise.from_calibration(a_calibration(sd=0.2, seconds=8.0))  # this machine's facts
    noise.save(floor, calibration_keys())  # in this interpreter, where the gate's sides run
    warned: list[str] = []
    sampled: list[list[str]] = []

    class Events(use_case.GateEvents):
        def warning(self, text):
            warned.append(text)

    def interrupted(*args, **kwargs):
        sampled.append(list(warned))
        raise KeyboardInterrupt

    cases, _ = select(["resnet15"], ["jax.jit"], None, check_availability=False)
    settings = use_case.settings(timeout_s=600, threads=1, budget_s=300, tiers=use_case.DEFAULT_TIERS)
    request = use_case.GateRequest(two_commits(tmp_path / "repo"), "HEAD~1", cases, settings, tmp_path / "out")
    report = use_case.run(request, Events(), opener=FolderSides(lambda rev: tmp_path / rev.commit),
                          sampler=interrupted)
    assert report.code == 2 and report.status == use_case.INTERRUPTED and sampled  # at the first sample, after the check
    before = " ".join(" ".join(sampled[0]).split())
    assert "warning: resnet15/jax.jit/params=args,chain=unrolled: the time tier alone, at log-ratio SD" in before
    assert re.search(r"calibrated \d+ s ago, the upper end of the 95 % interval of SD [\d.]+ from \d+ pairs\), "
                     r"could detect >= \S+ % of first_grad_s in a 300 s budget \(about \d+ pairs\), above "
                     r"--min-effect 5 %; the structural and instructions tiers before it decide most cases first",
                     before), before
    assert re.search(r"Detecting 5 % needs about \d+ pairs: --budget \d+m --max-pairs \d+", before)


def test_merged_shards_keep_every_shards_noise_entries(tmp_path):
    from ttfg.results.merge import merge_results

    from .test_shards import shard_files

    paths = shard_files(tmp_path)
    shards = [record.load(p) for p in paths]
    for res in shards:
        res.cases[0].samples = [record.Sample(**s) for s in timing_run(lognormal(1.0, 4, 0.1, seed=len(res.cases)))]
        res.noise = noise.in_run(res)
    merged, _ = merge_results(shards)
    assert merged.noise.source == "in-run"
    assert sorted(e.case for e in merged.noise.entries) == sorted(e.case for r in shards for e in r.noise.entries)
    shards[1].noise = None  # a shard without a floor: the merged file claims none
    assert merge_results(shards)[0].noise is None
