"""A small library in each common layout, as a new user's repository has it, for gating a dependency bump.

Each layout is the same library, ``lablib``: a model and a backend plugged in through entry
points, its backend declaring ``modules = ("autograd", "lablib")`` as ``ttfg init``'s starter
does (the project's own package among the modules a case runs). Only where the package and
its dependency declarations live differ:

- ``flat``: ``lablib/`` at the repository's root, setuptools, ``requirements.txt`` holding
  ``-r requirements/base.txt`` (the pin lives in ``requirements/base.txt``);
- ``src``: ``src/lablib/``, setuptools, ``requirements.txt``;
- ``setup.py``: no ``pyproject.toml`` at all, ``install_requires`` in ``setup.py``;
- ``namespace``: ``src/labco/lablib/`` where ``labco`` is a namespace package (no ``__init__.py``), setuptools'
  ``find`` with namespaces, ``requirements.txt``; the backend declares ``labco`` among its modules;
- ``monorepo``: the project in ``packages/lablib/`` (its own ``pyproject.toml``, ``src/lablib/``,
  ``requirements.txt``) beside another folder, ``ttfg.toml`` at the repository's root naming it
  (``install-path``);
- ``root``: ``lablib/`` at the repository's root, never installed into the user's environment: the repository's
  root itself is on the environment's path (a ``.pth`` naming it, as ``setup.py develop`` and ``conda develop .``
  write), with the ``lablib.egg-info`` setuptools wrote there (ignored by git), so ``import lablib`` and the
  entry points come from the working tree; the gate must still import each revision's own install.

The environment the user runs ttfg from is a layered venv (``user_project.layered_venv``) with the
library installed editable, as a user would have it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from .conftest import GitRepo
from .user_project import layered_venv

LAYOUTS = ("flat", "src", "setup.py", "namespace", "monorepo", "root")

PLUGIN = '''\
"""lablib's model and backend for ttfg."""

from __future__ import annotations

import numpy as np

from ttfg.engines.autograd_numpy import AutogradBackend, AutogradEngine
from ttfg.models.spec import GELU, Chain, Dense, ModelSpec

from . import ops


def build_mlp(depth: int = {depth}) -> ModelSpec:
    """lablib's MLP: DEPTH hidden GELU layers of width 8, input 1x4 (option: depth=N)."""
    layers = [("inp", Dense(4, 8)), ("act0", GELU())]
    for i in range(depth):
        layers += [(f"h{{i}}", Dense(8, 8)), (f"act{{i + 1}}", GELU())]
    layers.append(("out", Dense(8, 2)))
    return ModelSpec("lablib_mlp", Chain(tuple(layers)), (1, 4), {{"depth": depth}})


class LabEngine(AutogradEngine):
    def __init__(self, spec, weights, x, dtype=np.float32):
        import autograd

        super().__init__(spec, weights, x, dtype)
        inner = self.loss

        def loss(params, x):
            return ops.scale(inner(params, x))

        self.loss = loss
        self.fn = autograd.value_and_grad(loss)


class LabAutograd(AutogradBackend):
    name = "lablib.autograd"
    description = "HIPS autograd with lablib's loss scaling"
    modules = ("autograd", "{top}")  # as ttfg init's starter declares: the framework and the project

    def build(self, spec, weights, x, variant):
        return LabEngine(spec, weights, x)
'''

OPS = '''\
"""lablib's operations."""


def scale(x):
    return x * 1.0
'''

ENTRY_POINTS = '''
[project.entry-points."ttfg.models"]
lablib_mlp = "{module}.ttfg_plugin:build_mlp"

[project.entry-points."ttfg.backends"]
"lablib.autograd" = "{module}.ttfg_plugin:LabAutograd"
'''

SETUPTOOLS = '''\
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "lablib"
version = "0.1.0"
requires-python = ">=3.11"

[tool.setuptools.packages.find]
{find}
'''

SETUP_PY = '''\
from setuptools import find_packages, setup

