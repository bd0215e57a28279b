"""Trends that don't cry wolf: steps tested against their samples, then confirmed by a paired re-run.

The statistics and the report logic run on points built here; the confirmation loop runs
the real gate loop, real git worktrees of a throwaway repository and an in-process
sampler that answers from a file in each checkout (a "slow" marker), so a step is
confirmed, not reproduced, or left unconfirmed exactly as the code decides.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ttfg.decide.stats import compare_segments
from ttfg.history import confirm
from ttfg.history.points import _finish, _series_table
from ttfg.history.trends import CONFIRMED, DETERMINISTIC, NOT_REPRODUCED, UNCONFIRMED, analyse
from ttfg.measure.runner import RunSettings
from ttfg.results.model import Sample

from .conftest import GitRepo
from .fake_sides import PlainWorktrees

CASE = ("resnet15:blocks=2", "autograd", "params=args,chain=unrolled")


def history(*series) -> pd.DataFrame:
    """Points from ``(case, metric, commits, per_commit)`` tuples; per commit either a list of
    samples or one number (the median alone). A commit's date is its place in its list."""
    rows, keys = [], []
    for sid, (case, metric, commits, per_commit) in enumerate(series):
        keys.append((*case, metric))
        for i, (commit, got) in enumerate(zip(commits, per_commit)):
            samples = np.asarray(got, dtype=float) if isinstance(got, (list, tuple, np.ndarray)) else None
            value = float(np.median(samples)) if samples is not None else float(got)
            rows.append((commit, pd.Timestamp("2026-12-01") + pd.Timedelta(hours=i), sid, value, samples))
    return _finish(pd.DataFrame(rows, columns=["commit", "date", "sid", "value", "samples"]), _series_table(keys))


def drifting(rng, n_commits, n_samples, level=1.0, step_at=None, factor=1.0, drift=0.08, noise=0.06):
    out = []
    for i in range(n_commits):
        shift = np.log(factor) if step_at is not None and i >= step_at else 0.0
        out.append(level * np.exp(shift + drift * rng.standard_normal() + noise * rng.standard_normal(n_samples)))
    return out


# ---------------------------------------------------------------------------- the test on samples


def test_segments_drift_between_commits_is_noise_and_a_real_step_is_not():
    rng = np.random.default_rng(1)
    aa = [compare_segments(*np.split(np.array(drifting(rng, 20, 5)), 2)).verdict for _ in range(100)]
    assert sum(v in ("regressed", "improved") for v in aa) <= 3  # alpha 0.01, two-sided
    real = [compare_segments(*np.split(np.array(drifting(rng, 20, 5, step_at=10, factor=1.25)), 2)).verdict
            for _ in range(50)]
    assert real.count("regressed") >= 48


def test_a_step_followed_by_two_commits_is_tested_with_the_drift_of_the_whole_history():
    """The between-commit variance is pooled: two commits after a 10 % step of a metric that hardly
    drifts (CPU time) suffice, while the same two commits under drift stay within alpha."""
    rng = np.random.default_rng(3)

    def split(commits):
        return commits[:20], commits[20:]

    steady = [compare_segments(*split(drifting(rng, 22, 5, step_at=20, factor=1.10, drift=0.01, noise=0.03))).verdict
              for _ in range(50)]
    assert steady.count("regressed") >= 48
    aa = [compare_segments(*split(drifting(rng, 22, 5, drift=0.15, noise=0.05))).verdict for _ in range(200)]
    assert sum(v in ("regressed", "improved") for v in aa) <= 6  # alpha 0.01, two-sided: 2 expected


def test_segments_need_two_commits_a_side_and_respect_the_within_commit_spread():
    assert compare_segments([[1.0, 1.1]], [[2.0], [2.1]]).verdict == "inconclusive"
    # Two commits a side whose medians agree by luck: the within-commit spread (about 40 %) sets the floor.
    wide = compare_segments([[0.6, 1.0, 1.6], [0.62, 1.0, 1.55]], [[0.7, 1.12, 1.8], [0.72, 1.12, 1.7]])
    assert wide.verdict != "regressed"
    tight = compare_segments([[1.0, 1.01], [1.0, 0.99], [1.01, 1.0]], [[1.3, 1.31], [1.3, 1.29], [1.31, 1.3]])
    assert tight.verdict == "regressed" and tight.ratio == pytest.approx(1.3, rel=0.01)


