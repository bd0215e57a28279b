"""The gate's stored baseline (``app/gate_baseline.py``, ``decide/stored_baseline.py``): the real gate loop and count
store, a fake sampler.

A first gate counts its base and keeps the counts; a second gate of the same base counts the head alone and uses the
stored base only when the head's fresh count lands within half the margin of it. Every hostile store (an entry edited
by hand, one of another environment, one of another CPU) and every head that moved gives the verdict the gate gives
without a store, with the base counted afresh and the reason said.
"""

from __future__ import annotations

import json
import os

import pytest

from ttfg.app.gate_baseline import GateBaseline, sources
from ttfg.decide import stored_baseline, tiers
from ttfg.decide.count_margins import Margin
from ttfg.decide.gate_loop import run_gate
from ttfg.decide.gate_settings import GateSettings
from ttfg.measure import fact_keys
from ttfg.measure import instructions as counting
from ttfg.measure.cases import select
from ttfg.results import count_store as cs
from ttfg.results.io import load
from tests.test_gate_policy import sides  # noqa: F401  (the fixture: base and head folders)
from tests.test_gate_tiers import MODEL, FakeSampler, Side_, count


@pytest.fixture
def gate(sides, tmp_path, monkeypatch):  # noqa: F811
    """A gate of scripted sides over the count store in ``tmp_path/counts``; ``store=False``: --no-count-store."""
    store = cs.CountStore(tmp_path / "counts", limit=10 * 1024 * 1024)
    monkeypatch.setattr(counting, "availability", lambda: (True, "callgrind"))

    def run(base: Side_, head: Side_, store_on=True, out="out"):
        fake = FakeSampler(sides, {"base": base, "head": head})
        notes: list[str] = []
        cases, skipped = select([MODEL], ["autograd"], None, check_availability=False)
        settings = GateSettings(tiers=tiers.DEFAULT_TIERS, profiles=0)
        baseline = GateBaseline(store, sides["base"], settings.run, sides["head"].revision.commit,
                                note=notes.append) if store_on else None
        outcome = run_gate(cases, skipped, sides["base"], sides["head"], settings, tmp_path / out,
                           on_note=notes.append, sampler=fake, clock=fake.monotonic, baseline=baseline)
        counted = [(role, kind) for _, role, kind in fake.calls if kind != "timing"]
        return outcome, counted, notes

    run.store = store
    return run


def test_a_second_gate_of_one_base_counts_the_head_alone_and_says_where_the_base_came_from(gate, tmp_path):
    first, counted, _ = gate(Side_(), Side_(instructions=10_010_000))
    assert sorted(counted) == [("base", "allocations"), ("base", "instructions"), ("head", "allocations"),
                               ("head", "instructions")]
    (case,) = first.cases
    assert case.baseline["status"] == "counted" and "instructions: none stored" in case.baseline["why"]
    assert case.baseline["kept"] == 2
    second, counted, notes = gate(Side_(), Side_(instructions=10_020_000), out="out2")
    assert sorted(counted) == [("head", "allocations"), ("head", "instructions")]  # no base count at all
    (case,) = second.cases
    assert case.verdict.verdict == first.cases[0].verdict.verdict == "unchanged" and second.exit_code() == 0
    assert case.baseline["status"] == "stored" and case.baseline["kinds"] == ["allocations", "instructions"]
    assert case.baseline["from"].startswith("the gate of bbbbbbbbbb at ")
    assert case.cost["instructions"]["processes"] == 2 and case.cost["instructions"]["stored"] == 2
    assert case.baseline["verified"].endswith("within half the margin of the stored base: allocations ±0 %, "
                                              "instructions +0.2 %, build instructions ±0 %")
    assert any("base counts (allocations, instructions) stored by the gate" in n for n in notes)
    # the stored samples are in the base's results file, without the wall time the store never keeps
    base = load(tmp_path / "out2" / "base.json").case(case.case)
    stored = [s for s in base.samples if s.kind == "instructions"]
    assert [s.instructions for s in stored] == [10_000_000] and stored[0].process_wall_s is None
    # the outcome carries the record, and reads it back
    from ttfg.results.gate_outcome import CaseOutcome

    assert CaseOutcome.from_json(json.loads(json.dumps(case.to_json()))).baseline == case.baseline


