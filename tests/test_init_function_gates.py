"""Issue 47's done-means: a library's own call, measured through ``ttfg init``'s function starter, gated.

Two scratch libraries shaped unlike ttfg's specs, each set up as a user would: ``ttfg init`` (its
default function starter for the framework the library declares), the starter's stand-in replaced by
the library's own public call, ``pip install -e .``, a commit; then a head that adds 12 operations per
block (six ``* 1.0001 + 0.0001``), and ``ttfg gate`` between them. The structural tier must decide,
exit 1, from one process a side, naming the framework's counter:

- ``eqxlab``, an Equinox residual MLP whose own ``loss_and_grad`` is
  ``eqx.filter_jit(eqx.filter_value_and_grad(mse_loss))`` over an ``eqx.Module`` (leaves that are not
  arrays: its activation): HLO ops and jaxpr equations;
- ``torchlab``, a torch residual MLP whose own training step is ``torch.compile``'d: the ops Dynamo
  captured into its FX graphs.

Each gate's calls process also names the model line that grew (issue 41): the equations eqxlab's head adds at
the line of its scalings, the FX nodes torchlab's adds there, and, in a second torchlab gate, the graph break a head
adds on one line of the step, with Dynamo's reason.

Real processes and real compiles: ``slow`` and ``full`` (each takes a minute or more on a loaded 2-core VM).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from pathlib import Path

import pytest

from . import function_libraries
from .function_libraries import LIBRARIES


def set_up(tmp_path: Path, key: str, lib=None) -> dict:
    """The library's base (``function_libraries.set_up_base``: init, the starter calling the library, installed),
    then the head's 12 extra ops per block, committed. Returns the repository, the commits, python."""
    made = function_libraries.set_up_base(tmp_path, lib or LIBRARIES[key])
    head = function_libraries.commit_head(made, "six scalings per block: 12 more ops",
                                          function_libraries.source(LIBRARIES[key], extra=6))
    return {**made, "head": head}


def gate(made: dict, out: Path) -> tuple[subprocess.CompletedProcess, dict]:
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_STEP_SUMMARY", "PYTHONPATH")}
    done = subprocess.run([str(made["python"]), "-m", "ttfg", "gate", "--base", made["base"], "--head", made["head"],
                           "--out-dir", str(out)], cwd=made["repo"], env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 1, done.stdout[-4000:] + done.stderr[-4000:]
    [case] = json.loads((out / "gate.json").read_text())["cases"]
    return done, case


def one_process_a_side(out: Path, case: dict) -> None:
    """The structural tier decided on one timing process a side (the profiles after it explain, never decide)."""
    assert case["verdict"]["n_base"] == case["verdict"]["n_head"] == 1, case["verdict"]
    for side in ("base", "head"):
        [found] = [c for c in json.loads((out / f"{side}.json").read_text())["cases"] if c["id"] == case["case"]]
        assert [s["kind"] for s in found["samples"]].count("timing") == 1, (side, found["samples"])


@pytest.mark.slow
@pytest.mark.full
def test_an_equinox_librarys_own_loss_and_grad_is_gated_on_hlo_ops_through_the_init_starter(tmp_path):
    pytest.importorskip("equinox")
    made = set_up(tmp_path, "equinox")
    done, case = gate(made, tmp_path / "out")
    assert case["case"] == "eqxlab_loss/function/default"
    assert case["tier"] == "structural" and case["verdict"]["verdict"] == "regressed", case
    assert "hlo_ops" in case["verdict"]["reason"], case["verdict"]
    assert "HLO ops" in done.stdout and "structural" in done.stdout
    one_process_a_side(tmp_path / "out", case)
    # Issue 41: the model line that added the equations, with its delta, in gate.json and summary.md.
    line = _line_of(function_libraries.source(LIBRARIES["equinox"]), "y = y * 1.0001 + 0.0001")
    first = case["attribution"]["lines"][0]
    assert (first["kind"], first["where"], first["fn"], first["code"], first["base"]) == \
        ("jaxpr_eqns", f"eqxlab/net.py:{line}", "ResBlock.__call__", "project", 0), case["attribution"]["lines"]
    assert first["head"] > 0
    assert (f"Compiled code that grew, by model line: +{first['head']:,} jaxpr equations at `eqxlab/net.py:{line}` "
            "(`ResBlock.__call__`)") in (tmp_path / "out" / "summary.md").read_text()


@pytest.mark.slow
@pytest.mark.full
def test_a_torch_librarys_own_compiled_step_is_gated_on_dynamo_counts_through_the_init_starter(tmp_path):
    pytest.importorskip("torch")
    # The case returns the compiled step itself: its FX nodes per line are read by compiling that function again
    # (a plain function that calls compiled code, as the A/A benchmark's ``train.step``, records no lines).
    lib = LIBRARIES["torch"]
    made = set_up(tmp_path, "torch", dataclasses.replace(lib, case=lib.case.replace("return train.step,",
                                                                                    "return train.compiled_step,")))
    done, case = gate(made, tmp_path / "out")
    assert case["case"] == "torchlab_loss/function/default"
    assert case["tier"] == "structural" and case["verdict"]["verdict"] == "regressed", case
    assert "captured_ops" in case["verdict"]["reason"] or "graph" in case["verdict"]["reason"], case["verdict"]
    one_process_a_side(tmp_path / "out", case)
    # Issue 41 item 4: the library's own compiled step gets its FX nodes per line: the line that added the ops.
    base_source = function_libraries.source(LIBRARIES["torch"])
    line = _line_of(base_source, "y = y * 1.0001 + 0.0001")
    first = case["attribution"]["lines"][0]
    assert (first["kind"], first["where"], first["fn"], first["code"], first["base"]) == \
        ("fx_nodes", f"torchlab/train.py:{line}", "forward", "project", 0), case["attribution"]["lines"]
    assert first["head"] > 0
    assert f"+{first['head']:,} FX nodes at `torchlab/train.py:{line}`" in (tmp_path / "out" / "summary.md").read_text()
    # A head that adds a graph break on one line (the line kept, so nothing below it moves): the line and the reason.
    step = "    loss = torch.nn.functional.mse_loss(model(x), y)"
    broken = function_libraries.commit_head(made, "a graph break in the step", base_source.replace(
        step, step + "; torch._dynamo.graph_break()"), branch="graph-break")
    done, case = gate({**made, "head": broken}, tmp_path / "break")
    assert case["tier"] == "structural" and "graph_breaks" in case["verdict"]["reason"], case["verdict"]
    brk = case["attribution"]["lines"][0]
    line = _line_of(base_source, step.strip())
    assert (brk["kind"], brk["where"], brk["fn"], brk["base"], brk["head"]) == \
        ("graph_break", f"torchlab/train.py:{line}", "train_step", 0, 1), case["attribution"]["lines"]
    assert brk["reason"].startswith("Call to `torch._dynamo.graph_break()`"), brk
    summary = (tmp_path / "break" / "summary.md").read_text()
    assert (f"Compiled code that grew, by model line: +1 graph break at `torchlab/train.py:{line}` (`train_step`): "
            "Call to \\`torch.\\_dynamo.graph\\_break()\\`") in summary, summary


def _line_of(source: str, text: str) -> int:
    """The line number of the one line of ``source`` that holds ``text``."""
    (n,) = [i for i, line in enumerate(source.splitlines(), 1) if text in line]
    return n
