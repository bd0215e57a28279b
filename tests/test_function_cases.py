"""A library's own function as a case (issue 47): ``case() -> (fn, args)``, measured as users call it.

``jaxlab`` (below) is a jax library shaped unlike ttfg's specs: a residual MLP whose own
``loss_and_grad`` is ``jax.jit(value_and_grad(mse_loss))``. Its function case is declared in
``ttfg.toml``'s ``[functions]``; ttfg must time it in the usual phases, count its jaxpr
equations and HLO ops, and let the gate's structural tier decide when a revision adds ops.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ttfg.engines import function
from ttfg.errors import UsageError
from ttfg.measure.cases import Case, select
from ttfg.measure.check import check_function
from ttfg.project import config as project_config

from .conftest import GitRepo
from .user_project import function_project, layered_venv

NET = '''\
"""jaxlab's residual MLP and its own loss-and-gradient call."""

import jax
import jax.numpy as jnp

EXTRA = {extra}


def block(w, h):
    y = jnp.tanh(h @ w)
    for _ in range(EXTRA):
        y = y * 1.0001 + 0.0001
    return h + y


def mse_loss(params, x, y):
    h = x
    for w in params["blocks"]:
        h = block(w, h)
    return jnp.mean((h @ params["out"] - y) ** 2)


loss_and_grad = jax.jit(jax.value_and_grad(mse_loss))
'''

CASES = '''\
"""jaxlab's function cases for ttfg: its own loss_and_grad, as users call it."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxlab import net


def case(blocks=4, width=16):
    rng = np.random.default_rng(0)
    params = {"blocks": [jnp.asarray(rng.normal(size=(width, width)) * 0.1, jnp.float32) for _ in range(blocks)],
              "out": jnp.asarray(rng.normal(size=(width, 1)) * 0.1, jnp.float32)}
    return net.loss_and_grad, (params, jnp.ones((8, width)), jnp.zeros((8, 1)))


def deeper():
    return case(blocks=8)


def numpy_inputs():
    fn, (params, x, y) = case()
    return fn, (jax.tree_util.tree_map(np.asarray, params), np.asarray(x), np.asarray(y))


def not_a_pair():
    return net.loss_and_grad
'''

PROJECT = function_project("jaxlab", "jaxlab_loss", "jaxlab.cases:case")
CONFIG = PROJECT["ttfg.toml"]


def write_jaxlab(root: Path, extra: int = 0) -> dict[str, str]:
    files = {**PROJECT,
             "src/jaxlab/__init__.py": '"""jaxlab: a small jax library."""\n',
             "src/jaxlab/net.py": NET.format(extra=extra), "src/jaxlab/cases.py": CASES}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return files


@pytest.fixture
def declared(monkeypatch):
    """A clean table of declared functions for one test (``function.declare`` is process-wide)."""
    monkeypatch.setattr(function, "_declared", {})
    monkeypatch.delenv(function.ENV, raising=False)
    return function


def test_a_declared_function_is_one_case_whatever_backends_are_selected(declared):
    declared.declare({"jaxlab_loss": "jaxlab.cases:case"}, "ttfg.toml:functions")
    cases, skipped = select(["jaxlab_loss", "resnet15"], ["jax.jit"], ["default"])
    assert [c.id for c in cases] == ["resnet15/jax.jit/params=args,chain=unrolled", "jaxlab_loss/function/default"]
    assert skipped == []
    case = cases[1]
    assert case.is_function and Case.from_id(case.id) == case
    assert Case.from_json(json.loads(json.dumps(case.to_json()))) == case
    # "all" models take every declared function too; a function never pairs with a backend.
    everything, _ = select(["all"], ["autograd"], ["default"], check_availability=False)
    assert [c.id for c in everything if c.is_function] == ["jaxlab_loss/function/default"]
    # --backend function: the functions, never a model run by the function backend.
    assert [c.id for c in select(None, ["function"], None)[0]] == ["jaxlab_loss/function/default"]
    assert [c.id for c in select(["resnet15"], ["function"], None)[0]] == []
    with pytest.raises(UsageError, match="variant is 'default'"):
        Case.from_id("jaxlab_loss/function/params=args")


def test_an_installed_entry_point_declares_a_function_and_the_config_wins_over_it(declared, tmp_path, monkeypatch):
    info = tmp_path / "fnlab-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fnlab\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[ttfg.functions]\nfn_ep = fnlab.cases:case\nfn_both = fnlab.cases:ep\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    declared.refresh()
    try:
        assert declared.entry("fn_ep").target == "fnlab.cases:case" and declared.entry("fn_ep").origin == "fnlab 0.1"
        declared.declare({"fn_both": "mine:case"}, "ttfg.toml:functions")
        assert declared.entry("fn_both").target == "mine:case"
        assert [c.id for c in select(["fn_ep"], None, None)[0]] == ["fn_ep/function/default"]
    finally:
        monkeypatch.undo()
        declared.refresh()


def test_an_unknown_name_is_still_an_unknown_model(declared):
    with pytest.raises(UsageError, match="unknown model 'nothing_here'"):
        select(["nothing_here"], None, None)


def test_the_functions_table_is_checked_with_the_file_and_key_named(tmp_path):
    (tmp_path / "ttfg.toml").write_text('[functions]\njaxlab_loss = "jaxlab.cases.case"\n')
    with pytest.raises(project_config.ConfigError, match=r"ttfg.toml: functions = .*expected \"module:callable\""):
        project_config.read(tmp_path / "ttfg.toml")
    (tmp_path / "ttfg.toml").write_text('[functions]\njaxlab_loss = "jaxlab.cases:case"\n')
    assert project_config.read(tmp_path / "ttfg.toml").get("functions") == {"jaxlab_loss": "jaxlab.cases:case"}


def _numpy_case():
    import numpy as np

    w = np.arange(3.0)
    return (lambda w: (float(np.sum(w ** 2)), {"w": 2 * w})), (w,)


def _bad_case():
    return "not a pair"


def test_check_runs_a_function_and_says_its_gradient_was_not_compared(declared):
    declared.declare({"sq": f"{__name__}:_numpy_case", "bad": f"{__name__}:_bad_case"}, "test")
    ok = check_function(Case("sq", function.NAME, ()))
    assert ok.status == "unchecked" and ok.loss == 5.0 and "gave no reference" in ok.detail
    bad = check_function(Case("bad", function.NAME, ()))
    assert bad.status == "error" and "must return (fn, args)" in bad.detail


def _jax_loss_and_grad(params, x):
    import jax
    import jax.numpy as jnp

    return jax.value_and_grad(lambda p, x: jnp.sum(jnp.tanh(x @ p["w"]) * p["b"]))(params, x)


def _jax_case(reference):
    import jax
    import jax.numpy as jnp
    import numpy as np

    rng = np.random.default_rng(0)
    params = {"w": jnp.asarray(rng.normal(size=(4, 3)), jnp.float32), "b": jnp.ones(3, jnp.float32)}
    return jax.jit(_jax_loss_and_grad), (params, jnp.asarray(rng.normal(size=(2, 4)), jnp.float32)), reference


def _float64_reference(params, x):
    """The same loss and gradient, by hand in float64 NumPy: the library's trusted reference."""
    import numpy as np

    w, b, x = (np.asarray(a, np.float64) for a in (params["w"], params["b"], x))
    t = np.tanh(x @ w)
    return float(np.sum(t * b)), {"b": t.sum(0), "w": x.T @ ((1 - t ** 2) * b)}


