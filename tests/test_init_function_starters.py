"""``ttfg init``'s function starter (issue 47, item 3): the library's own loss-and-gradient call as a case.

By default ``init`` writes ``PACKAGE/ttfg_cases.py`` for the framework the project declares (torch,
jax, Flax NNX, Equinox, Haiku, autograd): ``case()`` returns ``(fn, args)``, ``fn`` written with the
framework's own public API (``torch.compile``, ``jax.jit``, ``nnx.jit``, ``eqx.filter_jit``, Haiku's
``transform``), registered by a ``ttfg.functions`` entry point and selected in ``ttfg.toml`` as
``NAME`` x ``function``. ``--starter backend`` writes the spec-built library backend as before
(``tests/test_init_fits.py``). A function named like a model is refused, exit 2, nothing written.

In-process and fast: each starter is rendered, imported and its ``case()`` called; the Equinox and
Flax ones also run and are counted, their modules being pytrees with leaves that are not arrays.
The gates on a real library through the starter are ``tests/test_init_function_gates.py``.
"""

from __future__ import annotations

import importlib.util
import tomllib

import pytest

from ttfg import models
from ttfg.cli import main
from ttfg.engines import function
from ttfg.errors import UsageError
from ttfg.measure.cases import select

from .test_init_fits import REQ, make_project

DECLARED = {"torch": ["torch>=2"], "jax": ["jax>=0.4"], "flax": ["flax>=0.10"], "equinox": ["equinox", "jax"],
            "haiku": ["dm-haiku", "jax"], "autograd": []}
#: What each starter's fn is written with: the framework's own public API.
API = {"torch": "torch.compile(train_step)", "jax": "jax.jit(jax.value_and_grad(mse_loss))",
       "flax": "@nnx.jit", "equinox": "eqx.filter_jit(eqx.filter_value_and_grad(mse_loss))",
       "haiku": "hk.without_apply_rng(hk.transform(forward))", "autograd": "autograd.value_and_grad(mse_loss)"}
MODULES = {"torch": "torch", "jax": "jax", "flax": "flax", "equinox": "equinox", "haiku": "haiku",
           "autograd": "autograd"}


