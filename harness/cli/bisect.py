"""The ``bisect`` subcommand: argument parsing and output only.

The search is a use case (``app/bisect.py``) over a pure policy (``decide/bisect.py``);
this module turns options into a request and the report into lines. The gate's case
selection, budget and decision options are added by the same functions that add them to
the gate (``cli/common_args.py``), so their help, defaults and validation cannot drift apart.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.text import Text

from ..present.untrusted import plain
from .help_text import fill

HELP = """\
Find the commit between --good and --bad where a case got slower (or, with
--improvement, faster).

The range is bad's first-parent line back to good (git rev-list --first-parent
good..bad); a merge on it is tested as one commit and the output says so. The ends
are compared first: ends that do not differ have no culprit ("no step", exit 0); a
"bad" end faster than the "good" one is refused (exit 2, try --improvement). Each
step compares one commit with the nearest good commit and, when that is not enough,
with the nearest bad one, each comparison a gate with the gate's tiers in order
(structural counters settle it in one pair a side, wall time only where nothing
cheaper can), within --budget per comparison. A step ends "same as good", "same as
bad", "differs from both" (two steps: the larger is searched, the other's range is
named with its command), "a turn" (slower than one end and faster than the other:
the step into it and the step out of it are both searched and named, each with its
ttfg gate command, exit 1) or "not yet known" (tried again, --retries, then set aside
and said so; raising --budget is advised only where more time can decide). A commit
that cannot be installed, imported or run is skipped, as git bisect skip does, and
listed.

Installs and environments come from the gate's caches (each commit built once). A
commit's instruction counts are taken once and reused by every later comparison
that involves it (counts.json, same environment and settings; never wall time). The
state is bisect.json in --out-dir, saved after every step: a rerun of the same
command continues after Ctrl-C or SIGTERM, and shows a finished bisect again at once.
summary.md beside it has the conclusion and the search path.

The state records every setting its answer depends on (the cases, --tiers, --metric,
--min-effect, --alpha, --budget and the rest of the decision options,
--improvement): a rerun on that --out-dir with any of them different is refused
(exit 2), naming each setting stored and asked; choose another --out-dir, or move
bisect.json and counts.json away to start afresh. An unfinished state (stopped,
interrupted, undecided) continues under a new --budget, --total-budget or --retries.
A state written by an older ttfg, without its settings, is refused naming them.

On Ctrl-C or SIGTERM, bisect.json (status "interrupted") and summary.md are written
and name the signal. Worktrees ttfg adds are marked as its own; a run killed
outright leaves them, and the next bisect or gate removes them (git worktree prune,
only marked ones, never yours) and says how many. Control characters in commit
subjects and in files are shown escaped, in the terminal and in summary.md.
"""


def _exit_codes() -> str:
    import textwrap

    lines = ["exit codes:"]
    for code, text in (("0", "no step between the ends"), ("1", "a culprit found (or the few commits that hide it)"),
                       ("2", "broken input (a missing revision, a dirty tree, ends swapped, a foreign or corrupt "
                             "state file, a state of other settings), a budget too small to decide, a stop or an "
                             "interruption by SIGINT or SIGTERM (steps done are kept)")):
        lines += textwrap.wrap(text, 78, initial_indent=f"  {code}  ", subsequent_indent="     ")
    return "\n".join(lines) + "\n"


def add_bisect_command(sub) -> None:
    """Register ``bisect`` on the ``ttfg`` subparsers."""
    from . import options
    from .common_args import COMPARED_BACKEND, add_decision, add_environments, add_revisions, add_selection

    p = sub.add_parser("bisect", help="find the commit where a case got slower, a paired gate per step",
                       description=fill(HELP), formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_exit_codes())
    p.add_argument("--good", required=True, metavar="REV", help="a revision before the change (the older end)")
    p.add_argument("--bad", required=True, metavar="REV", help="a revision after it (the newer end)")
    p.add_argument("--improvement", action="store_true",
                   help="search for the commit that made it faster (good: the slower older end)")
    p.add_argument("--total-budget", type=options.duration("--total-budget"), default=None, metavar="DURATION",
                   help="wall time for the whole search, e.g. 30m (default: none; --budget bounds each comparison); "
                        "when spent the bisect stops, and a rerun continues")
    p.add_argument("--retries", type=options.count(0, 10, "--retries"), default=1, metavar="N",
                   help="comparisons more for a commit still not known after one, before it is set aside (default: 1)")
    p.add_argument("--out-dir", default="runs/bisect", metavar="DIR",
                   help="state and results: bisect.json, summary.md, steps/ (default: runs/bisect)")
    p.add_argument("--format", choices=("table", "json"), default="table",
                   help="what stdout gets at the end: the table (default) or bisect.json's document")
    p.add_argument("--no-count-store", action="store_true",
                   help="count every comparison's base afresh: neither read nor fill the gate's count store (by "
                        "default a stored base count of the exact key is used once the head's fresh count agrees "
                        "with it, and the counts taken are kept; $TTFG_COUNT_STORE_DIR, else counts/ in the cache "
                        "folder)")
    add_revisions(p)  # each comparison is a gate: the gate's options, from the functions that add them to it
    add_decision(p)
    add_environments(p)
    add_selection(p, default_model="resnet15", backend_help=COMPARED_BACKEND)
    p.set_defaults(func=cmd_bisect)


def _repro_args(args) -> list[str]:
    """The selection and the options that change a verdict, where they differ from the gate's defaults, for the
    repro commands."""
    out = []
    for flag, dest in (("--model", "model"), ("--backend", "backend"), ("--variant", "variant")):
        for value in getattr(args, dest) or []:
            out += [flag, value]
    from .common_args import add_decision

    gate = argparse.ArgumentParser(add_help=False)  # the gate's decision options, for their defaults
    add_decision(gate)
    for flag, dest in (("--tiers", "tiers"), ("--budget", "budget"), ("--metric", "metric"),
                       ("--min-effect", "min_effect")):
        value, default = getattr(args, dest, None), gate.get_default(dest)
        shown = ",".join(value) if isinstance(value, tuple) else None if value is None else str(value)
        if shown is not None and shown != str(default):
            out += [flag, shown]
    return out


class _PrintedEvents:
    """The bisect's progress, one line each; text from git or a file through ``plain`` (control characters
    escaped, as everywhere in this command's output)."""

    def __init__(self, console):
        self.console = console

    def note(self, text: str) -> None:
        self.console.print(plain(text), highlight=False, markup=False, no_wrap=True, overflow="ellipsis")

    def step(self, commit, probe, index, expected) -> None:
        from ..present.bisect_views import comparison_text, step_line

        self.console.print(step_line(commit, probe, index, expected), highlight=False)
        for e in probe.evidence:
            self.console.print("  " + plain(comparison_text(e)), highlight=False, markup=False, soft_wrap=True)