def _agrees():
    return _jax_case(_float64_reference)


def _disagrees():
    def off(params, x):
        loss, grads = _float64_reference(params, x)
        return loss, {**grads, "w": grads["w"] * 1.01}

    return _jax_case(off)


def _reshaped():
    return _jax_case(lambda params, x: (_float64_reference(params, x)[0], {"b": 0.0}))


def _uncallable_reference():
    return _jax_case(0.5)


def test_a_function_with_a_reference_is_compared_leaf_by_leaf(declared):
    """(fn, args, reference): a jitted jax loss-and-gradient against the library's float64 NumPy reference,
    leaf by leaf over the gradient's pytree: ok within the tolerance, a 1 % error in one leaf a mismatch naming
    that leaf, another structure an error naming where it differs, a reference that is no call refused."""
    declared.declare({"agrees": f"{__name__}:_agrees", "off": f"{__name__}:_disagrees",
                      "shape": f"{__name__}:_reshaped", "nocall": f"{__name__}:_uncallable_reference"}, "test")
    ok = check_function(Case("agrees", function.NAME, ()))
    assert ok.status == "ok" and ok.worst_error < 1e-5 and ok.loss_error < 1e-5, ok
    off = check_function(Case("off", function.NAME, ()))
    assert off.status == "mismatch" and off.worst_tensor == "[1]['w']" and 0.009 < off.worst_error < 0.011, off
    shape = check_function(Case("shape", function.NAME, ()))
    assert shape.status == "error" and "differ in structure or shape at [1]['w']" in shape.detail, shape
    nocall = check_function(Case("nocall", function.NAME, ()))
    assert nocall.status == "error" and "(fn, args, reference)" in nocall.detail
    assert "reference is a float" in nocall.detail


def _probe(tmp_path: Path, name: str, target: str, src: Path) -> dict:
    """One real timing probe of a function case, as the runner spawns it."""
    report = tmp_path / f"{name}.json"
    env = {**os.environ, function.ENV: json.dumps({name: {"target": target, "from": "test"}}),
           "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "ttfg.measure.probe", "--case",
                           json.dumps(Case(name, function.NAME, ()).to_json()), "--report", str(report)],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(report.read_text())