def test_a_median_jump_from_drift_is_dismissed_a_real_step_is_a_candidate_and_counters_come_first():
    rng = np.random.default_rng(7)
    commits = [f"{i:040x}" for i in range(1, 13)]
    # Commits 6.. recorded under load: every sample of those commits 20 % slower, but so is the
    # noise between commits; the samples cannot tell it from drift.
    drift = [list(np.exp(rng.normal(0, 0.02, 2)) * (1.2 if i >= 6 else 1.0) * np.exp(rng.normal(0, 0.15)))
             for i in range(12)]
    real = drifting(rng, 12, 5, step_at=6, factor=1.3, drift=0.02, noise=0.03)
    counter = [100.0] * 6 + [120.0] * 6
    points = history((CASE, "first_grad_s", commits, real), (CASE, "counters.autograd_nodes", commits, counter),
                     (("resnet15", "autograd", ""), "first_grad_s", commits, drift))
    trends = analyse(points)
    steps = trends.steps
    assert list(steps["status"]) == [DETERMINISTIC, UNCONFIRMED], steps[["case", "metric", "status"]]
    det, timing = steps.iloc[0], steps.iloc[1]
    assert det["metric"] == "counters.autograd_nodes" and det["kind"] == "regression" and det["deterministic"]
    assert timing["case"].startswith("resnet15:blocks=2") and timing["p_value"] < 0.01
    assert timing["n_before"] == 30 and timing["n_after"] == 30 and timing["commits_before"] == 6
    # Counted: the deterministic step only; the timing one is a candidate until confirmed.
    assert trends.n_regressions() == 1 and len(trends.candidates()) == 1
    assert trends.dismissed >= 0


def interfered(rng, n_commits, step_at=None, factor=1.10, hit=0.25, slowdown=1.25):
    """Five samples per commit of a steady CPU time; each sample hit by another job (``hit``
    of them, at random) is ``slowdown`` slower: interference only ever adds time."""
    out = []
    for i in range(n_commits):
        level = factor if step_at is not None and i >= step_at else 1.0
        x = level * np.exp(0.01 * rng.standard_normal() + 0.02 * rng.standard_normal(5))
        out.append(list(np.where(rng.random(5) < hit, x * slowdown, x)))
    return out


def test_a_timing_step_is_found_in_each_commits_faster_half():
    """Interference that slows a random share of each commit's samples hides a 10 % step in the
    medians and means; the faster half of each commit keeps it, and says its size."""
    rng = np.random.default_rng(11)
    commits = [f"{i:040x}" for i in range(1, 23)]
    found, false_steps, changes, evidence = 0, 0, [], []
    for _ in range(30):
        steps = analyse(history((CASE, "first_grad_cpu_s", commits, interfered(rng, 22, step_at=20)))).steps
        hit = steps[steps["commit_after"] == commits[20]]
        found += len(hit) == 1
        changes += list(hit["change"])
        evidence += list(hit["evidence"])
        false_steps += len(analyse(history((CASE, "first_grad_cpu_s", commits, interfered(rng, 22)))).steps)
    assert found >= 25, found  # 25 of 30 here; with every sample, 10
    assert false_steps <= 4, false_steps  # 4 here; with every sample, 4
    assert np.median(changes) == pytest.approx(0.10, abs=0.02)
    assert all("faster half" in e for e in evidence)


