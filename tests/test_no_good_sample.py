"""A gate that measured nothing never passes (harness/decide/unmeasured.py), on every outcome path.

A matrix over tier sets x the side that cannot run (base, head, both) x command (the gate's loop, the
gate's use case, the bisect, ``regressions --confirm``, the merge of shards, the release sweep's pair),
driven by in-process samplers (``tests/fake_sides.py`` for the use cases): a side whose every process
fails (its plugin does not import) gives "base cannot run" and exit 2, or "head cannot run" (regressed)
and exit 1; never "unchanged", never "passed", whatever the tiers, the budget or a wildcard trailer.
``--tiers structural`` passed such a gate (exit 0) before. The last test runs the issue's repro for real.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from ttfg.app import bisect as bisect_case
from ttfg.app import gate as gate_case
from ttfg.app.releases import pair_decision
from ttfg.decide import accept, tiers
from ttfg.decide.gate_loop import run_gate
from ttfg.decide.gate_settings import GateSettings
from ttfg.decide.merge_gate import merged_exit_code
from ttfg.decide.unmeasured import held_verdict, side_of, unmeasured_side
from ttfg.history import confirm
from ttfg.history.trends import UNCONFIRMED
from ttfg.measure import instructions as counting
from ttfg.measure.cases import select
from ttfg.measure.runner import RunSettings
from ttfg.results.gate_document import ShardRow
from ttfg.results.gate_outcome import BASE_BROKEN, HEAD_BROKEN, CaseOutcome
from ttfg.results.model import Sample
from tests.fake_sides import FolderSides, two_commits
from tests.test_bisect_search import repo as bisect_repo  # noqa: F401  (a fixture: nine empty commits)
from tests.test_gate_policy import sides  # noqa: F401  (the fixture: base and head folders)
from tests.test_gate_tiers import FakeSampler, Side_
from tests.test_trends import MarkerSampler, candidate_trends, plain_checkouts, repo  # noqa: F401  (repo: a fixture)


MODEL = "resnet15:blocks=2"
ERROR = "SyntaxError: invalid syntax (mylab/plugin.py, line 3)"
TIER_SETS = [("structural",), ("instructions",), ("time",), ("structural", "instructions"), tiers.DEFAULT_TIERS]
SIDES = ["base", "head", "both"]
#: What each failing side must come to: the stop, the verdict and the gate's exit code.
EXPECTED = {"base": (BASE_BROKEN, "inconclusive", 2), "both": (BASE_BROKEN, "inconclusive", 2),
            "head": (HEAD_BROKEN, "regressed", 1)}


def failed(kind: str, index: int) -> Sample:
    return Sample(kind=kind, ok=False, index=index, started_at="2026-12-03T00:00:00+00:00", error=ERROR,
                  process_wall_s=0.5)


class Failing:
    """A sampler whose ``failing`` roles fail every process (a plugin that does not import); the rest as ``inner``
    answers. ``role(run)`` names the side a call is for."""

    def __init__(self, inner, failing: str, role):
        self.inner, self.failing, self.role = inner, failing, role

    def __call__(self, case, kind, cache, index, run, *cache_dir):
        role = self.role(run)
        if self.failing in (role, "both"):
            if hasattr(self.inner, "now"):
                self.inner.now += 1.0
            return failed(kind, index)
        return self.inner(case, kind, cache, index, run, *cache_dir)


@pytest.fixture
def countable(monkeypatch):
    monkeypatch.setattr(counting, "availability", lambda: (True, "callgrind"))


def _cases():
    return select([MODEL], ["autograd"], None, check_availability=False)


def _gate(sides, tmp_path, failing, tier_set, budget_s=600.0):
    fake = FakeSampler(sides, {"base": Side_(), "head": Side_()})
    sampler = Failing(fake, failing, lambda run: fake.role[str(run.target.source)])
    cases, skipped = _cases()
    return run_gate(cases, skipped, sides["base"], sides["head"],
                    GateSettings(tiers=tier_set, profiles=0, budget_s=budget_s), tmp_path / "out", sampler=sampler,
                    clock=fake.monotonic)


def _check(case: CaseOutcome, failing: str) -> None:
    stop, verdict, _ = EXPECTED[failing]
    assert case.stop == stop and case.verdict.verdict == verdict, (case.stop, case.verdict)
    assert case.verdict.verdict not in ("unchanged", "improved") and ERROR in case.verdict.reason
    assert side_of(case) == ("head" if failing == "head" else "base")


# ---------------------------------------------------------------------------- the rule itself


def test_the_rule_reads_only_good_samples_per_side():
    assert unmeasured_side({"base": 0, "head": 0}) == "base"
    assert unmeasured_side({"base": 0, "head": 3}) == "base"
    assert unmeasured_side({"base": 2, "head": 0}) == "head"
    assert unmeasured_side({"base": 1, "head": 1}) is None


# ---------------------------------------------------------------------------- the gate: loop, use case, trailers


@pytest.mark.parametrize("budget_s", [600.0, 1.0], ids=["budget", "no-budget"])
@pytest.mark.parametrize("failing", SIDES)
@pytest.mark.parametrize("tier_set", TIER_SETS, ids=",".join)
def test_the_gate_never_passes_a_side_with_no_good_sample(sides, tmp_path, countable, tier_set, failing, budget_s):
    outcome = _gate(sides, tmp_path, failing, tier_set, budget_s)
    (case,) = outcome.cases
    _check(case, failing)
    assert outcome.exit_code() == EXPECTED[failing][2]
    doc = outcome.to_json()
    assert doc["exit_code"] == EXPECTED[failing][2] and doc["cases"][0]["good"][
        "head" if failing == "head" else "base"] == 0
    # a wildcard trailer names the case, and accepts nothing: a failure to run is no performance change
    trailer = accept.parse("* * anything goes", "Mallory <m@x>", "f" * 40)
    accept.apply(outcome.cases, [trailer])
    assert not case.accepted and outcome.exit_code() == EXPECTED[failing][2]
    if failing == "head":
        assert trailer.refused == {case.case: "head cannot run (no good sample)"} and not trailer.used_by


def test_no_stacks_are_sampled_for_a_head_that_cannot_run(sides, tmp_path):
    """Sampled stacks explain a regression between two running sides; a head that cannot run has none."""
    fake = FakeSampler(sides, {"base": Side_(), "head": Side_()})
    sampler = Failing(fake, "head", lambda run: fake.role[str(run.target.source)])
    cases, skipped = _cases()
    outcome = run_gate(cases, skipped, sides["base"], sides["head"], GateSettings(tiers=("structural",), profiles=2),
                       tmp_path / "out", sampler=sampler, clock=fake.monotonic)
    assert outcome.cases[0].stop == HEAD_BROKEN and [k for _, _, k in fake.calls] == ["timing"]


@pytest.mark.parametrize("failing", SIDES)
@pytest.mark.parametrize("tier_set", [("structural",), tiers.DEFAULT_TIERS], ids=",".join)
def test_the_gate_command_exits_2_or_1_and_never_says_passed(tmp_path, countable, tier_set, failing):
    repo = two_commits(tmp_path / "repo")
    opener = FolderSides(lambda rev: tmp_path / "trees" / rev.commit)
    fake = FakeSampler({}, {"base": Side_(), "head": Side_()})
    roles = {}

    def role(run):
        return roles[str(run.target.source)]

    def sampler(case, kind, cache, index, run, *cache_dir):
        fake.role = {str(tmp_path / "trees" / rev.commit): r for r, rev in opener.opened[-1].items()}
        roles.update(fake.role)
        return Failing(fake, failing, role)(case, kind, cache, index, run, *cache_dir)

    cases, skipped = _cases()
    request = gate_case.GateRequest(repo, "HEAD~1", cases, gate_case.settings(
        timeout_s=60, threads=1, tiers=tier_set, profiles=0), tmp_path / "out", skipped=skipped)
    report = gate_case.run(request, opener=opener, sampler=sampler)
    assert report.code == EXPECTED[failing][2]
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "no regression shown" not in summary.splitlines()[1]
    assert json.loads((tmp_path / "out" / "gate.json").read_text())["exit_code"] == EXPECTED[failing][2]


# ---------------------------------------------------------------------------- the bisect


@pytest.mark.parametrize("failing", SIDES)
@pytest.mark.parametrize("tier_set", [("structural",), ("time",), tiers.DEFAULT_TIERS], ids=",".join)
def test_a_bisect_whose_end_cannot_run_never_calls_it_measured(bisect_repo, tmp_path, countable, tier_set, failing):
    root, shas = bisect_repo
    opener = FolderSides(lambda rev: tmp_path / "trees" / rev.commit)
    fake = FakeSampler({}, {"base": Side_(), "head": Side_()})
    ends = {"base": shas[0], "head": shas[-1]}

    def role(run):
        commit = run.target.source.name
        return "base" if commit == ends["base"] else "head" if commit == ends["head"] else "middle"

    def sampler(case, kind, cache, index, run, *cache_dir):
        r = role(run)
        if failing in (r, "both") and r != "middle":
            fake.now += 1.0
            return failed(kind, index)
        fake.role = {str(run.target.source): "base"}
        return fake(case, kind, cache, index, run)

    cases, _ = _cases()
    request = bisect_case.BisectRequest(repo=root, good=shas[0], bad=shas[-1], cases=cases,
                                        settings=GateSettings(profiles=0, tiers=tier_set), out_dir=tmp_path / "b")
    done = bisect_case.run(request, clock=fake.monotonic, sampler=sampler, opener=opener)
    assert done.code == 2 and done.document["ends"]["verdict"] == "broken", done.document["ends"]
    assert done.status == bisect_case.BROKEN_END


# ---------------------------------------------------------------------------- regressions --confirm


@pytest.mark.parametrize("failing", SIDES)
def test_a_confirmation_with_a_side_that_cannot_run_is_unconfirmed(repo, tmp_path, failing):
    root, (a, b, c) = repo
    trends = candidate_trends([a, b, c], 0, 1)  # a -> b: a regression step; b holds the 'slow' marker
    sampler = Failing(MarkerSampler(), failing, lambda run: "head" if (run.target.source / "slow").exists() else "base")
    found = confirm.confirm(trends, root, 300, tmp_path / "runs", opener=plain_checkouts, sampler=sampler,
                            run_settings=RunSettings(repeat=1))
    assert [f.status for f in found] == [UNCONFIRMED], found[0].reason
    assert f"{'head' if failing == 'head' else 'base'} cannot run" in found[0].reason


# ---------------------------------------------------------------------------- ttfg merge gate


@pytest.mark.parametrize("failing", SIDES)
@pytest.mark.parametrize("tier_set", [("structural",), tiers.DEFAULT_TIERS], ids=",".join)
def test_a_merged_gate_never_passes_a_shard_that_measured_nothing(sides, tmp_path, countable, tier_set, failing):
    """A shard's gate.json written before the rule (its case "inconclusive, not settled", exit 0, no ``good``)
    still fails the merge: the rule reads the case's failures when the good samples were not recorded."""
    (case,) = _gate(sides, tmp_path, failing, tier_set).cases
    data = json.loads(json.dumps(case.to_json()))
    data.pop("good")
    data["verdict"] = {**data["verdict"], "verdict": "inconclusive"}
    data["stop"] = "not settled"
    old = CaseOutcome.from_json(data)
    shard = ShardRow("1/1", "gate.json", 1, "ok", "exit 0", 0, finished=True)
    assert merged_exit_code([shard], [old]) == EXPECTED[failing][2]
    assert merged_exit_code([shard], [case]) == EXPECTED[failing][2]


