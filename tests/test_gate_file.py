"""``gate.json`` through its one reader (``results/gate_file.load``) into its one type (``results/gate_document.py``).

The gate writes the document, and every reader (``ttfg merge gate``, ``ttfg explain``, the report page) takes
the type back from ``gate_file.load``: checked, an older file migrated there and nowhere else. Read and written
again, a document is the same text, so nothing a reader needs is lost on the way; a file of an older ttfg
(before figures, before tiers: ``tests/data/gate_v1``) reads into today's shape; and a file that is not one
ttfg writes (NaN, a wrong type, a missing field, a newer version) is refused naming the file and the field,
exit 2 at the command line.
"""

from __future__ import annotations

import json
import re
import shutil

import pytest

from ttfg.cli import main
from ttfg.present.gate_views import presented_document, verdict_rows
from ttfg.results import gate_file
from ttfg.results.format import ResultsError
from ttfg.results.gate_document import GateDocument, document

from .conftest import ROOT
from .test_gate_policy import gate_with, noisy, phased, sides  # noqa: F401  (gate_with and sides are fixtures)
from .test_shards import build_sharded_gates

V1 = ROOT / "tests" / "data" / "gate_v1"


def written(outcome, tmp_path, **added):
    """``gate.json`` as the gate writes it: the outcome, what the gate adds, the words for people."""
    path = tmp_path / "gate.json"
    path.write_text(gate_file.dumps(presented_document(outcome, None, outcome.exit_code(), **added)))
    return path


def test_a_gate_json_reads_back_into_the_outcome_that_wrote_it(gate_with, tmp_path):
    outcome, _ = gate_with(lambda i: phased(i, 0.1 * noisy(1.0)(i)), lambda i: phased(i, 0.6 * noisy(1.0, shift=3)(i)),
                           profiles=0)
    loaded = gate_file.load(written(outcome, tmp_path))
    assert isinstance(loaded, GateDocument) and loaded.exit_code == outcome.exit_code() == 1
    assert loaded.outcome.results == {}  # in memory only, never written
    (case,) = loaded.outcome.cases
    assert case.attribution.largest_phase().phase == outcome.cases[0].attribution.largest_phase().phase == "trace"
    assert case.attribution.headline and case.verdict.label.startswith("regressed")  # the presenter's words, kept
    case.attribution.headline = case.verdict.label = None
    assert json.loads(gate_file.dumps(loaded.outcome.to_json())) == json.loads(gate_file.dumps(outcome.to_json()))
    # one type, one row builder: the terminal's rows and the loaded file's rows agree
    assert verdict_rows(loaded.outcome.cases) == verdict_rows(outcome.cases)


@pytest.mark.parametrize("kind", ["unchanged", "regressed", "structural"])
def test_write_read_write_gives_the_same_bytes(gate_with, tmp_path, kind):
    """What the gate writes, read into the type and written again: byte for byte the same file, for a gate's
    document (what the gate adds included), a bisect's comparison (``document`` alone) and a merged gate."""
    from ttfg.decide import noise
    from ttfg.results import record

    from .test_gate_policy import good

    def counted(nodes):
        def sample(i):
            s = good(i, noisy(1.0, shift=3 if nodes > 100 else 0)(i))
            s.counters = {"autograd_nodes": nodes, "jaxpr_eqns": 3 * nodes}
            return s
        return sample

    scripts = {"unchanged": (noisy(1.0), noisy(1.0, shift=3), {"max_pairs": 20}),
               "regressed": (noisy(1.0), noisy(1.5, shift=3), {"min_pairs": 5, "profiles": 2}),
               "structural": (counted(100), counted(140), {"tiers": ("structural", "time"), "max_pairs": 10})}
    base, head, settings = scripts[kind]
    outcome, _ = gate_with(base, head, **settings)
    out = tmp_path / "out"
    floor = noise.in_gate(record.load(out / "base.json"), record.load(out / "head.json"), "first_grad_s", 20)
    texts = [gate_file.dumps(presented_document(outcome, None, outcome.exit_code(), noise=floor.to_json(),
                                                passing_means="Passing means: ...", footer="Gate that ran: ...",
                                                environments={"base": {}, "head": {}}, new_cases=[])),
             gate_file.dumps(document(outcome))]
    for i, text in enumerate(texts):
        path = tmp_path / f"gate{i}.json"
        path.write_text(text)
        assert gate_file.dumps(gate_file.load(path).to_json()) == text


def test_a_merged_gate_reads_back_into_the_same_bytes(tmp_path):
    from ttfg.app.merge import merge_gate

    _, dirs, slow = build_sharded_gates(tmp_path)
    merged = merge_gate([str(d) for d in dirs[:2]], tmp_path / "merged")  # shard 3/3 missing: exit 2
    path = tmp_path / "merged" / "gate.json"
    text = path.read_text()
    loaded = gate_file.load(path)
    assert loaded.merged is not None and loaded.exit_code == merged.exit_code == 2
    assert [s.status for s in loaded.merged.shards] == ["ok", "ok", "missing"]
    assert {c.shard for c in loaded.outcome.cases} == {"1/3", "2/3"}
    assert gate_file.dumps(loaded.to_json()) == text


def test_the_written_file_keeps_the_presenters_words_and_the_outcome_holds_none(gate_with, tmp_path):
    outcome, _ = gate_with(noisy(1.0), noisy(1.0, shift=3), max_pairs=20)
    doc = json.loads(written(outcome, tmp_path).read_text())
    assert doc["cases"][0]["verdict"]["label"].startswith("unchanged")
    assert "label" not in outcome.to_json()["cases"][0]["verdict"]


