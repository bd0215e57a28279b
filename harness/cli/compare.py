"""The ``compare`` and ``expect`` subcommands: argument parsing and output only.

The use cases are ``app/compare.py``; this module turns options into calls and the
comparison or expectations check into tables, Markdown, JSON and exit codes.
"""

from __future__ import annotations

import json
import sys

from rich.text import Text

from . import options
from .help_text import exit_codes, fill, formatter
from .. import metrics
from ..files import atomic_write_text

COMPARE_HELP = fill("""\
Compare two results files (from ttfg run or ttfg gate), per case and metric.

Timings (first_grad_s, compile_s, ...) are compared with a Mann-Whitney test on log
times and the Hodges-Lehmann ratio with its interval; a timing counts as regressed or
improved only when the change is significant at --alpha AND its estimate is at least
the minimum effect (--min-effect, default 5 %). Deterministic counters (alloc_count,
alloc_bytes, instructions, counters.* such as counters.jaxpr_eqns) compare medians
against a relative threshold (--threshold, default 1 %). Metrics absent on either
side are skipped. Files measured at different times cannot tell machine drift from a
code change: for gating prefer ttfg gate, which pairs and interleaves.
""")

EXPECT_HELP = fill("""\
Expected values of deterministic counters, committed with the code (CSV:
case,metric,expected,margin; margin is relative). 'check' fails on regressions AND on
unexpected improvements, so wins are locked in: update the file when a change is
intended ('update', or the file written by --write-suggested).
""")


def print_expectations(console, check, suggested_path, not_run_what: str) -> None:
    """The expectations table, one line per failed row, and where the suggested file went."""
    from ..present.expectation_views import expectation_line, expectations_table

    console.print(expectations_table(check))
    for r in check.failures():
        console.print(Text.assemble((r.status, "red"), f": {r.case} {r.metric}: {expectation_line(r)}"), highlight=False)
    if check.not_run:
        console.print(f"{check.not_run} expectation row(s) are for {not_run_what} (not checked)", highlight=False)
    if suggested_path:
        console.print(f"suggested expectations: {suggested_path}", highlight=False)

def _out(text: str, path: str | None) -> None:
    if path:
        atomic_write_text(path, text)
    else:
        sys.stdout.write(text)


def cmd_compare(args) -> int:
    from ..app.compare import compare
    from ..present.markdown import comparison_markdown
    from ..present.compare_views import compare_table, row_change
    from ..present.terminal import console as make_console
    from ..present.attribution_views import print_attribution

    from .outputs import not_an_input, output_file

    output_file(args.output, "--output")
    not_an_input(args.output, "--output", [args.base, args.head])
    cmp = compare(args.base, args.head, args.metric, args.min_effect, args.threshold, args.alpha, args.cache,
                  force=args.force, across_envs=args.across_envs)
    code = cmp.exit_code()
    if args.format == "json":
        _out(json.dumps(cmp.to_json(), indent=1) + "\n", args.output)
    elif args.format == "markdown":
        _out(comparison_markdown(cmp), args.output)
    else:
        console = make_console()
        if cmp.rows:
            console.print(compare_table(cmp))
        for r in cmp.rows:
            if r.verdict.verdict in ("regressed", "improved"):
                console.print(f"{r.verdict.verdict}: {r.case} {r.metric}{row_change(r)}: {r.verdict.reason}",
                              highlight=False)
        for a in cmp.attributions:
            print_attribution(console, a)
        for note in cmp.notes:
            console.print(Text.assemble(("note", "yellow"), f": {note}"), highlight=False)
        counts = ", ".join(f"{n} {v}" for v, n in cmp.counts().items() if n)
        console.print({0: Text(f"no regression ({counts})"), 1: Text.assemble(("regression", "red"), f" ({counts})"),
                       2: Text.assemble(("nothing comparable", "red"), ": no case and metric has values in both files")}[code],
                      highlight=False)
    return code


def cmd_expect_check(args) -> int:
    from ..app.compare import check_expectations
    from ..present.markdown import expectations_markdown
    from ..present.terminal import console as make_console

    from .outputs import not_an_input, output_file

    output_file(args.write_suggested, "--write-suggested")
    not_an_input(args.write_suggested, "--write-suggested", [args.file, *args.runs])
    check = check_expectations(args.file, args.runs, args.write_suggested)
    code = check.exit_code()
    if args.format == "json":
        sys.stdout.write(json.dumps(check.to_json(), indent=1) + "\n")
    elif args.format == "markdown":
        sys.stdout.write(expectations_markdown(check))
    else:
        console = make_console()
        print_expectations(console, check, args.write_suggested, "cases not in these results")
        console.print({0: Text("expectations hold"), 1: Text("expectations violated", style="red"),
                       2: Text.assemble(("nothing comparable", "red"), ": no expectation matches a measured case and metric")}[code],
                      highlight=False)
    return code


