"""A bisect counts each commit once (``app/bisect_counts.py``): the real comparisons, with a fake sampler.

A real git history of empty commits, the real comparison (``app/bisect.py``'s ``_Comparer``,
every comparison a ``run_gate``) with sides opened as one folder per commit (``fake_sides.FolderSides``),
and a sampler that answers from a level per commit and records every call: so which processes a
bisect would have started is checked exactly, in a second.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from collections import Counter
from dataclasses import replace

import pytest

from ttfg.app import bisect as use_case
from ttfg.decide.gate_settings import GateSettings
from ttfg.errors import TtfgError, UsageError
from ttfg.measure import instructions as counting
from ttfg.measure.cases import select
from ttfg.provision.environments import Environment
from ttfg.measure.runner import RunSettings
from ttfg.results.bisect_file import load_bisect
from ttfg.results.format import ResultsError
from tests.test_gate_tiers import count, timing
from tests.test_bisect_search import repo  # noqa: F401 (the fixture, shared)
from tests.fake_sides import FolderSides


CULPRIT = 6
TIERS = ("structural", "instructions", "time")
#: Every side's environment: its digest is part of a count's key.
ENV = Environment("current", sys.executable, {"numpy": "2.2.6"}, "cpython-3.11")


class Commits:
    """A sampler for sides whose folder is named by their commit: 10 M instructions before the culprit, 11 M from
    it on (+10 %); every call recorded as ``(commit, kind, index)``; a fake clock, 10 s a sample."""

    def __init__(self, shas):
        self.after = set(shas[CULPRIT:])
        self.calls: list[tuple[str, str, int]] = []
        self.now = 0.0
        self.lock = threading.Lock()

    def clock(self) -> float:
        return self.now

    def __call__(self, case, kind, cache, index, run, *cache_dir):
        commit = run.target.source.name
        with self.lock:
            self.calls.append((commit, kind, index))
            self.now += 10.0
        if kind == "timing":
            return timing(index, 1.0, {"autograd_nodes": 100})
        if kind == "profile":
            return count(kind, index, "no profiler here")
        slower = commit in self.after
        return count(kind, index, 11_000_000 if slower and kind == "instructions" else 10_000_000)

    def counted(self) -> Counter:
        return Counter((c, k, i) for c, k, i in self.calls if k in ("instructions", "allocations"))

    def timings(self) -> int:
        return sum(1 for _, k, _ in self.calls if k == "timing")


@pytest.fixture
def opener(tmp_path, monkeypatch):
    """Each commit's side is a folder named by the commit (no worktree, no install); instructions countable."""
    monkeypatch.setattr(counting, "availability", lambda: (True, "callgrind"))
    return FolderSides(lambda rev: tmp_path / "trees" / rev.commit, env=ENV)


def request(root, shas, out_dir, settings=None, **kw):
    cases, _ = select(["resnet15:blocks=2"], ["autograd"], None, check_availability=False)
    return use_case.BisectRequest(repo=root, good=shas[0], bad=shas[-1], cases=cases,
                                  settings=settings or GateSettings(profiles=0, tiers=TIERS), out_dir=out_dir, **kw)


def comparisons(doc: dict) -> list[dict]:
    return [doc["ends"], *(e for p in doc["probes"] for e in p["evidence"]), doc.get("culprit_evidence")]


