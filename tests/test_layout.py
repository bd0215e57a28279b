"""The package's shape is its architecture: imports point down the stages, never up.

cli -> app -> present / project -> decide / history -> measure -> provision -> results / metrics -> engines -> models.
``ttfg.errors`` and ``ttfg.files`` sit below everything and import nothing of ours.
Frameworks are imported only inside ``harness/engines/``. The test reads the source (AST),
so a lazy import inside a function counts the same as one at the top.

The installed package has one import name, ``ttfg``: the build maps ``harness/`` to ``ttfg``
and ``models/`` to ``ttfg.models`` (``pyproject.toml``); the last test holds that mapping
to the folders.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ROOT / "harness"
#: Where each part of the ``ttfg`` namespace lives in the repository (the build's mapping).
FOLDERS = {"ttfg.models": ROOT / "models", "ttfg": HARNESS}

#: Higher may import lower. Equal ranks may import each other only within one package,
#: except decide and history, which are two views of the same stage (the trend
#: confirmation re-runs the gate; the gate reads history's points).
RANK = {
    "ttfg.models": 0,
    "ttfg.engines": 1,
    "ttfg.metrics": 2,
    "ttfg.fmt": 2,
    "ttfg.results": 2,
    "ttfg.provision": 3,  # what a side runs in: worktrees, installs, environments, caches (uv)
    "ttfg.measure": 4,
    "ttfg.decide": 5,
    "ttfg.history": 5,
    "ttfg.present": 6,
    "ttfg.project": 6,  # the user's project: config and scaffolding; cli and app read it, it reads no presenter
    "ttfg.app": 7,      # use cases: one function per command, wiring the stages below (cli parses and prints)
    "ttfg.cli": 8,
    "ttfg": 9,          # harness/__init__.py and __main__.py: the public face
}
BASE = {"ttfg.errors", "ttfg.files"}
SIBLINGS = {frozenset({"ttfg.decide", "ttfg.history"}), frozenset({"ttfg.metrics", "ttfg.results"}),
            frozenset({"ttfg.fmt", "ttfg.metrics"})}
FRAMEWORKS = {"jax", "jaxlib", "torch", "autograd", "functorch", "triton"}


def _module_name(path: Path) -> str:
    """The module's import name: ``harness/measure/probe.py`` is ``ttfg.measure.probe``."""
    for name, folder in FOLDERS.items():
        if path.is_relative_to(folder):
            parts = [*name.split("."), *path.relative_to(folder).with_suffix("").parts]
            break
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _path(module: str) -> Path | None:
    """Where a ``ttfg`` module's file or package folder would be (None outside ttfg)."""
    for name, folder in FOLDERS.items():
        if module == name or module.startswith(name + "."):
            return folder.joinpath(*module[len(name):].split(".")[1:])
    return None


def _group(module: str) -> str:
    if module in BASE or module.split(".")[:2] == ["ttfg", "errors"]:
        return "base"
    if module == "ttfg.models" or module.startswith("ttfg.models."):
        return "ttfg.models"
    parts = module.split(".")
    if parts[0] != "ttfg":
        return "external"
    if len(parts) == 1 or parts[1] == "__main__":
        return "ttfg"
    return ".".join(parts[:2])


def _imports(path: Path):
    """Every module ``path`` imports, made absolute, with its line number."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:  # "from .. import engines" imports a module
                sub = f"{target}.{alias.name}"
                yield (sub if _is_module(sub) else target), node.lineno


def _is_module(dotted: str) -> bool:
    path = _path(dotted)
    return path is not None and (path.with_suffix(".py").is_file() or (path / "__init__.py").is_file())


def _sources():
    for path in sorted(HARNESS.rglob("*.py")):
        yield path
    for path in sorted((ROOT / "models").rglob("*.py")):
        yield path


def test_imports_point_down_the_stages():
    wrong = []
    for path in _sources():
        src = _group(_module_name(path))
        for target, line in _imports(path):
            dst = _group(target)
            if dst in ("external",) or dst == src:
                continue
            where = f"{path.relative_to(ROOT)}:{line} imports {target}"
            if src == "base":
                if dst != "base":
                    wrong.append(f"{where} (errors/files import nothing of ours)")
                continue
            if dst == "base":
                continue
            if frozenset({src, dst}) in SIBLINGS:
                continue
            if RANK[dst] >= RANK[src]:
                wrong.append(f"{where} ({src} may not import {dst})")
    assert not wrong, "imports against the stage order:\n" + "\n".join(wrong)


def test_frameworks_only_inside_engines():
    wrong = []
    for path in _sources():
        module = _module_name(path)
        if module.startswith("ttfg.engines"):
            continue
        for target, line in _imports(path):
            if target.split(".")[0] in FRAMEWORKS:
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports {target}")
    assert not wrong, "framework imports outside harness/engines/:\n" + "\n".join(wrong)


def test_every_stage_is_a_package_with_a_docstring():
    for stage in ("engines", "provision", "measure", "results", "decide", "history", "present", "app", "cli"):
        init = HARNESS / stage / "__init__.py"
        assert init.is_file(), f"harness/{stage}/ is not a package"
        assert ast.get_docstring(ast.parse(init.read_text())), f"harness/{stage}/__init__.py says nothing of its job"


def test_the_build_maps_every_package_folder_into_ttfg():
    """``pyproject.toml`` lists the packages by hand (the folders are not named ``ttfg``):
    every folder with an ``__init__.py`` under harness/ and models/ must be in that list,
    and the list must name nothing else, or a wheel would silently lack a stage."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setuptools["package-dir"] == {"ttfg": "harness", "ttfg.models": "models"}
    folders = {_module_name(init) for folder in FOLDERS.values() for init in folder.rglob("__init__.py")}
    assert set(setuptools["packages"]) == folders


#: The stages the command line reaches only through ``app/`` (and ``present/``, ``project/``,
#: ``results/``, ``fmt``, ``errors``, ``files``): cli parses and prints, app holds the use cases.
BELOW_APP = ("ttfg.provision", "ttfg.measure", "ttfg.decide", "ttfg.history", "ttfg.engines")
#: TEMPORARY: two commands being converted to app/ use cases on other branches right now; empty this
#: set when they merge (then the rule holds for every cli module).
CLI_NOT_YET_THROUGH_APP: set[str] = set()


def test_cli_reaches_measure_decide_history_engines_only_through_app():
    wrong = []
    for path in sorted((HARNESS / "cli").rglob("*.py")):
        where = path.relative_to(ROOT).as_posix()
        if where in CLI_NOT_YET_THROUGH_APP:
            continue
        for target, line in _imports(path):
            if any(target == stage or target.startswith(stage + ".") for stage in BELOW_APP):
                wrong.append(f"{where}:{line} imports {target}")
    assert not wrong, "cli/ imports a stage below app/ (move the work into an app/ use case):\n" + "\n".join(wrong)


def test_no_import_circle_anywhere():
    """No module reaches itself through the modules it imports, inside a package or across. Lazy imports count
    (a circle that only a function-level import closes is still one module needing the other to work), and so do
    those under ``if TYPE_CHECKING:``: a type one module away from where it belongs is the same tangle, only
    hidden from the interpreter (issue 38 moved the last four: ``Environment``, ``RunSettings``, the tiers' names
    and ``CaseState``)."""
    graph = {}
    for path in _sources():
        graph[_module_name(path)] = {t for t, _ in _imports(path) if t.startswith("ttfg")}
    graph = {m: {t for t in targets if t in graph and t != m} for m, targets in graph.items()}
    circles, index, low, stack, on_stack = [], {}, {}, [], set()

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)
