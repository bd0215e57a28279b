"""The base's stored first process (``decide/stored_first.py``): a pull request whose head runs its base's program
runs its own side alone, once the head's structural counters equal the stored base's.

The real gate loop, tiers and count store, a fake sampler (``tests/test_gate_tiers.py``). A first gate under a
source proof keeps both sides' first processes' structural counters; a second gate of the same base runs the head's
first process alone. Every hostile store (edited, resealed with other counters, another machine or environment)
and every head that moved gives the verdict and reason of the same gate without a store.
"""

from __future__ import annotations

import json

import pytest

from ttfg.app.gate_baseline import GateBaseline, sources
from ttfg.decide import tiers
from ttfg.decide.gate_loop import run_gate
from ttfg.decide.gate_settings import GateSettings
from ttfg.decide.source_proof import SourceProof
from ttfg.measure import instructions as counting
from ttfg.measure.cases import select
from ttfg.results import count_store as cs
from ttfg.results.model import Sample
from tests.test_gate_baseline import _resealed, move_conditions
from tests.test_gate_policy import sides  # noqa: F401  (the fixture: base and head folders)
from tests.test_gate_tiers import MODEL, FakeSampler, Side_, timing

PROVEN = SourceProof(True, "the changed files differ in comments and layout only (equal syntax trees: "
                           "src/lab/ops.py), in one environment", ("src/lab/ops.py",))


@pytest.fixture
def gate(sides, tmp_path, monkeypatch):  # noqa: F811
    """A gate of scripted sides under ``proof`` over the count store in ``tmp_path/counts`` (``store_on=False``:
    --no-count-store): ``(outcome, [(role, kind) of every process], notes)``."""
    store = cs.CountStore(tmp_path / "counts", limit=10 * 1024 * 1024)
    monkeypatch.setattr(counting, "availability", lambda: (True, "callgrind"))

    def run(base: Side_, head: Side_, proof=PROVEN, store_on=True, out="out", **settings):
        fake = FakeSampler(sides, {"base": base, "head": head})
        notes: list[str] = []
        cases, skipped = select([MODEL], ["autograd"], None, check_availability=False)
        settings = GateSettings(**{"tiers": tiers.DEFAULT_TIERS, "profiles": 0, **settings})
        baseline = GateBaseline(store, sides["base"], settings.run, sides["head"].revision.commit,
                                note=notes.append, head=sides["head"]) if store_on else None
        outcome = run_gate(cases, skipped, sides["base"], sides["head"], settings, tmp_path / out,
                           on_note=notes.append, sampler=fake, clock=fake.monotonic, baseline=baseline, source=proof)
        return outcome, [(role, kind) for _, role, kind in fake.calls], notes

    run.store = store
    return run


def _structural_entries(store) -> list:
    return [p for p in store.entries.glob("*.json") if json.loads(p.read_text())["entry"]["key"]["kind"] ==
            cs.STRUCTURAL]


def test_a_second_proven_gate_of_one_base_runs_the_head_alone_and_says_the_base_was_stored(gate, sides,  # noqa: F811
                                                                                          tmp_path):
    first, ran, _ = gate(Side_(), Side_())
    assert sorted(ran) == [("base", "timing"), ("head", "timing")]
    (case,) = first.cases
    assert case.tier == "source" and case.baseline["status"] == "none"
    assert len(_structural_entries(gate.store)) == 2  # the base's and the head's (the next base, once merged)
    head_entry = next(p for p in _structural_entries(gate.store)
                      if json.loads(p.read_text())["entry"]["key"]["sources"] == sources(sides["head"]))
    head_entry.unlink()
    second, ran, notes = gate(Side_(), Side_(), out="out2")
    assert ran == [("head", "timing")]  # the pull request's own side, and nothing else
    assert head_entry.is_file()  # the head's fresh first process kept: once merged, it is the next base
    (case,) = second.cases
    assert second.exit_code() == 0 and case.tier == "source" and case.verdict.verdict == "unchanged"
    assert case.baseline["status"] == "stored" and case.baseline["kinds"] == [cs.STRUCTURAL]
    assert case.baseline["from"].startswith("the gate of ")
    assert case.baseline["verified"] == ("the head's first process gave a first gradient with the stored base's "
                                         "structural counters, all 1 equal")
    assert case.good == {"base": 1, "head": 1} and case.cost["structural"]["processes"] == 1 and set(case.cost) == {"structural"}
    assert any("the base's first process (structural counters) stored by the gate of" in n for n in notes)
    from ttfg.present.gate_views import baseline_words, gate_markdown

    assert baseline_words(case.baseline).startswith("stored, verified: from the gate of ")
    text = gate_markdown(second)
    assert "stored, verified" in text and "the head's first process gave its first gradient with the base's " \
        "structural counters (the base's first process stored by an earlier gate of the same base" in text
    assert "against the base's stored one (1 structural counters equal)" in case.verdict.reason
    # no time is kept, and the base's results file holds no sample it did not run
    for path in _structural_entries(gate.store):
        sample = json.loads(path.read_text())["entry"]["sample"]
        assert set(sample) == {"kind", "ok", "index", "cache", "started_at", "counters", "runtimes"}
    from ttfg.results.io import load

    base = load(tmp_path / "out2" / "base.json").case(case.case)
    assert base is None or not base.samples