def test_a_head_beyond_half_the_margin_counts_the_base_afresh_and_decides_as_without_a_store(gate):
    gate(Side_(), Side_())  # fills the store
    with_store, counted, notes = gate(Side_(), Side_(instructions=10_300_000), out="out2")  # +3 %
    without, _, _ = gate(Side_(), Side_(instructions=10_300_000), store_on=False, out="out3")
    assert ("base", "instructions") in counted and ("base", "allocations") in counted
    (case,) = with_store.cases
    assert case.verdict.verdict == without.cases[0].verdict.verdict == "regressed"
    assert case.verdict.reason == without.cases[0].verdict.reason
    assert case.baseline["status"] == "counted"
    assert case.baseline["why"].startswith("stored base counted afresh: instructions +3.0 % is beyond half its margin")
    assert any("counting the base afresh" in n for n in notes)
    assert without.cases[0].baseline is None  # no store: the app layer says "off" (tested below)


def test_an_entry_edited_by_hand_is_refused_said_and_the_verdict_is_unchanged(gate):
    gate(Side_(), Side_())
    for path in gate.store.entries.glob("*.json"):  # the base's instructions made to match a regressed head
        path.write_text(path.read_text().replace('"instructions": 10000000', '"instructions": 10400000'))
    with_store, counted, notes = gate(Side_(), Side_(instructions=10_400_000), out="out2")
    assert ("base", "instructions") in counted
    (case,) = with_store.cases
    assert case.verdict.verdict == "regressed" and with_store.exit_code() == 1
    # the allocations entry is intact and agrees; the edited instructions entry is refused and counted now
    assert case.baseline["status"] == "stored" and case.baseline["kinds"] == ["allocations"]
    (why,) = case.baseline["counted_now"]
    assert why.startswith("instructions: stored count ") and "SHA-256 does not match" in why and "moved aside" in why
    assert any("refused: its SHA-256 does not match" in n for n in notes)
    assert list(gate.store.corrupt.iterdir())


@pytest.mark.parametrize("part,changed,words", [
    ("machine", {"cpu": "Another CPU model", "cpu_count": os.cpu_count(), "flags": "x"},
     "the machine (cpu, flags)"),
    ("environment", None, "the environment"),
])
def test_an_entry_of_another_machine_or_environment_is_not_used_and_says_what_differs(gate, monkeypatch, part,
                                                                                       changed, words):
    gate(Side_(), Side_())
    if part == "machine":
        monkeypatch.setattr(fact_keys, "machine", lambda host=False: dict(changed))
    else:
        real = fact_keys.key
        monkeypatch.setattr(fact_keys, "key", lambda case, env, run, counted, measured=None: _other_env(
            real(case, env, run, counted, measured)))
    again, counted, _ = gate(Side_(), Side_(instructions=10_400_000), out="out2")
    assert ("base", "instructions") in counted
    (case,) = again.cases
    assert case.verdict.verdict == "regressed"  # as without a store: never a fallback to another machine
    assert case.baseline["status"] == "counted" and f"stored under other conditions ({words}" in case.baseline["why"]


def _other_env(key):
    from dataclasses import replace

    return replace(key, environment=key.environment + "-other")


def move_conditions(monkeypatch, part: str) -> None:
    """Every key taken from here on is another machine's (``machine``: another CPU model) or another environment's
    (``environment``: another digest)."""
    if part == "machine":
        monkeypatch.setattr(fact_keys, "machine", lambda host=False: {"cpu": "Another CPU model",
                                                                      "cpu_count": os.cpu_count(), "flags": "x"})
    else:
        real = fact_keys.key
        monkeypatch.setattr(fact_keys, "key", lambda case, env, run, counted, measured=None: _other_env(
            real(case, env, run, counted, measured)))


