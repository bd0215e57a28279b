"""Compiled code per model line, base against head: the line that added jaxpr equations, and the graph break.

In-process with the real compilers: a model module installed twice (base and head folders) whose head adds ops on
one line (jax) or a graph break (torch.compile); the records of ``engines/source_lines.py`` are diffed
(``decide/source_lines.py``), and summary.md's line, ``ttfg explain``'s Markdown and gate.json (read back through
its strict reader) must name that file:line with its delta, and the break's reason. One real probe process (slow)
records a built-in backend's lines, which must add up to its structural counter.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ttfg.decide import python_calls, source_lines
from ttfg.present.attribution_views import attribution_markdown
from ttfg.present.gate_views import gate_markdown, where_it_went
from ttfg.results import gate_file
from ttfg.results.attribution_record import Attribution
from ttfg.results.format import ResultsError
from ttfg.results.gate_document import document

from tests import test_gate_policy
from tests.test_gate_policy import gate_with, noisy, sides  # noqa: F401  (fixtures)

JAX_LAYERS = '''import jax.numpy as jnp


def block(w, x):
    h = jnp.tanh(x @ w){extra}
    return h * 2.0


def loss(w, x):
    return jnp.sum(block(w, x))
'''

TORCH_MODEL = '''import torch


def step(x):
    y = torch.sin(x){extra}
    return (y * 2).sum()
'''


def _module(root: Path, name: str, text: str):
    """``mylib/<name>.py`` under ``root`` imported under a name of its own (the two sides live side by side)."""
    path = root / "mylib" / f"{name}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(f"mylib_{root.name}_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def jax_sides(tmp_path: Path) -> dict[str, list[dict]]:
    """Each side's jaxpr equations per line of ``value_and_grad(loss)``: head adds a sine and a cosine on line 5."""
    import jax
    import numpy as np

    from ttfg.engines.source_lines import jaxpr_lines

    w, x = np.ones((3, 3), np.float32), np.ones((2, 3), np.float32)
    out = {}
    for role, extra in (("base", ""), ("head", " + jnp.sin(x @ w) * jnp.cos(x @ w)")):
        mod = _module(tmp_path / role, "layers", JAX_LAYERS.format(extra=extra))
        out[role] = jaxpr_lines(jax.jit(jax.value_and_grad(mod.loss)).trace(w, x).jaxpr)
    return out


def torch_sides(tmp_path: Path) -> dict[str, list[dict]]:
    """Each side's FX nodes and graph breaks of ``torch.compile(step)``: head breaks the graph on line 6."""
    import torch

    from ttfg.engines.torch_compile import CompileStats
    from ttfg.engines.source_lines import fx_lines

    out = {}
    for role, extra in (("base", ""), ("head", "\n    torch._dynamo.graph_break()")):
        mod = _module(tmp_path / role, "model", TORCH_MODEL.format(extra=extra))
        stats = CompileStats()
        torch.compile(mod.step, backend=stats.compiler("eager"), dynamic=False)(torch.ones(3))
        out[role] = fx_lines(stats.modules)
    return out


def test_a_jax_change_adding_ops_on_one_line_names_that_line_with_its_equation_delta(tmp_path):
    recorded = jax_sides(tmp_path)
    base_line5 = next(e["n"] for e in recorded["base"] if e["line"] == 5)
    head_line5 = next(e["n"] for e in recorded["head"] if e["line"] == 5)
    assert head_line5 > base_line5 > 0
    lines = source_lines.diff(recorded["base"], recorded["head"], [str(tmp_path / "base")], [str(tmp_path / "head")])
    # Only line 5 changed; the lines below it (6, 10) trace the same equations on both sides.
    assert [(c.kind, c.code, c.where, c.fn, c.delta) for c in lines] == [
        ("jaxpr_eqns", "project", "mylib/layers.py:5", "block", head_line5 - base_line5)]
    a = Attribution("m/jax.jit/args-unrolled", "first_grad_s", False, None, lines=lines)
    shown = where_it_went(a)
    assert (f"Compiled code that grew, by model line: +{head_line5 - base_line5} jaxpr equations at "
            "`mylib/layers.py:5` (`block`)") in shown
    assert "| jaxpr equations | `mylib/layers.py:5` | `block` | your code |" in attribution_markdown(a)
    from rich.console import Console

    from ttfg.present.attribution_views import print_attribution

    console = Console(record=True, width=100)
    print_attribution(console, a)  # ttfg explain's table
    assert "mylib/layers.py:5 (block)" in console.export_text()


def test_a_torch_compile_change_adding_a_graph_break_names_its_line_and_reason(tmp_path):
    recorded = torch_sides(tmp_path)
    assert not any(e["kind"] == "graph_break" for e in recorded["base"])
    lines = source_lines.diff(recorded["base"], recorded["head"], [str(tmp_path / "base")], [str(tmp_path / "head")])
    first = lines[0]
    assert (first.kind, first.where, first.fn, first.base, first.head) == \
        ("graph_break", "mylib/model.py:6", "step", 0, 1)
    assert first.reason.startswith("Call to `torch._dynamo.graph_break()`")
    assert "Hint:" not in first.reason  # Dynamo's hint for its developers is cut
    # The graph is cut in two: the return line's nodes now live in the resumed frame (its own name), line 5 stays.
    assert not any(c.kind == "fx_nodes" and c.where == "mylib/model.py:5" for c in lines)
    shown = where_it_went(Attribution("m/torch.compile/args-unrolled", "first_grad_s", False, None, lines=lines))
    assert "+1 graph break at `mylib/model.py:6` (`step`): Call to \\`torch.\\_dynamo.graph\\_break()\\`" in shown