def test_faster_half_skips_failed_samples_and_keeps_small_commits_whole():
    from ttfg.history.steps import faster_half, timing_levels

    assert list(faster_half([3.0, np.nan, 1.0, 2.0, 9.0, 5.0])) == [1.0, 2.0, 3.0]
    assert list(faster_half([2.0, 1.0])) == [1.0, 2.0]
    levels, kept = timing_levels([4.0, 7.0], [np.array([np.nan, np.nan]), np.array([2.0, 8.0, 32.0])])
    assert kept[0] is None and levels[0] == 4.0  # nothing measured: the stored value stands
    assert list(kept[1]) == [2.0, 8.0] and levels[1] == pytest.approx(4.0)  # geometric mean of 2 and 8
    # A whole series at once (commits of any size, None, failed samples) keeps each commit's faster half.
    rng = np.random.default_rng(4)
    samples = [None if k == 0 else list(np.where(rng.random(k) < 0.2, np.nan, rng.random(k) + 0.5))
               for k in rng.integers(0, 7, 40)]
    levels, kept = timing_levels(np.full(40, 9.0), samples)
    for level, half, commit in zip(levels, kept, samples):
        expected = faster_half(commit) if commit is not None else np.empty(0)
        assert (half is None and not len(expected) and level == 9.0) or (
            list(half) == list(expected) and level == pytest.approx(np.exp(np.mean(np.log(expected)))))


def test_history_with_medians_only_does_not_count_timing_steps():
    commits = [f"{i:040x}" for i in range(1, 6)]
    points = history((CASE, "first_grad_s", commits, [1.0, 1.02, 1.3, 1.25, 1.4]))  # 5 commits, medians only
    trends = analyse(points)
    assert trends.n_regressions() == 0


# ---------------------------------------------------------------------------- confirmation


@pytest.fixture
def repo(tmp_path):
    """Three commits: a, b (adds the 'slow' marker: a real regression), c (no code change)."""
    history = GitRepo.init(tmp_path / "repo")
    shas = [history.commit(name, {"note.txt": name, **({"slow": "1"} if slow else {})})
            for name, slow in (("a", False), ("b", True), ("c", True))]
    return history.path, shas


#: Worktrees as sides without installing anything: the fake samplers read the tree itself.
plain_checkouts = PlainWorktrees()


class MarkerSampler:
    """A cold process stand-in: 1 s (+ noise), 1.5 s where the checkout holds the 'slow' marker."""

    def __init__(self):
        self.rng = np.random.default_rng(0)
        self.calls = 0

    def __call__(self, case, kind, cache, index, run) -> Sample:
        self.calls += 1
        value = (1.5 if (run.target.source / "slow").exists() else 1.0) * float(np.exp(0.01 * self.rng.standard_normal()))
        return Sample(kind="timing", ok=True, index=index, cache="cold", started_at="2026-12-03T00:00:00+00:00",
                      process_wall_s=1.0, import_s=0.5, build_s=0.01, first_grad_s=value, second_grad_s=0.01,
                      execute_s=value, process_ttfg_s=value + 1, cpu_s=1.0, peak_rss_bytes=10**8, loss=1.0,
                      counters={})


def candidate_trends(shas, before, after, extra_missing=False):
    """A history whose first_grad_s steps between ``before`` and ``after`` (as the real history would show)."""
    rng = np.random.default_rng(3)
    commits = [f"{i:040x}" for i in range(1, 5)] + [shas[before], shas[after]] + [f"{i:040x}" for i in range(5, 9)]
    values = drifting(rng, 10, 5, step_at=5, factor=1.5, drift=0.01, noise=0.01)
    series = [(CASE, "first_grad_s", commits, values)]
    if extra_missing:
        series.append((("resnet15", "autograd", ""), "first_grad_s", commits[:5] + ["f" * 40] + commits[6:], values))
    points = history(*series)
    return analyse(points)