# ---------------------------------------------------------------------------- ttfg releases


@pytest.mark.parametrize("failing", SIDES)
@pytest.mark.parametrize("counted", ["improved", "regressed", "unchanged"])
def test_a_release_pair_with_a_side_that_cannot_run_keeps_the_gates_verdict(sides, tmp_path, countable, failing,
                                                                            counted):
    """The sweep's count settles a pair before wall time, but never one whose gate had a side with no good
    sample: it stays regressed (head cannot run) or broken."""
    (case,) = _gate(sides, tmp_path, failing, tiers.DEFAULT_TIERS).cases
    verdict, tier, broken = pair_decision(case, {"instructions": {"verdict": counted}})
    assert broken and verdict == EXPECTED[failing][1] and verdict not in ("unchanged", "improved")


def test_a_held_verdict_says_what_the_tiers_alone_said():
    from ttfg.results.verdict import Verdict

    nan = float("nan")
    v = Verdict("inconclusive", nan, nan, nan, nan, 0, 0, "failure", "not settled by the selected tiers")
    held, stop = held_verdict(v, "not settled", {"base": 0, "head": 0}, {"base": 1, "head": 1}, {"base": ERROR})
    assert stop == BASE_BROKEN and held.verdict == "inconclusive" and "head had no good sample either" in held.reason
    assert held_verdict(v, "decided", {"base": 3, "head": 3}, {}, {}) is None