def test_each_commit_is_counted_once_and_a_steps_second_comparison_counts_nothing(repo, tmp_path, opener):
    root, shas = repo
    fake = Commits(shas)
    notes: list[str] = []
    events = use_case.BisectEvents()
    events.note = notes.append
    done = use_case.run(request(root, shas, tmp_path / "out"), events, clock=fake.clock, sampler=fake, opener=opener)
    doc = done.document
    assert done.status == use_case.FOUND and doc["culprit"]["commit"] == shas[CULPRIT]
    counted = fake.counted()
    assert counted and max(counted.values()) == 1  # no commit counted twice, the ends included
    assert counted[shas[0], "instructions", 0] == counted[shas[-1], "instructions", 0] == 1
    two = [p for p in doc["probes"] if len(p["evidence"]) == 2]
    assert two  # the steps whose commit was compared with both ends
    for p in two:
        second = p["evidence"][1]
        # The head's count beyond an uncalibrated margin: one more base count shows it repeats (decide/steadiness.py),
        # a process no comparison took before; every other count is reused.
        assert second["counts"]["base"]["taken"] <= 1
        assert second["counts"] == {"base": {"taken": second["counts"]["base"]["taken"], "reused": 2,
                                             "from": [second["counts"]["base"]["from"][0]]},
                                    "head": {"taken": 0, "reused": 2, "from": [second["counts"]["head"]["from"][0]]}}
        # the tested commit: from its first comparison, through the bisect's own counts or the gate's count store it
        # filled there (issue 42: a base the head's fresh count verified)
        assert second["counts"]["base"]["from"][0].startswith(("step ", "the count store (the bisect (step "))
    ends = doc["ends"]["counts"]
    # Two kinds a side, and the base counted once more where the head's count moved beyond the default margin.
    assert ends == {"base": {"taken": 3, "reused": 0, "from": []}, "head": {"taken": 2, "reused": 0, "from": []}}
    everything = [e for e in comparisons(doc) if e is not None]
    assert fake.timings() == 2 * len(everything)  # one structural pair each: wall time never reused
    line = use_case._summary(doc)
    # the good end, counted by the ends: from the bisect's own counts, or from the gate's store they filled
    assert re.search(f"count of {shas[0][:10]} reused from (the ends|the count store \\(the bisect \\(the ends\\))", line), line
    assert any(n.startswith("instructions count of ") and "reused from" in n for n in notes)
    assert load_bisect(tmp_path / "out" / "bisect.json")["status"] == "found"  # the strict reader takes 'counts'
    ends = json.loads((tmp_path / "out" / "steps" / "ends" / "gate.json").read_text())  # ttfg explain reads it
    assert [(ends[r]["rev"], ends[r]["subject"]) for r in ("base", "head")] == [(shas[0], "commit 0"),
                                                                                 (shas[-1], "commit 8")]
    stored = json.loads((tmp_path / "out" / "counts.json").read_text())
    assert {s["commit"] for s in stored["samples"]} == {c for c, _, _ in counted}
    assert len(stored["samples"]) == sum(counted.values())


def test_a_resumed_bisect_takes_no_count_it_already_has(repo, tmp_path, opener):
    root, shas = repo
    first = Commits(shas)
    stopped = use_case.run(request(root, shas, tmp_path / "out", total_budget_s=150), clock=first.clock,
                           sampler=first, opener=opener)
    assert stopped.status == use_case.STOPPED and stopped.document["probes"]
    second = Commits(shas)
    done = use_case.run(request(root, shas, tmp_path / "out"), clock=second.clock, sampler=second, opener=opener)
    assert done.status == use_case.FOUND and done.document["culprit"]["commit"] == shas[CULPRIT]
    assert not set(first.counted()) & set(second.counted())  # nothing the first run counted was counted again
    assert second.timings() > 0  # its comparisons took their own timing pairs


def test_a_rerun_under_other_settings_is_refused_and_its_counts_are_not_mixed_in(repo, tmp_path, opener):
    """Before issue 40 a rerun with ``--threads 2`` continued the state and counted again; the steps of one thread
    count and of another then made one answer. Now the state is refused, naming the setting (stored and asked)."""
    root, shas = repo
    first = Commits(shas)
    use_case.run(request(root, shas, tmp_path / "out", total_budget_s=150), clock=first.clock, sampler=first,
                 opener=opener)
    threads = replace(GateSettings(profiles=0, tiers=TIERS), run=RunSettings(repeat=1, threads=2))
    state = (tmp_path / "out" / "bisect.json").read_text()
    second = Commits(shas)
    with pytest.raises(UsageError, match="--threads: stored 1, asked 2"):
        use_case.run(request(root, shas, tmp_path / "out", threads), clock=second.clock, sampler=second,
                     opener=opener)
    assert not second.counted() and (tmp_path / "out" / "bisect.json").read_text() == state


