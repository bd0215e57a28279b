"""A case a revision declares is that revision's to resolve, in bisect and ``regressions --confirm`` too (issue 40
item 2; the gate's rule, ``measure.sides.split_cases``).

A model named in ttfg.toml that this interpreter does not know (a plugin the bad end adds) is kept for the
commits' installs: before, ``ttfg bisect`` refused it ("unknown model") before anything was installed, and
``regressions --confirm`` left its steps "not re-measured: unknown model". Each side here is a folder or a
worktree whose install "provides" ``mylab_deep`` when a marker says so (its ``whence``, as a real side's is
read from its install's entry points), and a fake sampler: milliseconds, every rule of the real comparison.
"""

from __future__ import annotations

from contextlib import contextmanager

import pytest

from ttfg.app import bisect as use_case
from ttfg.decide.gate_settings import GateSettings
from ttfg.errors import UsageError
from ttfg.history import confirm
from ttfg.history.trends import CONFIRMED, UNCONFIRMED, analyse
from ttfg.measure.cases import select
from ttfg.measure.runner import RunSettings
from ttfg.measure.sides import MODEL_GROUP, split_cases
from ttfg.provision.sources import Whence

from .conftest import GitRepo
from .fake_sides import FolderSides, PlainWorktrees
from .test_bisect_counts import ENV, Commits, opener  # noqa: F401 (the fixture)
from .test_bisect_search import repo  # noqa: F401 (the fixture)
from .test_trends import MarkerSampler, drifting, history

DEEP = "mylab_deep/autograd/params=args,chain=unrolled"


def _whence(declares: bool) -> Whence:
    return Whence({}, {f"{MODEL_GROUP}:mylab_deep": {"module": "mylab.plugin", "dist": "mylab"}} if declares else {})


class Declaring(FolderSides):
    """Folder sides whose install provides ``mylab_deep`` at the commits ``declares`` names."""

    def __init__(self, folder, declares, env=None):
        super().__init__(folder, env)
        self.declares = set(declares)

    @contextmanager
    def open(self, repo, revisions, cases, run, requests=None, **kw):
        with super().open(repo, revisions, cases, run, requests, **kw) as sides:
            for side in sides.values():
                side.whence = _whence(side.revision.commit in self.declares)
            yield sides


def _cases(*models):
    cases, _ = select(list(models), ["autograd"], None, check_availability=False, pending_models=True)
    return cases


def _request(root, shas, out, cases, tiers=("structural", "instructions", "time")):
    return use_case.BisectRequest(repo=root, good=shas[0], bad=shas[-1], cases=cases,
                                  settings=GateSettings(profiles=0, tiers=tiers), out_dir=out)


def test_split_cases_is_the_gates_rule_a_case_each_side_provides_new_removed_or_unknown(tmp_path):
    from ttfg.measure.sides import Side

    deep, builtin = _cases("mylab_deep", "resnet15:blocks=2")
    with_it, without = (Side(r, None, tmp_path, whence=_whence(d)) for r, d in (("base", True), ("head", False)))
    assert split_cases([deep, builtin], without, with_it) == ([builtin], [deep], [])
    assert split_cases([deep, builtin], with_it, without) == ([builtin], [], [deep])
    with pytest.raises(UsageError, match="unknown model 'mylab_deep'.*head's install"):
        split_cases([deep], without, without)


def test_a_bisect_measures_a_case_the_bad_end_declares_and_names_one_only_it_provides(repo, tmp_path, opener):
    root, shas = repo
    cases = _cases("resnet15:blocks=2", "mylab_deep")
    sides = Declaring(lambda rev: tmp_path / "trees" / rev.commit, shas[3:], env=ENV)  # added at commit 3
    notes = []
    events = use_case.BisectEvents()
    events.note = notes.append
    sampler = Commits(shas)
    done = use_case.run(_request(root, shas, tmp_path / "out", cases), events=events, compare=None, sampler=sampler,
                        opener=sides, clock=sampler.clock)
    assert done.status == use_case.FOUND and done.document["culprit"]["commit"] == shas[6]
    ends = done.document["ends"]
    assert ends["new_cases"] == [DEEP] and [c["case"] for c in ends["cases"]] == [cases[0].id]
    assert any(f"case {DEEP}: only the bad end" in n and "not bisected" in n for n in notes)
    assert done.document["step_cases"] == [cases[0].id]


