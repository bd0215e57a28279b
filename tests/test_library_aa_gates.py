"""``benchmarks/library_aa_gates.py`` (issue 39): A/A gates of four small libraries, judged and tabled rightly.

The script's gates are real and take minutes (its run is the measurement, not a test); what is tested here,
fast, is what decides its exit code and its table: a comment-only gate that says regressed or exits 1 is a false
alarm, a slowdown that exits 0 is missed, a gate that ends in neither is broken (2), bad input is refused (exit 2,
naming the option, before anything is made), and every library's module renders for the base and each slowdown.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from . import function_libraries
from .conftest import ROOT

spec = importlib.util.spec_from_file_location("library_aa_gates", ROOT / "benchmarks" / "library_aa_gates.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def _row(library="hklab", kind="aa", trial=0, verdict="unchanged", exit_code=0, **more):
    row = {"library": library, "kind": kind, "trial": trial, "verdict": verdict, "exit_code": exit_code,
           "wall_s": 100.0, "load_before": 1.5, "load_after": 2.0, "tier": "instructions",
           "reason": "within the margins",
           "baseline": "stored", "cost_text": "structural 2×9 s; instructions 1×120 s, 2 stored", **more}
    row["broken"] = exit_code not in (0, 1)
    if kind == "aa":
        row["false_alarm"] = verdict in bench.FALSE_ALARMS or exit_code == 1
    else:
        row["missed"] = exit_code != 1
    return row


def _doc(*rows):
    return {"format": "ttfg-library-aa-gates", "commit": "a" * 40, "started": "2026-12-06T20:00:00+00:00",
            "finished": "2026-12-06T21:00:00+00:00", "uptime_before": "load average: 1",
            "uptime_after": "load average: 2",
            "rows": list(rows)}


def test_a_clean_set_passes_and_its_table_has_every_verdict_tier_reason_and_the_median_wall():
    lines, code = bench.render([_doc(_row(trial=0, **{"wall_s": 50.0}), _row(trial=1, **{"wall_s": 70.0}),
                                     _row(library="torchlab", trial=0, **{"wall_s": 300.0}),
                                     _row(kind="slowdown", trial="ops", verdict="regressed", exit_code=1,
                                          reason="structural counters grew: hlo_ops 89 -> 281"))])
    text = "\n".join(lines)
    assert code == 0, text
    assert "| hklab | 1 | unchanged | 0 | instructions | within the margins | 70 | 1.5-2.0 | stored |" in text
    assert ("| hklab | slowdown: ops | regressed | 1 | instructions | structural counters grew: hlo_ops 89 -> 281 |"
            in text)
    assert "3 A/A gates: 0 false alarm(s), median wall 70 s; 1 slowdown gates: 0 missed; 0 broken." in text


@pytest.mark.parametrize("row, code, flag", [
    (_row(verdict="regressed", exit_code=1), 1, "**false alarm**"),
    (_row(verdict="unchanged", exit_code=1), 1, "**false alarm**"),  # exit 1 is an alarm whatever the verdict
    (_row(kind="slowdown", trial="work", verdict="unchanged", exit_code=0), 1, "**missed**"),
    (_row(verdict="no verdict", exit_code=2), 2, ""),
])
def test_a_false_alarm_or_a_missed_slowdown_fails_and_a_broken_gate_is_no_pass(row, code, flag):
    lines, got = bench.render([_doc(_row(trial=1), row)])
    assert got == code and flag in "\n".join(lines)


@pytest.mark.parametrize("bad, named", [
    (["--trials", "-1"], "--trials must be in [0, 1000]"),
    (["--trials", "0"], "--trials 0 and no --slowdowns: nothing to gate"),
    (["--library", "flax"], "argument --library: invalid choice: 'flax'"),
    (["--slowdowns", "sleep"], "argument --slowdowns: invalid choice: 'sleep'"),
    (["--timeout", "0"], "--timeout must be above 0 seconds"),
    (["--render", "x.json", "--library", "jax"], "--render prints earlier runs"),
])
def test_bad_input_is_refused_with_exit_2_naming_it_before_anything_is_made(bad, named):
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "library_aa_gates.py"), *bad],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out.stderr
    assert named in out.stderr and "Traceback" not in out.stderr


def test_a_render_of_a_file_that_is_no_run_of_it_is_refused(tmp_path, capsys):
    other = tmp_path / "aa.json"
    other.write_text(json.dumps({"format": "ttfg-aa-gates", "rows": []}))
    assert bench.main(["--render", str(other)]) == 2
    assert "not a library_aa_gates.py --out file" in capsys.readouterr().err
    assert bench.main(["--render", str(tmp_path / "missing.json")]) == 2


@pytest.mark.parametrize("key", list(function_libraries.LIBRARIES))
def test_each_librarys_module_renders_its_base_and_each_slowdown(key):
    lib = function_libraries.LIBRARIES[key]
    base = function_libraries.source(lib)
    assert "EXTRA = 0\nWORK = 0\n" in base and "time.sleep" not in base
    compile(base, lib.name, "exec")
    for name, change in bench.SLOWDOWNS.items():
        text = function_libraries.source(lib, **change)
        compile(text, f"{lib.name}-{name}", "exec")
        assert text != base
    assert "time.sleep(0.4)" in function_libraries.source(lib, **bench.SLOWDOWNS["import"])
    assert "_busy(WORK)" in base  # the pure-Python work runs on every call (a block, or torch's step)