def test_the_agreement_check_names_the_metric_that_moved_and_a_failed_head():
    margin = {"instructions": Margin(0.02)}
    base = {"instructions": [count("instructions", 0, 1_000_000_000)]}
    ok, words = stored_baseline.agreement(base, {"instructions": [count("instructions", 0, 1_009_000_000)]}, margin)
    assert ok and "instructions +0.9 %" in words
    ok, words = stored_baseline.agreement(base, {"instructions": [count("instructions", 0, 1_011_000_000)]}, margin)
    assert not ok and words == "instructions +1.1 % is beyond half its margin (±2 %) of the stored base"
    ok, words = stored_baseline.agreement(base, {"instructions": [count("instructions", 0, "callgrind died")]},
                                          margin)
    assert not ok and words == "the head's instructions count failed (callgrind died)"


def test_a_folder_side_is_filed_by_its_commit_and_a_checkout_by_its_tree(sides, tmp_path):  # noqa: F811
    from ttfg.measure.sides import Side
    from ttfg.provision.worktrees import Revision
    from tests.conftest import GitRepo

    assert sources(sides["base"]) == "commit:" + "a" * 40
    repo = GitRepo.init(tmp_path / "repo")
    repo.commit("one")
    first = repo.git("rev-parse", "HEAD").strip()
    repo.git("commit", "--allow-empty", "-m", "two, same files")
    second = repo.git("rev-parse", "HEAD").strip()
    a, b = (sources(Side("base", Revision("x", c, ""), tmp_path / "repo")) for c in (first, second))
    assert a == b and a.startswith("tree:")  # two commits of one tree: the same sources


def test_gate_json_summary_and_terminal_say_where_the_base_counts_came_from(tmp_path, monkeypatch):
    """The use case end to end (fake sides and sampler): a first gate counts and keeps, a second of the same base
    uses the store and says so in gate.json, summary.md and the terminal; ``--no-count-store`` counts the base and
    says the store was off."""
    from rich.console import Console

    from ttfg.app import gate as use_case
    from ttfg.cli.gate import _print_gate
    from tests.conftest import GitRepo
    from tests.fake_sides import FolderSides

    monkeypatch.setattr(counting, "availability", lambda: (True, "callgrind"))
    monkeypatch.setenv(cs.ENV_DIR, str(tmp_path / "counts"))
    repo = GitRepo.init(tmp_path / "repo")
    base = repo.commit("base")
    heads = [repo.commit(f"comment {n}") for n in (1, 2, 3)]
    opener = FolderSides(lambda rev: tmp_path / "trees" / rev.commit)
    cases, skipped = select([MODEL], ["autograd"], None, check_availability=False)

    def gate(head, out, **request):
        fake = FakeSampler({}, {"base": Side_(), "head": Side_()})
        fake.role = {str(tmp_path / "trees" / base): "base", str(tmp_path / "trees" / head): "head"}
        settings = use_case.settings(timeout_s=60, threads=1, profiles=0, tiers=tiers.DEFAULT_TIERS)
        report = use_case.run(use_case.GateRequest(repo.path, base, cases, settings, tmp_path / out, head=head,
                                                   skipped=skipped, **request), opener=opener, sampler=fake)
        console = Console(record=True, width=200, markup=False)
        _print_gate(console, report, None)
        doc = json.loads((tmp_path / out / "gate.json").read_text())
        base_counts = [k for _, role, k in fake.calls if role == "base" and k != "timing"]
        return report, doc["cases"][0]["baseline"], (tmp_path / out / "summary.md").read_text(), \
            console.export_text(), base_counts

    report, record, _, said, counted = gate(heads[0], "one")
    assert report.code == 0 and record["status"] == "counted" and record["kept"] == 2 and len(counted) == 2
    assert f"baseline {cases[0].id}: counted now: allocations: none stored" in said
    report, record, summary, said, counted = gate(heads[1], "two")
    assert report.code == 0 and counted == [] and record["status"] == "stored"
    assert record["from"].startswith(f"the gate of {heads[0][:10]} at ")
    assert f"base counts: stored, verified: from the gate of {heads[0][:10]}" in summary
    assert f"baseline {cases[0].id}: stored, verified: from the gate of {heads[0][:10]}" in said
    report, record, summary, said, counted = gate(heads[2], "three", count_store=False)
    assert report.code == 0 and len(counted) == 2
    assert record == {"status": "off", "why": "--no-count-store"}
    assert "base counts: counted now, the store off (--no-count-store)" in summary


