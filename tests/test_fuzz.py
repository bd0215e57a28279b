"""Property tests: every loader and option parser either accepts its input or fails with
exit 2 and a message; none raises an uncaught exception (hypothesis, seeded by its own
database-free profile so CI runs are repeatable).

Fuzzed: the expectations CSV loader, the asv history loader (mutated real result
files), the results-file loader (mutated real results), and every numeric option.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ttfg.cli import main
from ttfg.decide import expect
from ttfg.errors import TtfgError
from ttfg.history import asv_results

ROOT = Path(__file__).resolve().parents[1]
FUZZ = settings(max_examples=60, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

text_or_bytes = st.one_of(st.text(max_size=300), st.binary(max_size=300))


def _write(path: Path, data) -> Path:
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
    return path


@FUZZ
@given(data=st.one_of(text_or_bytes, st.lists(st.lists(st.text(max_size=12), max_size=6), max_size=6).map(
    lambda rows: "case,metric,expected,margin\n" + "\n".join(",".join(r) for r in rows))))
def test_expectations_loader_accepts_or_names_the_problem(tmp_path_factory, data):
    path = _write(tmp_path_factory.mktemp("e") / "e.csv", data)
    try:
        expect.load(path)
    except TtfgError as exc:
        assert str(exc)


def _mutate(value, rng: random.Random, depth=0):
    """Replace, drop or retype one random node of a JSON tree."""
    junk = [None, "x", -1, 0, 1e308, [], {}, True, "NaN", [None], {"a": None}]
    if isinstance(value, dict) and value and depth < 6:
        key = rng.choice(list(value))
        roll = rng.random()
        if roll < 0.2:
            value.pop(key)
        elif roll < 0.5:
            value[key] = rng.choice(junk)
        else:
            value[key] = _mutate(value[key], rng, depth + 1)
        return value
    if isinstance(value, list) and value and depth < 6:
        i = rng.randrange(len(value))
        value[i] = _mutate(value[i], rng, depth + 1) if rng.random() < 0.6 else rng.choice(junk)
        return value
    return rng.choice(junk)


@FUZZ
@given(seed=st.integers(0, 10_000), cut=st.one_of(st.none(), st.integers(0, 4000)))
def test_asv_history_loader_accepts_or_names_the_file(tmp_path_factory, seed, cut):
    folder = tmp_path_factory.mktemp("h") / "results"
    shutil.copytree(ROOT / "results", folder)
    files = sorted(p for p in folder.rglob("*.json") if p.name != "machine.json")
    victim = files[seed % len(files)]
    text = victim.read_text()
    if cut is not None:
        victim.write_text(text[:cut])
    else:
        victim.write_text(json.dumps(_mutate(json.loads(text), random.Random(seed))))
    try:
        asv_results.load(folder)
    except asv_results.HistoryError as exc:
        assert victim.name in str(exc)


@FUZZ
@given(seed=st.integers(0, 10_000), cut=st.one_of(st.none(), st.integers(0, 3000)))
def test_results_loader_accepts_or_names_the_file(tmp_path_factory, seed, cut):
    from ttfg.results import record

    real = next((ROOT / "tests" / "data").glob("*.json"))
    path = tmp_path_factory.mktemp("r") / "r.json"
    text = real.read_text()
    if cut is not None:
        path.write_text(text[:cut])
    else:
        path.write_text(json.dumps(_mutate(json.loads(text), random.Random(seed))))
    try:
        record.load(path)
    except TtfgError as exc:
        assert "r.json" in str(exc)


NUMERIC_OPTIONS = [("run", "--repeat"), ("run", "--timeout"), ("run", "--threads"), ("run", "--alloc-repeat"),
                   ("check", "--tolerance"), ("study params", "--repeat"), ("study params", "--timeout"),
                   ("gate --base HEAD", "--alpha"), ("gate --base HEAD", "--min-effect"),
                   ("gate --base HEAD", "--min-pairs"), ("gate --base HEAD", "--budget"),
                   ("report", "--threshold"), ("report", "--last"), ("regressions", "--back"),
                   ("run", "--shard"), ("gate --base HEAD", "--shard")]


@FUZZ
@given(option=st.sampled_from(NUMERIC_OPTIONS),
       value=st.one_of(st.text(max_size=20), st.floats().map(repr), st.integers(-10**30, 10**30).map(str)))
def test_numeric_options_accept_or_exit_2(option, value, monkeypatch_session):
    command, flag = option
    argv = [*command.split(), f"{flag}={value}"]
    code = main(argv)
    assert code in (0, 1, 2)


@pytest.fixture(scope="module")
def monkeypatch_session():
    """Every command is replaced by a no-op: only parsing and the checks before work run."""
    mp = pytest.MonkeyPatch()
    from ttfg.cli import gate as gate_cli, report as report_cli, run as run_cli

    for name in ("cmd_run", "cmd_check", "cmd_study"):
        mp.setattr(run_cli, name, lambda args: 0)

    for mod, name in ((gate_cli, "cmd_gate"), (report_cli, "cmd_report"), (report_cli, "cmd_regressions")):
        mp.setattr(mod, name, lambda args: 0)
    yield mp
    mp.undo()
