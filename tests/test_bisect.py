"""``ttfg bisect`` end to end on a generated history of a user's project (``tests/user_project.py``).

The history: ``mylab`` as first written, comment-only commits, one commit that deepens the
model and slows its loss scaling (a structural change: more autograd primitives, and a named
pure-Python function), and more comment-only commits. The structural tier settles every
comparison in one pair a side, so the search runs in real processes within a minute or two.
The refusals (revisions that do not exist, ends swapped, a dirty tree, a foreign or corrupt
state) are checked before anything is measured.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from ttfg.app.bisect import first_parent_range
from ttfg.present.bisect_page import bisect_page
from ttfg.results.bisect_file import load_bisect
from ttfg.provision.worktrees import resolve

from .conftest import GitRepo, git
from .user_project import committed_project, layered_venv, write_project

CULPRIT_AT = 5
N_COMMITS = 8  # after the good end


def _comment(repo, n: int) -> str:
    notes = repo / "src" / "mylab" / "notes.py"
    notes.write_text(notes.read_text() + f"# note {n}\n" if notes.exists() else f'"""Notes."""\n# note {n}\n')
    return GitRepo(repo).commit(f"note {n}, nothing else")


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    root = tmp_path_factory.mktemp("bisect")
    repo = root / "mylab"
    commits = [committed_project(repo)]
    mylab = GitRepo(repo)
    for n in range(1, N_COMMITS + 1):
        if n == CULPRIT_AT:
            write_project(repo, depth=8, slow=True)
            commits.append(mylab.commit("deeper, and a slower scale", stage="tracked"))
        else:
            commits.append(_comment(repo, n))
    mylab.git("checkout", "-q", "-b", "fast")  # the slowdown undone: an improvement after the bad end
    write_project(repo)
    fast = mylab.commit("shallower and faster again", stage="tracked")
    mylab.git("checkout", "-q", "main")
    python = layered_venv(root / "venv")
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "-e", str(repo)], check=True, capture_output=True, text=True,
                   timeout=300)
    return {"repo": repo, "python": python, "commits": commits, "fast": fast}


def bisect(history, *args, timeout=900):
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_STEP_SUMMARY", "PYTHONPATH")}
    return subprocess.run([str(history["python"]), "-m", "ttfg", "bisect", "--model", "mylab_mlp",
                           "--backend", "mylab.autograd", *args], cwd=history["repo"], env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
@pytest.mark.full  # a real gate/run of tens of seconds: make test-all and CI run it
def test_the_culprit_is_found_named_and_reproducible_and_a_rerun_reads_the_state(history, tmp_path):
    c = history["commits"]
    tiers = ["--tiers", "structural,time", "--budget", "60s"]  # each step: the counting tier first, then time
    out = bisect(history, "--good", c[0], "--bad", c[-1], *tiers, "--out-dir", str(tmp_path))
    text = out.stdout + out.stderr
    assert out.returncode == 1, text
    doc = json.loads((tmp_path / "bisect.json").read_text())
    assert doc["status"] == "found" and doc["culprit"]["commit"] == c[CULPRIT_AT], text
    assert doc["culprit"]["subject"] == "deeper, and a slower scale" and doc["culprit"]["author"].startswith("mylab")
    assert len(doc["probes"]) <= 3 + 2  # log2(8) + 2
    assert f"ttfg gate --base {c[CULPRIT_AT - 1][:12]} --head {c[CULPRIT_AT][:12]}" in text
    assert "culprit: " + c[CULPRIT_AT][:10] in text
    assert "_mylab_slow_scale_work" in text  # the function that grew, from the culprit against its parent
    assert "counters.autograd_primitives" in text
    summary = (tmp_path / "summary.md").read_text()
    assert "culprit found" in summary and c[CULPRIT_AT][:10] in summary
    steps = [e for p in doc["probes"] for e in p["evidence"]]
    assert steps and all(e["folder"].endswith("-counts") for e in steps)  # no step needed wall time
    page = bisect_page(load_bisect(tmp_path / "bisect.json"))  # the page's reader takes what a real bisect writes
    assert c[CULPRIT_AT] in page and "_mylab_slow_scale_work" in page
    again = bisect(history, "--good", c[0], "--bad", c[-1], *tiers, "--out-dir", str(tmp_path), timeout=60)
    assert again.returncode == 1 and "finished before" in again.stdout + again.stderr
    assert json.loads((tmp_path / "bisect.json").read_text()) == doc


@pytest.mark.full  # a bisect stopped and resumed (about 30 s); the culprit test stays in make test
def test_a_stopped_bisect_continues_where_it_stopped(history, tmp_path):
    c = history["commits"]
    args = ["--good", c[0], "--bad", c[-1], "--tiers", "structural", "--out-dir", str(tmp_path)]
    first = bisect(history, *args, "--total-budget", "1")
    assert first.returncode == 2 and "rerun" in first.stdout + first.stderr
    done = json.loads((tmp_path / "bisect.json").read_text())
    assert done["status"] == "stopped" and done["ends"] is not None
    second = bisect(history, *args)
    assert second.returncode == 1, second.stdout + second.stderr
    doc = json.loads((tmp_path / "bisect.json").read_text())
    assert doc["culprit"]["commit"] == c[CULPRIT_AT] and doc["ends"] == done["ends"] and doc["resumed"]


def test_bad_input_is_refused_naming_it_before_anything_is_measured(history, tmp_path):
    c = history["commits"]
    out = bisect(history, "--good", "no-such-rev", "--bad", "nor-this", "--out-dir", str(tmp_path), timeout=120)
    assert out.returncode == 2 and "no-such-rev" in out.stderr and "nor-this" in out.stderr
    out = bisect(history, "--good", c[-1], "--bad", c[0], "--out-dir", str(tmp_path), timeout=120)
    assert out.returncode == 2 and "swap them" in out.stderr and "--improvement" in out.stderr
    state = tmp_path / "bisect.json"
    state.write_text("{not json")
    out = bisect(history, "--good", c[0], "--bad", c[-1], "--out-dir", str(tmp_path), timeout=120)
    assert out.returncode == 2 and str(state) in out.stderr and state.read_text() == "{not json"
    foreign = json.dumps({"format": "ttfg-bisect", "version": 1, "key": {"good": "x"}, "probes": []})
    state.write_text(foreign)  # hand-written: the strict reader names the first field it lacks
    out = bisect(history, "--good", c[0], "--bad", c[-1], "--out-dir", str(tmp_path), timeout=120)
    assert out.returncode == 2 and f"{state}: status: missing" in out.stderr and state.read_text() == foreign
    plugin = history["repo"] / "src" / "mylab" / "ops.py"
    original = plugin.read_text()
    plugin.write_text(original + "# uncommitted\n")
    try:
        out = bisect(history, "--good", c[0], "--bad", "HEAD", "--out-dir", str(tmp_path / "dirty"), timeout=120)
    finally:
        plugin.write_text(original)
    assert out.returncode == 2 and "uncommitted changes" in out.stderr and "ops.py" in out.stderr


@pytest.mark.full
def test_ends_that_do_not_differ_have_no_step_and_a_faster_bad_end_is_called_swapped(history, tmp_path):
    c = history["commits"]
    time_tier = ["--tiers", "structural,time", "--budget", "90s"]
    # Equivalence within 50 % takes more pairs on busy cores (21 pairs at load 5-6 spread 0.65×-1.91×): the budget is
    # a cap, an idle machine stops long before it.
    out = bisect(history, "--good", c[1], "--bad", c[3], "--tiers", "structural,time", "--budget", "300s",
                 "--min-effect", "50%", "--guard", "first_grad_s", "--out-dir", str(tmp_path / "same"))
    assert out.returncode == 0 and "no step between these commits" in out.stdout, out.stdout + out.stderr
    out = bisect(history, "--good", c[-1], "--bad", history["fast"], *time_tier, "--out-dir", str(tmp_path / "swap"))
    assert out.returncode == 2 and "--improvement" in out.stdout, out.stdout + out.stderr


def test_a_range_across_a_merge_is_walked_first_parent(tmp_path):
    history = GitRepo.init(tmp_path / "r")
    repo = history.path
    for name in ("a", "b"):
        history.commit(name, {name: name})
    history.git("checkout", "-q", "-b", "side")
    history.commit("on the side", {"s": "s"})
    history.git("checkout", "-q", "main")
    history.commit("c", {"c": "c"})
    history.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    good, bad = resolve(repo, "HEAD~2"), resolve(repo, "HEAD")
    walk = first_parent_range(repo, good, bad)
    assert walk.commits == [good.commit, git(repo, "rev-parse", "HEAD~1"), bad.commit]
    assert walk.merges == [bad.commit]
    assert walk.revisions[0] == good and walk.revisions[-1] == bad  # the ends as resolved, their names kept
    assert [(r.name, r.subject) for r in walk.revisions[1:]] == [(walk.commits[1][:10], "c"), ("HEAD", "merge side")]


def test_regressions_names_the_bisect_that_narrows_a_step_wider_than_one_commit(tmp_path):
    from types import SimpleNamespace

    import pandas as pd

    from ttfg.app.report import bisect_ranges
    from ttfg.present.regressions_views import bisect_hints

    history = GitRepo.init(tmp_path / "r")
    repo = history.path
    shas = [history.commit(f"c{n}", {"f": str(n)}) for n in range(4)]
    row = {"case": "resnet15/jax.jit/default", "model": "resnet15", "backend": "jax.jit", "variant": "",
           "metric": "first_grad_s", "kind": "regression", "label_before": "v1", "label_after": "v2"}
    steps = pd.DataFrame([{**row, "commit_before": shas[0], "commit_after": shas[3]},  # 3 commits: bisect
                          {**row, "commit_before": shas[2], "commit_after": shas[3]},  # adjacent: nothing to narrow
                          {**row, "commit_before": "f" * 40, "commit_after": shas[3]},  # not in this repository
                          {**row, "kind": "improvement", "commit_before": shas[0], "commit_after": shas[2]}])
    prepared = SimpleNamespace(trends=SimpleNamespace(counted=lambda: steps))
    ranges = bisect_ranges(prepared, repo)
    assert [(r.good, r.bad, r.commits) for r in ranges] == [(shas[0], shas[3], 3)]
    (line,) = bisect_hints(ranges)
    assert f"ttfg bisect --good {shas[0][:12]} --bad {shas[3][:12]} --model resnet15 --backend jax.jit" in line
    assert "3 commits" in line
    assert bisect_ranges(prepared, tmp_path / "not-a-repo") == []
