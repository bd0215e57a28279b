"""``present/``'s modules import each other in one direction: primitives below, subject views above.

Why: when the medium (terminal, Markdown) and the subject (run, compare, gate...) were
mixed in one module, four of them imported each other in a circle, and a change to one
view could break another's import. The terminal and Markdown primitives
(``terminal.py``, ``markdown_table.py``) sit at the bottom; each subject's view imports
them and never another view's private name. The test reads the source (AST), so a lazy
import inside a function counts the same as one at the top.
"""

from __future__ import annotations

import ast
from pathlib import Path

PRESENT = Path(__file__).resolve().parents[1] / "harness" / "present"
#: Below every view: they import no view.
PRIMITIVES = {"terminal", "markdown_table", "untrusted"}


def _graph() -> dict[str, set[str]]:
    """Module -> the ``present`` modules it imports (``from .x import``, ``from . import x``)."""
    modules = {p.stem for p in PRESENT.glob("*.py")}
    graph = {}
    for path in PRESENT.glob("*.py"):
        found = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                names = [node.module.split(".")[0]] if node.module else [a.name for a in node.names]
                found |= {n for n in names if n in modules}
        graph[path.stem] = found
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle, as the modules on it, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt, path + [nxt])):
                return found
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start, [start])):
            return found
    return None


def test_no_import_circle_inside_present():
    circle = _cycle(_graph())
    assert circle is None, "import circle in harness/present/: " + " -> ".join(circle)


def test_the_check_would_notice_a_circle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_primitives_import_no_view():
    graph = _graph()
    wrong = {m: sorted(graph[m] - PRIMITIVES) for m in PRIMITIVES if graph[m] - PRIMITIVES}
    assert not wrong, f"primitives importing views: {wrong}"


def test_no_view_imports_another_modules_private_name():
    wrong = []
    for path in PRESENT.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                wrong += [f"{path.name}: {node.module}.{a.name}" for a in node.names
                          if a.name.startswith("_") and a.name != "__future__"]
    assert not wrong, "private names imported across present/ modules:\n" + "\n".join(wrong)