def cmd_expect_update(args) -> int:
    from ..app.compare import update_expectations

    from .outputs import not_an_input, output_file

    output_file(args.out, "--out")
    not_an_input(args.out, "--out", args.runs)
    written = update_expectations(args.out, args.runs, args.metric, args.margin, fresh=args.fresh)
    if not written:
        print(f"ttfg expect update: error: no deterministic metric found in {', '.join(args.runs)}", file=sys.stderr)
        return 2
    print(f"wrote {written} expectation(s) to {args.out}")
    return 0


def add_compare_command(sub) -> None:
    """Register ``compare`` on the ``ttfg`` subparsers."""
    p = sub.add_parser("compare", help="regression verdicts between two results files",
                       description=COMPARE_HELP, formatter_class=formatter,
                       epilog=exit_codes(extra=": some case and metric regressed", extra2=""))
    p.add_argument("base", metavar="BASE.json")
    p.add_argument("head", metavar="HEAD.json")
    p.add_argument("--metric", action="append", metavar="NAME",
                   help="metric or glob, repeatable or comma-separated (default: "
                        f"{', '.join(metrics.by_sample_kind(lambda m: m.compared_by_default))}, counters.*)")
    p.add_argument("--min-effect", action="append", metavar="[METRIC=]FRACTION",
                   help="minimum relative effect for timings, global (0.05 or 5%%) or per metric "
                        "(first_grad_s=0.10); repeatable (default: each metric's, 0.05)")
    p.add_argument("--threshold", action="append", metavar="[METRIC=]FRACTION",
                   help="relative threshold for deterministic counters, global or per metric "
                        "('counters.*=0'); repeatable (default: each metric's, 0.01)")
    p.add_argument("--alpha", type=options.alpha, default=0.01, help="significance level of the timing tests (default: 0.01)")
    p.add_argument("--cache", choices=("cold", "warm"), default="cold", help="which timing samples (default: cold)")
    p.add_argument("--format", choices=("table", "markdown", "json"), default="table",
                   help="table (default), a Markdown summary, or the comparison as JSON for scripts")
    p.add_argument("--output", metavar="FILE", help="write markdown/json here instead of stdout")
    p.add_argument("--force", action="store_true",
                   help="compare timings although the two files were measured on different machines "
                        "(refused by default, naming the differing fingerprint fields); the output says so")
    p.add_argument("--across-envs", action="store_true",
                   help="compare files measured in different environments (package versions differ; refused by "
                        "default, naming them); the output names the versions")
    p.set_defaults(func=cmd_compare)


def add_expect_command(sub) -> None:
    """Register ``expect`` and its actions on the ``ttfg`` subparsers."""
    p = sub.add_parser("expect", help="check or update expected counter values (CSV with margins)",
                       description=EXPECT_HELP, formatter_class=formatter)
    esub = p.add_subparsers(dest="expect_command", metavar="ACTION")
    p.set_defaults(func=lambda args, parser=p: (parser.print_help(), 2)[1])
    c = esub.add_parser("check", help="check results against an expectations file",
                        description=EXPECT_HELP, formatter_class=formatter,
                        epilog=exit_codes(extra=" or unexpected improvement outside a row's margin", extra2=""))
    c.add_argument("file", metavar="FILE", help="expectations CSV")
    c.add_argument("--runs", action="append", required=True, metavar="RESULTS.json",
                   help="head results file(s); values are pooled (repeatable)")
    c.add_argument("--write-suggested", metavar="PATH", help="write the file updated to the measured values here")
    c.add_argument("--format", choices=("table", "markdown", "json"), default="table",
                   help="table (default), a Markdown summary, or JSON for scripts")
    c.set_defaults(func=cmd_expect_check)
    u = esub.add_parser("update", help="create or update an expectations file from results",
                        description=EXPECT_HELP, formatter_class=formatter)
    u.add_argument("--runs", action="append", required=True, metavar="RESULTS.json", help="results file(s) (repeatable)")
    u.add_argument("--out", required=True, metavar="FILE",
                   help="expectations CSV; when it exists its margins and unmeasured rows are kept")
    u.add_argument("--metric", action="append", metavar="NAME",
                   help="deterministic metrics or globs (default: counters.*, "
                        f"{', '.join(metrics.names(lambda m: m.expected_by_default))})")
    u.add_argument("--margin", action="append", metavar="METRIC=FRACTION",
                   help="margin for matching rows, e.g. alloc_count=0.02 or 'counters.*=0' (repeatable)")
    u.add_argument("--fresh", action="store_true", help="ignore the existing file's rows and margins")
    u.set_defaults(func=cmd_expect_update)


__all__ = ["add_compare_command", "add_expect_command", "cmd_compare", "cmd_expect_check", "cmd_expect_update",
           "print_expectations"]