def test_a_head_whose_counters_moved_runs_the_base_afresh_and_decides_as_without_a_store(gate):
    gate(Side_(), Side_())
    moved = Side_(counters={"autograd_nodes": 101})
    with_store, ran, notes = gate(Side_(), moved, out="out2")
    without, _, _ = gate(Side_(), moved, store_on=False, out="out3")
    (case,), (plain,) = with_store.cases, without.cases
    assert ran[:3] == [("head", "timing"), ("base", "timing"), ("head", "timing")]  # then a fresh pair
    assert any("stored first process not used (the head's structural counters differ from the stored base's: "
               "autograd_nodes 100 -> 101)" in n for n in notes)
    assert (case.verdict.verdict, case.verdict.reason, case.tier) == (plain.verdict.verdict, plain.verdict.reason,
                                                                      plain.tier)
    assert case.tier != "source"


def test_a_head_whose_first_process_failed_is_not_vouched_for_by_the_store(gate, monkeypatch):
    gate(Side_(), Side_())
    real = FakeSampler.__call__

    def head_fails_once(self, case, kind, cache, index, run):
        sample = real(self, case, kind, cache, index, run)
        role = self.role[str(run.target.source)]
        if role == "head" and kind == "timing" and sum(1 for c in self.calls if c[1:] == ("head", "timing")) == 1:
            return Sample("timing", ok=False, index=index, error="Traceback: ImportError: lab")
        return sample

    monkeypatch.setattr(FakeSampler, "__call__", head_fails_once)
    outcome, ran, notes = gate(Side_(), Side_(), out="out2")
    assert ran[:3] == [("head", "timing"), ("base", "timing"), ("head", "timing")]
    assert any("the head's first process failed (Traceback: ImportError: lab)" in n for n in notes)
    assert outcome.cases[0].baseline.get("kinds") != [cs.STRUCTURAL]


@pytest.mark.parametrize("hostile", ["edited", "resealed", "machine", "environment"])
def test_each_hostile_store_gives_the_verdict_and_reason_of_a_gate_without_one(gate, monkeypatch, hostile):
    """Issue 42's hostile stores, for the first process: the counters edited to another value (the SHA-256 refuses
    it), edited with the digest computed again (the head's counters disagree), another CPU model, another
    environment digest (not found under the exact key): the base runs afresh, and the verdict, its reason and the
    exit code are those of ``--no-count-store``."""
    gate(Side_(), Side_())
    if hostile in ("edited", "resealed"):
        for path in _structural_entries(gate.store):
            if hostile == "edited":
                path.write_text(path.read_text().replace('"autograd_nodes": 100', '"autograd_nodes": 99'))
            else:
                _resealed(path, '"autograd_nodes": 100', '"autograd_nodes": 99')
    else:
        move_conditions(monkeypatch, hostile)
    with_store, ran, notes = gate(Side_(), Side_(), out="out2")
    without, _, _ = gate(Side_(), Side_(), store_on=False, out="out3")
    (case,), (plain,) = with_store.cases, without.cases
    assert ("base", "timing") in ran and case.baseline["status"] != "stored"
    assert (case.verdict.verdict, case.verdict.reason, case.tier, with_store.exit_code()) == \
        (plain.verdict.verdict, plain.verdict.reason, plain.tier, without.exit_code())
    if hostile == "edited":
        assert any("SHA-256 does not match" in n for n in notes) and list(gate.store.corrupt.iterdir())
    if hostile == "resealed":
        assert any("autograd_nodes 99 -> 100" in n for n in notes)


@pytest.mark.parametrize("proof, settings", [
    (SourceProof(False, "README.md changed and is not a Python file"), {}),
    (None, {}),
    (PROVEN, {"tiers": ("structural", "instructions", "time")}),  # the source tier left out: it settles nothing
], ids=["not proven", "not asked", "source tier not selected"])
def test_without_a_proof_the_source_tier_can_use_the_store_never_stands_in(gate, proof, settings):
    gate(Side_(), Side_())
    outcome, ran, _ = gate(Side_(), Side_(), proof=proof, out="out2", **settings)
    assert ("base", "timing") in ran and outcome.cases[0].baseline.get("kinds") != [cs.STRUCTURAL]


def test_the_source_tier_alone_uses_the_stored_first_process_too(gate):
    gate(Side_(), Side_(), tiers=("source", "instructions", "time"))
    outcome, ran, _ = gate(Side_(), Side_(), out="out2", tiers=("source", "instructions", "time"))
    assert ran == [("head", "timing")] and outcome.cases[0].tier == "source" and outcome.exit_code() == 0


