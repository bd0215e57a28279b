"""``gate.json`` as one typed document (``results/gate_outcome.py``, ``results/gate_file.py``): written, read back, and older files migrated.

The outcome the gate holds in memory and the one a reader loads from ``gate.json`` are one type, so
every presenter takes either; a file of an older ttfg (before figures, before tiers) is brought to
today's shape by the migrations before any reader sees it.
"""

from __future__ import annotations

import json

from ttfg.present.gate_views import cases_of, presented_document, verdict_rows
from ttfg.results import gate_file

from .test_gate_policy import gate_with, noisy, phased, sides  # noqa: F401  (gate_with and sides are fixtures)


def written(outcome, tmp_path):
    path = tmp_path / "gate.json"
    path.write_text(gate_file.dumps(presented_document(outcome)))
    return path


def test_a_gate_json_reads_back_into_the_outcome_that_wrote_it(gate_with, tmp_path):
    outcome, _ = gate_with(lambda i: phased(i, 0.1 * noisy(1.0)(i)), lambda i: phased(i, 0.6 * noisy(1.0, shift=3)(i)),
                           profiles=0)
    path = written(outcome, tmp_path)
    loaded = gate_file.load(path)
    assert loaded.results == {}  # in memory only, never written
    assert loaded.exit_code() == outcome.exit_code() == 1
    (case,) = loaded.cases
    assert case.attribution.largest_phase().phase == outcome.cases[0].attribution.largest_phase().phase == "trace"
    assert case.attribution.headline  # the presenter's words, added when the file was written, kept as it holds them
    case.attribution.headline = None
    assert case.verdict.label.startswith("regressed")  # kept as the file holds them
    case.verdict.label = None
    assert json.loads(json.dumps(loaded.to_json())) == json.loads(gate_file.dumps(outcome.to_json()))
    # one type, one row builder: the terminal's rows and the loaded file's rows agree
    assert verdict_rows(loaded.cases) == verdict_rows(outcome.cases)


def test_the_written_file_keeps_the_presenters_words_and_the_outcome_holds_none(gate_with, tmp_path):
    outcome, _ = gate_with(noisy(1.0), noisy(1.0, shift=3), max_pairs=20)
    doc = json.loads(written(outcome, tmp_path).read_text())
    assert doc["cases"][0]["verdict"]["label"].startswith("unchanged")
    assert "label" not in outcome.to_json()["cases"][0]["verdict"]


def test_a_gate_json_from_before_figures_and_tiers_is_migrated(gate_with, tmp_path):
    outcome, _ = gate_with(noisy(1.0), noisy(1.3, shift=3), max_pairs=20)
    doc = json.loads(written(outcome, tmp_path).read_text())
    old = doc["cases"][0]
    for key in ("figure", "tier", "metric", "context", "guards", "tiers"):
        old.pop(key)
    (tmp_path / "old.json").write_text(json.dumps(doc))
    (case,) = gate_file.load(tmp_path / "old.json").cases
    assert case.tier == "time" and case.figure.metric == "first_grad_s" and case.figure.statistic == "median"
    assert case.figure.base == old["base"]["median"] and case.figure.ratio == old["verdict"]["ratio"]
    (row,) = verdict_rows(cases_of([old]))
    assert row.word == "regressed" and row.statistic == "median" and row.decided_by == "time: first gradient"
    assert "figure" not in old  # the caller's document is left as it was