def test_confirm_marks_a_real_step_confirmed_and_a_drift_step_not_reproduced(repo, tmp_path):
    root, (a, b, c) = repo
    sampler = MarkerSampler()
    real = candidate_trends([a, b, c], 0, 1)     # a -> b adds the marker: slower for real
    assert list(real.steps["status"]) == [UNCONFIRMED]
    found = confirm.confirm(real, root, 300, tmp_path / "runs", opener=plain_checkouts, sampler=sampler, run_settings=RunSettings(repeat=1))
    assert [f.status for f in found] == [CONFIRMED], found[0].reason
    assert found[0].verdict["ratio"] == pytest.approx(1.5, rel=0.05) and found[0].pairs >= 5
    assert (tmp_path / "runs").is_dir() and sampler.calls == 2 * found[0].pairs

    noise = candidate_trends([a, b, c], 1, 2)    # b -> c changes nothing measured
    found_noise = confirm.confirm(noise, root, 300, tmp_path / "runs2", opener=plain_checkouts, sampler=MarkerSampler(),
                                  run_settings=RunSettings(repeat=1))
    assert [f.status for f in found_noise] == [NOT_REPRODUCED], found_noise[0].reason

    # Stored beside the history, re-applied: only the confirmed one counts.
    path = confirm.save(tmp_path / "results" / confirm.FILE_NAME, confirm.merge({}, found + found_noise))
    stored = confirm.load(path)
    assert json.loads(path.read_text())["format"] == "ttfg-confirmations"
    assert confirm.apply(real, stored).n_regressions() == 1
    noise = confirm.apply(noise, stored)
    assert noise.n_regressions() == 0 and list(noise.candidates()["status"]) == [NOT_REPRODUCED]
    # A later unconfirmed outcome (budget spent) never overwrites a verdict.
    spent = confirm.confirm(candidate_trends([a, b, c], 0, 1), root, 1, tmp_path / "runs3", opener=plain_checkouts, sampler=MarkerSampler())
    assert spent[0].status == UNCONFIRMED and "budget" in spent[0].reason
    assert confirm.merge(stored, spent)[spent[0].key]["status"] == CONFIRMED


def test_an_inconclusive_re_run_is_not_repeated_until_asked_but_a_step_left_aside_is():
    """Re-running an inconclusive step on every push would test until one run says 'regressed'."""
    commits = [f"{i:040x}" for i in range(1, 11)]
    values = drifting(np.random.default_rng(3), 10, 5, step_at=5, factor=1.5, drift=0.01, noise=0.01)

    def with_stored(reason, pairs):  # confirm.apply marks the Trends it is given, so each gets its own
        trends = analyse(history((CASE, "first_grad_s", commits, values)))
        (key,) = list(trends.steps["key"])
        return confirm.apply(trends, {key: {"key": key, "status": UNCONFIRMED, "reason": reason, "pairs": pairs}})

    inconclusive = with_stored("paired re-run, 60 pair(s): inconclusive", 60)
    assert confirm.plan(inconclusive) == [] and len(confirm.plan(inconclusive, redo=True)) == 1
    aside = with_stored("not re-measured: the --budget was spent", 0)
    assert len(confirm.plan(aside)) == 1


def test_a_commit_missing_from_the_repository_leaves_that_step_unconfirmed_and_the_rest_runs(repo, tmp_path):
    root, (a, b, c) = repo
    trends = candidate_trends([a, b, c], 0, 1, extra_missing=True)
    assert len(trends.steps) == 2
    notes = []
    found = confirm.confirm(trends, root, 300, tmp_path / "runs", opener=plain_checkouts, sampler=MarkerSampler(), on_note=notes.append,
                            run_settings=RunSettings(repeat=1))
    by_case = {f.case.split("/")[0]: f for f in found}
    assert by_case["resnet15:blocks=2"].status == CONFIRMED
    missing = by_case["resnet15"]
    assert missing.status == UNCONFIRMED and "f" * 10 in missing.reason and "not found" in missing.reason
    assert any(n.startswith("cannot confirm") for n in notes)


def test_bad_confirmations_file_is_named(tmp_path):
    path = tmp_path / confirm.FILE_NAME
    path.write_text('{"format": "something else"}')
    with pytest.raises(Exception, match="confirmations.json"):
        confirm.load(path)
    assert confirm.load(tmp_path / "absent.json") == {}


# ---------------------------------------------------------------------------- the command line


