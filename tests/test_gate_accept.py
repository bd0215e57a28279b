"""Accepting an intended regression with a ``Ttfg-Accept`` commit trailer (harness/decide/accept.py)."""

from __future__ import annotations

import json

import pytest

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


def _example(text: str) -> str:
    """The ``Ttfg-Accept:`` example line of a document (the first line that starts with it)."""
    line = next(ln.strip() for ln in text.splitlines() if ln.strip().startswith(f"{accept.TRAILER}:"))
    return line.split(":", 1)[1]


def test_the_documented_example_names_a_real_case_id():
    """The docs' and the module's example used ``backend/model`` (``jax.jit/resnet15*``), which matches no case id
    (``model/backend/variant``): a user who copied it got "unused", exit 1."""
    from ttfg.measure.cases import select

    from .conftest import ROOT

    found, _ = select(["resnet15", "resnet15:blocks=2"], ["jax.jit", "torch.eager"], None, check_availability=False)
    for text in ((ROOT / "docs" / "reference" / "gate.md").read_text(), accept.__doc__):
        example = accept.parse(_example(text), "Ada <a@b>", "1" * 40)
        assert example.problem is None
        for case in found:  # resnet15 at both sizes under jax.jit; no other backend
            for metric in ("instructions", "instructions_trace"):  # the count that grew most decides a regression
                assert example.matches(case.id, metric) == (case.backend == "jax.jit"), (example, case.id, metric)


def test_a_second_matching_trailer_is_also_matched_not_unused_and_the_verdict_line_says_accepted(gate_with):
    from ttfg.present.run_section import gate_section
    from ttfg.results.gate_document import GateDocument

    outcome, _, _ = gate_with(Side_(), Side_(instructions=10_400_000))
    (case,) = outcome.cases
    first = accept.parse("* instructions the catch-all", "Ada <a@b>", "a" * 40)
    second = accept.parse(f"{case.case} * the specific one", "Bob <b@c>", "b" * 40)
    accept.apply(outcome.cases, [first, second])
    outcome.acceptances = [a.to_json() for a in (first, second)]
    assert first.used_by == [case.case] and second.also_matched == [case.case] and not second.used_by
    words = passing_means(outcome)
    assert "Unused" not in words and f"'{case.case} *' matched {case.case}" in words
    assert f"by trailer '* instructions' of Ada <a@b>" in words
    assert gate_markdown(outcome).splitlines()[1] == "## ttfg gate: passed with 1 accepted regression(s), see below"
    page = gate_section(GateDocument(outcome, outcome.exit_code()))
    assert page["decision"] == "ttfg gate passed with 1 accepted regression(s) (1 case)"
    assert json.loads(json.dumps(outcome.to_json()))["acceptances"][1]["also_matched"] == [case.case]


@pytest.mark.parametrize("head_runs", [True, False], ids=["regressed", "head-cannot-run"])
def test_the_gate_command_names_the_accepting_trailer_and_never_accepts_a_head_that_cannot_run(tmp_path, monkeypatch,
                                                                                              head_runs):
    """Through the gate's use case and the terminal: a wildcard trailer accepts a measured regression (the last line
    says "gate passed with 1 accepted regression(s)"), and never a head that cannot run (exit 1, refused)."""
    from rich.console import Console

    from ttfg.app import gate as use_case
    from ttfg.cli.gate import _print_gate
    from ttfg.decide.tiers import DEFAULT_TIERS
    from ttfg.measure import instructions as counting
    from ttfg.measure.cases import select
    from ttfg.results.model import Sample
    from tests.fake_sides import FolderSides
    from tests.test_gate_tiers import FakeSampler

    monkeypatch.setattr(counting, "availability", lambda: (True, "callgrind"))
    repo = GitRepo.init(tmp_path / "repo", identity=("Ada Lovelace", "ada@example.org"))
    base = repo.commit("base")
    head = repo.commit("grow\n\nTtfg-Accept: * * anything goes")
    opener = FolderSides(lambda rev: tmp_path / "trees" / rev.commit)
    fake = FakeSampler({}, {"base": Side_(), "head": Side_(instructions=10_400_000)})
    fake.role = {str(tmp_path / "trees" / base): "base", str(tmp_path / "trees" / head): "head"}

    def sampler(case, kind, cache, index, run, *cache_dir):
        if not head_runs and fake.role[str(run.target.source)] == "head":
            return Sample(kind=kind, ok=False, index=index, error="SyntaxError: invalid syntax", process_wall_s=0.5)
        return fake(case, kind, cache, index, run)

    cases, skipped = select(["resnet15:blocks=2"], ["autograd"], None, check_availability=False)
    request = use_case.GateRequest(repo.path, base, cases, use_case.settings(timeout_s=60, threads=1, profiles=0,
                                                                             max_failures=2, tiers=DEFAULT_TIERS),
                                   tmp_path / "out", head=head, skipped=skipped)
    report = use_case.run(request, opener=opener, sampler=sampler)
    console = Console(record=True, width=200, markup=False)
    _print_gate(console, report, None)
    lines = [ln for ln in console.export_text().splitlines() if ln.strip()]
    doc = json.loads((tmp_path / "out" / "gate.json").read_text())
    if head_runs:
        assert report.code == 0 and lines[-1].startswith("gate passed with 1 accepted regression(s)")
        assert doc["acceptances"][0]["used_by"] == [cases[0].id]
    else:
        assert report.code == 1 and not report.outcome.cases[0].accepted and "gate passed" not in lines[-1]
        assert doc["acceptances"][0]["refused"] == {cases[0].id: "head cannot run (no good sample)"}
        assert "Unused" not in doc["passing_means"] and "Not accepted, a failure" in doc["passing_means"]
