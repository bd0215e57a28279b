"""``ttfg explain``: where a change between two measurements went, on demand.

The gate attributes every regressed case by itself; this command does the same for any
two measurements, regressed or not: two results files (``ttfg run --out``, a gate's
``base.json`` and ``head.json``), or a gate's output (its folder or ``gate.json``), which
is the common case after a red CI run: download the artifact, run ``ttfg explain
runs/gate``. Gate files carry pair indices, so phase changes are paired. Which files, and the
attribution, are ``app/explain.py``; this module parses and prints.
"""

from __future__ import annotations

import json
import sys

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


def cmd_explain(args) -> int:
    from ..app.explain import explain, resolve_inputs
    from ..files import atomic_write_text
    from ..present.attribution_views import attribution_markdown, headline, print_attribution
    from ..present.terminal import console as make_console
    from .outputs import not_an_input, output_file

    output_file(args.output, "--output")
    base_path, head_path, case, gate_doc = resolve_inputs(args.paths)
    not_an_input(args.output, "--output", [base_path, head_path, *args.paths])
    metric = args.metric or (gate_doc.outcome.settings.metric if gate_doc is not None else "first_grad_s")
    found = explain(base_path, head_path, case, metric, args.cache, args.top).attributions
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


__all__ = ["add_explain_command", "cmd_explain"]
