"""Non-monotonic ranges (issue 40 item 5): a commit that differs from both ends the opposite ways is a turn.

The history of the issue: d0 depth 4 (good), d1 depth 8, d2 docs, d3 depth 6, d4 docs (bad).
d2 is slower than the good end and faster than the bad one: before, it was "not yet known"
and the bisect said "undecided ... raise --budget", which no budget changes. Now the search
names the step into the turn (d1, the culprit) and the step out of it (d3, found by the turn's
reverse search), exit 1, each with its ``ttfg gate`` command. The bookkeeping runs on the
in-process fake comparison of ``test_bisect_search.py``; one real bisect (slow, full) checks
the same on real processes, where d2 against d4 is a case whose structural counters only fell.
"""

from __future__ import annotations

import json
import subprocess
from types import SimpleNamespace

import pytest

from ttfg.app import bisect as use_case
from ttfg.decide import bisect as search
from ttfg.present.bisect_page import bisect_page
from ttfg.results.bisect_file import load_bisect
from ttfg.results.format import ResultsError

from .conftest import GitRepo
from .test_bisect_search import CASE, Levels, request
from .user_project import MYLAB

DEPTHS = [4, 8, 8, 6, 6]  # d0 .. d4 of the issue
SUBJECTS = ["depth 4", "depth 8", "docs", "depth 6", "docs history"]


@pytest.fixture
def issue(tmp_path):
    history = GitRepo.init(tmp_path / "repo", identity=MYLAB)
    return history.path, [history.commit(s) for s in SUBJECTS]


def test_the_issues_history_names_the_step_into_the_peak_and_the_step_out_of_it(issue, tmp_path):
    root, d = issue
    fake = Levels(d, DEPTHS)
    done = use_case.run(request(root, d, tmp_path), compare=fake)
    doc = done.document
    assert done.status == use_case.TURN and done.code == 1
    assert doc["culprit"]["commit"] == d[1] and doc["repro"].startswith(f"ttfg gate --base {d[0][:12]} --head {d[1][:12]}")
    (turn,) = doc["turns"]
    assert turn["commit"] == d[2] and turn["shape"] == "peak" and (turn["good"], turn["bad"]) == (d[2], d[4])
    assert turn["step"]["commit"] == d[3] and turn["step"]["subject"] == "depth 6"
    assert turn["repro"].startswith(f"ttfg gate --base {d[2][:12]} --head {d[3][:12]}")
    # the reverse search compares with the commits swapped: d3 as base against the turn d2, d4 against d3
    assert (d[3], d[2], "good") in fake.calls and (d[4], d[3], "bad") in fake.calls
    summary = (tmp_path / "summary.md").read_text()
    assert "a turn: the step into it and the step out of it" in summary
    assert f"a turn at {d[2][:10]}: slower than both ends (a peak" in summary
    assert f"the step out of it: {d[3][:10]} \"depth 6\" (faster), reproduce: ttfg gate --base {d[2][:12]}" in summary
    assert "--budget" not in summary and "undecided" not in summary  # an answer, not a budget problem
    assert load_bisect(tmp_path / "bisect.json") == doc  # the reader takes the new fields
    page = bisect_page(doc)
    assert "the step out of it" in page and d[3][:10] in page
    shown = use_case.run(request(root, d, tmp_path), compare=Levels(d, DEPTHS, stop_after=0))
    assert shown.from_state and shown.code == 1 and shown.status == use_case.TURN


def test_a_dip_names_the_step_out_of_it_as_the_culprit_and_the_faster_step_into_it(issue, tmp_path):
    root, d = issue
    done = use_case.run(request(root, d, tmp_path), compare=Levels(d, [4, 2, 2, 6, 6]))
    doc = done.document
    assert done.status == use_case.TURN and done.code == 1
    (turn,) = doc["turns"]
    assert turn["shape"] == "dip" and (turn["good"], turn["bad"]) == (d[0], d[2])
    assert doc["culprit"]["commit"] == d[3] and turn["step"]["commit"] == d[1]
    assert f"the step into it: {d[1][:10]} \"depth 8\" (faster)" in done.summary
    assert "faster than both ends (a dip" in done.summary


