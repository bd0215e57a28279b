"""``app/bisect.py``'s bookkeeping with a fake comparison: state after every step, resuming, skips, two steps.

A real git history of empty commits (git is fast), and a comparison that answers from
levels per commit instead of running processes: a second each, not minutes.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from ttfg.app import bisect as use_case
from ttfg.decide.gate_settings import GateSettings

from .conftest import GitRepo, git
from .user_project import MYLAB

CASE = "m/b/v"


@pytest.fixture
def repo(tmp_path):
    history = GitRepo.init(tmp_path / "repo", identity=MYLAB)  # the bisect page names the culprit's author
    return history.path, [history.commit(f"commit {n}") for n in range(9)]


class Levels:
    """A fake comparison: regressed when the newer commit's level is higher, unchanged when equal; a commit in
    ``broken`` cannot be measured, one in ``unknown`` is never decided; ``stop_after`` comparisons raise Ctrl-C."""

    def __init__(self, shas, levels, broken=(), unknown=(), stop_after=None, improvement=False):
        self.level = dict(zip(shas, levels))
        self.improvement = improvement  # base and head swapped, as the real comparison swaps them
        self.broken, self.unknown = {shas[i] for i in broken}, {shas[i] for i in unknown}
        self.calls, self.stop_after = [], stop_after
        #: Every comparison's two Revisions, in order, as the bisect gave them.
        self.revisions = []

    def __call__(self, older, newer, against, folder, cases, step_cases, profiles=False, tiers=None):
        if self.stop_after is not None and len(self.calls) >= self.stop_after:
            raise KeyboardInterrupt
        self.revisions += [older, newer]
        older, newer = older.commit, newer.commit
        self.calls.append((older, newer, against))
        record = {"against": against, "base": older, "head": newer, "folder": str(folder), "error": None}
        if {older, newer} & self.broken:
            return {**record, "verdict": "broken", "error": "cannot import mylab", "cases": []}
        a, b = self.level[older], self.level[newer]
        if self.improvement:
            a, b = b, a
        verdict = ("inconclusive" if {older, newer} & self.unknown
                   else "regressed" if b > a else "improved" if b < a else "unchanged")
        case = {"case": CASE, "verdict": verdict, "tier": "structural", "metric": "counters.x",
                "ratio": (b + 1) / (a + 1), "ci_low": None, "ci_high": None, "pairs": 1, "stop": "decided"}
        return {**record, "verdict": verdict, "cases": [case]}


def request(root, shas, out_dir, **kw):
    return use_case.BisectRequest(repo=root, good=shas[0], bad=shas[-1], cases=[SimpleNamespace(id=CASE, backend="b")],
                                  settings=GateSettings(tiers=("structural",)), out_dir=out_dir, **kw)


def test_state_is_saved_after_every_step_and_a_rerun_continues_after_ctrl_c(repo, tmp_path):
    root, shas = repo
    levels = [0] * 6 + [1] * 3
    stopped = use_case.run(request(root, shas, tmp_path), compare=Levels(shas, levels, stop_after=3))
    assert stopped.code == 2 and stopped.status == use_case.INTERRUPTED
    saved = json.loads((tmp_path / "bisect.json").read_text())
    assert saved["ends"]["verdict"] == "regressed" and len(saved["probes"]) == 1  # ends, then one step of two
    again = Levels(shas, levels)
    done = use_case.run(request(root, shas, tmp_path), compare=again)
    assert done.code == 1 and done.document["culprit"]["commit"] == shas[6]
    assert done.document["culprit"]["subject"] == "commit 6"
    assert (shas[0], shas[-1], "ends") not in again.calls  # the ends were not compared again
    assert done.document["repro"].startswith(f"ttfg gate --base {shas[5][:12]} --head {shas[6][:12]}")
    assert "culprit found" in (tmp_path / "summary.md").read_text()
    shown = use_case.run(request(root, shas, tmp_path), compare=Levels(shas, levels, stop_after=0))
    assert shown.from_state and shown.code == 1  # a finished bisect measures nothing


def test_an_untestable_commit_is_skipped_and_listed(repo, tmp_path):
    root, shas = repo
    done = use_case.run(request(root, shas, tmp_path), compare=Levels(shas, [0] * 5 + [1] * 4, broken=[4]))
    doc = done.document
    assert done.status == use_case.RANGE and done.code == 1
    assert [c["commit"] for c in doc["candidates"]] == [shas[4], shas[5]]
    assert doc["answer"]["skipped"] == [shas[4]]
    assert any("skipped" in line and "cannot import mylab" in line
               for line in done.summary.splitlines())


def test_a_budget_too_small_to_decide_says_so_and_a_rerun_decides_again(repo, tmp_path):
    root, shas = repo
    levels = [0] * 5 + [1] * 4
    undecided = use_case.run(request(root, shas, tmp_path), compare=Levels(shas, levels, unknown=[4]))
    assert undecided.status == use_case.UNDECIDED and undecided.code == 2
    assert shas[4] in undecided.document["answer"]["unknown"]
    decided = use_case.run(request(root, shas, tmp_path), compare=Levels(shas, levels))  # "with more budget"
    assert decided.status == use_case.FOUND and decided.document["culprit"]["commit"] == shas[5]


def test_ends_that_do_not_differ_or_are_swapped_end_the_search_before_any_step(repo, tmp_path):
    root, shas = repo
    same = use_case.run(request(root, shas, tmp_path / "same"), compare=Levels(shas, [0] * 9))
    assert same.status == use_case.NO_STEP and same.code == 0 and not same.document["probes"]
    assert "no step between these commits" in same.summary
    swapped = use_case.run(request(root, shas, tmp_path / "swap"), compare=Levels(shas, [1] * 5 + [0] * 4))
    assert swapped.status == use_case.SWAPPED and swapped.code == 2 and "--improvement" in swapped.summary
    improved = use_case.run(request(root, shas, tmp_path / "imp", improvement=True),
                            compare=Levels(shas, [1] * 5 + [0] * 4, improvement=True))
    assert improved.status == use_case.FOUND and improved.document["culprit"]["commit"] == shas[5]


def test_two_steps_are_reported_as_such_the_larger_searched_and_the_other_named(repo, tmp_path):
    root, shas = repo
    done = use_case.run(request(root, shas, tmp_path), compare=Levels(shas, [0, 0, 1, 1, 1, 1, 5, 5, 5]))
    doc = done.document
    assert done.status == use_case.FOUND and doc["culprit"]["commit"] == shas[6]
    (other,) = doc["others"]
    assert other["command"].startswith("ttfg bisect --good ")
    assert "another step between" in done.summary


def test_a_state_of_other_revisions_is_refused_and_kept(repo, tmp_path):
    root, shas = repo
    use_case.run(request(root, shas, tmp_path), compare=Levels(shas, [0] * 9))
    before = (tmp_path / "bisect.json").read_text()
    other = use_case.BisectRequest(repo=root, good=shas[1], bad=shas[-1], cases=[SimpleNamespace(id=CASE, backend="b")],
                                   settings=GateSettings(tiers=("structural",)), out_dir=tmp_path)
    with pytest.raises(use_case.UsageError, match="other revisions"):
        use_case.run(other, compare=Levels(shas, [0] * 9))
    assert (tmp_path / "bisect.json").read_text() == before


def test_an_end_that_cannot_be_measured_is_exit_2_and_a_rerun_tries_it_again(repo, tmp_path):
    root, shas = repo
    levels = [0] * 5 + [1] * 4
    broken = use_case.run(request(root, shas, tmp_path), compare=Levels(shas, levels, broken=[0]))
    assert broken.status == use_case.BROKEN_END and broken.code == 2 and "cannot import mylab" in broken.summary
    fixed = use_case.run(request(root, shas, tmp_path), compare=Levels(shas, levels))
    assert fixed.status == use_case.FOUND and fixed.document["culprit"]["commit"] == shas[5]


# ---------------------------------------------------------------------------- issue 32's bad input, in process


def test_revisions_that_do_not_exist_are_all_named_and_nothing_is_written(repo, tmp_path):
    root, shas = repo
    bad = use_case.BisectRequest(repo=root, good="no-such-rev", bad="nor-this", cases=[SimpleNamespace(id=CASE, backend="b")],
                                 settings=GateSettings(tiers=("structural",)), out_dir=tmp_path / "out")
    with pytest.raises(use_case.GitError, match="no-such-rev.*nor-this"):
        use_case.run(bad, compare=Levels(shas, [0] * 9, stop_after=0))
    assert not (tmp_path / "out").exists()


def test_a_dirty_tree_at_an_end_is_refused_naming_the_file(repo, tmp_path):
    root, shas = repo
    head = GitRepo(root).commit("a tracked file", {"tracked.py": "x = 1\n"}, stage="files")
    (root / "tracked.py").write_text("x = 2\n")  # uncommitted: the checked-out end would be measured without it
    dirty = use_case.BisectRequest(repo=root, good=shas[0], bad=head, cases=[SimpleNamespace(id=CASE, backend="b")],
                                   settings=GateSettings(tiers=("structural",)), out_dir=tmp_path / "out")
    with pytest.raises(use_case.GitError, match="tracked.py"):
        use_case.run(dirty, compare=Levels([*shas, head], [0] * 10, stop_after=0))
    assert not (tmp_path / "out" / "bisect.json").exists()


def test_a_range_across_a_merge_says_it_walked_first_parent(tmp_path):
    from ttfg.present.bisect_views import conclusion_lines

    history = GitRepo.init(tmp_path / "repo")
    root = history.path
    history.commit("good")
    history.git("checkout", "-q", "-b", "side")
    history.commit("on the side")
    history.git("checkout", "-q", "main")
    history.commit("on main")
    history.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    history.commit("bad")
    shas = git(root, "rev-list", "--first-parent", "--reverse", "HEAD").split()
    done = use_case.run(request(root, shas, tmp_path / "out"), compare=Levels(shas, [0, 0, 1, 1]))
    assert done.status == use_case.FOUND and done.document["merges"] == [shas[2]]
    assert "the range crosses 1 merge: walked first-parent" in conclusion_lines(done.document)[0]
    assert "walked first-parent" in done.summary


def test_the_ends_keep_their_names_and_every_commit_its_subject_to_the_report(repo, tmp_path):
    """``--good``/``--bad`` are resolved once: each comparison gets the walk's Revisions (the ends as the user named
    them, every commit with its subject, never a bare hash rebuilt), and the report's entries come from the same."""
    root, shas = repo
    git(root, "tag", "v0", shas[0])
    compare = Levels(shas, [0] * 6 + [1] * 3)
    asked = use_case.BisectRequest(repo=root, good="v0", bad="HEAD", cases=[SimpleNamespace(id=CASE, backend="b")],
                                   settings=GateSettings(tiers=("structural",)), out_dir=tmp_path)
    done = use_case.run(asked, compare=compare)
    ends = compare.revisions[:2]
    assert [(r.name, r.commit, r.subject) for r in ends] == [("v0", shas[0], "commit 0"), ("HEAD", shas[-1], "commit 8")]
    assert all(r.subject == f"commit {shas.index(r.commit)}" and r.author.startswith("mylab") and r.date
               for r in compare.revisions)
    stepped = [r for r in compare.revisions[2:] if r.commit not in (shas[0], shas[-1])]
    assert stepped and all(r.name == r.commit[:10] for r in stepped)  # an inner commit is named by its short hash
    doc = done.document
    assert doc["good"] == {**ends[0].described(), "rev": "v0"} and doc["bad"]["rev"] == "HEAD"
    assert doc["culprit"] == {**compare.revisions[-1].described(), "parent": shas[5]}
    assert doc["culprit"]["subject"] == "commit 6" and doc["culprit"]["author"] == ends[0].author
