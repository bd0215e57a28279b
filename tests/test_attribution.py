"""Attribution: phase, counter and function deltas between two measurements, and ``ttfg explain``."""

from __future__ import annotations

import json

import pytest

from ttfg.cli import main
from ttfg.decide.attribution import attribute, attribute_results, function_deltas
from ttfg.present.attribution_views import attribution_markdown, headline
from ttfg.results import record
from ttfg.results.model import GateSection
from ttfg.results.io import save

from .synthetic_results import CASE, OTHER, results, timing_sample


def fn(name, file, line, incl, self_):
    return {"fn": name, "file": file, "line": line, "incl": incl, "self": self_}


BASE_TOP = [fn("first_gradient", "harness/engines/jax_jit.py", 40, 400_000_000, 1_000),
            fn("trace_to_jaxpr", "jax/_src/interpreters/partial_eval.py", 2100, 120_000_000, 5_000_000),
            fn("_conv_general_dilated_shape_rule", "jax/_src/lax/convolution.py", 300, 20_000_000, 20_000_000),
            fn("backend_compile", "jax/_src/compiler.py", 250, 250_000_000, 200_000)]
#: Head: the shape rule doubled its own work (and moved 12 lines down), a new helper appeared,
#: and what calls them grew by as much.
HEAD_TOP = [fn("first_gradient", "harness/engines/jax_jit.py", 40, 445_000_000, 1_000),
            fn("trace_to_jaxpr", "jax/_src/interpreters/partial_eval.py", 2100, 165_000_000, 5_000_000),
            fn("_conv_general_dilated_shape_rule", "jax/_src/lax/convolution.py", 312, 40_000_000, 40_000_000),
            fn("_check_padding", "jax/_src/lax/convolution.py", 280, 25_000_000, 25_000_000),
            fn("backend_compile", "jax/_src/compiler.py", 250, 250_000_000, 200_000)]


def instr_sample(index, top, phases=None, note=None):
    return {"kind": "instructions", "ok": True, "index": index, "cache": "cold", "error": None, "stderr_tail": None,
            "started_at": "2026-12-02T00:00:00+00:00", "process_wall_s": 60.0,
            "instructions": sum(phases.values()) if phases else 413_000_000, "instructions_tool": "callgrind",
            "instructions_scope": "first-gradient window", "instructions_phases": phases,
            "instructions_top": top, "instructions_note": note}


def gate_files(tmp_path, role_times, trace_growth=0.0, tops=(BASE_TOP, HEAD_TOP), hlo=(371, 371)):
    """A gate's base.json and head.json: paired timing samples plus two callgrind samples each."""
    paths = {}
    for k, role in enumerate(("base", "head")):
        samples = []
        for i, t in enumerate(role_times[role]):
            s = timing_sample(i, t, {"jaxpr_eqns": 304, "hlo_ops": hlo[k]}, pair=i, pair_position=i % 2)
            if role == "head":
                s["trace_s"] += trace_growth
            samples.append(s)
        phases = {"trace": 120_000_000 + 45_000_000 * k, "lower": 30_000_000, "compile": 250_000_000,
                  "execute": 13_000_000}
        samples += [instr_sample(j, tops[k], phases, note="XLA compile threads counted (--trace-children)")
                    for j in range(2)]
        res = results({CASE: samples, OTHER: [timing_sample(i, 0.005, {"autograd_nodes": 100}) for i in range(3)]})
        res.gate = GateSection(role, "main" if role == "base" else "HEAD", ("a" if role == "base" else "b") * 40,
                               "subject", {"metric": "first_grad_s"})
        paths[role] = save(res, tmp_path / f"{role}.json")
    doc = {"format": "ttfg-gate", "version": 1, "exit_code": 0,
           "base": {"rev": "main", "commit": "a" * 40, "subject": "subject"},
           "head": {"rev": "HEAD", "commit": "b" * 40, "subject": "subject"},
           "settings": {"metric": "first_grad_s", "min_effect": 0.05, "alpha": 0.01},
           "files": {"base": str(paths["base"]), "head": str(paths["head"])}, "cases": []}
    (tmp_path / "gate.json").write_text(json.dumps(doc))
    return paths


