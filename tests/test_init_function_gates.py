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

import json
import os
import subprocess
from pathlib import Path

import pytest

from ttfg.cli import main

from .conftest import GitRepo
from .test_init_fits import REQ
from .user_project import layered_venv

PYPROJECT = '''\
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "0.1.0"
requires-python = ">=3.11"
dependencies = {deps}

[tool.setuptools.packages.find]
where = ["src"]
'''

EQX_NET = '''\
"""eqxlab: a residual MLP in Equinox, and its own loss-and-gradient call."""

import equinox as eqx
import jax
import jax.numpy as jnp

EXTRA = {extra}


class ResBlock(eqx.Module):
    linear: eqx.nn.Linear
    activation: object = eqx.field(static=True)

    def __init__(self, width, key, activation=jnp.tanh):
        self.linear = eqx.nn.Linear(width, width, key=key)
        self.activation = activation

    def __call__(self, h):
        y = self.activation(self.linear(h))
        for _ in range(EXTRA):
            y = y * 1.0001 + 0.0001
        return h + y


class Net(eqx.Module):
    blocks: list
    head: eqx.nn.Linear

    def __init__(self, width, depth, key):
        keys = jax.random.split(key, depth + 1)
        self.blocks = [ResBlock(width, k) for k in keys[:depth]]
        self.head = eqx.nn.Linear(width, 1, key=keys[-1])

    def __call__(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def mse_loss(model, x, y):
    return jnp.mean((jax.vmap(model)(x) - y) ** 2)


loss_and_grad = eqx.filter_jit(eqx.filter_value_and_grad(mse_loss))
'''

EQX_CASE = '''\
from eqxlab import net


def case():
    """``(fn, args)``: eqxlab's own loss_and_grad and a 4-block Net."""
    key = jax.random.PRNGKey(0)
    model = net.Net(16, 4, key)
    x, y = jax.random.normal(key, (8, 16)), jnp.zeros((8, 1))
    return net.loss_and_grad, (model, x, y)
'''

TORCH_NET = '''\
"""torchlab: a residual MLP in torch, and its own compiled training step."""

import torch

EXTRA = {extra}


class Block(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.linear = torch.nn.Linear(width, width)

    def forward(self, h):
        y = torch.tanh(self.linear(h))
        for _ in range(EXTRA):
            y = y * 1.0001 + 0.0001
        return h + y


class Net(torch.nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Block(width) for _ in range(depth)])
        self.head = torch.nn.Linear(width, 1)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def train_step(model, x, y):
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    return loss.detach()


#: torchlab compiles its step with AOTAutograd's eager backend (no C++ toolchain needed by its users).
compiled_step = torch.compile(train_step, backend="aot_eager")
'''

TORCH_CASE = '''\
from torchlab import train


def case():
    """``(fn, args)``: torchlab's own compiled step and a 4-block Net."""
    torch.manual_seed(0)
    return train.compiled_step, (train.Net(16, 4), torch.randn(8, 16), torch.zeros(8, 1))
'''


def set_up(tmp_path: Path, name: str, deps: list[str], module: str, source: str, case: str, cut: str,
           api: str) -> dict:
    """The library committed, ``ttfg init`` run on it, its starter calling the library, installed and committed
    (the base); then the head's 12 extra ops per block, committed. Returns the repository, the commits, python."""
    repo = tmp_path / name
    package = repo / "src" / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f'"""{name}"""\n')
    (package / f"{module}.py").write_text(source.format(extra=0))
    (repo / "pyproject.toml").write_text(PYPROJECT.format(name=name, deps=json.dumps(deps)))
    history = GitRepo.init(repo)
    history.commit(name)
    assert main(["init", "--repo", str(repo), "--ttfg-requirement", REQ]) == 0
    starter = package / "ttfg_cases.py"
    text = starter.read_text()
    assert cut in text and api in text, text  # the stand-in the user replaces with the library's own call
    starter.write_text(text[:text.index(cut)] + case)
    python = layered_venv(tmp_path / "venv")
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "-e", str(repo)], check=True, capture_output=True, timeout=300)
    base = history.commit("ttfg init, the starter calling the library")
    (package / f"{module}.py").write_text(source.format(extra=6))
    head = history.commit("six scalings per block: 12 more ops")
    return {"repo": repo, "base": base, "head": head, "python": python}


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
    made = set_up(tmp_path, "eqxlab", ["equinox", "jax"], "net", EQX_NET, EQX_CASE, "def make_model(key):",
                  "eqx.filter_jit(eqx.filter_value_and_grad(mse_loss))")
    done, case = gate(made, tmp_path / "out")
    assert case["case"] == "eqxlab_loss/function/default"
    assert case["tier"] == "structural" and case["verdict"]["verdict"] == "regressed", case
    assert "hlo_ops" in case["verdict"]["reason"], case["verdict"]
    assert "HLO ops" in done.stdout and "structural" in done.stdout
    one_process_a_side(tmp_path / "out", case)
    # Issue 41: the model line that added the equations, with its delta, in gate.json and summary.md.
    line = _line_of(EQX_NET, "y = y * 1.0001 + 0.0001")
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
    made = set_up(tmp_path, "torchlab", ["torch>=2"], "train", TORCH_NET, TORCH_CASE, "def make_model()",
                  "torch.compile(train_step)")
    done, case = gate(made, tmp_path / "out")
    assert case["case"] == "torchlab_loss/function/default"
    assert case["tier"] == "structural" and case["verdict"]["verdict"] == "regressed", case
    assert "captured_ops" in case["verdict"]["reason"] or "graph" in case["verdict"]["reason"], case["verdict"]
    one_process_a_side(tmp_path / "out", case)
    # Issue 41 item 4: the library's own compiled step gets its FX nodes per line: the line that added the ops.
    line = _line_of(TORCH_NET, "y = y * 1.0001 + 0.0001")
    first = case["attribution"]["lines"][0]
    assert (first["kind"], first["where"], first["fn"], first["code"], first["base"]) == \
        ("fx_nodes", f"torchlab/train.py:{line}", "forward", "project", 0), case["attribution"]["lines"]
    assert first["head"] > 0
    assert f"+{first['head']:,} FX nodes at `torchlab/train.py:{line}`" in (tmp_path / "out" / "summary.md").read_text()
    # A head that adds a graph break on one line (the line kept, so nothing below it moves): the line and the reason.
    step = "    loss = torch.nn.functional.mse_loss(model(x), y)"
    train = made["repo"] / "src" / "torchlab" / "train.py"
    history = GitRepo(made["repo"])
    history.git("checkout", "-q", "-b", "graph-break", made["base"])
    train.write_text(TORCH_NET.format(extra=0).replace(step, step + "; torch._dynamo.graph_break()"))
    done, case = gate({**made, "head": history.commit("a graph break in the step")}, tmp_path / "break")
    assert case["tier"] == "structural" and "graph_breaks" in case["verdict"]["reason"], case["verdict"]
    brk = case["attribution"]["lines"][0]
    line = _line_of(TORCH_NET, step.strip())
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