def test_a_torch_compiled_function_case_records_its_graph_break_with_line_and_reason_and_an_eager_one_none(tmp_path):
    """A library's own ``torch.compile``'d function as a case (``engines/function.py``): compiled with the library's
    backend (``aot_eager``), its lines are Dynamo's capture, compiled again with the counting backend after the first
    call: the break on line 6 with its reason, the nodes of line 5; the same function not compiled has none."""
    import torch

    from ttfg.engines.function import FunctionEngine

    mod = _module(tmp_path / "head", "model", TORCH_MODEL.format(extra="\n    torch._dynamo.graph_break()"))
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()  # process-wide: an earlier test's compiles counted there too
    engine = FunctionEngine(torch.compile(mod.step, backend="aot_eager"), (torch.ones(3),))
    engine.first_done(engine.gradient())
    assert engine.counters()["graph_breaks"] == 1
    lines = engine.source_lines()
    (brk,) = [e for e in lines if e["kind"] == "graph_break"]
    assert (brk["file"], brk["line"], brk["fn"], brk["n"]) == (mod.__file__, 6, "step", 1)
    assert brk["reason"].startswith("Call to `torch._dynamo.graph_break()`")
    assert [(e["line"], e["fn"], e["n"]) for e in lines if e["kind"] == "fx_nodes" and e["line"] == 5] == \
        [(5, "step", 1)]  # torch.sin
    eager = FunctionEngine(mod.step, (torch.ones(3),))
    eager.first_done(eager.gradient())
    assert eager.source_lines() == []


def test_a_gate_records_line_deltas_in_gate_json_and_summary_md(gate_with, tmp_path, monkeypatch):  # noqa: F811
    """The fake gate's calls processes carry line records (head: 12 more equations at ``mylab/layers.py:42``)."""
    plain = test_gate_policy.calls_sample

    def calls(role, index):
        s = plain(role, index)
        root = f"/installs/{role}"
        s.source_lines = [{"kind": "jaxpr_eqns", "file": f"{root}/mylab/layers.py", "line": 42, "fn": "block",
                           "n": 30 + (12 if role == "head" else 0)},
                          {"kind": "jaxpr_eqns", "file": f"{root}/mylab/layers.py", "line": 50, "fn": "head", "n": 4}]
        return s

    monkeypatch.setattr(test_gate_policy, "calls_sample", calls)
    monkeypatch.setattr(python_calls, "roots", lambda side: [f"/installs/{side.role}"])
    outcome, _ = gate_with(noisy(1.0), noisy(1.2, shift=3), profiles=1)
    (case,) = outcome.cases
    a = outcome.attributions[case.case]
    assert [(c.where, c.base, c.head) for c in a.lines] == [("mylab/layers.py:42", 30, 42)]
    assert a.lines_note == "compiled code per model source line (jaxpr equations), one process a side"
    assert "Compiled code that grew, by model line: +12 jaxpr equations at `mylab/layers.py:42` (`block`)" \
        in gate_markdown(outcome)
    (tmp_path / "g").mkdir()
    path = tmp_path / "g" / "gate.json"
    path.write_text(gate_file.dumps(document(outcome)))
    back = gate_file.load(path).outcome.attributions[case.case]
    assert [(c.kind, c.where, c.delta, c.code) for c in back.lines] == [("jaxpr_eqns", "mylab/layers.py:42", 12,
                                                                        "project")]
    raw = json.loads(path.read_text())
    raw["cases"][0]["attribution"]["lines"][0]["kind"] = "hlo_ops"
    path.write_text(json.dumps(raw))
    with pytest.raises(ResultsError, match=r"lines\[0\]\.kind"):
        gate_file.load(path)


def test_a_side_without_line_records_says_so_and_a_backend_without_any_adds_nothing():
    from ttfg.results.model import CaseResult, Sample

    def case(lines, note=None):
        return CaseResult("c", "m", "jax.jit", {}, None, [
            Sample(kind="calls", ok=True, index=0, cache="cold", started_at="2026-12-06T00:00:00+00:00",
                   process_wall_s=1.0, calls_top=[], source_lines=lines, source_lines_note=note)])

    recorded = [{"kind": "jaxpr_eqns", "file": "m.py", "line": 3, "fn": "f", "n": 2}]
    assert source_lines.attribute_lines(case(None), case(None), [], []) == ([], None)
    lines, note = source_lines.attribute_lines(case(recorded), case(None, "no source lines: TypeError: x"), [], [])
    assert lines == [] and note == "no compiled code per source line on head: no source lines: TypeError: x"


@pytest.mark.slow
@pytest.mark.full
def test_a_real_calls_probe_records_jax_jit_equations_per_line_adding_up_to_its_counter(tmp_path):
    """resnet15 on jax.jit: every equation the structural counter counts sits at one line, and the model's lines
    are ttfg's jax operations (the convolution first: 15 blocks of two)."""
    from ttfg.measure.cases import Case

    report = tmp_path / "calls.json"
    case = Case("resnet15", "jax.jit", (("params", "args"), ("chain", "unrolled")))
    done = subprocess.run([sys.executable, "-m", "ttfg.measure.probe", "--case", json.dumps(case.to_json()),
                           "--kind", "calls", "--report", str(report)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env=os.environ)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(report.read_text())
    assert out["ok"], out
    timing = tmp_path / "timing.json"
    subprocess.run([sys.executable, "-m", "ttfg.measure.probe", "--case", json.dumps(case.to_json()),
                    "--report", str(timing)], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=os.environ)
    eqns = json.loads(timing.read_text())["counters"]["jaxpr_eqns"]
    assert sum(e["n"] for e in out["source_lines"]) == eqns
    top = out["source_lines"][0]
    from ttfg.engines import jax_common

    assert (top["file"], top["fn"]) == (jax_common.__file__, "JaxOps.conv2d"), top
