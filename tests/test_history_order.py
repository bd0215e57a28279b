"""A history is read in git's order (the branch's first-parent line), never by date.

Found on a real library's first day: four rebased commits with one author date gave
"0 regressions, 2 improvements", the steps listed newest to oldest, and an injected 2x
HLO-op step missed; asv (and the trends, before) order commits by author date, ties by
hash. Each history here is written as asv writes it (``history.synthetic``) for the commits
of a real git repository, with a 2x HLO-op step planted at a known commit.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd
import pytest

from ttfg.history import asv_results, git_order
from ttfg.history import points
from ttfg.history.synthetic import write_history
from ttfg.history.trends import DETERMINISTIC, UNCONFIRMED, analyse

from .conftest import GitRepo, git

JIT = ("resnet15", "jax.jit", "params=args,chain=unrolled")
AUTOGRAD = ("resnet15", "autograd", "params=args,chain=unrolled")
HLO_CASE = "resnet15/jax.jit/params=args,chain=unrolled"
N, STEP_AT = 10, 6
BASE_S = 1_767_571_200  # 2026-01-05, in seconds


def commit(root, name, when):
    """A commit of ``file.txt`` alone (asv.conf.json stays out of the history), dated ``when`` (seconds)."""
    return GitRepo(root).commit(name, {"file.txt": name}, stage="files", when=when)


def project(tmp_path, author_dates):
    """A repository whose ``main`` holds one commit per author date (seconds), in that order, with the
    asv.conf.json `ttfg init` writes beside it (repo ".", branches ["main"], results_dir "results")."""
    root = GitRepo.init(tmp_path / "lib").path
    (root / "asv.conf.json").write_text(json.dumps({"version": 1, "project": "lib", "repo": ".",
                                                    "branches": ["main"], "results_dir": "results"}))
    shas = [commit(root, f"c{i}", when) for i, when in enumerate(author_dates)]
    return root, shas


def record(root, shas, author_dates, steps=((HLO_CASE, "counters.hlo_ops", STEP_AT, 2.0),)):
    """asv results for ``shas`` (their true order), dated like asv dates them (author date, ms)."""
    write_history(root / "results", len(shas), seed=11, case_list=[JIT, AUTOGRAD], steps_per_case=0, samples=3,
                  commits=list(shas), dates_ms=[d * 1000 for d in author_dates], plant=list(steps))


def counted_hlo(trends):
    steps = trends.counted()
    return steps[steps["metric"] == "counters.hlo_ops"]


EQUAL = [BASE_S] * N                              # a rebase: one author date for all
REVERSED = [BASE_S + 3600 * (N - i) for i in range(N)]  # cherry-picked old work: dates run backwards


@pytest.mark.parametrize("dates", [EQUAL, REVERSED], ids=["equal author dates", "reversed author dates"])
def test_a_step_is_found_at_its_commit_whatever_the_author_dates(tmp_path, dates):
    root, shas = project(tmp_path, dates)
    record(root, shas, dates)
    frame = asv_results.load(root / "results", dropna=True)
    history = points.from_history(frame)
    trends = analyse(history.points)
    hlo = counted_hlo(trends)
    assert len(hlo) == 1, hlo[["commit_before", "commit_after", "kind", "change"]]
    step = hlo.iloc[0]
    assert (step["commit_before"], step["commit_after"]) == (shas[STEP_AT - 1], shas[STEP_AT])
    assert step["kind"] == "regression" and step["change"] == pytest.approx(1.0) and step["status"] == DETERMINISTIC
    assert trends.n_regressions() == 1 and trends.n_improvements() == 0
    assert list(points.commits(history.points)["commit"].astype(str)) == shas
    assert list(pd.unique(frame["commit"])) == shas  # the loader's rows too: git's order
    assert not any(n.startswith(git_order.DATE_ORDER) for n in history.notes), history.notes
    order = frame.attrs["commit_order"]
    assert order.by_git and order.note is None


def test_cli_lists_steps_oldest_to_newest_in_git_order(tmp_path, monkeypatch, capsys):
    """`ttfg regressions` (JSON and terminal) from a results folder beside its asv.conf.json: git's
    order, steps oldest first, the 2x HLO-op step at its commit."""
    from ttfg.cli import main

    dates = EQUAL
    root, shas = project(tmp_path, dates)
    second = (HLO_CASE, "counters.jaxpr_eqns", 3, 1.5)   # an older step, planted second
    record(root, shas, dates, steps=[(HLO_CASE, "counters.hlo_ops", STEP_AT, 2.0), second])
    monkeypatch.chdir(root)
    assert main(["regressions", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert not any(n.startswith(git_order.DATE_ORDER) for n in doc["notes"]), doc["notes"]
    counted = [s for s in doc["steps"] if s["status"] == DETERMINISTIC]
    assert [(s["metric"], s["commit_after"]) for s in counted] == [
        ("counters.jaxpr_eqns", shas[3]), ("counters.hlo_ops", shas[STEP_AT])]
    assert [s["pos"] for s in doc["steps"]] == sorted(s["pos"] for s in doc["steps"])
    assert doc["regressions"] == 2 and doc["improvements"] == 0
    assert main(["regressions"]) == 0
    out = capsys.readouterr().out
    assert out.index("jaxpr") < out.index("HLO ops")  # oldest first in the terminal table too


def test_commits_off_the_branch_come_after_the_commit_they_branched_from(tmp_path):
    dates = [BASE_S + 60 * i for i in range(6)]
    root, main_shas = project(tmp_path, dates)
    # A pull request from c2, with commits dated after all of main's (its date order would put it last).
    git(root, "checkout", "-q", "-b", "pr", main_shas[2])
    pr = [commit(root, f"p{i}", BASE_S + 3600 + i) for i in range(2)]
    git(root, "checkout", "-q", "main")
    truth = [*main_shas[:3], *pr, *main_shas[3:]]
    record(root, truth, [*dates[:3], BASE_S + 3600, BASE_S + 3601, *dates[3:]], steps=())
    frame = asv_results.load(root / "results", dropna=True)
    history = points.from_history(frame)
    assert list(points.commits(history.points)["commit"].astype(str)) == truth
    note = "2 of 8 commits are not on main's first-parent line; each is placed after the commit it branched from"
    assert note in history.notes
    assert frame.attrs["commit_order"].by_git


def test_a_history_git_does_not_know_says_it_fell_back_to_date_order(tmp_path, monkeypatch, capsys):
    """A results folder copied from elsewhere: its commits are not in the repository at hand."""
    from ttfg.cli import main

    root, shas = project(tmp_path, EQUAL[:4])
    foreign = [hashlib.sha1(f"elsewhere {i}".encode()).hexdigest() for i in range(8)]  # asv files them by 8 digits
    dates = [BASE_S + 60 * i for i in range(8)]
    record(root, foreign, dates, steps=[(HLO_CASE, "counters.hlo_ops", 5, 2.0)])
    frame = asv_results.load(root / "results", dropna=True)
    history = points.from_history(frame)
    assert any(n.startswith("ordered by date: 8 of 8 commits are not in the git repository") for n in history.notes)
    assert not frame.attrs["commit_order"].by_git
    # Date order still finds the step (these dates are distinct and in order).
    hlo = counted_hlo(analyse(history.points))
    assert list(hlo["commit_after"]) == [foreign[5]]
    monkeypatch.chdir(root)
    assert main(["regressions", "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert any(n.startswith("ordered by date: ") for n in json.loads(captured.out)["notes"])
    assert "note: ordered by date: " in captured.err
    assert main(["report", "--out", "out/index.html"]) == 0
    assert "ordered by date: 8 of 8 commits" in (root / "out" / "index.html").read_text()


def test_no_repository_and_a_frame_without_its_order_fall_back_to_date_order(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no asv.conf.json, no git repository here
    write_history(tmp_path / "results", 6, seed=2, case_list=[AUTOGRAD])
    frame = asv_results.load(tmp_path / "results")
    assert any(n.startswith("ordered by date: no git repository") for n in points.from_history(frame).notes)
    frame.attrs.clear()  # built by hand, say
    notes = points.from_history(frame).notes
    assert any(n.startswith("ordered by date: the history came without its git repository") for n in notes)


def test_a_branch_or_repository_git_cannot_use_is_named_in_the_date_order_note(tmp_path):
    root, shas = project(tmp_path, EQUAL[:4])
    record(root, shas, EQUAL[:4], steps=())
    conf = root / "asv.conf.json"
    conf.write_text(conf.read_text().replace('"main"', '"trunk"'))
    note = asv_results.load(root / "results").attrs["commit_order"].note
    assert note.startswith("ordered by date: branch 'trunk' is not in the git repository")
    conf.write_text(conf.read_text().replace('"."', '"https://example.org/lib.git"'))
    note = asv_results.load(root / "results").attrs["commit_order"].note
    assert note.startswith("ordered by date: ") and "names a remote repository (https://example.org/lib.git)" in note
    # Named explicitly (a --repo/--branch of the command line), they win over the config.
    assert asv_results.load(root / "results", repo=root, branch="main").attrs["commit_order"].by_git


# ---------------------------------------------------------------------------- repeatability


def count_history(backend, values):
    """alloc_count of one case, one process per commit (as asv stores a deterministic metric)."""
    commits = [f"{i:040x}" for i in range(1, len(values) + 1)]
    rows = [(c, pd.Timestamp("2026-12-01") + pd.Timedelta(hours=i), 0, float(v), None)
            for i, (c, v) in enumerate(zip(commits, values))]
    return points._finish(pd.DataFrame(rows, columns=["commit", "date", "sid", "value", "samples"]),
                               points._series_table([("resnet15", backend, "", "alloc_count")]))


def test_a_count_processes_do_not_repeat_is_not_called_on_one_process_per_commit():
    """jax's allocation counts differ by up to 7.4 % between identical processes (metrics._XLA_ALLOCS):
    an 8 % difference of single processes is a candidate at most, never a counted step."""
    values = [2_191_746] * 6 + [2_367_086] * 6  # +8 %
    jax = analyse(count_history("jax.jit", values))
    assert jax.n_regressions() == 0
    assert set(jax.steps["status"]) <= {UNCONFIRMED}
    assert all("not repeatable between jax.jit processes" in e for e in jax.steps["evidence"])
    # autograd repeats its counts: the same step is a regression outright.
    exact = analyse(count_history("autograd", values))
    assert exact.n_regressions() == 1 and list(exact.steps["status"]) == [DETERMINISTIC]


def test_what_the_processes_loaded_decides_whether_a_count_repeats_not_the_backend_name():
    """Issue 39 item 1 in the trends: a library backend on jax that declares only its own package (``mylib.jax``)
    ran on jaxlib, as its results files recorded; its allocation counts are tested like a timing's. A backend
    named like jax whose processes loaded no jaxlib repeats its counts."""
    values = [2_191_746] * 6 + [2_367_086] * 6  # +8 %
    declared = analyse(count_history("mylib.jax", values))
    assert declared.n_regressions() == 1  # what it declares (no jaxlib) would call it a counted step
    measured = analyse(count_history("mylib.jax", values), runs_on={"resnet15/mylib.jax": frozenset({"jaxlib"})})
    assert measured.n_regressions() == 0 and set(measured.steps["status"]) <= {UNCONFIRMED}
    assert all("not repeatable between mylib.jax processes (XLA" in e for e in measured.steps["evidence"])
    plain = analyse(count_history("jax.jit", values), runs_on={"resnet15/jax.jit": frozenset()})
    assert plain.n_regressions() == 1 and list(plain.steps["status"]) == [DETERMINISTIC]


def test_a_count_whose_processes_of_one_commit_disagree_is_tested_like_a_timing():
    """Steadiness shown in the series itself: two processes of one commit 6 % apart, and the registry's word
    that the count repeats (autograd declares no runtime) gives way to what was measured."""
    values = [1_000_000] * 6 + [1_080_000] * 6
    commits = [f"{i:040x}" for i in range(1, 13)]
    rows = [(c, pd.Timestamp("2026-12-01") + pd.Timedelta(hours=i), 0, float(v),
             np.array([v, v * 1.06]) if i == 3 else np.array([v, v]))
            for i, (c, v) in enumerate(zip(commits, values))]
    pts = points._finish(pd.DataFrame(rows, columns=["commit", "date", "sid", "value", "samples"]),
                         points._series_table([("resnet15", "autograd", "", "alloc_count")]))
    got = analyse(pts)
    assert got.n_regressions() == 0 and set(got.steps["status"]) <= {UNCONFIRMED}
    assert all("processes of one commit differed by 6.0%" in e for e in got.steps["evidence"])
    steady = [(c, d, sid, v, np.array([v, v]) if s is not None else None) for c, d, sid, v, s in rows]
    assert analyse(points._finish(pd.DataFrame(steady, columns=["commit", "date", "sid", "value", "samples"]),
                                  points._series_table([("resnet15", "autograd", "", "alloc_count")]))
                   ).n_regressions() == 1


def test_a_count_step_within_the_measured_spread_is_not_a_step():
    """alloc_count spreads 1.2 % between processes of the same code (metrics.ALLOC_COUNT_SPREAD):
    a 1.5 % step is within twice that, a 5 % one is not."""
    assert analyse(count_history("autograd", [1_000_000] * 6 + [1_015_000] * 6)).steps.empty
    assert analyse(count_history("autograd", [1_000_000] * 6 + [1_050_000] * 6)).n_regressions() == 1


def test_confirm_plans_only_timings():
    from ttfg.history import confirm

    jax = analyse(count_history("jax.jit", [2_191_746] * 6 + [2_367_086] * 6))
    assert len(jax.candidates()) and confirm.plan(jax) == []
    assert np.all(jax.steps["deterministic"] == False)  # noqa: E712  (a numpy bool column)