TIMES = {"base": [1.00, 1.02, 0.98, 1.01, 0.99, 1.00], "head": [1.06, 1.07, 1.03, 1.06, 1.05, 1.05]}


def test_function_deltas_rank_by_inclusive_change_and_match_moved_functions():
    rows = function_deltas([BASE_TOP, BASE_TOP], [HEAD_TOP])
    by_name = {r.fn: r for r in rows}
    assert [r.fn for r in rows][:2] == ["first_gradient", "trace_to_jaxpr"]
    shape = by_name["_conv_general_dilated_shape_rule"]
    assert shape.presence == "both" and shape.line == 312  # matched across the moved line; head's line shown
    assert shape.delta_incl == 20_000_000 and shape.delta_self == 20_000_000 and shape.relative == 1.0
    new = by_name["_check_padding"]
    assert new.presence == "head only" and new.base_incl is None
    assert new.delta_incl == 25_000_000 - 20_000_000  # at least: base's list ends at 20 M
    assert "backend_compile" not in by_name  # unchanged functions are left out
    assert function_deltas([], [HEAD_TOP]) == []


def test_attribution_of_a_gate_pair(tmp_path):
    paths = gate_files(tmp_path, TIMES, trace_growth=0.05, hlo=(371, 380))
    base, head = record.load(paths["base"]), record.load(paths["head"])
    (a,) = attribute_results(base, head, "*jax.jit*")
    assert a.paired and a.total.n == 6 and a.total.delta == pytest.approx(0.05, abs=0.02)
    trace = next(p for p in a.phases if p.phase == "trace")
    assert trace.paired and trace.delta == pytest.approx(0.05 + 0.05 * 0.05, abs=0.005)
    assert trace.instructions_delta == 45_000_000
    assert a.largest_phase().phase == "trace"
    # Import is not part of the first gradient: a noisy import never "explains" it.
    next(p for p in a.phases if p.phase == "import").delta = 1.0
    assert a.largest_phase().phase == "trace"
    # Counted phases rank by their counts: a compile phase 10 ms slower by the few profiled processes' times,
    # with an unchanged count, does not "move most" beside a trace that counted 45 M more instructions.
    compile_ = next(p for p in a.phases if p.phase == "compile")
    compile_.delta = 0.5
    assert a.largest_phase().phase == "trace"
    from ttfg.present.gate_views import phase_lines
    assert phase_lines(a, top=1)[0].startswith("trace:")
    for p in a.phases:  # not counted: time ranks them
        p.base_instructions = p.head_instructions = None
    assert a.largest_phase().phase == "compile"
    compile_.delta = None
    changed = {c.metric: c for c in a.changed_counters()}
    assert set(changed) == {"counters.hlo_ops", "instructions", "instructions_trace"}  # the trace phase's count too
    assert changed["counters.hlo_ops"].verdict == changed["instructions"].verdict == "regressed"
    assert changed["instructions"].delta == 45_000_000
    # The self change names the function itself (inclusive changes repeat up the call chain).
    assert a.top_function().fn == "_conv_general_dilated_shape_rule" and a.top_function().delta_self == 20_000_000
    assert a.function_samples == {"instructions": {"base": 2, "head": 2}}
    assert a.function_notes == ["XLA compile threads counted (--trace-children)"]
    text = headline(a)
    assert text.startswith(CASE) and "largest phase change: trace +" in text and "hlo_ops 371 -> 380" in text
    assert "convolution.py:" in text
    md = attribution_markdown(a)
    assert "`jax/_src/lax/convolution.py:312`" in md and "| trace |" in md
    json.dumps(a.to_json(), allow_nan=False)