def test_cli_confirm_with_history_commits_missing_from_the_repository(repo, tmp_path, monkeypatch, capsys):
    """Synthetic history names commits this repository lacks: each step says so, the rest of the
    output and the confirmations file are still written, and the documented exit code is 2."""
    from ttfg.cli import main
    from ttfg.history.synthetic import cases, write_history

    root, _ = repo
    write_history(root / "results", 24, seed=3, case_list=cases(5))
    monkeypatch.chdir(root)
    assert main(["regressions"]) == 0
    listed = capsys.readouterr().out
    assert "unconfirmed timing candidates, not counted" in listed and "candidates" in listed
    assert main(["regressions", "--confirm", "--budget", "5m", "--max-steps", "3"]) == 2
    out = capsys.readouterr().out
    assert "not found" in out and "could not start because a commit is missing" in out
    stored = confirm.load(root / "results" / confirm.FILE_NAME)
    assert len(stored) == 3 and {e["status"] for e in stored.values()} == {UNCONFIRMED}
    assert all("not found" in e["reason"] for e in stored.values())
    # The report reads them and still counts no timing candidate as a regression.
    assert main(["report", "--out", "out/index.html", "--commit-url", "https://example.org/c/{sha}"]) == 0
    html = (root / "out" / "index.html").read_text()
    assert "not re-measured" in html and 'href="https://example.org/c/' in html
    # Without --commit-url, asv.conf.json's show_commit_url links commits (the hash appended, as asv does).
    (root / "asv.conf.json").write_text('{"version": 1, "show_commit_url": "https://example.com/r/commit/"}')
    assert main(["report", "--out", "out/asv.html"]) == 0
    assert 'href="https://example.com/r/commit/' in (root / "out" / "asv.html").read_text()
    # Bad input is refused before any work.
    assert main(["regressions", "--confirm", "--budget", "soon"]) == 2
    assert main(["report", "--out", "out/x.html", "--commit-url", "javascript:alert(1)//{sha}"]) == 2
    assert not (root / "out" / "x.html").exists()
    (root / "results" / confirm.FILE_NAME).write_text("{")
    assert main(["regressions"]) == 2
    assert confirm.FILE_NAME in capsys.readouterr().err


@pytest.mark.full
def test_confirm_a_step_with_real_cold_processes(tmp_path):
    """The real path: git worktrees of two commits of this repository (the second changes no
    code), autograd on a 2-block resnet in fresh processes, five pairs: not a regression."""
    from tests.test_asv import clone_with_two_commits

    first, second = clone_with_two_commits(tmp_path / "clone")
    commits = [f"{i:040x}" for i in range(1, 4)] + [first, second] + [f"{i:040x}" for i in range(4, 7)]
    values = drifting(np.random.default_rng(5), 8, 3, step_at=4, factor=1.5, drift=0.01, noise=0.01, level=0.01)
    trends = analyse(history((CASE, "first_grad_s", commits, values)))
    assert list(trends.steps["commit_after"]) == [second]
    found = confirm.confirm(trends, tmp_path / "clone", 240, tmp_path / "runs", max_pairs=5,
                            run_settings=RunSettings(repeat=1, timeout_s=120))
    assert len(found) == 1 and found[0].status in (NOT_REPRODUCED, UNCONFIRMED), found[0].reason
    assert found[0].pairs == 5 and "paired re-run" in found[0].reason
    assert {"base", "head"} <= set(found[0].files)


def test_steps_between_the_same_commits_share_one_gate_run(repo, tmp_path):
    """first_grad_s and process_ttfg_s step at the same commits: one gate run decides on the
    larger step's metric and the other is read from the same paired processes."""
    root, (a, b, c) = repo
    rng = np.random.default_rng(11)
    commits = [f"{i:040x}" for i in range(1, 5)] + [a, b] + [f"{i:040x}" for i in range(5, 9)]
    first = drifting(rng, 10, 5, step_at=5, factor=1.5, drift=0.01, noise=0.01)
    process = [x + 1.0 for x in first]
    trends = analyse(history((CASE, "first_grad_s", commits, first), (CASE, "process_ttfg_s", commits, process)))
    assert len(trends.steps) == 2 and len(confirm.plan(trends)) == 1
    sampler = MarkerSampler()
    found = confirm.confirm(trends, root, 300, tmp_path / "runs", opener=plain_checkouts, sampler=sampler, run_settings=RunSettings(repeat=1))
    assert [f.status for f in found] == [CONFIRMED, CONFIRMED], [f.reason for f in found]
    assert len(list((tmp_path / "runs").iterdir())) == 1
    by_metric = {f.metric: f for f in found}
    assert "decided on first_grad_s" in by_metric["process_ttfg_s"].reason
    assert by_metric["process_ttfg_s"].verdict["ratio"] == pytest.approx(2.5 / 2.0, rel=0.02)
