"""Accepting an intended regression with a ``Ttfg-Accept`` commit trailer (harness/decide/accept.py)."""

from __future__ import annotations

import json

from ttfg.decide import accept
from ttfg.present.gate_views import gate_markdown, verdict_rows
from ttfg.present.verdicts import passing_means
from tests.test_gate_policy import sides  # noqa: F401  (the fixture: base and head folders)
from tests.test_gate_tiers import Side_, gate_with  # noqa: F401  (the fixture: a scripted gate)

from .conftest import GitRepo


def repo_with_trailers(tmp_path, messages: list[str]):
    repo = GitRepo.init(tmp_path / "repo", identity=("Ada Lovelace", "ada@example.org"))
    base = repo.commit("base\n\nTtfg-Accept: * * on the base branch: never used")
    for message in messages:
        repo.commit(message)
    return repo.path, base, repo.head()


def test_trailers_of_the_heads_commits_since_the_merge_base_are_read(tmp_path):
    repo, base, head = repo_with_trailers(tmp_path, [
        "grow the model\n\nTtfg-Accept: autograd/* instructions the model doubled on purpose",
        "unrelated\n\nTtfg-Accept: oops"])
    found = accept.read(repo, base, head)
    assert [(a.case, a.metric, a.reason, a.author) for a in found] == [
        ("autograd/*", "instructions", "the model doubled on purpose", "Ada Lovelace <ada@example.org>"),
        ("oops", "", "", "Ada Lovelace <ada@example.org>")]
    assert found[0].commit != base and found[1].problem and "needs <case-glob> <metric> <reason>" in found[1].problem


def test_an_accepted_regression_passes_and_says_who_and_why(gate_with):
    outcome, _, _ = gate_with(Side_(), Side_(instructions=10_400_000))
    (case,) = outcome.cases
    assert outcome.exit_code() == 1 and case.metric == "instructions"
    trailers = [accept.parse(f"{case.case} instructions a new check, measured in the PR", "Ada <a@b>", "c0ffee" * 7),
                accept.parse("torch.* hlo_ops not this one", "Bob <b@c>", "beef" * 10)]
    accept.apply(outcome.cases, trailers)
    outcome.acceptances = [a.to_json() for a in trailers]
    assert outcome.exit_code() == 0 and outcome.regressions() == [] and outcome.accepted() == [case]
    assert case.verdict.verdict == "regressed"  # never silent: still shown as the regression it is
    doc = json.loads(json.dumps(outcome.to_json()))
    assert doc["exit_code"] == 0 and doc["cases"][0]["accepted"]["author"] == "Ada <a@b>"
    assert doc["acceptances"][1]["used_by"] == []
    words = passing_means(outcome)
    assert "Accepted, so not failing: " in words and f"by trailer '{case.case} instructions' of Ada <a@b> in c0ffeec0ff: a new check" in words
    assert "Unused Ttfg-Accept trailer(s): 'torch.* hlo_ops not this one' by Bob <b@c>" in words
    assert verdict_rows(outcome.cases)[0].label.endswith(", accepted by Ada <a@b>")
    summary = gate_markdown(outcome)
    assert summary.splitlines()[1] == "## ttfg gate: passed with 1 accepted regression(s), see below" and "accepted by Ada" in summary and "Unused Ttfg-Accept" in summary


def test_a_trailer_for_another_metric_accepts_nothing(gate_with):
    outcome, _, _ = gate_with(Side_(), Side_(instructions=10_400_000))
    accept.apply(outcome.cases, [accept.parse("* hlo_ops bigger graph", "Ada <a@b>", "1" * 40)])
    assert outcome.exit_code() == 1 and not outcome.cases[0].accepted


def test_an_accepted_structural_counter_matches_with_or_without_its_prefix():
    a = accept.parse("jax.jit/* hlo_ops three more ops", "A", "1" * 40)
    assert a.matches("jax.jit/resnet15", "counters.hlo_ops") and not a.matches("torch/x", "counters.hlo_ops")
    assert not a.matches("jax.jit/resnet15", None)


def test_the_gate_applies_the_heads_trailers_and_warns_of_an_unused_one(gate_with, tmp_path):
    from ttfg.app import gate as use_case

    outcome, _, _ = gate_with(Side_(), Side_(instructions=10_400_000))
    repo, base, head = repo_with_trailers(tmp_path, [
        f"grow\n\nTtfg-Accept: {outcome.cases[0].case} instructions intended\nTtfg-Accept: nope * unused"])
    warnings = []

    class Events(use_case.GateEvents):
        def warning(self, text):
            warnings.append(text)

    use_case._accept(outcome, repo, base, head, Events())
    assert outcome.exit_code() == 0 and outcome.cases[0].accepted["reason"] == "intended"
    assert len(warnings) == 1 and "'nope * unused'" in warnings[0] and "matched no regression" in warnings[0]
