"""``ttfg report`` and ``ttfg regressions``: the command-line side of the trend report.

Kept out of ``cli.py`` so the report can grow without touching the core commands;
``cli.build_parser`` calls :func:`add_report_commands` once. This module parses the
options, calls the use case (``app/report.py``: load, analyse, confirm) and prints; it
imports no measuring or history module. Nothing here imports an AD framework,
and heavy imports (pandas, matplotlib) happen only when a command runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.text import Text

from . import options
from .. import fmt
from ..app.report import DEFAULT_RESULTS  # no pandas: the use case loads it when a command runs

DEFAULT_OUT = "reports/index.html"


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--results", metavar="DIR",
                   help=f"asv results folder with the history across commits (default: {DEFAULT_RESULTS}/ when it "
                        "exists, for `ttfg regressions` always and for `ttfg report` when no --runs are given; "
                        "without history, trends come from --runs)")
    p.add_argument("--runs", nargs="+", action="extend", default=[], metavar="FILE",
                   help="ttfg results files (from `ttfg run --out FILE`) or folders of them; without history each "
                        "file is one commit")
    p.add_argument("--last", type=options.count(1, 10**7, "--last"), metavar="N", help="only the newest N commits")
    p.add_argument("--threshold", type=options.threshold, default=0.05, metavar="FRACTION",
                   help="smallest relative step reported (default: 0.05; counters use at most 0.01)")
    p.add_argument("--skip-bad-history", action="store_true",
                   help="accept asv result files that cannot be read: exit 0 without them (default: they are left "
                        "out and named, the rest is still reported, and the exit code is 2, since the gap hides "
                        "commits and regressions)")
    p.add_argument("--machine", help="asv machine to show when the history holds several (default: the newest)")
    p.add_argument("--environment", metavar="NAME",
                   help="asv environment to show when the history holds several, e.g. "
                        "existing-py_usr_bin_python3 or virtualenv-py3.11-... (default: the newest; the output "
                        "names the one shown)")
    p.add_argument("--confirmations", metavar="FILE",
                   help="re-measurements of timing steps (default: confirmations.json in the --results folder, "
                        "written by `ttfg regressions --confirm`)")
    p.add_argument("--force", action="store_true",
                   help="show timings of results files measured on different machines side by side (refused by "
                        "default, naming the differing fingerprint fields); the report says so")


REGRESSIONS_HELP = """\
Detect level changes in every case's metrics across commits and print them:
deterministic metrics (counters, allocations) first, then timings. A timing
step is listed only when the samples on its two sides differ significantly,
and it counts as a regression only once a paired re-run confirmed it; the
others are listed apart as candidates.

--confirm re-measures the two commits around each unconfirmed timing step
with the gate (git worktrees of both, cold processes interleaved A B, B A, ...
on this machine), within --budget, and stores each outcome (confirmed, not
reproduced, unconfirmed) in the confirmations file beside the history, which
`ttfg report` reads.

exit codes:
  0  done (informational: regressions do not fail; use `ttfg gate` to fail CI)
  2  bad input (nothing written); asv result files that cannot be read (the
     steps of the rest are still listed, each file named, nothing confirmed;
     --skip-bad-history accepts the gap: 0); or with --confirm: some step's
     commit is missing from the repository (every other step was still
     re-measured and saved)