def starter_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("framework", list(DECLARED))
def test_init_writes_a_function_starter_for_the_declared_framework(tmp_path, capsys, framework):
    repo = make_project(tmp_path / "lib", DECLARED[framework])
    assert main(["init", "--repo", str(repo), "--ttfg-requirement", REQ]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "measuring lib_loss x function (a starter function case" in out and f"starter framework {framework}:" in out
    config = tomllib.loads((repo / "ttfg.toml").read_text())
    assert config["models"] == ["lib_loss"] and config["backends"] == ["function"]
    points = tomllib.loads((repo / "pyproject.toml").read_text())["project"]["entry-points"]
    assert points == {"ttfg.functions": {"lib_loss": "lib.ttfg_cases:case"}}
    path = repo / "src" / "lib" / "ttfg_cases.py"
    text = path.read_text()
    assert API[framework] in text and "def case():" in text and not (repo / "src/lib/ttfg_plugin.py").exists()
    compile(text, str(path), "exec")
    if importlib.util.find_spec(MODULES[framework]) is None:
        pytest.skip(f"{framework} is not installed (the frameworks extra)")
    made = starter_module(path, f"cases_{framework}").case()
    assert isinstance(made, tuple) and len(made) == 2 and callable(made[0]) and isinstance(made[1], tuple)
    if framework in ("equinox", "flax"):  # a module argument with leaves that are no arrays: counted all the same
        engine = function.FunctionEngine(*made)
        result = engine.gradient()
        assert function.first_scalar(result) > 0
        counts = engine.counters()
        assert counts["hlo_ops"] > 0 and counts["jaxpr_eqns"] > 0, counts


def test_a_second_init_sees_the_function_starter_as_the_projects_plugin(tmp_path, capsys):
    repo = make_project(tmp_path / "lib", ["jax"])
    assert main(["init", "--repo", str(repo), "--ttfg-requirement", REQ]) == 0
    capsys.readouterr()
    assert main(["init", "--repo", str(repo), "--ttfg-requirement", REQ, "--force"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "measuring lib_loss x function (the project's own plugins)" in out
    assert (repo / "pyproject.toml").read_text().count('[project.entry-points."ttfg.functions"]') == 1


def test_starter_backend_keeps_the_spec_built_backend_and_refuses_haiku(tmp_path, capsys):
    repo = make_project(tmp_path / "lib", ["torch>=2"])
    assert main(["init", "--repo", str(repo), "--ttfg-requirement", REQ, "--starter", "backend"]) == 0
    assert "def library_loss(spec, weights, x)" in (repo / "src/lib/ttfg_plugin.py").read_text()
    assert tomllib.loads((repo / "ttfg.toml").read_text())["backends"] == ["lib.torch"]
    hk = make_project(tmp_path / "hk", ["dm-haiku", "jax"], name="hk")
    capsys.readouterr()
    assert main(["init", "--repo", str(hk), "--ttfg-requirement", REQ, "--starter", "backend"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "--starter backend: no starter library backend for haiku" in err and "nothing was written" in err
    assert sorted(p.name for p in hk.iterdir()) == [".git", "pyproject.toml", "src"]


def test_an_unknown_starter_is_refused_by_the_parser(tmp_path, capsys):
    repo = make_project(tmp_path / "lib")
    assert main(["init", "--repo", str(repo), "--ttfg-requirement", REQ, "--starter", "model"]) == 2
    assert "invalid choice: 'model'" in capsys.readouterr().err
    assert not (repo / "ttfg.toml").exists()


@pytest.fixture
def model_named_lib_loss(tmp_path, monkeypatch):
    """An installed package whose ttfg.models entry point is named ``lib_loss``, the starter's function's name."""
    info = tmp_path / "site" / "otherlab-0.2.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: otherlab\nVersion: 0.2\n")
    (info / "entry_points.txt").write_text("[ttfg.models]\nlib_loss = otherlab.models:build\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    models.refresh()
    yield
    monkeypatch.undo()
    models.refresh()


def test_a_starter_function_named_like_a_model_is_refused(tmp_path, capsys, model_named_lib_loss):
    repo = make_project(tmp_path / "lib", ["jax"])
    assert main(["init", "--repo", str(repo), "--ttfg-requirement", REQ]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "the starter's function 'lib_loss' has the name of a model" in err
    assert "'lib_loss' (ttfg.models entry point of otherlab 0.2)" in err and "nothing was written" in err
    assert sorted(p.name for p in repo.iterdir()) == [".git", "pyproject.toml", "src"]


def test_a_declared_function_named_like_a_model_is_refused_not_shadowed(tmp_path, monkeypatch, capsys):
    """Before, ``--model resnet15`` silently measured the model and never the declared function of that name."""
    monkeypatch.setattr(function, "_declared", {})
    monkeypatch.delenv(function.ENV, raising=False)
    function.declare({"resnet15": "mylab.cases:case"}, "ttfg.toml:functions")
    with pytest.raises(UsageError, match="function 'resnet15' .* has the name of ttfg's built-in model 'resnet15'"):
        select(["resnet15"], ["jax.jit"], None)
    with pytest.raises(UsageError, match="must not take a model's name: rename the function"):
        select(["all"], ["autograd"], None, check_availability=False)
    monkeypatch.setattr(function, "_declared", {})
    (tmp_path / "ttfg.toml").write_text('models = ["resnet15"]\nbackends = ["autograd"]\n\n'
                                        '[functions]\nresnet15 = "mylab.cases:case"\n')
    monkeypatch.chdir(tmp_path)
    assert main(["check"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "has the name of ttfg's built-in model 'resnet15'" in err, err
