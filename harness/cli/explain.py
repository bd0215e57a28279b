"""``ttfg explain``: where a change between two measurements went, on demand.

The gate attributes every regressed case by itself; this command does the same for any
two measurements, regressed or not: two results files (``ttfg run --out``, a gate's
``base.json`` and ``head.json``), or a gate's output (its folder or ``gate.json``), which
is the common case after a red CI run: download the artifact, run ``ttfg explain
runs/gate``. Gate files carry pair indices, so phase changes are paired.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

EXPLAIN_HELP = """\
Where a change between BASE and HEAD went, per case: the phase deltas (import,
build, trace, lower, compile, execute; paired when the files come from one
gate), the counter deltas (structural counters, allocations, instructions), and
the top functions of the first-gradient window by change in inclusive cost,
with file:line, where the samples carry per-function counts (callgrind) or
sampled Python stacks (ttfg run --profiles N; a gate profiles regressed cases).

BASE HEAD [CASE]  two results files, and optionally a case id or a glob
                  ('*jax.jit*')
GATE [CASE]       a gate's output folder (runs/gate) or its gate.json: the
                  base.json and head.json beside it are read, and must be
                  the sides that gate measured

It decides nothing (ttfg compare and ttfg gate do): exit 0 when something was
explained, 2 on bad input (a missing or invalid file, no common case).
"""


def _gate_pair(path: Path) -> tuple[Path, Path, dict | None] | None:
    """``(base, head, gate.json's document)`` when ``path`` is a gate's folder or gate.json, else None.

    The results files are the ones beside ``gate.json``, never the paths it recorded:
    those are relative to wherever the gate ran, so a downloaded artifact was explained
    with the local ``runs/gate/`` of another gate. Each must be the side the gate
    measured (its role and commit), or the folder is refused: an interrupted gate can
    leave new results files beside an older ``gate.json``.
    """
    from ..decide.merge_gate import side_mismatch
    from ..errors import UsageError
    from ..results.gate_file import load_gate
    from ..results.jsonfile import sniff_format
    from ..results.record import load

    if path.is_dir():
        doc_path = path / "gate.json"
        if not doc_path.is_file():
            if (path / "base.json").is_file() and (path / "head.json").is_file():
                return path / "base.json", path / "head.json", None
            raise UsageError(f"{path}: a folder without gate.json or base.json and head.json")
    else:
        doc_path = path
        if path.suffix != ".json" or not path.is_file() or sniff_format(path) != "ttfg-gate":
            return None
    doc = load_gate(doc_path)
    found = []
    for role in ("base", "head"):
        candidate = doc_path.parent / f"{role}.json"
        if not candidate.is_file():
            raise UsageError(f"{doc_path}: no {role}.json beside it (a gate writes base.json and head.json in its "
                             "folder; give BASE HEAD to explain other files)")
        problem = side_mismatch(doc, role, load(candidate))
        if problem:
            raise UsageError(f"{candidate}: {problem}, so it does not belong to {doc_path} (a later gate, "
                             "interrupted, may have written it); give BASE HEAD to explain it anyway")
        found.append(candidate)
    return found[0], found[1], doc


def resolve_inputs(paths: list[str]) -> tuple[Path, Path, str | None, dict | None]:
    """``(base, head, case, gate document)`` from the positional arguments.

    Raises
    ------
    UsageError
        On a wrong number of arguments or an unusable gate output.
    """
    from ..errors import UsageError

    if not 1 <= len(paths) <= 3:
        raise UsageError("expected BASE HEAD [CASE] or GATE [CASE]")
    gate = _gate_pair(Path(paths[0]))
    if gate is not None:
        if len(paths) > 2:
            raise UsageError(f"{paths[0]} is a gate's output: give at most a CASE after it, got {paths[1:]}")
        return gate[0], gate[1], (paths[1] if len(paths) == 2 else None), gate[2]
    if len(paths) == 1:
        raise UsageError(f"{paths[0]} is not a gate's output (a folder with gate.json, or gate.json): give BASE HEAD")
    return Path(paths[0]), Path(paths[1]), (paths[2] if len(paths) == 3 else None), None


def cmd_explain(args) -> int:
    from ..decide.attribution import attribute_results
    from ..files import atomic_write_text
    from ..present.attribution_views import attribution_markdown, headline, print_attribution
    from ..present.terminal import console as make_console
    from ..results import record
    from .outputs import not_an_input, output_file

    output_file(args.output, "--output")
    base_path, head_path, case, gate_doc = resolve_inputs(args.paths)
    not_an_input(args.output, "--output", [base_path, head_path, *args.paths])
    metric = args.metric or ((gate_doc or {}).get("settings") or {}).get("metric") or "first_grad_s"
    from .. import metrics

    if metrics.get(metric).deterministic:
        from ..errors import UsageError

        raise UsageError(f"--metric {metric} is a counter; explain a timing (counters are always listed)")
    base, head = record.load(base_path), record.load(head_path)
    found = attribute_results(base, head, case, metric=metric, cache=args.cache, top=args.top)
    if args.format == "json":
        doc = {"format": "ttfg-explain", "version": 1, "base": str(base_path), "head": str(head_path),
               "attributions": [{**a.to_json(), "headline": headline(a)} for a in found]}
        text = json.dumps(doc, indent=1) + "\n"
    elif args.format == "markdown":
        text = (f"### ttfg explain: base `{base_path}` vs head `{head_path}`\n\n"
                + "\n".join(attribution_markdown(a) for a in found))
    else:
        console = make_console()
        console.print(f"explain: base {base_path} vs head {head_path}, {len(found)} case(s), metric {metric}",
                      highlight=False)
        for a in found:
            print_attribution(console, a)
        return 0
    if args.output:
        atomic_write_text(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


def add_explain_command(sub) -> None:
    """Register ``explain`` on the ``ttfg`` subparsers."""
    import argparse

    from . import options

    p = sub.add_parser("explain", help="where a change went: phase, counter and function deltas",
                       usage="ttfg explain [options] BASE HEAD [CASE]\n       ttfg explain [options] GATE [CASE]",
                       description=EXPLAIN_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="two results files and an optional case, or a gate's output folder / gate.json and an "
                        "optional case")
    p.add_argument("--metric", default=None,
                   help="the timing whose change is explained (default: the gate's metric, else first_grad_s)")
    p.add_argument("--cache", choices=("cold", "warm"), default="cold", help="which timing samples (default: cold)")
    p.add_argument("--top", type=options.count(1, 1000, "--top"), default=12,
                   help="functions to list (default: 12)")
    p.add_argument("--format", choices=("table", "markdown", "json"), default="table")
    p.add_argument("--output", metavar="FILE", help="write markdown/json here instead of stdout")
    p.set_defaults(func=cmd_explain)


__all__ = ["add_explain_command", "cmd_explain", "resolve_inputs"]