def test_a_bad_store_cap_is_refused_before_any_checkout(tmp_path, monkeypatch):
    from ttfg.app import gate as use_case
    from ttfg.errors import UsageError
    from tests.fake_sides import FolderSides

    monkeypatch.setenv(cs.ENV_MAX_MB, "lots")
    opener = FolderSides(lambda rev: tmp_path / "trees" / rev.commit)
    cases, skipped = select([MODEL], ["autograd"], None, check_availability=False)
    settings = use_case.settings(timeout_s=60, threads=1, profiles=0, tiers=tiers.DEFAULT_TIERS)
    with pytest.raises(UsageError, match="TTFG_COUNT_STORE_MAX_MB='lots'"):
        use_case.run(use_case.GateRequest(tmp_path, "HEAD~1", cases, settings, tmp_path / "out"), opener=opener)
    assert opener.opened == [] and not (tmp_path / "out").exists()


def test_the_heads_counts_are_kept_for_the_gate_whose_base_it_becomes(sides, tmp_path, monkeypatch):  # noqa: F811
    """A merged head is the next gate's base: its counts, kept under its tree (here its commit), are found."""
    from ttfg.measure.sides import Side

    monkeypatch.setattr(counting, "availability", lambda: (True, "callgrind"))
    store = cs.CountStore(tmp_path / "counts")
    cases, skipped = select([MODEL], ["autograd"], None, check_availability=False)
    settings = GateSettings(tiers=tiers.DEFAULT_TIERS, profiles=0)

    def gate(base, head, out):
        fake = FakeSampler({"base": base, "head": head}, {"base": Side_(), "head": Side_()})
        baseline = GateBaseline(store, base, settings.run, head.revision.commit, head=head)
        outcome = run_gate(cases, skipped, base, head, settings, tmp_path / out, sampler=fake, clock=fake.monotonic,
                           baseline=baseline)
        return outcome, [(role, kind) for _, role, kind in fake.calls if kind != "timing"]

    gate(sides["base"], sides["head"], "one")
    merged = Side("base", sides["head"].revision, sides["head"].tree)
    (tmp_path / "next").mkdir()
    following = Side("head", sides["head"].revision.__class__("next", "c" * 40, "next"), tmp_path / "next")
    outcome, counted = gate(merged, following, "two")
    assert sorted(counted) == [("head", "allocations"), ("head", "instructions")]
    assert outcome.cases[0].baseline["status"] == "stored"
    assert outcome.cases[0].baseline["from"].startswith("the gate of bbbbbbbbbb")


def _resealed(path, old: str, new: str) -> None:
    """An entry edited by hand with care: another count written in, and its SHA-256 computed again to match."""
    doc = json.loads(path.read_text())
    doc["entry"] = json.loads(json.dumps(doc["entry"]).replace(old, new))
    doc["sha256"] = cs._sha(doc["entry"])
    path.write_text(json.dumps(doc))