def test_the_store_keeps_no_time_of_a_first_process_and_refuses_an_entry_that_holds_one(tmp_path):
    from ttfg.errors import UsageError
    from tests.test_count_store import conditions

    store, facts = cs.CountStore(tmp_path / "counts"), conditions()
    key = cs.EntryKey("tree:" + "a" * 40, "jax.jit:resnet15", cs.STRUCTURAL, "cold", 0, facts.digest)
    path = store.put(cs.Entry(key, facts, timing(0, 1.5, {"hlo_ops": 370}), {"run": "gate"}))
    got = store.get(key, facts).entry.sample
    assert got.kind == "timing" and got.counters == {"hlo_ops": 370}
    assert got.first_grad_s is None and got.import_s is None and got.process_wall_s is None
    _resealed(path, '"counters"', '"first_grad_s": 1.5, "counters"')  # a time written in, its digest made to match
    refused = store.get(key, facts)
    assert refused.entry is None and "not kept by a structural entry" in refused.refused
    with pytest.raises(UsageError, match="without structural counters"):
        store.put(cs.Entry(key, facts, timing(0, 1.5, {}), {"run": "gate"}))
    with pytest.raises(UsageError, match="instructions sample as 'structural'"):
        store.put(cs.Entry(key, facts, Sample("instructions", ok=True, instructions=5), {"run": "gate"}))


def test_explain_of_such_a_gate_says_the_base_came_from_the_store_not_that_every_counter_changed(gate, tmp_path):
    """base.json holds no base sample of a case settled on the stored first process: compared as files, every
    counter would read "absent -> N"; read with its gate.json, the case says where its base came from."""
    from types import SimpleNamespace

    from ttfg.app.explain import explain
    from ttfg.present.attribution_views import attribution_markdown, headline

    gate(Side_(), Side_())
    second, _, _ = gate(Side_(), Side_(), out="out2")
    files = (tmp_path / "out2" / "base.json", tmp_path / "out2" / "head.json")
    (bare,) = explain(*files, None, "first_grad_s", "cold", 5).attributions
    assert "counters changed: autograd_nodes – -> 100" in headline(bare)  # what a reader without the gate sees
    (found,) = explain(*files, None, "first_grad_s", "cold", 5, SimpleNamespace(outcome=second)).attributions
    said = headline(found)
    assert said.startswith(f"{found.case}: the gate ran no base process: the base's first process came from the "
                           "count store (the gate of ") and "counters changed" not in said
    text = attribution_markdown(found)
    assert text.count("the gate ran no base process") == 1 and "| phase |" not in text


def test_the_report_of_such_a_gate_says_it_too(gate, tmp_path):
    """The HTML report's "where it went" of a gate's folder reads the same gate outcome (``app/report.py``)."""
    from types import SimpleNamespace

    from ttfg.app.report import gate_attributions
    from ttfg.present.attribution_views import attribution_context
    from ttfg.results.record import load

    gate(Side_(), Side_())
    second, _, _ = gate(Side_(), Side_(), out="out2")
    runs = [load(tmp_path / "out2" / f"{role}.json") for role in ("base", "head")]
    (found,) = gate_attributions(runs, SimpleNamespace(outcome=second)).attributions
    drawn = attribution_context(found)
    assert "the gate ran no base process" in drawn["headline"] and not drawn["notes"] and not drawn["counter_rows"]


def test_a_deferred_base_is_opened_only_when_a_base_process_must_run(gate, sides, tmp_path):  # noqa: F811
    """The gate defers a proven pull request's base (``SideOpener.open(defer=...)``): a second gate whose head agrees
    with the stored first process never opens it, and base.json says so; a head that moved opens it for the fresh
    pair, and base.json then describes the opened side; a base that fails to open ends the gate with that error,
    no verdict written."""
    from ttfg.provision.sources import InstallError
    from ttfg.results.io import load

    gate(Side_(), Side_())
    opened: list[str] = []
    sides["base"].pending = lambda: opened.append("base")
    _, ran, _ = gate(Side_(), Side_(), out="out2")
    assert ran == [("head", "timing")] and opened == [] and sides["base"].deferred
    assert load(tmp_path / "out2" / "base.json").environment["side"]["deferred"] is True
    assert load(tmp_path / "out2" / "base.json").environment["git"]["commit"] == sides["base"].revision.commit
    moved = Side_(counters={"autograd_nodes": 101})
    _, ran, _ = gate(Side_(), moved, out="out3")
    assert opened == ["base"] and not sides["base"].deferred and ("base", "timing") in ran
    assert "deferred" not in load(tmp_path / "out3" / "base.json").environment["side"]

    def broken():
        raise InstallError("base (aaaaaaaaaa): the build failed")

    sides["base"].pending = broken
    with pytest.raises(InstallError, match="the build failed"):
        gate(Side_(), moved, out="out4")
    assert not (tmp_path / "out4" / "gate.json").exists() and not sides["base"].deferred
