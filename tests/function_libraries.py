"""Small libraries set up as a new user sets them up: a package, ``ttfg init``, the starter calling the library.

Why one module: the gates of issue 47 (``tests/test_init_function_gates.py``: a real slowdown must fail) and
the A/A gates of issue 39 (``benchmarks/library_aa_gates.py``: a comment-only pull request must pass) gate
the same libraries, made the same way, so a library changed for one is changed for both.

Each library is a ``src/`` layout package, a residual MLP of 4 blocks in its framework's own idiom and its own
loss-and-gradient call; ``ttfg init`` (its default function starter for the framework the library declares)
is run on it, and the starter's stand-in is replaced by a ``case()`` that calls the library, as the guide
says. :func:`source` renders a library's module with or without a slowdown: ``extra`` operations pairs per
block (``* 1.0001 + 0.0001``), ``work`` iterations of pure-Python work per block call, ``import_sleep``
seconds spent when the module is imported.

- ``jaxlab``: plain jax, parameters in dicts, ``jax.jit(jax.value_and_grad(mse_loss))``;
- ``eqxlab``: an Equinox ``eqx.Module`` (its activation a leaf that is no array),
  ``eqx.filter_jit(eqx.filter_value_and_grad(mse_loss))``;
- ``hklab``: Haiku ``hk.Module`` blocks, ``hk.without_apply_rng(hk.transform(forward))``, jitted;
- ``torchlab``: a ``torch.nn.Module``, its training step ``torch.compile``'d (AOTAutograd's eager backend).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .conftest import GitRepo
from .user_project import layered_venv

#: Where CI installs ttfg from, as ``init`` writes it into the workflows (never reached by these gates).
REQ = "ttfg @ git+https://example.com/ttfg.git@0123456789abcdef0123456789abcdef01234567"

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

#: What every library module starts with after its imports: the slowdown hooks (all off in a base).
HOOKS = '''\
{import_cost}EXTRA = {extra}
WORK = {work}


def _busy(n):
    """Pure-Python work (none unless a slowdown asks for it)."""
    total = 0
    for i in range(n):
        total = (total * 31 + i) % 1_000_003
    return total
'''

JAX_NET = '''\
"""jaxlab: a residual MLP in plain jax, and its own jitted loss-and-gradient call."""

import jax
import jax.numpy as jnp

{hooks}

def init(key, width=16, depth=4):
    keys = jax.random.split(key, depth + 1)
    blocks = [{{"w": jax.random.normal(k, (width, width)) / jnp.sqrt(width), "b": jnp.zeros(width)}}
              for k in keys[:depth]]
    head = {{"w": jax.random.normal(keys[-1], (width, 1)) / jnp.sqrt(width), "b": jnp.zeros(1)}}
    return {{"blocks": blocks, "head": head}}


def block(p, h):
    _busy(WORK)
    y = jnp.tanh(h @ p["w"] + p["b"])
    for _ in range(EXTRA):
        y = y * 1.0001 + 0.0001
    return h + y


def forward(params, x):
    for p in params["blocks"]:
        x = block(p, x)
    return x @ params["head"]["w"] + params["head"]["b"]


def mse_loss(params, x, y):
    return jnp.mean((forward(params, x) - y) ** 2)


loss_and_grad = jax.jit(jax.value_and_grad(mse_loss))
'''

JAX_CASE = '''\
from jaxlab import net


def case():
    """``(fn, args)``: jaxlab's own loss_and_grad and a 4-block network's parameters."""
    key = jax.random.PRNGKey(0)
    x, y = jax.random.normal(key, (8, 16)), jnp.zeros((8, 1))
    return net.loss_and_grad, (net.init(key), x, y)
'''

EQX_NET = '''\
"""eqxlab: a residual MLP in Equinox, and its own loss-and-gradient call."""

import equinox as eqx
import jax
import jax.numpy as jnp

{hooks}

class ResBlock(eqx.Module):
    linear: eqx.nn.Linear
    activation: object = eqx.field(static=True)

    def __init__(self, width, key, activation=jnp.tanh):
        self.linear = eqx.nn.Linear(width, width, key=key)
        self.activation = activation

    def __call__(self, h):
        _busy(WORK)
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

HK_NET = '''\
"""hklab: a residual MLP of Haiku modules, and its own jitted loss-and-gradient call."""

import haiku as hk
import jax
import jax.numpy as jnp

{hooks}

class ResBlock(hk.Module):
    def __init__(self, width, name=None):
        super().__init__(name=name)
        self.width = width

    def __call__(self, h):
        _busy(WORK)
        y = jnp.tanh(hk.Linear(self.width)(h))
        for _ in range(EXTRA):
            y = y * 1.0001 + 0.0001
        return h + y


def forward(x):
    for _ in range(4):
        x = ResBlock(16)(x)
    return hk.Linear(1)(x)


network = hk.without_apply_rng(hk.transform(forward))


def mse_loss(params, x, y):
    return jnp.mean((network.apply(params, x) - y) ** 2)


loss_and_grad = jax.jit(jax.value_and_grad(mse_loss))
'''

HK_CASE = '''\
from hklab import net


def case():
    """``(fn, args)``: hklab's own loss_and_grad and its 4-block network's parameters (Haiku's init)."""
    key = jax.random.PRNGKey(0)
    x, y = jax.random.normal(key, (8, 16)), jnp.zeros((8, 1))
    return net.loss_and_grad, (net.network.init(key, x), x, y)
'''

TORCH_NET = '''\
"""torchlab: a residual MLP in torch, and its own compiled training step."""

import torch

{hooks}

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


def step(model, x, y):
    """One training step as torchlab's users call it: its own bookkeeping, then the compiled step."""
    _busy(WORK)
    return compiled_step(model, x, y)
'''

TORCH_CASE = '''\
from torchlab import train


def case():
    """``(fn, args)``: torchlab's own training step (compiled) and a 4-block Net."""
    torch.manual_seed(0)
    return train.step, (train.Net(16, 4), torch.randn(8, 16), torch.zeros(8, 1))
'''


@dataclass(frozen=True)
class Library:
    """One library: its name, declared dependencies, module, source, the ``case()`` that calls it, where the
    starter's stand-in begins (``cut``: what is kept before it is the starter's imports) and the framework
    API the starter must have been written with."""

    name: str
    framework: str
    deps: tuple[str, ...]
    module: str
    source: str
    case: str
    cut: str
    api: str
    needs: str

    @property
    def case_id(self) -> str:
        return f"{self.name}_loss/function/default"


LIBRARIES = {
    "jax": Library("jaxlab", "jax", ("jax",), "net", JAX_NET, JAX_CASE, "def init_params(key",
                   "jax.jit(jax.value_and_grad(mse_loss))", "jax"),
    "equinox": Library("eqxlab", "equinox", ("equinox", "jax"), "net", EQX_NET, EQX_CASE, "def make_model(key):",
                       "eqx.filter_jit(eqx.filter_value_and_grad(mse_loss))", "equinox"),
    "haiku": Library("hklab", "haiku", ("dm-haiku", "jax"), "net", HK_NET, HK_CASE, "def forward(x):",
                     "hk.without_apply_rng(hk.transform(forward))", "haiku"),
    "torch": Library("torchlab", "torch", ("torch>=2",), "train", TORCH_NET, TORCH_CASE, "def make_model()",
                     "torch.compile(train_step)", "torch"),
}


def source(lib: Library, extra: int = 0, work: int = 0, import_sleep: float = 0.0) -> str:
    """The library's module: ``extra`` scaling pairs per block, ``work`` pure-Python iterations per call,
    ``import_sleep`` seconds at import (0, 0, 0: the base)."""
    import_cost = (f"import time\n\ntime.sleep({import_sleep!r})  # a slower import\n" if import_sleep else "")
    return lib.source.format(hooks=HOOKS.format(import_cost=import_cost, extra=extra, work=work))


def set_up_base(root: Path, lib: Library, init=None) -> dict:
    """The library committed, ``ttfg init`` run on it, its starter calling the library, installed editable into a
    layered venv and committed: the base. ``init`` runs ttfg's CLI (in-process ``ttfg.cli.main`` by default).
    Returns the repository, its history, the base commit, the module's path and the venv's python."""
    if init is None:
        from ttfg.cli import main as init
    repo = root / lib.name
    package = repo / "src" / lib.name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f'"""{lib.name}"""\n')
    (package / f"{lib.module}.py").write_text(source(lib))
    (repo / "pyproject.toml").write_text(PYPROJECT.format(name=lib.name, deps=json.dumps(list(lib.deps))))
    history = GitRepo.init(repo)
    history.commit(lib.name)
    code = init(["init", "--repo", str(repo), "--ttfg-requirement", REQ])
    if code != 0:
        raise RuntimeError(f"ttfg init on {lib.name} exited {code}")
    starter = package / "ttfg_cases.py"
    text = starter.read_text()
    if lib.cut not in text or lib.api not in text:  # the stand-in the user replaces with the library's own call
        raise RuntimeError(f"{lib.name}: the starter lacks {lib.cut!r} or {lib.api!r}:\n{text}")
    starter.write_text(text[:text.index(lib.cut)] + lib.case)
    python = layered_venv(root / f"venv-{lib.name}")
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "-e", str(repo)], check=True, capture_output=True, timeout=300)
    base = history.commit("ttfg init, the starter calling the library")
    return {"repo": repo, "history": history, "base": base, "module": package / f"{lib.module}.py",
            "python": python, "library": lib}


def commit_head(made: dict, message: str, text: str, branch: str | None = None) -> str:
    """A head on top of the base: the library's module replaced by ``text`` and committed (on ``branch``, made
    from the base, when given). Its hash."""
    history = made["history"]
    if branch:
        history.git("checkout", "--quiet", "-B", branch, made["base"])
    made["module"].write_text(text)
    return history.commit(message)
