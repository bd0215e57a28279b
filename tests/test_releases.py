"""``ttfg releases``: which releases to build, and a real sweep over two autograd releases.

The sweep is the real path at its smallest: two environments built with uv, one cold run
and one callgrind count per release, one adjacent pair gated; a release that does not
exist is a failed cell with the resolver's message, and the sweep goes on around it.
The exhaustive jax sweep of the README is a benchmark (`ttfg releases jax`), not a test.
"""

from __future__ import annotations

import json
import os

import pytest

from ttfg.errors import UsageError
from ttfg.provision import releases

from .conftest import run_ttfg


def test_a_range_is_thinned_to_the_last_patch_of_each_minor():
    versions = ["0.4.29", "0.4.30", "0.4.31", "0.4.38", "0.5.0", "0.5.3", "0.6.2", "0.10.0", "0.10.2", "0.11.0"]
    chosen = releases.in_range(versions, "0.4.30", "0.10.2")
    assert chosen == versions[1:-1]
    assert releases.thin(chosen, "minor") == ["0.4.30", "0.4.38", "0.5.3", "0.6.2", "0.10.2"]
    assert releases.thin(chosen, "release") == chosen
    with pytest.raises(UsageError, match="--every"):
        releases.thin(chosen, "weekly")


def test_each_release_asks_for_its_companions():
    planned, _ = releases.plan("jax", ["0.4.37", "0.4.30"])
    assert [r.version for r in planned] == ["0.4.30", "0.4.37"]  # ordered by version
    # The extra picks jaxlib 0.4.36 for it; autograd and scipy compute the gradient check's reference.
    assert planned[1].requirements == ("jax[cpu]==0.4.37", "autograd", "scipy")
    planned, _ = releases.plan("autograd", ["1.7.0"], extra=("numpy==2.4.6",))
    assert planned[0].requirements == ("autograd==1.7.0", "scipy", "autograd", "numpy==2.4.6")


def test_two_spellings_of_one_release_are_one_release():
    """``1.7`` and ``1.7.0`` are one release: gated against itself it would report a difference from itself."""
    planned, notes = releases.plan("autograd", ["1.7", "1.7.0", "1.9.1"])
    assert [r.version for r in planned] == ["1.7", "1.9.1"]
    assert any("1.7 and 1.7.0 are one release" in n for n in notes)


@pytest.mark.parametrize("versions, says", [([], "names no version"), (["", " "], "names no version"),
                                            (["foo"], "'foo' is not a version"), (["1.7", "1.x"], "'1.x'")])
def test_bad_version_lists_are_refused_naming_them(versions, says):
    with pytest.raises(UsageError, match=says):
        releases.plan("autograd", versions)