def cmd_bisect(args) -> int:
    from .config import project_dir
    from .outputs import holding, output_dir
    from .selection import runnable_selection
    from ..app import bisect as use_case
    from .gate import decision_settings
    from ..present.bisect_views import conclusion_lines, path_table, range_line
    from ..present.terminal import console as make_console
    from ..results.bisect_counts_file import COUNTS

    as_data = args.format == "json"
    console = make_console(stderr=as_data)
    total = args.total_budget.seconds if args.total_budget is not None else None
    output_dir(args.out_dir, "--out-dir", files=(use_case.STATE, use_case.SUMMARY, COUNTS))
    settings = decision_settings(args, allocations=False, alloc_repeat=1)
    if args.backend is None:
        args.backend = ["jax.jit"]
    args.pending_models = True  # a model the bad end adds is resolved from its install (app/bisect.py's _provided)
    cases, skipped = runnable_selection(args, console, "bisect")
    if not cases:
        return 2
    request = use_case.BisectRequest(
        repo=Path(args.repo), good=args.good, bad=args.bad, cases=cases, skipped=skipped, settings=settings,
        out_dir=Path(args.out_dir), allow_dirty=args.allow_dirty, envs=args.envs,
        project_dir=project_dir(args, Path(args.repo)) or "", total_budget_s=total, retries=args.retries,
        improvement=args.improvement, repro_args=_repro_args(args), count_store=not args.no_count_store)
    Path(args.out_dir).mkdir(parents=True, exist_ok=True)  # a folder not made yet would hold no lock
    with holding([Path(args.out_dir) / use_case.STATE], "--out-dir"):  # one bisect at a time in a folder
        report = use_case.run(request, _PrintedEvents(console))
    doc = report.document
    if report.from_state:
        console.print(f"finished before: shown from {report.files['state']} (nothing measured; move it away to "
                      "measure again)", highlight=False)
    console.print(plain(range_line(doc)), highlight=False, markup=False, soft_wrap=True)
    if doc.get("probes") or doc.get("ends"):
        console.print(path_table(doc))
    for i, line in enumerate(conclusion_lines(doc)):
        style = "red" if i == 0 and report.status in ("swapped", "undecided", "end cannot run", "interrupted") else None
        console.print(Text(plain(line), style=style or ""), highlight=False, soft_wrap=True)
    console.print(f"results in {request.out_dir}/ (bisect.json, summary.md)", highlight=False)
    if as_data:
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
    return report.code


def report_bisect(args) -> int:
    """``ttfg report --bisect FILE``: the bisect's page, drawn from its ``bisect.json`` (nothing measured)."""
    from ..app.report import commit_url
    from ..files import atomic_write_text
    from ..present.bisect_page import bisect_page
    from ..results.bisect_file import load_bisect
    from .outputs import not_an_input, output_file

    out = output_file(args.out, "--out", create_parents=True)
    not_an_input(args.out, "--out", [args.bisect])  # --out X --bisect X would replace the bisect with its page
    url = commit_url(args.commit_url)
    doc = load_bisect(args.bisect)
    atomic_write_text(out, bisect_page(doc, url))
    print(out)
    return 0


__all__ = ["add_bisect_command", "cmd_bisect", "report_bisect"]
