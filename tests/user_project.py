"""A user's own project, as a new user would set it up: ``mylab``, a ``src/`` layout, installed editable.

It is the last round's silent failure, made reproducible: a library that plugs a model
(``mylab_mlp``) and a backend (``mylab.autograd``) into ttfg through entry points, with
its own top-level ``models`` package (common in ML repositories, and once a collision with
ttfg's), installed with ``pip install -e .`` into an environment of its own. The gate must
measure each revision's code, not the editable install both would otherwise import.

The environment is a *layered* virtual environment: a fresh venv (nothing installed in
it) whose one ``.pth`` file adds this test run's site-packages, so ttfg, numpy and autograd
come from there and only ``mylab`` is installed into the new one -- as a user would have it,
without touching the shared environment.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

from .conftest import GitRepo

#: Who mylab's commits are by (a bisect's page names the culprit's author).
MYLAB = ("mylab", "mylab@example.com")

PYPROJECT = """\
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "mylab"
version = "0.1.0"
description = "A lab's models and a backend, measured by ttfg"
requires-python = ">=3.11"

[project.entry-points."ttfg.models"]
mylab_mlp = "mylab.ttfg_plugin:build_mlp"

[project.entry-points."ttfg.backends"]
"mylab.autograd" = "mylab.ttfg_plugin:MylabAutograd"

[tool.setuptools.packages.find]
where = ["src"]
"""

OWN_MODELS = '''\
"""The lab's own top-level ``models`` package: a name ttfg no longer claims."""

HIDDEN = 16
'''

OPS = '''\
"""The lab's own operations, called in every forward pass."""


def scale(x):
    """The lab's output scaling."""
    return x * 1.0
'''

SLOW_OPS = '''\
"""The lab's own operations, called in every forward pass."""


def _mylab_slow_scale_work(n: int = 400_000) -> int:
    """A deliberate slowdown: pure-Python work on every call of :func:`scale`."""
    total = 0
    for i in range(n):
        total = (total * 31 + i) % 1_000_003
    return total


def scale(x):
    """The lab's output scaling."""
    _mylab_slow_scale_work()
    return x * 1.0
'''

PLUGIN = '''\
"""mylab's model and backend for ttfg, registered through entry points."""

from __future__ import annotations

import numpy as np

from models import HIDDEN  # the lab's own top-level package
from ttfg.engines.autograd_numpy import AutogradBackend, AutogradEngine
from ttfg.models.spec import GELU, Chain, Dense, ModelSpec

from . import ops

DEPTH = {depth}


def build_mlp(depth: int = DEPTH) -> ModelSpec:
    """mylab's MLP: DEPTH hidden GELU layers of width HIDDEN, input 1x4 (option: depth=N)."""
    layers = [("inp", Dense(4, HIDDEN)), ("act0", GELU())]
    for i in range(depth):
        layers += [(f"h{{i}}", Dense(HIDDEN, HIDDEN)), (f"act{{i + 1}}", GELU())]
    layers.append(("out", Dense(HIDDEN, 2)))
    return ModelSpec("mylab_mlp", Chain(tuple(layers)), (1, 4), {{"depth": depth}})


class MylabEngine(AutogradEngine):
    """autograd over ttfg's interpreter, with the lab's own scaling of the loss."""

    def __init__(self, spec, weights, x, dtype=np.float32):
        import autograd

        super().__init__(spec, weights, x, dtype)
        inner = self.loss

        def loss(params, x):
            return ops.scale(inner(params, x))

        self.loss = loss
        self.fn = autograd.value_and_grad(loss)


class MylabAutograd(AutogradBackend):
    name = "mylab.autograd"
    description = "HIPS autograd with mylab's loss scaling"

    def build(self, spec, weights, x, variant):
        return MylabEngine(spec, weights, x)
'''


def write_project(root: Path, depth: int = 4, slow: bool = False) -> None:
    files = {
        "pyproject.toml": PYPROJECT,
        "src/models/__init__.py": OWN_MODELS,
        "src/mylab/__init__.py": '"""mylab: a lab\'s models, measured by ttfg."""\n',
        "src/mylab/ops.py": SLOW_OPS if slow else OPS,
        "src/mylab/ttfg_plugin.py": PLUGIN.format(depth=depth),
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def function_project(name: str, function: str, target: str) -> dict[str, str]:
    """The files of a src-layout setuptools project ``name`` that declares one function case in its ttfg.toml."""
    pyproject = (f'[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n\n'
                 f'[project]\nname = "{name}"\nversion = "0.1.0"\nrequires-python = ">=3.11"\n\n'
                 f'[tool.setuptools.packages.find]\nwhere = ["src"]\n')
    config = f'models = ["{function}"]\n\n[functions]\n{function} = "{target}"\n'
    return {"pyproject.toml": pyproject, "ttfg.toml": config}


def layered_venv(path: Path) -> Path:
    """A venv with nothing installed that sees this run's site-packages through one ``.pth``; its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, capture_output=True)
    python = path / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    shared = sysconfig.get_paths()["purelib"]
    Path(site, "_shared_site.pth").write_text(f"import site; site.addsitedir({shared!r})\n")
    return python


def committed_project(repo: Path) -> str:
    """mylab written into the new folder ``repo``, a repository of its own with one commit ("first"); its hash."""
    repo.mkdir()
    write_project(repo)
    return GitRepo.init(repo, identity=MYLAB).commit("first")


def make_mylab(root: Path) -> dict:
    """The repository and its environment: commits ``first``, ``slow`` (a deliberate slowdown and
    twice the depth) and, from ``first``, ``comment`` (a comment only) and ``offpath`` (a module
    nothing measured imports). Returns names and paths."""
    repo = root / "mylab"
    first = committed_project(repo)
    history = GitRepo(repo)
    ops = repo / "src" / "mylab" / "ops.py"
    ops.write_text(ops.read_text().replace('    """The lab\'s output scaling."""',
                                           '    """The lab\'s output scaling."""\n    # scaling by one keeps the loss')
                   )
    comment = history.commit("a comment, nothing else", stage="tracked")
    history.git("checkout", "-q", "-b", "slow", first)
    write_project(repo, depth=8, slow=True)
    slow = history.commit("deeper, and a slower scale", stage="tracked")
    # A change the measured path never runs: a command-line module of the lab that no model or backend imports.
    history.git("checkout", "-q", "-b", "offpath", first)
    offpath = history.commit("a slower command line, off the measured path",
                             {"src/mylab/cli.py": SLOW_OPS.replace("The lab's own operations", "The lab's command line")})
    history.git("checkout", "-q", "main")
    python = layered_venv(root / "venv")
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "-e", str(repo)], check=True, capture_output=True, text=True,
                   timeout=300)
    return {"repo": repo, "python": python, "first": first, "slow": slow, "comment": comment, "offpath": offpath}





def dependency_bump(repo: Path, start: str, before: str, after: str) -> tuple[str, str]:
    """Two commits on a branch from ``start``: a ``requirements.txt`` pinning ``before``, then only that pin
    bumped to ``after``: a dependency-bump pull request, with no code changed."""
    history = GitRepo(repo)
    history.git("checkout", "-q", "-b", f"bump-{after.replace('=', '')}", start)
    old = history.commit(f"pin {before}", {"requirements.txt": f"{before}\nscipy\n"}, stage="files")
    new = history.commit(f"bump to {after}", {"requirements.txt": f"{after}\nscipy\n"}, stage="files")
    history.git("checkout", "-q", "main")
    return old, new
__all__ = ["MYLAB", "committed_project", "dependency_bump", "layered_venv", "make_mylab", "write_project"]