def test_an_entry_edited_by_hand_with_its_digest_recomputed_is_re_verified_and_the_verdict_is_unchanged(gate):
    """Done-means 2 of issue 42, the edit the SHA-256 cannot see: the stored base says 9.6 M where the base counts
    10 M. The head's fresh count (10 M, no change) is 4 % off it, beyond half the margin: the base is counted afresh,
    said, and the verdict and its reason are those of a gate without a store."""
    gate(Side_(), Side_())
    for path in gate.store.entries.glob("*.json"):
        _resealed(path, '"instructions": 10000000', '"instructions": 9600000')
    with_store, counted, notes = gate(Side_(), Side_(), out="out2")
    without, _, _ = gate(Side_(), Side_(), store_on=False, out="out3")
    (case,) = with_store.cases
    assert ("base", "instructions") in counted and not gate.store.corrupt.exists()  # accepted by the store ...
    assert case.baseline["status"] == "counted"  # ... and refused by the head's fresh count
    assert case.baseline["why"].startswith("stored base counted afresh: instructions +4.2 % is beyond half its margin")
    assert any("stored base counts not used (instructions +4.2 %" in n for n in notes)
    assert (case.verdict.verdict, case.verdict.reason) == (without.cases[0].verdict.verdict,
                                                           without.cases[0].verdict.reason)
    assert case.verdict.verdict == "unchanged"


@pytest.mark.parametrize("hostile", ["edited", "machine", "environment"])
def test_each_hostile_store_gives_the_verdict_and_reason_of_a_gate_without_one(gate, monkeypatch, hostile):
    """Done-means 2 of issue 42, side by side: for an entry edited by hand (another count), one of another
    environment digest and one of another CPU model, the second gate's verdict and its reason are exactly those of
    ``--no-count-store`` on the same sides (a regressed head of +4 %, which a trusted wrong base would pass)."""
    gate(Side_(), Side_())
    if hostile == "edited":
        for path in gate.store.entries.glob("*.json"):
            path.write_text(path.read_text().replace('"instructions": 10000000', '"instructions": 10400000'))
    else:
        move_conditions(monkeypatch, hostile)
    with_store, counted, _ = gate(Side_(), Side_(instructions=10_400_000), out="out2")
    without, _, _ = gate(Side_(), Side_(instructions=10_400_000), store_on=False, out="out3")
    (case,), (plain,) = with_store.cases, without.cases
    assert ("base", "instructions") in counted
    assert (case.verdict.verdict, case.verdict.reason, with_store.exit_code()) == \
        (plain.verdict.verdict, plain.verdict.reason, without.exit_code()) and plain.verdict.verdict == "regressed"
    said = case.baseline.get("why", "") + " ".join(case.baseline.get("counted_now", []))
    assert {"edited": "SHA-256 does not match", "machine": "the machine (cpu, flags)",
            "environment": "the environment"}[hostile] in said, case.baseline


def test_with_a_stored_base_the_heads_long_count_starts_first_beside_the_base_kinds_still_counted(gate,
                                                                                                monkeypatch):
    """Issue 42 item 1: with jax's allocations never stored, a second gate counted the allocations of both sides in a
    round of their own, then the head's instructions alone (on jax.jit resnet15 at load 9: +24 s of wall for
    nothing). The head's stored kinds go first now, so the two workers run the allocations beside them."""
    from ttfg.app import gate_baseline

    real = gate_baseline.reusable
    monkeypatch.setattr(gate_baseline, "reusable", lambda backend, kind: kind != "allocations" and real(backend,
                                                                                                         kind))
    gate(Side_(), Side_())
    second, counted, _ = gate(Side_(), Side_(), out="out2")
    assert ("head", "instructions") in counted[:2] and counted[2:] and ("base", "instructions") not in counted
    assert sorted(counted) == [("base", "allocations"), ("head", "allocations"), ("head", "instructions")]
    (case,) = second.cases
    assert case.baseline["status"] == "stored" and case.baseline["kinds"] == ["instructions"]