def test_an_improvement_search_calls_its_peak_faster_than_both_ends(issue, tmp_path):
    root, d = issue
    levels = [6, 2, 2, 4, 4]  # --improvement: d1 made it faster, d3 slower again, d4 faster than d0 overall
    done = use_case.run(request(root, d, tmp_path, improvement=True), compare=Levels(d, levels, improvement=True))
    assert done.status == use_case.TURN and done.document["culprit"]["commit"] == d[1]
    assert "faster than both ends (a peak" in done.summary
    assert done.document["turns"][0]["step"]["commit"] == d[3]


def test_a_turn_resumes_its_reverse_search_after_an_interrupt(issue, tmp_path):
    root, d = issue
    # ends, d2 (2 comparisons), d1 (2), then the reverse search's d3 (2), then the culprit's evidence: cut in d3
    stopped = use_case.run(request(root, d, tmp_path), compare=Levels(d, DEPTHS, stop_after=6))
    assert stopped.status == use_case.INTERRUPTED
    saved = json.loads((tmp_path / "bisect.json").read_text())
    assert saved["turns"][0]["probes"] == [] and "answer" not in saved["turns"][0]
    again = Levels(d, DEPTHS)
    done = use_case.run(request(root, d, tmp_path), compare=again)
    assert done.status == use_case.TURN and done.document["turns"][0]["step"]["commit"] == d[3]
    assert [against for *_, against in again.calls] == ["good", "bad", "parent"]  # d3's two, the evidence


class Stops(Levels):
    """The fake comparison, its undecided cases stopped as ``stop`` says (the budget, or unsettled tiers)."""

    def __init__(self, *a, stop="budget", **kw):
        super().__init__(*a, **kw)
        self.stop = stop

    def __call__(self, *a, **kw):
        record = super().__call__(*a, **kw)
        for c in record.get("cases", []):
            if c["verdict"] == "inconclusive":
                c["stop"] = self.stop
        return record


@pytest.mark.parametrize("stop, advised", [("budget", True), ("decided", False), ("max pairs", False)])
def test_raising_the_budget_is_advised_only_when_more_time_can_decide(tmp_path, stop, advised):
    history = GitRepo.init(tmp_path / "repo", identity=MYLAB)
    shas = [history.commit(f"c{n}") for n in range(9)]
    done = use_case.run(request(history.path, shas, tmp_path / "out"),
                        compare=Stops(shas, [0] * 5 + [1] * 4, unknown=[4], stop=stop))
    assert done.status == use_case.UNDECIDED and done.code == 2
    assert done.document["more_time"] is advised
    assert ("raise --budget" in done.summary) is advised
    assert ("more time would not decide it" in done.summary) is not advised


def _outcome_case(verdict, trail):
    return SimpleNamespace(case=CASE, verdict=SimpleNamespace(verdict=verdict, reason="r"), trail=trail, tier="structural",
                           metric="first_grad_s", figure=None, guards=[], pairs=1, stop="decided", first_error={})


def test_counters_that_only_fell_are_a_step_the_other_way_in_a_steps_comparison_not_at_the_ends(monkeypatch):
    fell = [SimpleNamespace(tier="structural", verdict="improved"), SimpleNamespace(tier="instructions",
                                                                                   verdict="inconclusive")]
    grew = [SimpleNamespace(tier="structural", verdict="regressed")]
    assert use_case.counters_only_fell(_outcome_case("inconclusive", fell))
    assert not use_case.counters_only_fell(_outcome_case("inconclusive", grew))
    assert not use_case.counters_only_fell(_outcome_case("unchanged", fell))
    monkeypatch.setattr("ttfg.decide.unmeasured.side_of", lambda c: None)
    outcome = SimpleNamespace(cases=[_outcome_case("inconclusive", fell)], settings=SimpleNamespace(metric="first_grad_s"))
    verdict, records = use_case._verdict(outcome, {CASE})
    assert verdict == search.IMPROVED and records[0]["counters_fell"] is True
    assert use_case._verdict(outcome, None)[0] == search.INCONCLUSIVE  # the ends: time decides what is swapped


