"""Hostile side files, generated: every command that reads one refuses it with exit 2 naming the file,
and never exits 0 or 1 on it (issue 25).

Side files are the JSON files ttfg reads besides results files: a gate's ``gate.json`` (``ttfg merge
gate``, ``ttfg explain``, ``ttfg report``), ``confirmations.json`` (``ttfg regressions``, ``ttfg report``), asv history
files (``ttfg regressions``, ``ttfg merge asv``) and the doctor's stored calibration (read by ``ttfg run``
and ``ttfg gate``). Hypothesis draws one change that makes a valid file invalid, from two families:

* a field the readers use, given a value of the wrong type or range, or removed;
* the text itself made hostile: nesting 100,000 deep, a 400-digit integer, ``NaN``, ``1e400``, cut
  short, not UTF-8, a list at the top.

The calibration is the one exception to "exit 2": it is a cache, and refusing it would stop every run,
so a hostile one is set aside with a note that says why (``noise.stored``), never used and never
raised; the property checks exactly that.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ttfg.cli import main
from ttfg.decide import noise
from ttfg.errors import TtfgError
from ttfg.history import confirm
from ttfg.history.trends import CONFIRMED, step_key
from ttfg.results import gate_file

from .conftest import ROOT
from .test_shards import _asv_shards, build_sharded_gates

#: ``make test`` draws a few changes per file kind (about 20 s here); ``make test-all`` (CI) draws enough to
#: reach every listed change and text hostility (the tests marked ``full``).
QUICK, THOROUGH = 12, 150


def hostile(examples: int):
    return settings(max_examples=examples, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def run(*argv: str, capsys) -> SimpleNamespace:
    code = main(list(argv))
    out = capsys.readouterr()
    return SimpleNamespace(code=code, text=out.out + out.err)


# --------------------------------------------------------------------------- one change that breaks a file

#: Text that replaces a whole file or one value in it: each is invalid anywhere a reader looks.
DEEP = "[" * 100_000 + "]" * 100_000
TEXT_HOSTILITY = st.sampled_from(["deep", "bigint", "nan", "float", "cut", "latin1", "list"])


def _hostile_text(valid: str, kind: str, where: str) -> bytes:
    """``valid`` (a JSON object's text) made hostile by ``kind``; ``where`` is a key whose value is replaced."""
    doc = json.loads(valid)
    marker = "__HOSTILE__"
    if kind == "cut":
        return valid[: max(1, len(valid) // 3)].encode()
    if kind == "latin1":
        return b'{"format": "caf\xe9"' + valid[1:].encode()
    if kind == "list":
        return b"[" + valid.encode() + b"]"
    doc[where] = marker
    raw = {"deep": DEEP, "bigint": "1" + "0" * 400, "nan": "NaN", "float": "1e400"}[kind]
    return json.dumps(doc).replace(json.dumps(marker), raw).encode()


def _set(doc, path, value):
    """``doc`` with the value at ``path`` (keys and indexes) replaced, or removed when ``value`` is ``REMOVE``."""
    *parents, last = path
    node = doc
    for key in parents:
        node = node[key]
    if value is REMOVE:
        del node[last]
    else:
        node[last] = value
    return doc


REMOVE = object()


def field_changes(targets: dict[tuple, list]):
    """One (path, bad value) from ``targets``: every value listed is invalid at its path."""
    return st.sampled_from(sorted(targets, key=str)).flatmap(
        lambda path: st.tuples(st.just(path), st.sampled_from(targets[path])))


# --------------------------------------------------------------------------- gate.json


GATE_TARGETS = {
    ("format",): [None, "ttfg-results", 1, REMOVE],
    ("version",): [2, "1", True, None, REMOVE],
    ("exit_code",): ["0", 3, -1, True, None, 1.5, [], REMOVE],
    ("base",): [None, "main", [], REMOVE],
    ("base", "commit"): [None, 5, [], REMOVE],
    ("head", "rev"): [None, 5, REMOVE],
    ("settings",): [None, [], REMOVE],
    ("settings", "metric"): [None, 5, REMOVE],
    ("settings", "min_effect"): [0, -0.1, "5%", None, REMOVE],
    ("settings", "alpha"): [0, 1, 1.5, "0.01", None],
    ("cases",): [None, {}, "x", REMOVE],
    ("cases", 0): [None, "x", []],
    ("cases", 0, "case"): [None, 5, REMOVE],
    ("cases", 0, "verdict"): [None, "regressed", REMOVE],
    ("cases", 0, "verdict", "verdict"): ["passed", None, 5, REMOVE],
    ("cases", 0, "verdict", "ratio"): ["1.0", [], True],
    ("cases", 0, "pairs"): [-1, "3", 2.5, None, REMOVE],
    ("cases", 0, "stop"): [None, 5, REMOVE],
    ("cases", 0, "base"): [None, 5, REMOVE],
    ("cases", 0, "base", "median"): ["1", []],
    ("cases", 0, "failed", "head"): [-1, "x"],
    ("cases", 0, "figure"): ["x", 5, []],
    ("cases", 0, "figure", "ratio"): ["1.2", []],
    ("cases", 0, "guards"): ["x", [5]],
    ("cases", 0, "tiers"): ["x", [5]],
    ("cases", 0, "changes"): ["x", [5]],
    ("cases", 0, "attribution"): ["x", 5, {"phases": "x"}, {"functions": [{"fn": 5}]}],
    ("skipped",): ["x", {}],
    ("shard",): ["x", [], REMOVE],
    ("shard", "count"): [0, 10**9, "3", None],
    ("shard", "index"): [0, 99, "1"],
    ("shard", "cases"): ["x", [1]],
    ("fingerprint", "cores"): [-1, "2"],
    ("noise",): ["x", []],
    ("expectations",): ["x", 5],
}


@pytest.fixture(scope="module")
def gate_shards(tmp_path_factory):
    root = tmp_path_factory.mktemp("gates")
    _, dirs, _ = build_sharded_gates(root)
    return dirs


def _copy_gates(dirs, tmp_path_factory) -> list[Path]:
    where = tmp_path_factory.mktemp("g")
    return [Path(shutil.copytree(d, where / d.name)) for d in dirs]


def check_a_hostile_gate_json_is_refused_by_merge_explain_and_report(gate_shards, tmp_path_factory, capsys, change,
                                                              victim):
    dirs = _copy_gates(gate_shards, tmp_path_factory)
    doc_path = dirs[victim] / "gate.json"
    valid = doc_path.read_text()
    if change[0] == "text":
        doc_path.write_bytes(_hostile_text(valid, change[1], "elapsed_s"))
    else:
        doc_path.write_text(json.dumps(_set(json.loads(valid), *change)))
    out_dir = dirs[0].parent / "merged"
    merged = run("merge", "gate", *map(str, dirs), "--out-dir", str(out_dir), capsys=capsys)
    assert merged.code == 2 and str(doc_path) in merged.text, (change, merged.text)
    assert not out_dir.exists()
    explained = run("explain", str(dirs[victim]), capsys=capsys)
    assert explained.code == 2 and str(doc_path) in explained.text, (change, explained.text)
    try:  # a shard's gate.json without its shard is a gate's, valid alone: only its results files contradict it
        gate_file.load(doc_path)
    except TtfgError:
        page = dirs[0].parent / "index.html"
        reported = run("report", "--runs", str(dirs[victim]), "--out", str(page), capsys=capsys)
        assert reported.code == 2 and str(doc_path) in reported.text and not page.exists(), (change, reported.text)


# --------------------------------------------------------------------------- confirmations.json

STEP = ("resnet15:blocks=2/autograd/params=args,chain=unrolled", "first_grad_s", "a" * 40, "b" * 40)
KEY = step_key(*STEP)
ENTRY = {"key": KEY, "case": STEP[0], "metric": STEP[1], "commit_before": STEP[2], "commit_after": STEP[3],
         "kind": "regression", "status": CONFIRMED, "reason": "paired re-run", "pairs": 12,
         "verdict": {"verdict": "regressed", "ratio": 1.2, "ci_low": 1.1, "ci_high": 1.3, "p_value": 0.001},
         "wall_s": 30.0, "measured_at": "2026-12-03T00:00:00+00:00", "host": "ci", "files": {}}
VALID_CONFIRMATIONS = {"format": confirm.FORMAT, "version": confirm.VERSION, "steps": {KEY: ENTRY}}

CONFIRMATION_TARGETS = {
    ("format",): ["ttfg-gate", None, REMOVE],
    ("version",): [2, "1", True, None, REMOVE],
    ("steps",): ["x", [], None, REMOVE],
    ("steps", KEY): ["confirmed", [], None, {"status": "confirmed"}],
    **{("steps", KEY, k): [None, 5, [], REMOVE] for k in ("key", "case", "metric", "commit_before",
                                                           "commit_after", "reason")},
    ("steps", KEY, "key"): ["0" * 12],
    ("steps", KEY, "case"): ["other/case/x"],
    ("steps", KEY, "kind"): ["regressed", 5, REMOVE],
    ("steps", KEY, "status"): ["maybe", 5, None, REMOVE],
    ("steps", KEY, "pairs"): [-1, "3", 1.5, REMOVE, 0],
    ("steps", KEY, "wall_s"): [-1, "x"],
    ("steps", KEY, "verdict"): ["x", {"verdict": "great"}, None],
    ("steps", KEY, "verdict", "ratio"): ["1.2", []],
    ("steps", KEY, "files"): ["x", [1]],
    ("steps", KEY, "measured_at"): [5, []],
}


@pytest.fixture(scope="module")
def history_copy(tmp_path_factory):
    folder = tmp_path_factory.mktemp("h") / "results"
    shutil.copytree(ROOT / "results", folder)
    return folder


def check_a_hostile_confirmations_file_is_refused_by_regressions_and_report(history_copy, tmp_path_factory, capsys,
                                                                          change):
    path = tmp_path_factory.mktemp("c") / "confirmations.json"
    valid = json.dumps(VALID_CONFIRMATIONS)
    if change[0] == "text":
        path.write_bytes(_hostile_text(valid, change[1], "version"))
    else:
        path.write_text(json.dumps(_set(json.loads(valid), *change)))
    listed = run("regressions", "--results", str(history_copy), "--confirmations", str(path), capsys=capsys)
    assert listed.code == 2 and str(path) in listed.text, (change, listed.text)
    page = path.parent / "index.html"
    reported = run("report", "--results", str(history_copy), "--confirmations", str(path), "--out", str(page),
                   capsys=capsys)
    assert reported.code == 2 and str(path) in reported.text and not page.exists(), (change, reported.text)


# --------------------------------------------------------------------------- asv history files

BENCH = "ttfg.track_first_grad_seconds"
ASV_TARGETS = {
    ("commit_hash",): [5, None, [], REMOVE],
    ("env_name",): [5, None, REMOVE],
    ("params",): ["x", [], 5],
    ("result_columns",): ["x", [1], REMOVE],
    ("results",): ["x", [], REMOVE],
    ("results", BENCH): ["x", 5, {}],
    ("results", BENCH, 0): ["x", {}, 5],
    ("results", BENCH, 0, 10): [-1, "Infinity", 1e308, "x", True, []],
    ("results", BENCH, 11): ["x", 5],
    ("date",): [1e30, -1, "x", True],
}


def _asv_change(doc: dict, path, value):
    if value == "Infinity":  # not JSON: written as asv's own NaN-style constant below
        value = float("inf")
    return _set(doc, path, value)


def check_a_hostile_history_file_is_refused_by_regressions_report_and_merge(tmp_path_factory, capsys, change):
    root = tmp_path_factory.mktemp("a")
    _, paths = _asv_shards(root)
    victim = paths[0]
    valid = victim.read_text()
    if change[0] == "text":
        victim.write_bytes(_hostile_text(json.dumps(json.loads(valid, parse_constant=float)), change[1],
                                         "commit_hash"))
    else:
        victim.write_text(json.dumps(_asv_change(json.loads(valid, parse_constant=float), *change)))
    history = victim.parent.parent
    listed = run("regressions", "--results", str(history), capsys=capsys)
    assert listed.code == 2 and str(victim) in listed.text, (change, listed.text)
    page = root / "index.html"
    reported = run("report", "--results", str(history), "--out", str(page), capsys=capsys)
    assert reported.code == 2 and str(victim) in reported.text, (change, reported.text)
    merged = run("merge", "asv", *map(str, paths), "--out", str(root / "m.json"), capsys=capsys)
    assert merged.code == 2 and str(victim) in merged.text and not (root / "m.json").exists(), (change, merged.text)


# --------------------------------------------------------------------------- the stored calibration

CALIBRATION_TARGETS = {
    ("source",): ["guess", 5, None, REMOVE],
    ("alpha",): [0, 2, "0.01", None, REMOVE],
    ("power",): [1, -1, REMOVE],
    ("method",): [5, None, REMOVE],
    ("measured_at",): [5, None, REMOVE],
    ("entries",): ["x", {}, 5],
    ("entries", 0): ["x", None, 5],
    ("entries", 0, "log_ratio_sd"): [-0.1, "0.1", []],
    ("entries", 0, "n"): [-1, "3", None, REMOVE],
    ("entries", 0, "sd_ci95"): [[1], "x", [1, 2, 3]],
    ("entries", 0, "case"): [5, None, REMOVE],
    ("machine",): ["x", [], 5],
    ("note",): [5, [], "n" * (noise.STORE_MAX_NOTE + 1)],
}


@pytest.fixture(scope="module")
def valid_calibration(tmp_path_factory):
    """A calibration store of one case (the doctor's jax.jit one), and that case's keys as a gate side has them."""
    from .test_noise import calibration_keys
    from .test_reliability import CASE_B, a_calibration

    floor = noise.from_calibration(a_calibration(sd=0.05, seconds=8.0, pairs=10), noise.machine_facts())
    key = calibration_keys()[CASE_B.id]
    path = tmp_path_factory.mktemp("valid") / "calibration.json"
    noise.save(floor, {CASE_B.id: key}, path)
    return path.read_text(), {CASE_B.id: [key]}


def check_a_hostile_calibration_is_set_aside_with_a_note_and_never_used(valid_calibration, tmp_path_factory, change):
    valid, wanted = valid_calibration
    path = tmp_path_factory.mktemp("cal") / "calibration.json"
    assert noise.stored(wanted, path=path)[1].startswith("no stored calibration")
    path.write_text(valid)
    assert noise.stored(wanted, path=path)[0] is not None  # the valid one is used
    if change[0] == "size":
        path.write_text(valid[:-2] + ', "padding": "' + "x" * noise.STORE_MAX_BYTES + '"}')
    elif change[0] == "text":
        path.write_bytes(_hostile_text(valid, change[1], "entries"))
    else:  # a field of the stored floor (the entry's fact)
        path.write_text(json.dumps(_set(json.loads(valid), ("entries", 0, "fact", *change[0]), change[1])))
    floor, why = noise.stored(wanted, path=path)
    assert floor is None and str(path) in why, (change, why)


# --------------------------------------------------------------------------- the tests: a few draws, and many (full)

GATE_CHANGES = st.tuples(st.one_of(field_changes(GATE_TARGETS), st.tuples(st.just("text"), TEXT_HOSTILITY)),
                         st.integers(0, 2))
CONFIRMATION_CHANGES = st.one_of(field_changes(CONFIRMATION_TARGETS), st.tuples(st.just("text"), TEXT_HOSTILITY))
ASV_CHANGES = st.one_of(field_changes(ASV_TARGETS), st.tuples(st.just("text"), TEXT_HOSTILITY))
CALIBRATION_CHANGES = st.one_of(field_changes(CALIBRATION_TARGETS), st.tuples(st.just("text"), TEXT_HOSTILITY),
                                st.just(("size", None)))


def _gate_check(gate_shards, tmp_path_factory, capsys, drawn):
    check_a_hostile_gate_json_is_refused_by_merge_explain_and_report(gate_shards, tmp_path_factory, capsys, *drawn)


def _quick_and_thorough(check, **strategy):
    """The property as two tests: a few draws (``make test``) and every listed change (``full``)."""
    return hostile(QUICK)(given(**strategy)(check)), pytest.mark.full(hostile(THOROUGH)(given(**strategy)(check)))


test_a_hostile_gate_json_is_refused_by_merge_explain_and_report, test_a_hostile_gate_json_is_refused_thoroughly = \
    _quick_and_thorough(_gate_check, drawn=GATE_CHANGES)
test_a_hostile_confirmations_file_is_refused_by_regressions_and_report, \
    test_a_hostile_confirmations_file_is_refused_thoroughly = _quick_and_thorough(
        check_a_hostile_confirmations_file_is_refused_by_regressions_and_report, change=CONFIRMATION_CHANGES)
test_a_hostile_history_file_is_refused_by_regressions_report_and_merge, test_a_hostile_history_file_is_refused_thoroughly = \
    _quick_and_thorough(check_a_hostile_history_file_is_refused_by_regressions_report_and_merge, change=ASV_CHANGES)
test_a_hostile_calibration_is_set_aside_with_a_note_and_never_used, test_a_hostile_calibration_is_set_aside_thoroughly = \
    _quick_and_thorough(check_a_hostile_calibration_is_set_aside_with_a_note_and_never_used,
                        change=CALIBRATION_CHANGES)
