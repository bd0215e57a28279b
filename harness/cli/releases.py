"""``ttfg releases PACKAGE``: time to first gradient across real releases, adjacent releases paired.

The command line side only: the releases to build and each pair's settings come from
``app/release_plan.py``, the sweep is ``app/releases.py``, the tables and page
``present/releases_views.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

RELEASES_HELP = """\
Measure a case selection in one environment per release of PACKAGE (jax,
autograd, torch), built with uv and cached, and gate each adjacent pair of
releases the way `ttfg gate` gates a base and a head: interleaved cold
processes, paired, a sequential test, an interval on the ratio. For each pair
it reports wall time (the deciding verdict), CPU time of the same processes,
the instruction count of the first-gradient window (callgrind, once per
release) and the phase that moved most; they are kept apart because they
disagree (newer XLA compiles in parallel threads). A release that cannot be
installed or cannot run a case is a failed cell with its error, and the sweep
goes on.

Releases: --versions A,B,C, or a range (--from/--to) read from the registry
and thinned to the last patch of each minor version (--every minor, the
default) or every release. jax is installed as jax[cpu]==V (the jaxlib each
release was made for); autograd with scipy. torch: only the CPU wheels in the
PIP_FIND_LINKS folders can be had here (registry wheels are multi-GB CUDA
builds), and the command says so.

Writes OUT/releases.json (after every pair), OUT/index.html (the page: tables
and plots with the releases on the x axis), OUT/summary.md, and each pair's
two results files (base.json, head.json) under OUT/pairs/.
`ttfg report --releases OUT/releases.json` draws the page again;
`ttfg regressions --releases OUT/releases.json` lists the steps.
"""


def cmd_releases(args) -> int:
    from ..app import release_plan
    from ..app import releases as sweep
    from ..files import atomic_write_text
    from ..present.releases_views import print_sweep, sweep_markdown, sweep_page
    from ..present.terminal import console as make_console

    from .config import project_folder
    from .gate import _progress_line
    from .outputs import output_dir
    from .selection import runnable_selection

    output_dir(args.out_dir, "--out-dir")
    _refuse_ignored(args)
    as_json = args.format == "json"
    console = make_console(stderr=as_json)
    versions = [v.strip() for v in args.versions.split(",") if v.strip()] if args.versions else None
    planned, notes = release_plan.plan(args.package, versions, args.low, args.high, args.every,
                                       tuple(args.with_ or ()))
    if args.backend is None:
        args.backend = release_plan.default_backends(args.package)
    cases, skipped = runnable_selection(args, console, "measure")
    if not cases:
        return 2
    settings = release_plan.pair_settings(args.min_effect, args.alpha, args.min_pairs, args.max_pairs,
                                          args.budget_per_pair.seconds, args.timeout, args.threads)
    for note in notes:
        console.print(f"note: {note}", highlight=False)
    console.print(f"releases: {args.package} {', '.join(r.version for r in planned)}; "
                  f"{len(cases)} case(s); budget {settings.budget_s:.0f} s per pair -> {args.out_dir}",
                  highlight=False)

    class Printed(sweep.SweepEvents):
        def note(self, text):
            console.print(text, highlight=False)

        def pair(self, event):
            console.print(_progress_line(event), highlight=False)

    request = sweep.SweepRequest(planned, cases, Path(args.out_dir), settings,
                                 instructions=not args.no_instructions, notes=notes,
                                 project_folder=project_folder(args), snapshot_limit=args.snapshot_limit)
    import time

    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 1))
    try:
        doc = sweep.run(request, Printed())
    except KeyboardInterrupt:
        from rich.text import Text

        from ..results.format import ResultsError
        from ..results.sweep_file import load_sweep

        saved = Path(args.out_dir) / "releases.json"
        # The sweep writes its file after every pair: say what is there, not what would be.
        try:
            kept = load_sweep(saved)
            fresh = kept.get("complete") is False and str(kept.get("created")) >= started  # written by this sweep
        except ResultsError:
            fresh = False
        console.print(Text.assemble(("interrupted", "yellow"),
                                    f": what finished is in {saved} (marked incomplete)" if fresh else
                                    ": before any pair was written; nothing of this sweep was kept"
                                    + (f" ({saved} is an earlier sweep's)" if saved.exists() else "")))
        return 2
    out = Path(args.out_dir)
    atomic_write_text(out / "index.html", sweep_page(doc))
    atomic_write_text(out / "summary.md", sweep_markdown(doc))
    print_sweep(console, doc)
    console.print(f"written: {out / 'releases.json'}, {out / 'index.html'}, {out / 'summary.md'}", highlight=False)
    if as_json:
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
    return doc["exit_code"]


def _refuse_ignored(args) -> None:
    """Options that would be silently ignored together are refused, naming both (a typo must not run an
    hour-long sweep of something else)."""
    from ..errors import UsageError

    if args.versions is not None:
        given = [flag for flag, value, default in (("--from", args.low, None), ("--to", args.high, None),
                                                   ("--every", args.every, "minor")) if value != default]
        if given:
            raise UsageError(f"--versions names the releases; {', '.join(given)} choose{'s' if len(given) == 1 else ''} "
                             "from a range instead: give one or the other")
    for text in args.with_ or ():
        if text.strip().startswith("-"):
            raise UsageError(f"--with {text!r} is a pip option; --with takes requirements (numpy==2.4.6), "
                             "as --env does")


def add_releases_command(sub) -> None:
    """Register ``releases`` on the ``ttfg`` subparsers."""
    import argparse

    from . import options
    from ..app.release_plan import packages, thinnings
    from ..fmt import Duration
    from .common_args import add_selection, add_snapshot_limit, add_threads, add_timeout
    from .help_text import exit_codes

    p = sub.add_parser("releases", help="time to first gradient across real releases of a framework, pairs gated",
                       description=RELEASES_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog=exit_codes(extra=": an adjacent pair of releases regressed, or a release computes a wrong gradient",
                                         extra2="; also a release or case that could not be measured, when no pair "
                                                "regressed"))
    p.add_argument("package", choices=packages(), help="whose releases")
    p.add_argument("--from", dest="low", metavar="VERSION", help="first release of the range (included)")
    p.add_argument("--to", dest="high", metavar="VERSION", help="last release of the range (included)")
    p.add_argument("--versions", metavar="A,B,...", help="exactly these releases, instead of a range")
    p.add_argument("--every", choices=thinnings(), default="minor",
                   help="thin a range: the last patch of each minor version (default), or every release")
    p.add_argument("--with", dest="with_", action="append", metavar="REQ",
                   help="a requirement added to every release's environment, e.g. numpy==2.4.6 (repeatable)")
    add_selection(p, default_model="resnet15",
                  backend_help="backend name (default: jax.jit for jax, autograd for autograd, torch.eager for torch)")
    p.add_argument("--budget-per-pair", type=options.duration("--budget-per-pair"), default=Duration.parse("60s"),
                   metavar="DURATION",
                   help="wall-clock budget of each adjacent pair's timing pairs (default: 60s)")
    p.add_argument("--min-effect", type=options.min_effect, default=0.05, metavar="FRACTION",
                   help="minimum relative effect of a step (default: 5 %%)")
    p.add_argument("--alpha", type=options.alpha, default=0.01, help="significance level per pair (default: 0.01)")
    p.add_argument("--min-pairs", type=options.count(2, options.MAX_REPEAT, "--min-pairs"), default=5,
                   help="pairs before the first look (default: 5)")
    p.add_argument("--max-pairs", type=options.count(2, options.MAX_REPEAT, "--max-pairs"), default=30,
                   help="pairs at most per adjacent pair of releases (default: 30)")
    add_timeout(p)
    add_threads(p)
    add_snapshot_limit(p)
    p.add_argument("--no-instructions", action="store_true", help="skip the callgrind count of each release")
    p.add_argument("--out-dir", default="runs/releases", metavar="DIR", help="where results go (default: runs/releases)")
    p.add_argument("--format", choices=("table", "json"), default="table",
                   help="what stdout gets at the end: tables (default) or the sweep document")
    p.set_defaults(func=cmd_releases)


def report_releases(args) -> int:
    """``ttfg report --releases FILE``: the sweep's page, drawn again."""
    from ..files import atomic_write_text
    from ..present.releases_views import sweep_page

    from ..results.sweep_file import load_sweep

    from .outputs import not_an_input, output_file

    out = output_file(args.out, "--out", create_parents=True)
    not_an_input(args.out, "--out", [args.releases])  # --out X --releases X overwrote the sweep with its page
    doc = load_sweep(args.releases)
    atomic_write_text(out, sweep_page(doc))
    print(out)
    return 0