def test_a_truncated_or_hand_edited_state_is_refused_naming_file_and_field(repo, tmp_path, opener):
    root, shas = repo
    out = tmp_path / "out"
    fake = Commits(shas)
    stopped = use_case.run(request(root, shas, out, total_budget_s=150), clock=fake.clock, sampler=fake, opener=opener)
    assert stopped.status == use_case.STOPPED  # a state a rerun continues
    state = out / "bisect.json"
    good = state.read_text()
    doc = json.loads(good)
    doc["probes"][0]["state"] = "maybe"
    for text, field in ((good[: len(good) // 2], "not valid JSON"), (json.dumps(doc), "probes[0].state"),
                        (json.dumps({k: v for k, v in json.loads(good).items() if k != "key"}), "key")):
        state.write_text(text)
        with pytest.raises(ResultsError, match=re.escape(f"bisect.json: {field}")) as refused:
            use_case.run(request(root, shas, out), sampler=Commits(shas), opener=opener)
        assert isinstance(refused.value, TtfgError) and str(state) in str(refused.value)  # exit 2
        assert "left as it is" in str(refused.value) and state.read_text() == text  # nothing overwritten
    state.write_text(good)
    counts = out / "counts.json"
    kept = json.loads(counts.read_text())
    kept["samples"][0]["sample"]["instructions"] = "many"
    counts.write_text(json.dumps(kept))
    with pytest.raises(ResultsError, match=r"samples\[0\]\.sample\.instructions") as refused:
        use_case.run(request(root, shas, out), sampler=Commits(shas), opener=opener)
    assert str(counts) in str(refused.value) and json.loads(counts.read_text()) == kept
    assert state.read_text() == good


def test_only_repeatable_count_kinds_are_reusable():
    from ttfg.app.bisect_counts import reusable

    assert reusable("autograd", "instructions") and reusable("autograd", "allocations")
    assert reusable("jax.jit", "instructions")
    assert not reusable("jax.jit", "allocations")  # XLA's thread pool: allocation counts vary between processes
    assert not reusable("autograd", "timing") and not reusable("autograd", "profile")


def test_a_second_bisect_of_one_history_reads_the_gates_count_store_and_finds_the_same_culprit(repo, tmp_path,
                                                                                                opener):
    """Issue 42 item 2: a bisect reads and fills the gate's count store (its comparisons' base counts looked up under
    the gate's key and verified by the head's fresh count): a second bisect of the same history, in another folder,
    uses what the first kept and says so, and finds the same culprit; without the store it counts what the first
    did; entries edited by hand are refused, said, and the culprit is the same."""
    root, shas = repo
    first = Commits(shas)
    one = use_case.run(request(root, shas, tmp_path / "one"), clock=first.clock, sampler=first, opener=opener)
    assert one.document["culprit"]["commit"] == shas[CULPRIT]
    again = Commits(shas)
    notes: list[str] = []
    events = use_case.BisectEvents()
    events.note = notes.append
    two = use_case.run(request(root, shas, tmp_path / "two"), events, clock=again.clock, sampler=again,
                       opener=opener)
    assert two.document["culprit"]["commit"] == shas[CULPRIT]
    # each commit is still counted once a run: its first comparison has it as the head, which is always counted
    assert sum(again.counted().values()) == sum(first.counted().values())
    # a base the first bisect kept, used where the head's fresh count agreed, said in the notes and in bisect.json
    assert any("base counts (allocations, instructions) stored by the bisect (step " in n
               and "used: the head's fresh count is within half the margin" in n for n in notes), notes
    froms = [f for e in comparisons(two.document) if e and e.get("counts") for f in e["counts"]["base"]["from"]]
    assert any(f.startswith("the count store (the bisect (step ") for f in froms), froms
    off = Commits(shas)
    three = use_case.run(request(root, shas, tmp_path / "three", count_store=False), clock=off.clock, sampler=off,
                         opener=opener)
    assert three.document["culprit"]["commit"] == shas[CULPRIT] and off.counted() == first.counted()
    from ttfg.provision import cache
    from ttfg.results import count_store as cs

    entries = list(cs.CountStore.default(cache.root()).entries.glob("*.json"))
    assert entries
    for path in entries:  # every stored count made that of the culprit's side
        path.write_text(path.read_text().replace('"instructions": 10000000', '"instructions": 11000000'))
    edited = Commits(shas)
    notes.clear()
    four = use_case.run(request(root, shas, tmp_path / "four"), events, clock=edited.clock, sampler=edited,
                        opener=opener)
    assert four.document["culprit"]["commit"] == shas[CULPRIT]
    assert any("refused: its SHA-256 does not match" in n for n in notes), notes


@pytest.mark.parametrize("flag, expected", [([], True), (["--no-count-store"], False)])
def test_the_bisect_command_passes_no_count_store_as_the_gate_does(repo, tmp_path, monkeypatch, flag, expected):
    """Issue 42: ``ttfg bisect --no-count-store`` counts every base afresh (the request's ``count_store``), as the
    gate's flag does; by default the store is read and filled."""
    from ttfg.cli import main

    root, shas = repo
    asked = []

    def run(request, events=None, **kwargs):
        asked.append(request)
        raise KeyboardInterrupt  # stop before any measurement: only the request is looked at

    monkeypatch.setattr(use_case, "run", run)
    code = main(["bisect", "--repo", str(root), "--good", shas[0], "--bad", shas[-1], "--backend", "autograd",
                 "--model", "resnet15:blocks=2", "--out-dir", str(tmp_path / "out"), *flag])
    assert code != 0 and [r.count_store for r in asked] == [expected]  # the CLI's Ctrl-C answer, after the request
