"""Corrupt asv history is named and fails the exit code, never a quiet gap in the trends.

A truncated, empty, non-UTF-8 or wrong-shape file in ``results/`` used to be dropped
by asv's loader with a log line, so ``ttfg regressions`` and ``ttfg report`` showed
fewer commits and fewer regressions and exited 0. Now the loader raises naming it, and
the commands report the rest, name each file left out and exit 2.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ttfg.cli import main
from ttfg.history import asv_results

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "results"

BREAKAGES = {
    "truncated": lambda text: text[: len(text) // 2],
    "empty": lambda text: "",
    "not utf-8": lambda text: b"\xff\xfe\x00garbage",
    "wrong shape": lambda text: json.dumps({"version": 2, "results": [1, 2, 3]}),
    "a list": lambda text: "[]",
}


@pytest.fixture
def history(tmp_path) -> Path:
    """A copy of the committed real history (five commits measured on this project's machine)."""
    folder = tmp_path / "results"
    shutil.copytree(REAL, folder)
    return folder


def _one_result_file(folder: Path) -> Path:
    return sorted(p for p in folder.rglob("*.json") if p.name not in ("machine.json", "benchmarks.json"))[0]


@pytest.mark.parametrize("breakage", list(BREAKAGES))
def test_a_bad_file_is_named_the_rest_reported_and_the_exit_code_2(history, breakage, capsys, tmp_path):
    commits = asv_results.load(history)["commit"].nunique()
    bad = _one_result_file(history)
    broken = BREAKAGES[breakage](bad.read_text())
    bad.write_bytes(broken if isinstance(broken, bytes) else broken.encode())
    with pytest.raises(asv_results.HistoryError, match=bad.name):
        asv_results.load(history)
    assert main(["regressions", "--results", str(history)]) == 2
    captured = capsys.readouterr()
    assert str(bad) in captured.err and "Traceback" not in captured.err, captured.err
    assert f"over {commits - 1} commits" in captured.out  # the rest is still analysed
    assert main(["report", "--out", str(tmp_path / "r.html"), "--results", str(history)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "Traceback" not in err and f"{commits - 1} commits" in err, err
    html = (tmp_path / "r.html").read_text()
    assert bad.name in html and "cannot be read" in html  # the page says what it lacks


def test_a_bad_file_stops_confirmation(history, capsys, tmp_path):
    _one_result_file(history).write_text("{")
    assert main(["regressions", "--results", str(history), "--confirm", "--confirm-dir", str(tmp_path / "c")]) == 2
    assert "not confirming" in capsys.readouterr().err
    assert not (history / "confirmations.json").exists()


def test_skip_bad_history_is_explicit_and_lists_what_it_left_out(history, capsys, tmp_path):
    good = asv_results.load(history)
    bad = _one_result_file(history)
    bad.write_text("{")
    frame = asv_results.load(history, skip_bad=True)
    assert frame.attrs["skipped_files"] and str(bad) in frame.attrs["skipped_files"][0]
    assert frame["commit"].nunique() == good["commit"].nunique() - 1
    assert main(["regressions", "--results", str(history), "--skip-bad-history"]) == 0
    err = capsys.readouterr().err
    assert "left out an unreadable history file" in err and str(bad) in err


def test_a_bad_machine_or_benchmarks_file_is_named(history):
    (history / "benchmarks.json").write_text("[1]")
    with pytest.raises(asv_results.HistoryError, match="benchmarks.json"):
        asv_results.load(history)
    (history / "benchmarks.json").unlink()
    machine = next(history.rglob("machine.json"))
    machine.write_text("{}")
    with pytest.raises(asv_results.HistoryError, match="machine.json"):
        asv_results.load(history)