# ---------------------------------------------------------------------------- the repro, for real


@pytest.mark.slow
@pytest.mark.full  # a real gate/run of tens of seconds: make test-all and CI run it
def test_a_plugin_with_a_syntax_error_on_both_sides_exits_2_with_structural_tiers(tmp_path):
    """The issue's repro, in real processes: a user's project (``tests/user_project.py``) whose plugin has a
    SyntaxError on base and head, gated with ``--tiers structural``. It said "gate passed", exit 0."""
    from .conftest import GitRepo, git
    from .user_project import make_mylab

    (tmp_path / "user").mkdir()
    mylab = make_mylab(tmp_path / "user")
    repo = mylab["repo"]
    git(repo, "checkout", "-q", "-b", "syntax", mylab["first"])
    plugin = repo / "src" / "mylab" / "ttfg_plugin.py"
    plugin.write_text(plugin.read_text() + "\n\ndef broken(:\n")
    base = GitRepo(repo).commit("a plugin with a syntax error", stage="tracked")
    plugin.write_text(plugin.read_text() + "\n# still broken\n")
    head = GitRepo(repo).commit("still a syntax error", stage="tracked")
    git(repo, "checkout", "-q", "main")
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_STEP_SUMMARY", "PYTHONPATH")}
    out = subprocess.run([str(mylab["python"]), "-m", "ttfg", "gate", "--base", base, "--head", head, "--tiers",
                          "structural", "--model", "mylab_mlp", "--backend", "mylab.autograd", "--out-dir",
                          str(tmp_path / "out")], cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    text = out.stdout + out.stderr
    assert out.returncode == 2, text
    assert "base cannot run" in text and "SyntaxError" in text and "gate passed" not in text
    doc = json.loads((tmp_path / "out" / "gate.json").read_text())
    assert doc["exit_code"] == 2 and doc["cases"][0]["stop"] == BASE_BROKEN and doc["cases"][0]["good"] == {
        "base": 0, "head": 0}
