"""Compiled code per model source line: jaxpr equations, FX nodes and graph breaks, each at the line that made it.

Why: a gate says jax.jit's first gradient traces 120 more equations; a maintainer needs the line of *their* model
that made them. Both compilers record it: jax keeps each equation's ``source_info`` (a traceback) and names its
user frame with ``jax._src.source_info_util.user_frame`` (the innermost frame outside jax and the standard
library); Dynamo keeps each FX node's ``meta["stack_trace"]`` (read with torch's own
``torch.fx.graph._parse_stack_trace``: the innermost frame) and each graph it hands a backend the reason it was cut
(``gm.compile_subgraph_reason``: a graph break's reason and the user stack where it happened), which is what
``torch._dynamo.explain`` reports. Counts repeat exactly for the same code, so one process a side diffs cleanly.

Every entry is ``{"kind", "file", "line", "fn", "n"}`` (a graph break also ``"reason"``); kinds are
:data:`KINDS`. These run after the first gradient (the calls probe), never inside a timed window; everything they
import is already loaded by then.
"""

from __future__ import annotations

from typing import Any, Iterable

#: The kinds of a line record, as ``results`` files and gate.json name them.
JAXPR_EQNS, FX_NODES, GRAPH_BREAK = "jaxpr_eqns", "fx_nodes", "graph_break"
KINDS = (JAXPR_EQNS, FX_NODES, GRAPH_BREAK)
#: Lines kept per process (by count): a resnet15 jaxpr spans a few dozen model lines.
LINES_TOP = 2000


def _entries(counts: dict[tuple, int], kind: str) -> list[dict[str, Any]]:
    rows = [{"kind": kind, "file": file, "line": line, "fn": fn, "n": n, **({"reason": reason} if reason else {})}
            for (file, line, fn, reason), n in counts.items()]
    rows.sort(key=lambda r: (-r["n"], r["file"], r["line"] or 0, r.get("reason") or ""))
    return rows[:LINES_TOP]


def _sub_jaxprs(eqn) -> Iterable:
    """The jaxprs inside one equation's parameters (a scan's body, a pjit's callee, custom rules)."""
    for value in eqn.params.values():
        for sub in value if isinstance(value, (list, tuple)) else (value,):
            inner = getattr(sub, "jaxpr", sub)
            if hasattr(inner, "eqns"):
                yield inner


def jaxpr_lines(jaxpr) -> list[dict[str, Any]]:
    """Equations of ``jaxpr`` (a ``ClosedJaxpr`` or ``Jaxpr``, sub-jaxprs included, as ``jaxpr_equations`` counts
    them) per user source line; an equation jax records no user frame for is counted at file ``?``."""
    from jax._src import source_info_util

    counts: dict[tuple, int] = {}
    stack = [getattr(jaxpr, "jaxpr", jaxpr)]
    while stack:
        current = stack.pop()
        for eqn in current.eqns:
            frame = source_info_util.user_frame(getattr(eqn.source_info, "traceback", None))
            key = ((frame.file_name, frame.start_line, frame.function_name, None) if frame is not None
                   else ("?", None, "?", None))
            counts[key] = counts.get(key, 0) + 1
            stack.extend(_sub_jaxprs(eqn))
    return _entries(counts, JAXPR_EQNS)


#: FX node operations that are work (placeholders and outputs are a graph's edges, not the model's code).
_FX_WORK = ("call_function", "call_method", "call_module")


def fx_lines(graph_modules: Iterable) -> list[dict[str, Any]]:
    """FX nodes per source line over the graphs Dynamo handed a backend, and each graph break with its reason and
    the line where it happened (the innermost frame of its user stack)."""
    from torch.fx.graph import _parse_stack_trace

    nodes: dict[tuple, int] = {}
    breaks: dict[tuple, int] = {}
    for gm in graph_modules:
        for node in gm.graph.nodes:
            if node.op not in _FX_WORK:
                continue
            parsed = _parse_stack_trace(node.meta.get("stack_trace"))
            key = ((parsed.file, int(parsed.lineno), parsed.name, None) if parsed is not None
                   else ("?", None, "?", None))
            nodes[key] = nodes.get(key, 0) + 1
        reason = getattr(gm, "compile_subgraph_reason", None)
        if reason is not None and getattr(reason, "graph_break", False):
            stack = list(getattr(reason, "user_stack", None) or [])
            frame = stack[-1] if stack else None
            # Dynamo's reason, up to its hint (the hint and debug context that follow are for Dynamo's developers).
            text = " ".join(str(reason.reason).split()).split(" Hint: ")[0][:300]
            key = ((frame.filename, frame.lineno, frame.name, text) if frame is not None else ("?", None, "?", text))
            breaks[key] = breaks.get(key, 0) + 1
    return _entries(nodes, FX_NODES) + _entries(breaks, GRAPH_BREAK)


__all__ = ["FX_NODES", "GRAPH_BREAK", "JAXPR_EQNS", "KINDS", "LINES_TOP", "fx_lines", "jaxpr_lines"]