def list_release_steps(args) -> int:
    """``ttfg regressions --releases FILE``: the adjacent pairs whose verdict is a step (all pairs with --all).

    A step is read from each pair's own verdict (``regressed``/``improved``), never from the words
    shown for it: those say what decided it (``regressed (instructions)``), and matching the bare
    word listed no step at all. A sweep that stopped before it gated every pair cannot say "no
    step": it says what it lacks and exits 2.
    """
    from ..present.releases_views import pair_rows
    from ..present.terminal import console as make_console, fitted
    from ..present.untrusted import plain
    from ..results.sweep_file import load_sweep

    doc = load_sweep(args.releases)
    wanted = ("regressed",) if args.only_regressions else ("regressed", "improved")
    rows = [r for pair, r in zip(doc["pairs"], pair_rows(doc)) if pair["verdict"] in wanted]
    incomplete = doc.get("complete") is False
    code = 2 if incomplete and not rows else 0
    if args.format == "json":
        sys.stdout.write(json.dumps({"package": doc["package"], "complete": not incomplete, "steps": rows,
                                     "exit_code": code}, indent=1) + "\n")
        return code
    console = make_console()
    package = plain(doc["package"])
    table = fitted(f"steps between adjacent {package} releases (paired verdicts)",
                   [("releases", "left"), ("case", "left"), ("verdict", "left"), ("wall time", "right"),
                    ("CPU time", "right"), ("instructions", "right"), ("phase that moved most", "left")], label=2)
    for r in rows:
        table.add_row(r["releases"], r["case"], r["verdict"], r["wall"], r["cpu"], r["instructions"], r["phase"])
    if rows:
        console.print(table)
    elif not incomplete:
        console.print(f"no step between adjacent {package} releases", highlight=False)
    if incomplete:
        console.print(f"the sweep is incomplete ({len(doc['pairs'])} pair(s) gated before it stopped): "
                      + ("no step can be ruled out between the pairs it did not gate" if not rows
                         else "steps between the pairs it did not gate are not known"), style="yellow",
                      highlight=False)
    return code
    console = make_console()
    table = fitted(f"steps between adjacent {doc['package']} releases (paired verdicts)",
                   [("releases", "left"), ("case", "left"), ("verdict", "left"), ("wall time", "right"),
                    ("CPU time", "right"), ("instructions", "right"), ("phase that moved most", "left")], label=2)
    for r in rows:
        table.add_row(r["releases"], r["case"], r["verdict"], r["wall"], r["cpu"], r["instructions"], r["phase"])
    console.print(table if rows else f"no step between adjacent {doc['package']} releases")
    return 0