setup(
    name="lablib",
    version="0.1.0",
    packages=find_packages(include=["lablib*"]),
    install_requires=[{pins}],
    entry_points={{
        "ttfg.models": ["lablib_mlp = lablib.ttfg_plugin:build_mlp"],
        "ttfg.backends": ["lablib.autograd = lablib.ttfg_plugin:LabAutograd"],
    }},
)
'''


#: Where each layout's package is, relative to the repository; its dotted module; the project's folder.
PACKAGES = {"flat": "lablib", "src": "src/lablib", "setup.py": "lablib", "namespace": "src/labco/lablib",
            "monorepo": "packages/lablib/src/lablib", "root": "lablib"}
MODULES = {"namespace": "labco.lablib"}
PROJECT = {"monorepo": "packages/lablib"}


def _files(layout: str, pin: str, depth: int = 2) -> dict[str, str]:
    package, module = PACKAGES[layout], MODULES.get(layout, "lablib")
    entry_points = ENTRY_POINTS.format(module=module)
    files = {f"{package}/__init__.py": '"""lablib."""\n', f"{package}/ops.py": OPS,
             f"{package}/ttfg_plugin.py": PLUGIN.format(depth=depth, top=module.split(".")[0]),
             "tests/__init__.py": "", "tests/test_ops.py": "def test_scale():\n    assert True\n"}
    if layout == "flat":
        files["pyproject.toml"] = SETUPTOOLS.format(find='include = ["lablib*"]') + entry_points
        files["requirements.txt"] = "-r requirements/base.txt\n"
        files["requirements/base.txt"] = f"{pin}\nscipy\n"
    elif layout == "root":
        files["pyproject.toml"] = SETUPTOOLS.format(find='include = ["lablib*"]') + entry_points
        files["requirements.txt"] = f"{pin}\nscipy\n"
        files[".gitignore"] = "*.egg-info/\n"
    elif layout in ("src", "namespace"):
        find = 'where = ["src"]' + ('\nnamespaces = true' if layout == "namespace" else "")
        files["pyproject.toml"] = SETUPTOOLS.format(find=find) + entry_points
        files["requirements.txt"] = f"{pin}\nscipy\n"
    elif layout == "monorepo":
        files["packages/lablib/pyproject.toml"] = SETUPTOOLS.format(find='where = ["src"]') + entry_points
        files["packages/lablib/requirements.txt"] = f"{pin}\nscipy\n"
        files["packages/web/README.md"] = "Another project of the repository, not Python.\n"
        files["ttfg.toml"] = 'install-path = "packages/lablib"\n'
    else:
        files["setup.py"] = SETUP_PY.format(pins=f'"{pin}", "scipy"')
    return files


def declaration(layout: str) -> str:
    """The file a dependency bump of ``layout`` changes."""
    return {"flat": "requirements/base.txt", "src": "requirements.txt", "setup.py": "setup.py",
            "namespace": "requirements.txt", "monorepo": "packages/lablib/requirements.txt",
            "root": "requirements.txt"}[layout]


def make_layout(root: Path, layout: str, before: str = "autograd==1.7.0", after: str = "autograd==1.9.1") -> dict:
    """``lablib`` in ``layout`` under ``root/repo``: commit ``first`` pins ``before``, ``bump`` only changes the pin
    to ``after`` (in the layout's declaration file), ``code`` (from ``first``) makes the model twice as deep;
    installed editable into a layered venv (``root``: the repository's root on the venv's path, see the module's
    docstring). Names and paths (``plugin``: the plugin module's repository path)."""
    repo = root / "repo"
    history = GitRepo.init(repo)
    first = history.commit("first", _files(layout, before))
    name = declaration(layout)
    bump = history.commit(f"bump {before} to {after}", {name: _files(layout, after)[name]}, stage="files")
    # A code change from ``first``: the model twice as deep (its structural counters grow).
    history.git("checkout", "-q", "-b", "code", first)
    plugin = next(p for p in _files(layout, before) if p.endswith("ttfg_plugin.py"))
    code = history.commit("a deeper model", {plugin: _files(layout, before, depth=4)[plugin]}, stage="files")
    history.git("checkout", "-q", "main")
    python = layered_venv(root / "venv")
    if layout == "root":
        _root_on_path(python, repo)
        return {"repo": repo, "python": python, "first": first, "bump": bump, "code": code, "plugin": plugin,
                "top": "lablib"}
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "-e", str(repo / PROJECT.get(layout, "."))], check=True,
                   capture_output=True, text=True, timeout=300)
    return {"repo": repo, "python": python, "first": first, "bump": bump, "code": code, "plugin": plugin,
            "top": MODULES.get(layout, "lablib").split(".")[0]}


def _root_on_path(python: Path, repo: Path) -> None:
    """The repository's root on ``python``'s path, as a legacy develop install leaves it: setuptools' ``egg_info``
    writes ``lablib.egg-info`` (its entry points) into the root, and a ``.pth`` in site-packages names the root."""
    subprocess.run([str(python), "-c", "import setuptools; setuptools.setup()", "egg_info"], cwd=repo, check=True,
                   capture_output=True, text=True, timeout=300)
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    Path(site, "lablib-root.pth").write_text(f"{repo}\n")


__all__ = ["LAYOUTS", "declaration", "make_layout"]
