"""The ``ttfg`` command line. Each subcommand imports what it needs when it runs.

``ttfg --help`` and ``ttfg list`` import no AD framework (a test holds us to that).
Exit codes: 0 success, 1 a real finding (gradient mismatch, regression, failed
case), 2 bad input or nothing could run, 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from .errors import TtfgError

EPILOG = """\
examples:
  ttfg list                                   models, backends, variants, availability
  ttfg check --model resnet15                 every backend against the float64 reference
  ttfg run --model resnet15 --backend all --repeat 3 --out runs/r.json
  ttfg compare base.json head.json            regression verdicts between two results files
  ttfg gate --base origin/main                interleaved, paired base/head measurement
  ttfg report --runs runs/r.json              HTML report with plots
"""


def add_selection(parser: argparse.ArgumentParser, default_model: str = "all") -> None:
    group = parser.add_argument_group("case selection (each repeatable, or 'all')")
    group.add_argument("--model", action="append", metavar="NAME[:k=v]",
                       help=f"model, optionally sized: resnet15:blocks=30, convnext_tiny:depths=1x1x3x1 (default: {default_model})")
    group.add_argument("--backend", action="append", metavar="NAME", help="backend name (default: all)")
    group.add_argument("--variant", action="append", metavar="SEL",
                       help="'default' (each backend's own), 'all', or axis=value[,axis=value] such as chain=scan (default: default)")
    parser.set_defaults(default_model=default_model)


def selection(args):
    from .cases import select

    return select(args.model or [args.default_model], args.backend, args.variant)


def cmd_list(args) -> int:
    import models
    from rich.table import Table

    from . import engines, variants
    from .tables import console as make_console

    console = make_console()
    mt = Table(title="models", title_justify="left")
    for col in ("model", "parameters", "input", "description"):
        mt.add_column(col)
    for name in models.names():
        spec = models.load(name)
        mt.add_row(name, f"{spec.parameter_count():,}", "x".join(map(str, spec.input_shape)), models.DESCRIPTIONS[name])
    console.print(mt)
    bt = Table(title="backends", title_justify="left")
    for col in ("backend", "available", *variants.AXES, "description"):
        bt.add_column(col)
    notes = []
    for name in engines.names():
        cls = engines.get(name)
        why = cls.availability()
        axes = [" ".join(cls.supports[a]) for a in variants.AXES]
        bt.add_row(name, "yes" if not why else f"no: {why}", *axes, cls.description)
        for key, reason in cls.why_not.items():
            notes.append(f"{name} {key}: {reason}")
        combo = cls.unsupported_combination({"params": "closure", "chain": "scan"})
        if combo and all(v in cls.supports[a] for a, v in (("params", "closure"), ("chain", "scan"))):
            notes.append(f"{name} params=closure,chain=scan: {combo}")
    console.print(bt)
    console.print("variant axes: " + "; ".join(f"{a} = {' | '.join(v)}" for a, v in variants.AXES.items())
                  + " (first listed per backend is its default)")
    if notes:
        console.print("unsupported variants:")
        for note in notes:
            console.print(f"  {note}", highlight=False)
    return 0


def cmd_check(args) -> int:
    from .check import exit_code, run_check
    from .tables import check_table, console as make_console

    console = make_console()
    cases, skipped = selection(args)
    console.print(f"checking {len(cases)} case(s) against the float64 reference "
                  f"(tolerance {args.tolerance:g}); {len(skipped)} skipped", highlight=False)

    def progress(result):
        worst = f"{result.worst_error:.2e}" if result.worst_error is not None else "-"
        console.print(f"  {result.status:8s} {result.case_id}  worst {worst}", highlight=False)

    results = run_check(cases, skipped, args.tolerance, on_result=progress)
    console.print(check_table(results, args.tolerance))
    code = exit_code(results)
    if code == 2:
        console.print("[red]nothing could run[/red]: every selected case was skipped")
    elif code == 1:
        console.print("[red]gradient check failed[/red]")
    return code


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ttfg",
        description="Time to first gradient: measure, explain and gate the cold-start cost of "
                    "automatic differentiation in Python (JAX, PyTorch, HIPS autograd).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("list", help="show models, backends and variants, with availability")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("check", help="check every case's gradient against a float64 reference",
                       description="Compute each selected case's gradient once and compare it with a float64 "
                                   "reference (HIPS autograd). Exit 1 when any case exceeds the tolerance or fails, "
                                   "2 when nothing could run.")
    add_selection(p)
    p.add_argument("--tolerance", type=float, default=1e-4,
                   help="largest allowed max|g - ref| / max|ref| per tensor (default: 1e-4)")
    p.set_defaults(func=cmd_check)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except TtfgError as exc:
        print(f"ttfg {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"ttfg {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