"""


def add_report_commands(sub) -> None:
    """Register ``report`` and ``regressions`` on the ``ttfg`` subparsers."""
    p = sub.add_parser(
        "report", help="write an HTML trend report with plots",
        description="Write one self-contained HTML file (plots embedded, nothing fetched, one small inline script for "
                    "answers on pointer or tap). It leads with the run given by --runs (its table, phase breakdown, "
                    "cold versus warm cache, where it ran) or, for a gate's folder (runs/gate/), the gate's verdict "
                    "and where the change went. History across commits (asv results: --results DIR; without --runs, "
                    "results/ by default) follows in a part of its own: summary, detected steps, trend plots per "
                    "model and metric. Study files (`ttfg study`) feed the Studies section. Prints the path written. "
                    "Exit 2 on bad input (nothing is written then), and when asv result files in the history cannot "
                    "be read: the report is built without them, naming each (--skip-bad-history: exit 0).")
    _common(p)
    p.add_argument("--out", default=DEFAULT_OUT, metavar="FILE", help=f"HTML file to write (default: {DEFAULT_OUT})")
    p.add_argument("--back", type=options.count(1, 10**7, "--back"), default=10, metavar="N",
                   help="the summary also compares with N commits back (default: 10)")
    p.add_argument("--asv-html", metavar="DIR",
                   help="asv site to link to (default: asv/ beside --out, i.e. reports/asv, when it has index.html)")
    p.add_argument("--commit-url", metavar="TEMPLATE",
                   help="link commits to their pages: an http(s) URL with {sha}, e.g. "
                        "'https://github.com/OWNER/REPO/commit/{sha}' (default: show_commit_url of asv.conf.json "
                        "when set, the hash appended)")
    p.add_argument("--releases", metavar="FILE",
                   help="draw a release sweep (ttfg releases' releases.json) instead: releases on the x axis")
    p.add_argument("--bisect", metavar="FILE",
                   help="draw a bisect (ttfg bisect's bisect.json) instead: its search path, each comparison's "
                        "evidence, the deciding metric across the range, the culprit and its repro command")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser(
        "regressions", help="list detected steps in the history (terminal table); --confirm re-measures them",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=REGRESSIONS_HELP)
    _common(p)
    p.add_argument("--only-regressions", action="store_true", help="leave improvements out")
    p.add_argument("--confirm", action="store_true",
                   help="re-measure the unconfirmed timing steps, paired, and store the outcomes")
    p.add_argument("--budget", type=options.duration("--budget"), default=fmt.Duration.parse("10m"),
                   metavar="DURATION",
                   help="wall-clock time for --confirm over all steps, e.g. 600, 90s, 10m, 1h (default: 10m)")
    p.add_argument("--max-steps", type=options.count(1, 10**6, "--max-steps"), metavar="N",
                   help="--confirm at most N steps (largest regressions first)")
    p.add_argument("--reconfirm", action="store_true",
                   help="with --confirm, re-measure steps that already have an outcome too")
    p.add_argument("--repo", default=".", metavar="DIR", help="the git repository of the history's commits (default: .)")
    p.add_argument("--confirm-dir", default="runs/confirm", metavar="DIR",
                   help="where --confirm keeps each gate run's results files (default: runs/confirm)")
    p.add_argument("--format", choices=("table", "json"), default="table",
                   help="table (default), or json: every step with its values in the metric's unit, for scripts")
    p.add_argument("--releases", metavar="FILE",
                   help="list the steps of a release sweep (ttfg releases' releases.json) instead")
    p.set_defaults(func=cmd_regressions)


def _inputs(args):
    """The use case's inputs from the command's options."""
    from ..app.report import Inputs

    return Inputs(runs=args.runs, results=args.results, last=args.last, threshold=args.threshold,
                  machine=args.machine, environment=args.environment, confirmations=args.confirmations,
                  force=getattr(args, "force", False), skip_bad_history=args.skip_bad_history)


def _print_notes(notes: list[str]) -> None:
    for note in notes:
        print(f"note: {note}", file=sys.stderr)


def _refuse_with_bisect(args) -> None:
    """``--bisect`` draws one document: the options that read a history, results files or a sweep are refused
    beside it, naming each (``--out`` and ``--commit-url`` apply)."""
    from ..errors import UsageError

    given = [flag for flag, on in (("--releases", args.releases), ("--runs", args.runs), ("--results", args.results),
                                   ("--last", args.last), ("--machine", args.machine),
                                   ("--environment", args.environment), ("--confirmations", args.confirmations),
                                   ("--asv-html", args.asv_html), ("--skip-bad-history", args.skip_bad_history),
                                   ("--force", args.force), ("--threshold", args.threshold != 0.05),
                                   ("--back", args.back != 10)) if on]
    if given:
        raise UsageError(f"--bisect draws a bisect's bisect.json; {', '.join(given)} "
                         f"{'reads' if len(given) == 1 else 'read'} a history, results files or a release sweep: "
                         "give one or the other")


def cmd_report(args) -> int:
    if args.bisect:
        _refuse_with_bisect(args)
        from .bisect import report_bisect

        return report_bisect(args)
    if args.releases:
        from .releases import report_releases

        return report_releases(args)
    from ..app.report import commit_url, report, write_page
    from ..errors import UsageError

    if args.back < 1:
        raise UsageError(f"--back must be >= 1, got {args.back}")
    from .outputs import not_an_input, output_file

    out = output_file(args.out, "--out", create_parents=True)
    not_an_input(out, "--out", [*args.runs, args.confirmations])
    url = commit_url(args.commit_url)
    analysed = report(_inputs(args))
    prepared = analysed.prepared
    _print_history_source(prepared)
    path = write_page(prepared, out, args.asv_html, back=args.back, threshold=args.threshold, commit_url=url)
    _print_notes(prepared.notes)
    print(report_line(prepared, analysed.with_history), file=sys.stderr)
    print(path)
    return 2 if analysed.gap else 0


def report_line(prepared, with_history: bool) -> str:
    """What the page leads with, in one line: the gate's decision, or the run; then the history's counts."""
    from ..present.regressions_views import step_counts
    from ..present.run_section import gate_section, the_run

    parts = []
    if prepared.gate:
        parts.append(gate_section(prepared.gate)["decision"])
    elif (run := the_run(prepared.runs)) is not None:
        parts.append(f"the run: {run.path.name if run.path else 'results'}, "
                     f"{fmt.plural(sum(1 for c in run.cases if not c.skipped), 'case')}")
    trends = prepared.trends
    if with_history or trends.n_commits >= 2 or not parts:
        parts.append(f"history: {fmt.plural(trends.n_commits, 'commit')}, {fmt.plural(len(trends.cases()), 'case')}, "
                     f"{step_counts(trends)}")
    return "; ".join(parts)


def _print_history_source(prepared) -> None:
    """Which machine's and environment's asv history the steps come from (several may be stored)."""
    history = prepared.history
    if history is not None and len(history.points):
        print(f"history: machine {history.machine or '?'}, environment {history.environment or '?'} "
              "(another: --machine, --environment)", file=sys.stderr)


def cmd_regressions(args) -> int:
    if args.releases:
        from ..errors import UsageError
        from .releases import list_release_steps

        ignored = [flag for flag, on in (("--confirm", args.confirm), ("--runs", args.runs),
                                         ("--results", args.results), ("--last", args.last),
                                         ("--budget", str(args.budget) != "10m")) if on]
        if ignored:  # each reads a commit history, which a release sweep is not
            raise UsageError(f"--releases lists a sweep's steps; {', '.join(ignored)} "
                             f"{'applies' if len(ignored) == 1 else 'apply'} to a commit history: give one or the other")
        return list_release_steps(args)
    import json

    from ..app.report import regressions
    from ..present import terminal
    from ..present.regressions_views import regressions_json, regressions_table, step_counts

    budget = args.budget.seconds if args.confirm else None
    analysed = regressions(_inputs(args), confirming=args.confirm)
    notes, prepared, gap = analysed.notes, analysed.prepared, analysed.gap
    confirming = args.confirm and not gap
    _print_history_source(prepared)
    code = 2 if gap else 0
    if args.format == "json":
        if confirming:
            code = _confirm(args, prepared, analysed.stored_path, budget, terminal.console(stderr=True))
        _print_notes(notes + prepared.notes)
        print(json.dumps(regressions_json(prepared, args.only_regressions, notes + prepared.notes, code), indent=1,
                         allow_nan=False))
        return code
    console = terminal.console()
    if confirming:
        code = _confirm(args, prepared, analysed.stored_path, budget, console)
    _print_notes(notes + prepared.notes)
    trends = prepared.trends
    counted, candidates = trends.counted(), trends.candidates()
    show = counted if not args.only_regressions or not len(counted) else counted[counted["kind"] == "regression"]
    if len(show):
        console.print(regressions_table(prepared, args.only_regressions))
        from ..app.report import bisect_ranges
        from ..present.regressions_views import bisect_hints

        for line in bisect_hints(bisect_ranges(prepared, args.repo)):  # a step wider than one commit: which one?
            console.print(line, highlight=False, markup=False, soft_wrap=True)
    if args.only_regressions and len(candidates):
        candidates = candidates[candidates["kind"] == "regression"]
    if len(candidates):
        console.print(regressions_table(prepared, args.only_regressions, candidates=True))
    console.print(f"{step_counts(trends)} in {len(trends.series)} series over {fmt.plural(trends.n_commits, 'commit')}",
                  highlight=False)
    return code


def _confirm(args, prepared, stored_path: Path, budget: float, console) -> int:
    """Re-measure the candidates (``app.report.confirm_steps``) under the confirmations file's lock; 2 when a
    commit was missing.

    The confirmations file has one writer: this run holds its lock from before the first
    gate run to the last save, so a second ``--confirm`` on the same file is refused
    (exit 2) before it measures, and reads what this one saved when it runs later.
    """
    from ..app.report import confirm_steps, repository
    from .config import project_dir
    from .outputs import holding, output_dir, output_file

    output_dir(args.confirm_dir, "--confirm-dir")
    output_file(stored_path, "--confirmations", create_parents=True)
    repo = repository(args.repo)

    def note(text: str) -> None:
        console.print(f"confirm: {text}", highlight=False)

    with holding([stored_path], "--confirmations"):
        done = confirm_steps(prepared, repo, budget, args.confirm_dir, stored_path, redo=args.reconfirm,
                             max_steps=args.max_steps, on_note=note,
                             project_dir=lambda: project_dir(args, Path(repo)) or "")
    if not done.found:
        console.print("confirm: no unconfirmed timing step to re-measure", highlight=False)
        return 0
    counts: dict[str, int] = {}
    for c in done.found:
        counts[c.status] = counts.get(c.status, 0) + 1
    console.print(f"confirm: {fmt.plural(len(done.found), 'step')}: "
                  + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) + f"; saved in {done.path}",
                  highlight=False)
    from ..present.untrusted import plain

    for c in done.found:  # why a step was not decided (a commit that lacks its case, no budget left): said here too
        if c.status == "unconfirmed" and c.reason:
            console.print(plain(f"confirm: {c.case} ({c.metric}), {c.commit_before[:10]} -> {c.commit_after[:10]}: "
                                f"unconfirmed, {c.reason}"), highlight=False)
    if done.missing:
        console.print(Text.assemble(("confirm", "red"), f": {fmt.plural(len(done.missing), 'gate run')} could not "
                                    "start because a commit is missing from the repository (exit 2); every other "
                                    "step was re-measured and saved"), highlight=False)
        return 2
    return 0


__all__ = ["add_report_commands", "cmd_regressions", "cmd_report"]