def test_a_gate_json_from_before_figures_and_tiers_is_migrated_by_its_reader(gate_with, tmp_path):
    outcome, _ = gate_with(noisy(1.0), noisy(1.3, shift=3), max_pairs=20)
    doc = json.loads(written(outcome, tmp_path).read_text())
    old = doc["cases"][0]
    for key in ("figure", "tier", "metric", "context", "guards", "tiers"):
        old.pop(key)
    (tmp_path / "old.json").write_text(json.dumps(doc))
    (case,) = gate_file.load(tmp_path / "old.json").outcome.cases
    assert case.tier == "time" and case.figure.metric == "first_grad_s" and case.figure.statistic == "median"
    assert case.figure.base == old["base"]["median"] and case.figure.ratio == old["verdict"]["ratio"]
    (row,) = verdict_rows([case])
    assert row.word == "regressed" and row.statistic == "median" and row.decided_by == "time: first gradient"


def test_a_case_nothing_settled_is_not_said_decided_by_failures(gate_with, tmp_path):
    """An inconclusive case with no metric and no failed sample: the row says nothing settled it, where it said
    "structural: failures" (a structural-only gate of a case whose counters could not decide)."""
    from dataclasses import replace

    outcome, _ = gate_with(noisy(1.0), noisy(1.0, shift=3), max_pairs=20)
    case = replace(outcome.cases[0], figure=None, failed={"base": 0, "head": 0})
    (row,) = verdict_rows([case])
    assert row.metric == "nothing settled" and "failures" not in row.decided_by
    (row,) = verdict_rows([replace(case, failed={"base": 0, "head": 2})])
    assert row.metric == "failures"


def test_the_version_1_fixture_reads_through_the_one_reader_into_todays_shape():
    """``tests/data/gate_v1``: a real gate of a ttfg before tiers and figures; the reader migrates it."""
    raw = json.loads((V1 / "gate.json").read_text())
    assert "tier" not in raw["cases"][0] and "figure" not in raw["cases"][0]
    doc = gate_file.load(V1 / "gate.json")
    (case,) = doc.outcome.cases
    assert doc.exit_code == 0 and doc.outcome.base.name == "HEAD~1" and doc.expectations is None
    assert case.tier == "time" and case.figure.metric == "first_grad_s" and case.figure.statistic == "median"
    assert case.figure.base == raw["cases"][0]["base"]["median"] and case.figure.ratio == raw["cases"][0]["verdict"]["ratio"]
    assert doc.outcome.settings.guard == ("first_grad_s",) and doc.outcome.settings.tiers == ("time",)
    again = doc.to_json()  # today's shape, written as today's gate writes it
    assert again["cases"][0]["tier"] == "time" and again["cases"][0]["figure"]["statistic"] == "median"
    assert json.loads((V1 / "gate.json").read_text()) == raw  # reading never writes


#: One bad ``gate.json`` each: how it is broken, and the field the refusal names.
BAD = {
    "nan": (lambda text, doc: text.replace('"elapsed_s": ', '"elapsed_s": NaN, "was": ', 1), "elapsed_s"),
    "wrong type": (lambda text, doc: json.dumps({**doc, "cases": [{**doc["cases"][0], "pairs": "3"}]}),
                   "cases[0].pairs"),
    "missing field": (lambda text, doc: json.dumps({k: v for k, v in doc.items() if k != "settings"}), "settings"),
    "newer version": (lambda text, doc: json.dumps({**doc, "version": 2}), "version"),
    "attribution": (lambda text, doc: json.dumps({**doc, "cases": [{**doc["cases"][0], "attribution": {"phases": "x"}}]}),
                    "cases[0].attribution.phases"),
}


@pytest.mark.parametrize("how", sorted(BAD))
def test_a_bad_gate_json_is_refused_naming_the_file_and_the_field(tmp_path, capsys, how):
    folder = tmp_path / "gate"
    shutil.copytree(V1, folder)
    text = (folder / "gate.json").read_text()
    break_it, field = BAD[how]
    (folder / "gate.json").write_text(break_it(text, json.loads(text)))
    with pytest.raises(ResultsError, match=re.escape(f"gate.json: {field}: ")):
        gate_file.load(folder / "gate.json")
    for argv in (["explain", str(folder)], ["report", "--runs", str(folder), "--out", str(tmp_path / "p.html")]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert f"{folder / 'gate.json'}: {field}" in err, (argv, err)
    assert not (tmp_path / "p.html").exists()


def test_the_report_shows_the_attribution_gate_json_holds_and_never_makes_it_again(gate_with, tmp_path, monkeypatch,
                                                                                  capsys):
    """The page's "where the change went" for a gate's folder is the gate's own attribution, read from gate.json:
    a note only that file carries is on the page, and the regressed case is not attributed again."""
    from ttfg.decide import attribution

    outcome, _ = gate_with(lambda i: phased(i, 0.1 * noisy(1.0)(i)), lambda i: phased(i, 0.6 * noisy(1.0, shift=3)(i)),
                           profiles=0)
    folder = tmp_path / "out"
    doc = presented_document(outcome, None, outcome.exit_code())
    doc["cases"][0]["attribution"]["notes"].append("a note only gate.json holds")
    (folder / "gate.json").write_text(gate_file.dumps(doc))
    made = []
    monkeypatch.setattr(attribution, "attribute", lambda *a, **k: made.append(a))
    assert main(["report", "--runs", str(folder), "--out", str(tmp_path / "page.html")]) == 0
    page = (tmp_path / "page.html").read_text()
    assert 'id="attribution"' in page and "a note only gate.json holds" in page and made == []
