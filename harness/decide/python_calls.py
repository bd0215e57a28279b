"""Where a change went, in Python: each Python function's call count in the first gradient, base against head.

Why: callgrind sees C, so a commit that added pure-Python work to autograd's first gradient was "explained" by
``_PyFunction_Vectorcall`` and ``PyCell_New``; sampled stacks name the Python function but need several processes
a side to see through their noise. A call count per function (``probe.calls``: cProfile, first gradient only)
repeats exactly for the same code, so one process a side gives a clean diff, and it names the function and its
``file:line``. The project's own functions (files of the side's install of the revision) are listed first, the
frameworks' after; both are named, so a reviewer sees their own code before anyone else's.

What a count does not see: work inside one call (a loop with no calls in it) shows as the function that holds it
being called as often as before; the instruction counts and sampled stacks of the same attribution still show it.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Callable

from ..results.attribution_record import CallDelta

if TYPE_CHECKING:
    from ..results.model import CaseResult

#: Functions kept per kind of code (project, framework) in ``gate.json``, by the size of their change.
KEEP = 25
#: Shown in summary.md: the project's functions whose call counts grew most.
SHOWN = 5
_STDLIB = re.compile(r"/lib/python3\.\d+/(.+)$")


def locate(path: str | None, roots: list[str]) -> tuple[str, str]:
    """``(code, file)`` for a function's source file: ``("project", "mylab/ops.py")`` when the file is under one of
    ``roots`` (the side's install of its revision), else ``("framework", ...)`` with the path inside
    ``site-packages`` or the standard library (so that two sides' environments match), or the path as given."""
    text = str(path or "?")
    for root in roots:
        try:
            return "project", PurePosixPath(Path(text).relative_to(root)).as_posix()
        except ValueError:
            continue
    if "site-packages/" in text:
        return "framework", text.rsplit("site-packages/", 1)[1]
    m = _STDLIB.search(text)
    return "framework", m.group(1) if m else text


def _counts(case: "CaseResult | None") -> tuple[list[dict] | None, str | None]:
    """The first good calls sample's list (one is enough: counts repeat), and its tool line."""
    for s in (case.samples if case is not None else []):
        if s.ok and s.kind == "calls" and isinstance(s.calls_top, list):
            return s.calls_top, s.calls_tool
    return None, None


def _side(entries: list[dict], roots: list[str]) -> dict[tuple, dict]:
    """Counts keyed by (code, file, fn), or (code, file, fn, line) where a file holds a name twice (two lambdas)."""
    located = [(locate(e.get("file"), roots), e) for e in entries]
    seen: dict[tuple, int] = {}
    for (code, file), e in located:
        seen[(code, file, e["fn"])] = seen.get((code, file, e["fn"]), 0) + 1
    out: dict[tuple, dict] = {}
    for (code, file), e in located:
        key = (code, file, e["fn"])
        if seen[key] > 1:
            key = (*key, e.get("line"))
        slot = out.setdefault(key, {"fn": e["fn"], "file": file, "code": code, "line": e.get("line"), "n": 0})
        slot["n"] += int(e.get("incl") or 0)
    return out


def diff(base_entries: list[dict], head_entries: list[dict], base_roots: list[str], head_roots: list[str],
         keep: int = KEEP) -> list[CallDelta]:
    """Every function whose call count changed, the project's first, each kind by the size of its change.

    Parameters
    ----------
    base_entries, head_entries : list of dict
        A calls sample's ``calls_top`` per side (``fn``, ``file``, ``line``, ``incl`` = calls).
    base_roots, head_roots : list of str
        The folders each side's project code runs from (its install of the revision).
    keep : int
        Functions kept per kind of code.
    """
    base, head = _side(base_entries, base_roots), _side(head_entries, head_roots)
    out = []
    for key in [*head, *(k for k in base if k not in head)]:
        b, h = base.get(key), head.get(key)
        ref = h or b
        delta = (h["n"] if h else 0) - (b["n"] if b else 0)
        if delta:
            out.append(CallDelta(ref["fn"], ref["file"], ref["line"], b["n"] if b else 0, h["n"] if h else 0,
                                 ref["code"]))
    order = {"project": 0, "framework": 1}
    out.sort(key=lambda c: (order.get(c.code, 2), -abs(c.delta), c.file, c.fn))
    return [c for code in order for c in [c for c in out if c.code == code][:keep]]


def attribute_calls(base: "CaseResult | None", head: "CaseResult | None", base_roots: list[str],
                    head_roots: list[str]) -> tuple[list[CallDelta], str]:
    """The call-count diff of one case from its calls samples, and the note that says what it came from (or why
    there is none)."""
    (b, b_tool), (h, h_tool) = _counts(base), _counts(head)
    if b is None or h is None:
        missing = " and ".join(r for r, x in (("base", b), ("head", h)) if x is None)
        return [], f"no Python call counts on {missing} (its calls process failed or did not run)"
    from ..measure.probe import CALLS_TOP

    note = f"Python call counts of the first gradient, one process a side ({h_tool or b_tool})"
    if max(len(b), len(h)) >= CALLS_TOP:
        note += f"; a side kept only its {CALLS_TOP} most-called functions, so a change below that is not seen"
    return diff(b, h, base_roots, head_roots), note


def take_calls(case, sides: dict, append: Callable, sample: Callable, on_note: Callable[[str], None] | None) -> None:
    """One calls process of ``case`` per side (``sample(role)`` takes it, ``append(role, s)`` records it)."""
    for role in sides:
        s = sample(role)
        append(role, s)
        if on_note:
            on_note(f"calls {role} {case.id}: "
                    + (f"{len(s.calls_top or [])} Python functions" if s.ok else f"failed: {s.error}"))


def roots(side) -> list[str]:
    """The folders a side's project code runs from: its install of the revision (none for a test's fake side)."""
    installed = getattr(side, "installed", None)
    return [str(installed.root)] if installed is not None and getattr(installed, "root", None) else []


def recorded_roots(results) -> list[str]:
    """The folder a results file's side ran its project from, as the gate recorded it
    (``environment.side.install.root``); none for a file without a side (``ttfg run``'s)."""
    side = (getattr(results, "environment", None) or {}).get("side") or {}
    root = (side.get("install") or {}).get("root") if isinstance(side, dict) else None
    return [root] if isinstance(root, str) and root else []


__all__ = ["KEEP", "SHOWN", "attribute_calls", "diff", "locate", "recorded_roots", "roots", "take_calls"]