def test_without_function_data_attribution_says_so(tmp_path):
    base = results({CASE: [timing_sample(i, t) for i, t in enumerate(TIMES["base"])]})
    head = results({CASE: [timing_sample(i, t) for i, t in enumerate(TIMES["head"])]})
    a = attribute(base.case(CASE), head.case(CASE))
    assert not a.paired and a.functions == [] and a.total.delta == pytest.approx(0.05, abs=0.01)
    assert any(n.startswith("no function-level data: no sample on both sides") for n in a.notes)
    assert "no function-level data" in headline(a)


def test_results_files_keep_function_lists_and_refuse_bad_ones(tmp_path):
    res = results({CASE: [instr_sample(0, HEAD_TOP, {"trace": 1})]})
    back = record.load(save(res, tmp_path / "r.json"))
    assert back.cases[0].samples[0].instructions_top[2]["line"] == 312
    raw = json.loads((tmp_path / "r.json").read_text())
    raw["cases"][0]["samples"][0]["instructions_top"][0]["incl"] = -5
    (tmp_path / "bad.json").write_text(json.dumps(raw))
    with pytest.raises(record.ResultsError, match=r"instructions_top\[0\]\.incl"):
        record.load(tmp_path / "bad.json")


def test_compare_attributes_a_regressed_case(tmp_path):
    from ttfg.decide.compare import compare_results

    base = results({CASE: [timing_sample(i, t) for i, t in enumerate([1.0, 1.01, 0.99, 1.0, 1.02, 0.98])]})
    head = results({CASE: [timing_sample(i, t) for i, t in enumerate([1.3, 1.31, 1.29, 1.3, 1.32, 1.28])]})
    cmp = compare_results(base, head)
    assert [a.case for a in cmp.attributions] == [CASE]
    assert cmp.to_json()["attributions"][0]["largest_phase"] == "compile"


def test_explain_reads_two_files_or_a_gate(tmp_path, capsys):
    paths = gate_files(tmp_path, TIMES, trace_growth=0.05)
    assert main(["explain", str(paths["base"]), str(paths["head"]), "*jax.jit*"]) == 0
    out = capsys.readouterr().out
    assert "where it went" in out and "_check_padding" in out and "convolution.py:280" in out
    # A downloaded artifact: the paths gate.json recorded no longer exist, the files sit beside it.
    moved = tmp_path / "artifact"
    moved.mkdir()
    for name in ("base.json", "head.json", "gate.json"):
        (moved / name).write_bytes((tmp_path / name).read_bytes())
    for name in ("base.json", "head.json"):
        (tmp_path / name).unlink()
    assert main(["explain", str(moved), "--format", "json", "--output", str(tmp_path / "x.json")]) == 0
    doc = json.loads((tmp_path / "x.json").read_text())
    assert doc["format"] == "ttfg-explain" and {a["case"] for a in doc["attributions"]} == {CASE, OTHER}
    assert all(a["headline"] for a in doc["attributions"])
    assert main(["explain", str(moved / "gate.json"), "--format", "markdown"]) == 0
    assert "**Where it went**" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["missing.json", "also-missing.json"], "cannot read"),
    (["{dir}/base.json"], "not a gate's output"),
    (["{dir}/base.json", "{dir}/head.json", "no-such-case"], "no case 'no-such-case' in both files; cases in both"),
    (["{dir}", "a", "b"], "at most a CASE"),
])
def test_explain_bad_input_exits_2_naming_the_problem(tmp_path, capsys, argv, message):
    gate_files(tmp_path, TIMES)
    assert main(["explain", *(a.format(dir=tmp_path) for a in argv)]) == 2
    assert message in capsys.readouterr().err