@pytest.mark.parametrize("vs_good, vs_bad, shape", [("regressed", "improved", "peak"), ("improved", "regressed", "dip")])
def test_opposite_comparisons_classify_a_turn_and_its_side(vs_good, vs_bad, shape):
    assert search.classify(vs_good, vs_bad) == search.TURN
    assert search.turn_shape(vs_good) == shape
    names = [f"c{i}" for i in range(7)]
    side = search.turn_range(names, 3, 1, 5, shape)
    assert side == (names[3:6] if shape == "peak" else names[1:4])
    assert search.turn_counts_as(shape) == ("bad" if shape == "peak" else "good")


@pytest.mark.parametrize("edit, field", [
    (lambda d: d.update(turns=[]), "turns"),
    (lambda d: d["turns"][0].update(shape="valley"), "turns[0].shape"),
    (lambda d: d["turns"][0].update(commit=d["commits"][1]), "turns[0].commit"),
    (lambda d: d["turns"][0].update(good=d["commits"][0]), "turns[0]"),
    (lambda d: d["turns"][0]["probes"][0].update(commit=d["commits"][0]), "turns[0].probes[0].commit"),
    (lambda d: d["probes"][0]["evidence"][1].update(reverse="yes"), "probes[0].evidence[1].reverse"),
    (lambda d: d.update(more_time=1), "more_time"),
])
def test_the_reader_refuses_a_turn_that_does_not_hold_together(issue, tmp_path, edit, field):
    root, d = issue
    doc = use_case.run(request(root, d, tmp_path / "out"), compare=Levels(d, DEPTHS)).document
    edit(doc)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultsError, match=f"{path}: {field.replace('[', '.').replace(']', '.')}"):
        load_bisect(path)


# ---------------------------------------------------------------------------- one real bisect


@pytest.mark.slow
@pytest.mark.full  # five commits, real processes: about a minute
def test_a_real_bisect_of_the_issues_history_names_both_steps(tmp_path):
    from .test_bisect import bisect
    from .user_project import committed_project, layered_venv, write_project

    repo = tmp_path / "mylab"
    d = [committed_project(repo)]  # depth 4
    lab = GitRepo(repo)
    for depth, subject in ((8, "depth 8"), (None, "docs"), (6, "depth 6"), (None, "docs history")):
        if depth is None:  # a docs-only commit
            d.append(lab.commit(subject, {"NOTES.md": subject + "\n"}, stage="files"))
        else:
            write_project(repo, depth=depth)
            d.append(lab.commit(subject, stage="tracked"))
    python = layered_venv(tmp_path / "venv")
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "-e", str(repo)], check=True, capture_output=True, text=True,
                   timeout=300)
    out = bisect({"python": python, "repo": repo}, "--good", d[0], "--bad", d[-1], "--tiers", "structural",
                 "--out-dir", str(tmp_path / "out"))
    text = out.stdout + out.stderr
    assert out.returncode == 1, text
    doc = load_bisect(tmp_path / "out" / "bisect.json")
    assert doc["status"] == "turn" and doc["culprit"]["commit"] == d[1], text
    (turn,) = doc["turns"]
    assert turn["commit"] == d[2] and turn["step"]["commit"] == d[3], text
    vs_bad = doc["probes"][0]["evidence"][1]
    assert vs_bad["verdict"] == "improved" and vs_bad["cases"][0]["counters_fell"]  # counters only fell: 8 -> 6
    assert f"ttfg gate --base {d[2][:12]} --head {d[3][:12]}" in text and "raise --budget" not in text
