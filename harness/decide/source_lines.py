"""Where compiled code grew, by model line: jaxpr equations, FX nodes and graph breaks, base against head.

Why: the structural tier says a head traces 120 more jaxpr equations or breaks Dynamo's graph once more; the
person fixing it needs the line of their model that did it. The calls process of each regressed case records the
compiled code per source line (``engines/source_lines.py``), one process a side (counts repeat exactly); this
diff names each line whose count changed, the graph breaks first (each with Dynamo's reason), then the project's
lines, then the frameworks', each by the size of its change. Files are located as the call counts' are
(``python_calls.locate``), so that two sides installed in two folders match.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..engines.source_lines import GRAPH_BREAK, KINDS
from ..results.attribution_record import LineDelta
from .python_calls import locate

if TYPE_CHECKING:
    from ..results.model import CaseResult

#: Lines kept per kind of record and of code in ``gate.json``.
KEEP = 25
#: Words for each kind, as a reader is told: ``+120 jaxpr equations at mylib/layers.py:42``.
KIND_WORDS = {"jaxpr_eqns": "jaxpr equations", "fx_nodes": "FX nodes", "graph_break": "graph breaks"}


def _lines(case: "CaseResult | None") -> tuple[list[dict] | None, str | None]:
    """The first good calls sample's line records (one is enough: counts repeat), or None and why there are none."""
    for s in (case.samples if case is not None else []):
        if s.ok and s.kind == "calls":
            if isinstance(s.source_lines, list):
                return s.source_lines, None
            return None, s.source_lines_note or "its calls process recorded no source lines"
    return None, "no good calls process"


def _side(entries: list[dict], roots: list[str]) -> dict[tuple, dict]:
    out: dict[tuple, dict] = {}
    for e in entries:
        code, file = locate(e.get("file"), roots)
        key = (e["kind"], code, file, e.get("line"), e.get("reason"))
        slot = out.setdefault(key, {"fn": e.get("fn") or "?", "n": 0})
        slot["n"] += int(e.get("n") or 0)
    return out


def diff(base_entries: list[dict], head_entries: list[dict], base_roots: list[str], head_roots: list[str],
         keep: int = KEEP) -> list[LineDelta]:
    """Every line whose count of a kind changed: graph breaks first, then by kind (equations, nodes) the project's
    lines before the frameworks', each group by the size of its change and cut to ``keep``."""
    base, head = _side(base_entries, base_roots), _side(head_entries, head_roots)
    out = []
    for key in [*head, *(k for k in base if k not in head)]:
        b, h = base.get(key), head.get(key)
        nb, nh = (b["n"] if b else 0), (h["n"] if h else 0)
        if nb != nh:
            kind, code, file, line, reason = key
            out.append(LineDelta(kind, file, line, (h or b)["fn"], nb, nh, code, reason))
    kinds = {GRAPH_BREAK: 0, **{k: i + 1 for i, k in enumerate(k for k in KINDS if k != GRAPH_BREAK)}}
    codes = {"project": 0, "framework": 1}
    out.sort(key=lambda c: (kinds.get(c.kind, 9), codes.get(c.code, 2), -abs(c.delta), c.file, c.line or 0))
    kept: dict[tuple, int] = {}
    result = []
    for c in out:
        group = (c.kind, c.code)
        kept[group] = kept.get(group, 0) + 1
        if kept[group] <= keep:
            result.append(c)
    return result


def attribute_lines(base: "CaseResult | None", head: "CaseResult | None", base_roots: list[str],
                    head_roots: list[str]) -> tuple[list[LineDelta], str | None]:
    """The line diff of one case from its calls samples, and its note; ``([], None)`` where neither side recorded
    any line (a backend that compiles nothing: autograd, eager)."""
    (b, b_why), (h, h_why) = _lines(base), _lines(head)
    if b is None and h is None:
        return [], None
    if b is None or h is None:
        role, why = ("base", b_why) if b is None else ("head", h_why)
        return [], f"no compiled code per source line on {role}: {why}"
    kinds = sorted({e["kind"] for e in b + h}, key=KINDS.index)
    note = ("compiled code per model source line (" + ", ".join(KIND_WORDS[k] for k in kinds)
            + "), one process a side") if kinds else None
    return diff(b, h, base_roots, head_roots), note


def grown(lines: list[LineDelta], top: int = 5) -> list[LineDelta]:
    """What a reader sees first: every new graph break, then the ``top`` lines (the project's first) whose
    equations or nodes grew most."""
    breaks = [c for c in lines if c.kind == GRAPH_BREAK and c.delta > 0]
    rest = sorted((c for c in lines if c.kind != GRAPH_BREAK and c.delta > 0),
                  key=lambda c: (c.code != "project", -c.delta))
    return breaks + rest[:top]


def line_text(c: LineDelta, code=lambda text: text, prose=lambda text: text, where=None) -> str:
    """``+120 jaxpr equations at mylib/layers.py:42 (block)``; a graph break ``+1 graph break at m.py:7 (f): why``.
    ``code`` and ``prose`` wrap the names and the reason (Markdown gives ``md_code`` and ``md``); ``where`` the
    file:line (default ``code``; summary.md links it)."""
    place = (where or code)(c.where)
    sign = "+" if c.delta > 0 else ""
    if c.kind == GRAPH_BREAK:
        word = "graph break" if abs(c.delta) == 1 else "graph breaks"
        return (f"{sign}{c.delta:,} {word} at {place} ({code(c.fn)}): "
                f"{prose(c.reason or 'no reason recorded')}")
    return f"{sign}{c.delta:,} {KIND_WORDS.get(c.kind, c.kind)} at {place} ({code(c.fn)})"


__all__ = ["KEEP", "KIND_WORDS", "attribute_lines", "diff", "grown", "line_text"]