def test_torch_says_which_releases_this_machine_can_install(tmp_path, monkeypatch):
    (tmp_path / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl").write_text("")
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # this machine's pip.conf names a wheel folder of its own
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path))
    planned, notes = releases.plan("torch")
    assert [r.version for r in planned] == ["2.13.0"]
    assert "can install 2.13.0" in notes[0] and "CUDA build of several GB" in notes[0]
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "none"))
    with pytest.raises(UsageError, match="no torch release"):
        releases.plan("torch")
    # A folder named in pip's own configuration counts as well (it said "no release" beside the wheel).
    conf = tmp_path / "pip.conf"
    conf.write_text(f"[global]\nfind-links = {tmp_path}\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    assert [r.version for r in releases.plan("torch")[0]] == ["2.13.0"]


def test_no_network_is_said_with_what_to_do(monkeypatch):
    monkeypatch.setattr(releases, "REGISTRY", "http://127.0.0.1:9/{package}")
    with pytest.raises(UsageError, match="no network.*--versions"):
        releases.plan("jax", low="0.4.30", high="0.10.2")
    with pytest.raises(UsageError, match="known packages"):
        releases.plan("tensorflow")


@pytest.mark.full
def test_a_sweep_over_autograd_releases_with_one_that_cannot_be_had(tmp_path):
    out = tmp_path / "sweep"
    proc = run_ttfg("releases", "autograd", "--versions", "1.7.0,99.0,1.9.1", "--model", "resnet15:blocks=2",
                    "--budget-per-pair", "30s", "--min-pairs", "2", "--max-pairs", "4", "--out-dir", str(out),
                    env={"TTFG_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode in (1, 2), proc.stdout + proc.stderr
    doc = json.loads((out / "releases.json").read_text())
    assert doc["complete"] and doc["exit_code"] == proc.returncode
    missing = next(r for r in doc["releases"] if r["version"] == "99.0")
    assert "cannot resolve autograd==99.0" in missing["error"]
    measured = [r for r in doc["releases"] if r["env"]]
    assert all(cell["check"]["status"] == "ok" for r in measured for cell in r["cells"].values())
    assert [r["env"]["versions"]["autograd"] for r in measured] == ["1.7.0", "1.9.1"]
    (pair,) = doc["pairs"]
    assert (pair["base"], pair["head"]) == ("1.7.0", "1.9.1") and pair["pairs"] >= 1
    assert pair["wall"]["ratio"] > 0 and pair["wall_s"] > 0
    if pair["pairs"] >= 2:  # the budget bought at least two complete pairs (a loaded machine may not)
        assert pair["cpu"]["ratio"] > 0
    counted = pair["instructions"]["instructions"]
    assert counted["base"] > 0 and counted["head"] > 0 and counted["base"] != counted["head"]
    if proc.returncode == 1:
        assert pair["verdict"] == "regressed"
    page = (out / "index.html").read_text()
    assert "<svg" in page and "1.7.0 → 1.9.1" in page and "cannot resolve" in page
    assert "1.7.0 → 1.9.1" in (out / "summary.md").read_text()
    assert "1.7.0 → 1.9.1" in proc.stdout


def test_a_single_count_a_release_calls_a_step_only_beyond_the_minimum_effect():
    """XLA's compile count moves ~1.6 % between processes of one release: +1.7 % from one count each is no step.
    The per-case rule decides (the default margin here, ±2.5 %, says so); the minimum effect is a step's floor."""
    from ttfg.app.releases import _instruction_json

    small = _instruction_json({"instructions": 8_934_672_992}, {"instructions": 9_085_374_979}, min_effect=0.05)
    assert small["instructions"]["verdict"] == "inconclusive" and small["instructions"]["margin"] == 0.025
    assert small["instructions"]["margin_source"].startswith("default: this case is not calibrated")
    large = _instruction_json({"instructions": 5_961_533_324}, {"instructions": 9_516_524_269}, min_effect=0.05)
    assert large["instructions"]["verdict"] == "regressed"


def test_a_release_counts_floor_is_that_of_what_its_processes_loaded_not_what_the_backend_declares():
    """Issue 39 item 1 in the release sweep: a plugin backend that declares only its own package ran on jaxlib
    (its count processes' ``runtimes``); an uncalibrated margin takes jaxlib's wider floor (4.5 %), so +3 % from
    one count a release is no regression. Without the record, what it declares decides (2.5 %)."""
    from ttfg.app.releases import _instruction_json
    from ttfg.decide.count_margins import XLA_DEFAULT_FLOOR

    on_jax = {"modules": ["jaxlib"], "libraries": [], "threads": 17, "threads_at_start": 2}
    base, head = {"instructions": 1_000_000_000}, {"instructions": 1_030_000_000}
    declared = _instruction_json(base, head, 0.0, "resnet15/mylib.jax")["instructions"]
    assert declared["margin"] == 0.025 and declared["verdict"] == "regressed"
    measured = _instruction_json({**base, "runtimes": on_jax}, {**head, "runtimes": on_jax}, 0.0,
                                 "resnet15/mylib.jax")["instructions"]
    assert measured["margin"] == XLA_DEFAULT_FLOOR and measured["verdict"] != "regressed"


def test_a_release_step_uses_the_cases_calibrated_margin_and_the_minimum_effect_as_its_floor():
    from ttfg.app.releases import _instruction_json
    from ttfg.decide.count_margins import Margin

    tight = {"instructions": Margin(0.01, "2026-12-04", 10)}
    three = _instruction_json({"instructions": 100}, {"instructions": 103}, 0.05, "c", tight)["instructions"]
    assert three["verdict"] == "unchanged" and "under the minimum effect" in three["why"]
    assert three["margin_source"] == "calibrated 2026-12-04 from 10 processes"
    six = _instruction_json({"instructions": 100}, {"instructions": 106}, 0.05, "c", tight)["instructions"]
    assert six["verdict"] == "regressed"
    from ttfg.present.releases_views import _instructions

    assert _instructions({"instructions": {"instructions": six}}) == \
        "1.060× (regressed, margin ±1 % calibrated 2026-12-04 from 10 processes)"
    flat = _instruction_json({"instructions": 100}, {"instructions": 100.2}, 0.05, "c", tight)["instructions"]
    assert flat["verdict"] == "unchanged"


def test_the_pair_row_names_what_decided_and_the_phase_that_moved_most_in_seconds():
    from ttfg.present.releases_views import pair_rows

    pair = {"base": "0.8.3", "head": "0.9.2", "case": "c", "verdict": "inconclusive", "tier": "time",
            "wall": {"ratio": 1.104, "ci_low": 0.996, "ci_high": 1.223}, "pairs": 12,
            "phases": {"execute": {"base": 0.0422, "head": 0.0292, "ratio": 0.69},
                       "compile": {"base": 0.80, "head": 0.91, "ratio": 1.14}}}
    (row,) = pair_rows({"pairs": [pair]})
    assert row["verdict"] == "inconclusive (wall time)"
    assert row["phase"].startswith("compile 800 ms → 910 ms")
    assert pair_rows({"pairs": [{**pair, "tier": "instructions", "verdict": "regressed"}]})[0]["verdict"] == \
        "regressed (instructions)"


def _sweep() -> dict:
    return {"format": "ttfg-releases", "version": 1, "package": "autograd", "cases": ["c"], "notes": [],
            "releases": [{"version": "1.7.0", "name": "autograd-1.7.0", "requirements": ["autograd==1.7.0"],
                          "env": {"versions": {"autograd": "1.7.0"}}, "error": None,
                          "cells": {"c": {"samples": 3, "first_grad_s": 0.02, "phases": {}, "counters": {}}}},
                         {"version": "1.9.1", "name": "autograd-1.9.1", "requirements": [], "env": None,
                          "error": None, "cells": {}}],
            "pairs": [{"base": "1.7.0", "head": "1.9.1", "case": "c", "verdict": "regressed", "tier": "time",
                       "pairs": 4, "wall_s": 12.0, "wall": {"verdict": "regressed", "ratio": 1.16},
                       "phases": {"trace": {"base": 0.1, "head": 0.2, "ratio": 2.0}}, "instructions": None}],
            "settings": {"budget_per_pair_s": 10}, "load": {"start": [1.0, 1.0, 1.0]}, "complete": True,
            "exit_code": 1}


@pytest.mark.parametrize("edit, field", [
    (lambda d: d["pairs"][0].pop("head"), "pairs[0].head: missing"),
    (lambda d: d["pairs"][0].update(wall="fast"), "pairs[0].wall: expected an object"),
    (lambda d: d.update(pairs=[1, 2]), "pairs[0]: expected an object"),
    (lambda d: d["releases"][0].update(version=17), "releases[0].version: expected text"),
    (lambda d: d["pairs"][0].update(head="2.0"), "'2.0' is not one of the sweep's releases"),
    (lambda d: d["pairs"][0].update(verdict="worse"), "pairs[0].verdict"),
    (lambda d: d.update(exit_code="0"), "exit_code"),
    (lambda d: d.update(format="ttfg-gate"), "not a release sweep"),
])
def test_a_hostile_sweep_is_refused_naming_the_field(tmp_path, edit, field):
    from ttfg.results.format import ResultsError
    from ttfg.results.sweep_file import load_sweep

    doc = _sweep()
    path = tmp_path / "releases.json"
    path.write_text(json.dumps(doc))
    assert load_sweep(path)["package"] == "autograd"  # the untouched document reads
    edit(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultsError, match=field.replace("[", r"\[").replace("]", r"\]")) as caught:
        load_sweep(path)
    assert str(path) in str(caught.value)


def test_regressions_lists_a_sweeps_steps_whatever_decided_them(tmp_path):
    """A sweep's step decided by counts is shown as ``regressed (instructions)``: it is a step all the same
    (matching the bare word listed none and said "no step", exit 0)."""
    doc = _sweep()
    doc["pairs"][0]["tier"] = "instructions"
    path = tmp_path / "releases.json"
    path.write_text(json.dumps(doc))
    out = run_ttfg("regressions", "--releases", str(path), "--format", "json")
    assert out.returncode == 0, out.stderr
    steps = json.loads(out.stdout)["steps"]
    assert [s["verdict"] for s in steps] == ["regressed (instructions)"]
    # Stopped before it gated every pair: it cannot say "no step".
    doc.update(complete=False, pairs=[])
    path.write_text(json.dumps(doc))
    out = run_ttfg("regressions", "--releases", str(path))
    assert out.returncode == 2 and "incomplete" in out.stdout + out.stderr
    # Its page never overwrites it.
    out = run_ttfg("report", "--releases", str(path), "--out", str(path))
    assert out.returncode == 2 and json.loads(path.read_text())["format"] == "ttfg-releases"


def test_hostile_names_in_a_sweep_are_shown_not_acted_on(tmp_path):
    doc = _sweep()
    doc["releases"][1]["name"] = "autograd-1.9.1\x1b]0;owned\x07"
    doc["pairs"][0]["case"] = doc["cases"][0] = "c\x1b[31m"
    path = tmp_path / "releases.json"
    path.write_text(json.dumps(doc))
    out = run_ttfg("regressions", "--releases", str(path))
    assert out.returncode == 0 and "\x1b" not in out.stdout and "\\x1b[31m" in out.stdout


def test_an_incomplete_sweep_says_so_on_its_page_and_summary():
    from ttfg.present.releases_views import sweep_markdown, sweep_page

    doc = _sweep()
    assert "Incomplete" not in sweep_page(doc)
    doc.update(complete=False)
    assert "Incomplete" in sweep_page(doc) and "**Incomplete:**" in sweep_markdown(doc)
