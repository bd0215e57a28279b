"""Instruction counts of the first-gradient window (harness/measure/instructions.py).

The parser reads real callgrind files kept in tests/data/callgrind/: a tiny Python
program (``tiny.py`` there) ran under ``valgrind --tool=callgrind --instr-atstart=no``
with the probe's options and dumped through :class:`Window` at the end of its two
phases. The end-to-end test counts the cheapest backend's first gradient for real; it
is skipped, with the reason, where valgrind is not installed.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ttfg.measure import instructions
from ttfg.measure.cases import select
from ttfg.measure.runner import RunSettings, run_sample
from ttfg.results.validate import sample_problem

DATA = Path(__file__).parent / "data" / "callgrind"


def test_each_dump_parses_to_its_phase_and_total():
    files = instructions.dump_files(DATA)
    assert [f.name.rsplit(".", 1)[-1] for f in files][:2] == ["1", "2"]
    profiles = [instructions.parse_file(f) for f in files]
    phases = [p.trigger for p in profiles]
    assert phases[:2] == ["Client Request: ttfg:trace", "Client Request: ttfg:execute"]
    for prof in profiles[:2]:
        # The file's own summary line is the total; the cost lines of every function add up to it.
        assert prof.total > 0
        assert sum(f.self for f in prof.functions.values()) == prof.total
        assert max(f.incl for f in prof.functions.values()) <= prof.total


def test_the_window_merges_its_dumps_and_ranks_functions():
    window = instructions.read_window(DATA)
    assert list(window.phases) == ["trace", "execute"]
    assert window.total == sum(window.phases.values())
    # The second phase sorts twice as many strings as the first.
    assert 1.3 < window.phases["execute"] / window.phases["trace"] < 3.0
    assert len(window.top) <= instructions.TOP_FUNCTIONS
    incl = [f.incl for f in window.top]
    assert incl == sorted(incl, reverse=True)
    for f in window.top:
        assert f.self <= f.incl and f.fn and isinstance(f.line, int) and f.line >= 0
    # The interpreter's eval loop does the sorting; it is named with its source file.
    names = {f.fn: f for f in window.top}
    assert any("EvalFrame" in n for n in names)
    assert any(f.file.endswith(".c") and f.line > 0 for f in window.top)


def test_compressed_names_and_positions_parse(tmp_path):
    """callgrind's default output compresses names ("(1) main", later "(1)") and positions (+N, -N, *)."""
    text = "\n".join([
        "# callgrind format", "version: 1", "creator: callgrind-3.19.0", "pid: 7", "cmd: x", "part: 1", "",
        "desc: Trigger: Client Request: ttfg:compile", "positions: line", "events: Ir", "summary: 50", "",
        "ob=(1) /bin/x", "fl=(1) x.c", "fn=(1) main", "10 5", "+2 5", "cfl=(1)", "cfn=(2) work", "calls=1 20",
        "* 40", "", "fn=(2)", "20 30", "-1 10", "cfn=(2)", "calls=1 20", "+1 30", "", "totals: 50", ""])
    path = tmp_path / "callgrind.out.7.1"
    path.write_text(text)
    prof = instructions.parse_file(path)
    main, work = prof.functions[("main", "x.c")], prof.functions[("work", "x.c")]
    assert (main.self, main.incl, main.line) == (10, 50, 10)
    assert (work.self, work.incl, work.line) == (40, 40, 19)  # direct recursion is not counted twice
    assert prof.total == 50 and instructions._phase_of(prof.trigger) == "compile"


def test_a_file_that_is_not_callgrind_is_refused(tmp_path):
    bad = tmp_path / "callgrind.out.1"
    bad.write_text("hello\nworld\n")
    with pytest.raises(ValueError, match="not a callgrind"):
        instructions.parse_file(bad)
    with pytest.raises(instructions.CountingError, match="no dump of the first-gradient window"):
        instructions.read_window(tmp_path / "missing")


def test_without_valgrind_the_sample_says_why(monkeypatch):
    monkeypatch.setattr(instructions.shutil, "which", lambda name: None)
    usable, why = instructions.availability()
    assert not usable and "valgrind is not installed" in why and "wall time" in why
    (case,), _ = select(["resnet15:blocks=2"], ["autograd"], None, check_availability=False)
    sample = run_sample(case, "instructions", "cold", 0, RunSettings(repeat=1))
    assert not sample.ok and "valgrind is not installed" in sample.error
    assert sample.instructions_note == why