def test_a_case_both_ends_declare_and_a_middle_commit_lacks_makes_that_commit_skipped(repo, tmp_path, opener):
    root, shas = repo
    cases = _cases("mylab_deep")
    lacking = shas[4]  # its install has no mylab_deep: untestable, as a commit that does not install
    sides = Declaring(lambda rev: tmp_path / "trees" / rev.commit, [s for s in shas if s != lacking], env=ENV)
    sampler = Commits(shas)
    done = use_case.run(_request(root, shas, tmp_path / "out", cases), sampler=sampler, opener=sides,
                        clock=sampler.clock)
    doc = done.document
    assert done.status == use_case.FOUND and doc["culprit"]["commit"] == shas[6]
    probe = next(p for p in doc["probes"] if p["commit"] == lacking)
    assert probe["state"] == "skipped" and f"{lacking[:10]} does not provide case {DEEP}" in probe["reason"]


def test_a_model_neither_end_provides_is_refused_naming_it_before_any_step(repo, tmp_path, opener):
    root, shas = repo
    sides = Declaring(lambda rev: tmp_path / "trees" / rev.commit, [], env=ENV)
    with pytest.raises(UsageError, match="unknown model 'mylab_deep'"):
        use_case.run(_request(root, shas, tmp_path / "out", _cases("mylab_deep")), sampler=Commits(shas),
                     opener=sides)
    assert not (tmp_path / "out" / "bisect.json").exists()


class DeclaringTrees(PlainWorktrees):
    """Worktree sides whose install provides ``mylab_deep`` where the tree holds the file ``deep``."""

    @contextmanager
    def open(self, repo, revisions, cases, run, requests=None, **kw):
        with super().open(repo, revisions, cases, run, requests, **kw) as sides:
            for side in sides.values():
                side.whence = _whence((side.source / "deep").exists())
            yield sides


def test_confirm_re_measures_a_case_its_commits_declare_and_names_a_step_into_a_case_added_there(tmp_path):
    lab = GitRepo.init(tmp_path / "repo")
    a = lab.commit("a", {"note.txt": "a", "deep": "1"})
    b = lab.commit("b", {"note.txt": "b", "slow": "1"})  # slower, and still declares mylab_deep
    c = lab.commit("c", {"note.txt": "c"})
    lab.git("rm", "-q", "deep")
    d = lab.commit("d, without mylab_deep", {"note.txt": "d"})
    rng = __import__("numpy").random.default_rng(3)
    commits = [f"{i:040x}" for i in range(1, 5)] + [a, b] + [f"{i:040x}" for i in range(5, 9)]
    values = drifting(rng, 10, 5, step_at=5, factor=1.5, drift=0.01, noise=0.01)
    deep_case = ("mylab_deep", "autograd", "params=args,chain=unrolled")
    found = confirm.confirm(analyse(history((deep_case, "first_grad_s", commits, values))), lab.path, 300,
                            tmp_path / "runs", opener=DeclaringTrees(), sampler=MarkerSampler(),
                            run_settings=RunSettings(repeat=1))
    assert [f.status for f in found] == [CONFIRMED], found[0].reason  # before: "unknown model 'mylab_deep'"
    commits = [f"{i:040x}" for i in range(1, 5)] + [c, d] + [f"{i:040x}" for i in range(5, 9)]
    gone = confirm.confirm(analyse(history((deep_case, "first_grad_s", commits, values))), lab.path, 300,
                           tmp_path / "runs2", opener=DeclaringTrees(), sampler=MarkerSampler(),
                           run_settings=RunSettings(repeat=1))
    assert [f.status for f in gone] == [UNCONFIRMED]
    assert f"the later commit {d[:10]} no longer provides mylab_deep" in gone[0].reason


def test_the_ends_cases_only_one_end_provides_are_named_in_the_summary_and_checked_by_the_reader(repo, tmp_path,
                                                                                                 opener):
    import json

    from ttfg.present.bisect_views import conclusion_lines
    from ttfg.results.bisect_file import load_bisect
    from ttfg.results.format import ResultsError

    root, shas = repo
    sides = Declaring(lambda rev: tmp_path / "trees" / rev.commit, shas[3:], env=ENV)
    sampler = Commits(shas)
    done = use_case.run(_request(root, shas, tmp_path / "out", _cases("resnet15:blocks=2", "mylab_deep")),
                        sampler=sampler, opener=sides, clock=sampler.clock)
    assert f"not bisected: {DEEP} (only the bad end provides it)" in "\n".join(conclusion_lines(done.document))
    assert "not bisected: mylab" in done.summary  # (Markdown escapes its underscores)
    doc = json.loads((tmp_path / "out" / "bisect.json").read_text())
    doc["ends"]["new_cases"] = "mylab_deep"
    (tmp_path / "edited.json").write_text(json.dumps(doc))
    with pytest.raises(ResultsError, match="ends.new_cases"):
        load_bisect(tmp_path / "edited.json")