@pytest.mark.slow
def test_a_probe_times_a_function_in_the_usual_phases_and_counts_jaxpr_and_hlo(tmp_path):
    write_jaxlab(tmp_path / "lab")
    src = tmp_path / "lab" / "src"
    four = _probe(tmp_path, "jaxlab_loss", "jaxlab.cases:case", src)
    eight = _probe(tmp_path, "jaxlab_deeper", "jaxlab.cases:deeper", src)
    for out in (four, eight):
        assert out["ok"] and out["import_s"] > 0 and out["build_s"] > 0
        assert out["execute_s"] == out["first_grad_s"] and out["trace_s"] is None
        assert out["counters"]["backend_compiles"] >= 1 and out["loss"] > 0
    # Four more blocks: more equations and more ops, counted from the library's own jitted call.
    assert eight["counters"]["jaxpr_eqns"] > four["counters"]["jaxpr_eqns"] > 0
    assert eight["counters"]["hlo_ops"] > four["counters"]["hlo_ops"] > 0
    # NumPy arguments: the same call, the same counts (jax is told by the arrays the call gives back).
    numpy = _probe(tmp_path, "jaxlab_numpy", "jaxlab.cases:numpy_inputs", src)
    assert numpy["counters"]["hlo_ops"] == four["counters"]["hlo_ops"]
    broken = tmp_path / "broken.json"
    env = {**os.environ, function.ENV: json.dumps({"x": {"target": "jaxlab.cases:not_a_pair", "from": "test"}}),
           "PYTHONPATH": str(src)}
    subprocess.run([sys.executable, "-m", "ttfg.measure.probe", "--case",
                    json.dumps(Case("x", function.NAME, ()).to_json()), "--report", str(broken)],
                   env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    failed = json.loads(broken.read_text())
    assert not failed["ok"] and failed["phase"] == "build" and "must return (fn, args)" in failed["error"]


TORCHLAB = '''\
"""torchlab: its own training step, torch.compile'd as its users write it."""

import torch


def step(w, x):
    loss = ((x @ w).tanh() ** 2).sum()
    {branch}
    loss.backward()
    return loss.detach(), w.grad


def case():
    w = torch.randn(4, 4, requires_grad=True, generator=torch.Generator().manual_seed(0))
    return torch.compile(step, backend="aot_eager"), (w, torch.ones(2, 4))


def eager():
    w = torch.randn(4, 4, requires_grad=True, generator=torch.Generator().manual_seed(0))
    return (lambda w, x: ((x @ w).tanh() ** 2).sum()), (w, torch.ones(2, 4))
'''


@pytest.mark.slow
@pytest.mark.full  # a real gate/run of tens of seconds: make test-all and CI run it
def test_a_compiled_torch_step_reports_dynamo_graphs_and_breaks_and_an_eager_one_its_autograd_nodes(tmp_path):
    pytest.importorskip("torch")
    counts = {}
    for name, branch in (("plain", "pass"), ("broken", "print('', end='')  # a graph break")):
        src = tmp_path / name
        (src / f"torchlab_{name}.py").parent.mkdir()
        (src / f"torchlab_{name}.py").write_text(TORCHLAB.format(branch=branch))
        counts[name] = _probe(tmp_path, f"t_{name}", f"torchlab_{name}:case", src)["counters"]
    assert counts["plain"]["graphs"] >= 1 and counts["plain"]["captured_ops"] > 0
    assert counts["broken"]["graph_breaks"] > counts["plain"]["graph_breaks"]
    eager = _probe(tmp_path, "t_eager", "torchlab_plain:eager", tmp_path / "plain")["counters"]
    assert eager["autograd_nodes"] > 0 and "graphs" not in eager


def test_list_shows_function_cases_without_importing_a_framework(tmp_path):
    (tmp_path / "ttfg.toml").write_text(CONFIG)
    code = ("import sys; from ttfg.cli import main; main(['list']); "
            "assert not {'jax', 'torch'} & set(sys.modules), sorted({'jax', 'torch'} & set(sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    assert "jaxlab_loss/function/default" in done.stdout and "jaxlab.cases:case" in done.stdout


@pytest.mark.slow
@pytest.mark.full  # a real gate/run of tens of seconds: make test-all and CI run it
def test_a_gate_on_a_library_function_that_adds_ops_per_block_is_decided_by_hlo_ops(tmp_path):
    """The end-to-end path: a jax library's own loss_and_grad, declared in ttfg.toml, gated between two commits
    where the head adds six operations per block; one pair of cold processes decides, on the structural tier."""
    repo = tmp_path / "jaxlab"
    write_jaxlab(repo)
    history = GitRepo.init(repo)
    base = history.commit("jaxlab")
    write_jaxlab(repo, extra=3)
    head = history.commit("three more scalings per block")
    python = layered_venv(tmp_path / "venv")
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "-e", str(repo)], check=True, capture_output=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_STEP_SUMMARY", "PYTHONPATH")}
    out = subprocess.run([str(python), "-m", "ttfg", "gate", "--base", base, "--head", head,
                          "--out-dir", str(tmp_path / "out")], cwd=repo, env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 1, out.stdout + out.stderr
    case = json.loads((tmp_path / "out" / "gate.json").read_text())["cases"][0]
    assert case["case"] == "jaxlab_loss/function/default"
    assert case["tier"] == "structural" and case["verdict"]["verdict"] == "regressed", case
    assert "hlo_ops" in case["verdict"]["reason"] or "jaxpr_eqns" in case["verdict"]["reason"]
