"""The package's shape is its architecture: imports point down the stages, never up.

cli -> present -> decide / history -> measure -> results / metrics -> engines -> models.
``harness.errors`` and ``harness.files`` sit below everything and import nothing of ours.
Frameworks are imported only inside ``harness/engines/``. The test reads the source (AST),
so a lazy import inside a function counts the same as one at the top.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ROOT / "harness"

#: Higher may import lower. Equal ranks may import each other only within one package,
#: except decide and history, which are two views of the same stage (the trend
#: confirmation re-runs the gate; the gate reads history's points).
RANK = {
    "models": 0,
    "harness.engines": 1,
    "harness.metrics": 2,
    "harness.fmt": 2,
    "harness.results": 2,
    "harness.measure": 3,
    "harness.decide": 4,
    "harness.history": 4,
    "harness.present": 5,
    "harness.cli": 6,
    "harness": 7,          # harness/__init__.py and __main__.py: the public face
}
BASE = {"harness.errors", "harness.files"}
SIBLINGS = {frozenset({"harness.decide", "harness.history"}), frozenset({"harness.metrics", "harness.results"}),
            frozenset({"harness.fmt", "harness.metrics"})}
FRAMEWORKS = {"jax", "jaxlib", "torch", "autograd", "functorch", "triton"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _group(module: str) -> str:
    if module in BASE or module.split(".")[:2] == ["harness", "errors"]:
        return "base"
    if module.startswith("models"):
        return "models"
    parts = module.split(".")
    if parts[0] != "harness":
        return "external"
    if len(parts) == 1 or parts[1] == "__main__":
        return "harness"
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
    path = ROOT.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


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
        if module.startswith("harness.engines"):
            continue
        for target, line in _imports(path):
            if target.split(".")[0] in FRAMEWORKS:
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports {target}")
    assert not wrong, "framework imports outside harness/engines/:\n" + "\n".join(wrong)


def test_every_stage_is_a_package_with_a_docstring():
    for stage in ("engines", "measure", "results", "decide", "history", "present", "cli"):
        init = HARNESS / stage / "__init__.py"
        assert init.is_file(), f"harness/{stage}/ is not a package"
        assert ast.get_docstring(ast.parse(init.read_text())), f"harness/{stage}/__init__.py says nothing of its job"
