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

--format pprof|speedscope --output DIR writes the attribution as profile
files: <case>.base.pb.gz and <case>.head.pb.gz (pprof -diff_base BASE HEAD),
or <case>.speedscope.json (one profile per kind and side).

It decides nothing (ttfg compare and ttfg gate do): exit 0 when something was
explained, 2 on bad input (a missing or invalid file, no common case).
"""


def cmd_explain(args) -> int:
    from ..app.explain import explain, resolve_inputs
    from ..files import atomic_write_text
    from ..present.attribution_views import attribution_markdown, headline, print_attribution
    from ..present.terminal import console as make_console
    from .outputs import not_an_input, not_an_input_dir, output_dir, output_file

    profile_format = args.format in PROFILE_FORMATS
    if profile_format:
        from ..errors import UsageError

        if not args.output:
            raise UsageError(f"--format {args.format} writes files: give --output DIR (a folder)")
        output_dir(args.output, "--output")
    else:
        output_file(args.output, "--output")
    base_path, head_path, case, gate_doc = resolve_inputs(args.paths)
    if profile_format:
        not_an_input_dir(args.output, "--output", [base_path, head_path, *args.paths], ())
    else:
        not_an_input(args.output, "--output", [base_path, head_path, *args.paths])
    metric = args.metric or (gate_doc.outcome.settings.metric if gate_doc is not None else "first_grad_s")
    found = explain(base_path, head_path, case, metric, args.cache, args.top, gate_doc).attributions
    if profile_format:
        return _write_profiles(args, found, base_path, head_path)
    if args.format == "json":
        doc = {"format": "ttfg-explain", "version": 1, "base": str(base_path), "head": str(head_path),
               "attributions": [{**a.to_json(), "headline": headline(a)} for a in found]}
        text = json.dumps(doc, indent=1) + "\n"
    elif args.format == "markdown":
        text = (f"### ttfg explain: base `{base_path}` vs head `{head_path}`\n\n"
                + "\n".join(attribution_markdown(a, internals=args.internals) for a in found))
    else:
        console = make_console()
        console.print(f"explain: base {base_path} vs head {head_path}, {len(found)} case(s), metric {metric}",
                      highlight=False)
        for a in found:
            print_attribution(console, a, internals=args.internals)
        return 0
    if args.output:
        atomic_write_text(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


#: Formats written as profile files into the --output folder (``present/profile_files.py``).
PROFILE_FORMATS = ("pprof", "speedscope")


def _write_profiles(args, found, base_path, head_path) -> int:
    """Write every case's profile files into ``--output`` (made when missing), all of them or none, and name them.

    Refused (exit 2, nothing written) when no case has anything below its phases: a profile of phase times alone
    is the table explain prints."""
    from pathlib import Path

    from ..errors import UsageError
    from ..files import replace_together
    from ..present import profile_files

    if not any(profile_files.has_rows(a) for a in found):
        raise UsageError(f"nothing to write as {args.format}: no case of {base_path} and {head_path} has call "
                         "counts, source lines or function lists (a gate records them for regressed cases, with "
                         "--profiles 1 or more; ttfg run --profiles N samples stacks); nothing written")
    try:
        content = profile_files.files(found, args.format, str(base_path), str(head_path))
    except ImportError as exc:
        raise UsageError(f"--format {args.format} needs protobuf (pip install 'ttfg[profile]'): {exc}") from exc
    folder = Path(args.output)
    written = replace_together({folder / name: data for name, data in content.items()})
    for path in written:
        print(path)
    if args.format == "pprof":
        print(f"compare with: pprof -diff_base {folder}/<case>.base.pb.gz {folder}/<case>.head.pb.gz", file=sys.stderr)
    else:
        print("open in https://www.speedscope.app (one profile per kind and side)", file=sys.stderr)
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
    p.add_argument("--internals", action="store_true",
                   help="keep the interpreter's and ttfg's own functions (CPython's C code, the standard library, "
                        "libc, the measuring code) in the function tables; by default they are left out and counted "
                        "in a note, and the Python call counts name your code's functions")
    p.add_argument("--format", choices=("table", "markdown", "json", *PROFILE_FORMATS), default="table",
                   help="table, markdown or json on stdout (or --output FILE); pprof (a base and a head .pb.gz per "
                        "case, for pprof -diff_base) or speedscope (a .json per case) into --output DIR")
    p.add_argument("--output", metavar="PATH", help="markdown/json: the file to write instead of stdout; "
                                                    "pprof/speedscope: the folder to write into (made if missing)")
    p.set_defaults(func=cmd_explain)


__all__ = ["add_explain_command", "cmd_explain"]