def test_report_shows_where_a_gates_change_went(tmp_path):
    from ttfg.app.report import build_report

    paths = gate_files(tmp_path, TIMES, trace_growth=0.05)
    out = build_report(None, [record.load(paths["base"]), record.load(paths["head"])], tmp_path / "r.html")
    html = out.read_text()
    assert 'id="attribution"' in html and "Where the change went" in html
    assert "_check_padding" in html and "jax/_src/lax/convolution.py" in html and "largest phase change" in html


@pytest.mark.full
def test_run_profiles_and_explain_name_python_functions_of_real_processes(tmp_path, ttfg):
    """Real probe processes: ``ttfg run --profiles 1`` stores sampled stacks of the first gradient,
    and they diff by function with file:line (autograd: its tracer's functions). ``make test``
    covers the profile probe through the real gate (test_gate.py); this adds ``ttfg run``."""
    for name, blocks in (("base", 2), ("head", 4)):
        out = ttfg("run", "--model", f"resnet15:blocks={blocks}", "--backend", "autograd", "--repeat", "1",
                   "--profiles", "1", "--out", str(tmp_path / f"{name}.json"))
        assert out.returncode == 0, out.stdout + out.stderr
    head = record.load(tmp_path / "head.json")
    (profile,) = [s for s in head.cases[0].samples if s.kind == "profile"]
    assert profile.ok and profile.profile_tool.startswith("pyinstrument 5.1.3")
    assert any(e["file"].startswith("autograd/") and e["line"] for e in profile.profile_top)
    # Different model sizes are different cases: compare them as one by giving explain the case of each.
    base = record.load(tmp_path / "base.json")
    a = attribute(base.cases[0], head.cases[0])
    assert a.units() == ["s"] and a.functions_in("s")
    assert any(f.where.startswith(("autograd/", "harness/")) for f in a.functions_in("s"))
    assert all(f.unit == "s" and f.delta_incl != 0 for f in a.functions_in("s"))


def test_the_headline_function_is_the_clear_self_change_not_the_noisiest():
    """Sampled stacks are noisy: XLA's compile varying by +-0.8 s between processes must not
    outrank a new helper that steadily adds 0.5 s (measured so on jax.jit under load)."""
    from ttfg.decide.attribution import Attribution

    def prof(compile_s, helper_s=None):
        top = [fn("first_gradient", "harness/engines/jax_jit.py", 37, 9.0 + compile_s + (helper_s or 0), 0.0),
               fn("backend_compile_and_load", "jax/_src/compiler.py", 292, compile_s, compile_s)]
        if helper_s:
            top.append(fn("helper", "harness/engines/interpret.py", 116, helper_s, helper_s))
        return top

    base = [prof(8.2), prof(9.9), prof(8.6)]
    head = [prof(10.1, 0.50), prof(8.4, 0.52), prof(9.6, 0.49)]
    rows = function_deltas(base, head, unit="s")
    by = {r.fn: r for r in rows}
    assert by["helper"].clear and not by["backend_compile_and_load"].clear
    a = Attribution("c", "first_grad_s", False, None, functions=rows)
    assert a.top_function("s").fn == "helper"
    assert "helper (harness/engines/interpret.py:116)" in headline(a)
    # Deterministic counts: any change is clear, and the largest one leads.
    assert function_deltas([BASE_TOP], [HEAD_TOP])[2].clear
    # With both sources the headline is the stacks' clear change: callgrind sees C functions.
    counted = function_deltas([BASE_TOP], [HEAD_TOP])
    both = Attribution("c", "first_grad_s", False, None, functions=counted + rows)
    assert both.units() == ["instructions", "s"] and both.headline_function()[1].fn == "helper"
    assert both.to_json()["top_function"]["unit"] == "s"
    assert headline(both).index("helper") < headline(both).index(both.top_function("instructions").fn)
    noisy = Attribution("c", "first_grad_s", False, None,
                        functions=counted + [r for r in rows if r.fn != "helper"])
    assert noisy.headline_function()[0] == "instructions"  # no clear stack change: the counts lead
