"""The power benchmark's injected regressions apply to today's sources and do what they claim.

``benchmarks/gate_power.py`` measures the gate on regressions injected by
``benchmarks/gate_injections.py``; if a patch silently stopped applying, or stopped
changing what it claims, the benchmark would measure nothing. Each check runs the
patched copy in a fresh interpreter on ``resnet15:blocks=2``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ttfg.provision.sources import install

from .conftest import ROOT

spec = importlib.util.spec_from_file_location("gate_injections", ROOT / "benchmarks" / "gate_injections.py")
injections = importlib.util.module_from_spec(spec)
sys.modules.setdefault("gate_injections", injections)  # dataclasses look their module up
spec.loader.exec_module(injections)

BLOCKS = 2


def _copy(tmp_path: Path, kind: str | None = None, amount: int = 1) -> Path:
    """A copy of this project's sources (what the build needs), with one injection applied."""
    root = tmp_path / (kind or "base")
    for folder in ("harness", "models"):
        shutil.copytree(ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, root / name)
    if kind:
        injections.apply(root, kind, amount)
    return root


def _run(root: Path, code: str) -> dict:
    """Run ``code`` against ``root``'s sources, installed apart and first on the path, as a gate side
    would import them; it prints one JSON line."""
    installed = install(root, None)
    env = {**os.environ, "PYTHONPATH": str(installed.root), "JAX_PLATFORMS": "cpu"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=root, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


ENGINE = f"""
import json, numpy as np
from ttfg import models
from ttfg import engines
spec = models.load("resnet15", blocks={BLOCKS})
impl = engines.get(BACKEND)()
impl.import_framework()
engine = impl.build(spec, spec.init(0), np.asarray(spec.example_input(0), np.float32), impl.resolve_variant({{}}))
"""


def _engine_code(backend: str, body: str) -> str:
    return ENGINE.replace("BACKEND", repr(backend)) + body


@pytest.mark.parametrize("kind", sorted(injections.KINDS))
def test_every_patch_applies_and_names_its_function(tmp_path, kind):
    path = injections.apply(_copy(tmp_path), kind, 3)
    text = path.read_text()
    compile(text, str(path), "exec")
    name = injections.KINDS[kind].function
    assert f"def {name}(" in text
    assert text.count(name) >= 2, f"{name} is defined but never called"


def test_a_patch_that_no_longer_applies_names_the_file(tmp_path):
    root = _copy(tmp_path)
    injections.apply(root, "python", 3)
    with pytest.raises(injections.PatchError, match="interpret.py"):
        injections.apply(root, "python", 3)  # the anchor now appears twice


PATCHED = dict(python=1000, **{"extra-op": 3}, compile=2)

#: Counts calls of the injected work, and measures with the extra op on and off.
PROBE = """
import ttfg.engines.interpret as interp
calls = []
work = interp._injected_python_work
interp._injected_python_work = lambda: calls.append(1) or work()
def measure(engine):
    loss, grads = engine.to_numpy(engine.first_gradient()[0])
    n = len(calls)
    return {"loss": loss, "grad": float(sum(abs(g).sum() for g in grads.values())), "counters": engine.counters()}, n
with_op, python_calls = measure(engine)
interp._injected_extra_op = lambda x: x
engine = impl.build(spec, spec.init(0), np.asarray(spec.example_input(0), np.float32), impl.resolve_variant({}))
print(json.dumps({"with_op": with_op, "without_op": measure(engine)[0], "python_calls": python_calls}))
"""


def _patched(tmp_path: Path) -> Path:
    root = _copy(tmp_path, "python", PATCHED["python"])
    for kind in ("extra-op", "compile"):
        injections.apply(root, kind, PATCHED[kind])
    return root


@pytest.mark.full  # real probes of each injection: make test-all and CI run it
def test_injected_work_runs_once_per_forward_pass_and_extra_op_grows_the_tape_only(tmp_path):
    base = _run(_copy(tmp_path), _engine_code("autograd", """
loss, grads = engine.to_numpy(engine.first_gradient()[0])
print(json.dumps({"loss": loss, "counters": engine.counters()}))
"""))
    head = _run(_patched(tmp_path), _engine_code("autograd", PROBE))
    assert head["python_calls"] == 1, "one Repeat node: the work runs once per forward pass"
    assert head["without_op"]["counters"] == base["counters"], "the Python work changes no structural counter"
    grew = head["with_op"]["counters"]["autograd_primitives"] - base["counters"]["autograd_primitives"]
    assert grew == PATCHED["extra-op"] * BLOCKS
    assert head["with_op"]["loss"] == head["without_op"]["loss"] == base["loss"]
    assert head["with_op"]["grad"] == head["without_op"]["grad"]


@pytest.mark.full  # real jax probes: make test-all and CI run it
def test_jax_jit_extra_op_grows_the_jaxpr_and_compile_work_runs_after_compile(tmp_path):
    pytest.importorskip("jax")
    head = _run(_patched(tmp_path), _engine_code("jax.jit", """
import ttfg.engines.jax_jit as jj
compile_calls = []
work = jj._injected_compile_work
jj._injected_compile_work = lambda: compile_calls.append(engine.compiled is not None) or work()
""" + PROBE.replace("print(json.dumps({", "print(json.dumps({'compile_calls': compile_calls, ")))
    assert head["compile_calls"] == [True, True], "once per first gradient, after lowered.compile()"
    assert head["python_calls"] == 1, "the Python work runs while jax traces, once"
    with_op, without = head["with_op"]["counters"], head["without_op"]["counters"]
    assert with_op["jaxpr_eqns"] >= without["jaxpr_eqns"] + PATCHED["extra-op"] * BLOCKS
    assert with_op["hlo_ops"] > without["hlo_ops"]


def test_work_is_timed_per_iteration():
    per = injections.seconds_per_iteration("python", 20_000, repeat=2)
    assert 0 < per < 1e-3


def test_the_benchmark_script_refuses_bad_input_before_it_clones():
    script = ROOT / "benchmarks" / "gate_power.py"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for bad, named in ((["--sizes", "0"], "--sizes"), (["--kinds", "nope"], "--kinds"),
                       (["--backend", "nope"], "--backend"), (["--model", "resnet15:blocks=0"], "--model"),
                       (["--budget", "soon"], "--budget")):
        out = subprocess.run([sys.executable, str(script), *bad], capture_output=True, text=True, env=env, timeout=60)
        assert out.returncode == 2, (bad, out.stderr)
        assert named in out.stderr and "Traceback" not in out.stderr