@pytest.mark.full  # in make test, tests/test_user_project.py's gates count real windows with callgrind
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed: instructions are not "
                    "counted here (the gate falls back to wall time)")
def test_a_real_window_count_of_autograd():
    (case,), _ = select(["resnet15:blocks=2"], ["autograd"], None)
    sample = run_sample(case, "instructions", "cold", 0, RunSettings(repeat=1, timeout_s=300))
    assert sample.ok, f"{sample.error}\n{sample.stderr_tail}"
    assert sample.instructions_tool == "callgrind"
    assert sample.instructions_scope == "first-gradient window; the build counted apart"
    assert 1_000_000 < sample.instructions < 2_000_000_000
    # autograd does not split its first gradient; its build is counted in a dump of its own, not in the total
    assert list(sample.instructions_phases) == ["build"] and 0 < sample.instructions_phases["build"]
    assert 0 < len(sample.instructions_top) <= instructions.TOP_FUNCTIONS
    # Frames that span the build's dump (the probe's own) carry call costs across it: 0.16 % over was seen.
    assert sample.instructions_top[0]["incl"] <= 1.01 * (sample.instructions + sample.instructions_phases["build"])
    assert "child processes" in sample.instructions_note
    assert ("counted on one CPU" in sample.instructions_note) == instructions.pins()
    assert sample_problem(sample.to_json()) is None


def test_counted_probes_take_the_cpus_in_turn_one_each(monkeypatch):
    """XLA sizes its compile pool by the CPUs a process may use and the pool's interleaving moved jax.jit's count
    (docs/measurements.md): a counted probe runs on one CPU, and a gate's two sides, counted side by side, on two."""
    monkeypatch.setattr(instructions.os, "sched_getaffinity", lambda pid: {5, 3})
    monkeypatch.setattr(instructions.shutil, "which", lambda name: f"/usr/bin/{name}")
    turns = [instructions.next_cpu() for _ in range(4)]
    assert sorted(turns[:2]) == [3, 5] and turns[2:] == turns[:2]
    cmd = instructions.command(Path("out"), turns[0])
    assert cmd[:3] == ["taskset", "-c", str(turns[0])] and cmd[3] == "valgrind"
    assert instructions.command(Path("out"))[0] == "valgrind"
    monkeypatch.setattr(instructions.shutil, "which", lambda name: None)  # no taskset: unpinned, and said so
    assert instructions.next_cpu() is None and not instructions.pins()


def _instruction_sample(**changes) -> dict:
    sample = {"kind": "instructions", "ok": True, "index": 0, "cache": "cold", "error": None, "stderr_tail": None,
              "started_at": "2026-12-03T00:00:00+00:00", "process_wall_s": 40.0, "instructions": 1000,
              "instructions_tool": "callgrind", "instructions_scope": "first-gradient window",
              "instructions_phases": {"trace": 400, "execute": 600}, "instructions_note": instructions.NOT_COUNTED,
              "instructions_top": [{"fn": "main", "file": "x.c", "line": 3, "incl": 1000, "self": 10}],
              "instructions_window_s": 20.0, "instructions_cpu_s": 30.0}
    sample.update(changes)
    return sample


@pytest.mark.parametrize("change, problem", [
    ({"instructions_phases": {"trace": -1}}, "instructions_phases.trace: expected a whole number >= 0"),
    ({"instructions_phases": [1, 2]}, "instructions_phases: expected an object"),
    ({"instructions_top": [{"fn": "f", "file": "x.c", "line": 1, "incl": 5}]}, "instructions_top[0].self: missing"),
    ({"instructions_top": [{"fn": "f", "file": "x.c", "line": 1, "incl": 5, "self": 1, "calls": 2}]},
     "instructions_top[0].calls: not a field of a function entry"),
    ({"instructions_top": "main"}, "instructions_top: expected a list"),
])
def test_the_results_format_checks_the_window_fields(change, problem):
    assert sample_problem(_instruction_sample()) is None
    assert problem in sample_problem(_instruction_sample(**change))


def test_phase_instructions_are_registry_metrics():
    from ttfg import metrics
    from ttfg.results.model import Sample

    sample = Sample(**_instruction_sample())
    assert metrics.sample_value(sample, "instructions_trace") == 400
    assert metrics.sample_value(sample, "instructions_lower") is None
    assert metrics.get("instructions_trace").tier == "instructions"
