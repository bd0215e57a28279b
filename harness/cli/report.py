"""``ttfg report`` and ``ttfg regressions``: the command-line side of the trend report.

Kept out of ``cli.py`` so the report can grow without touching the core commands;
``cli.build_parser`` calls :func:`add_report_commands` once. Nothing here imports an
AD framework, and heavy imports (pandas, matplotlib) happen only when a command runs.

History comes from asv results through ``harness.history.asv_results.load`` when that module
exists and the results folder does; either may be missing, and the commands then say
so and work from results files alone.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import options

DEFAULT_RESULTS = "results"
DEFAULT_OUT = "reports/index.html"


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--results", metavar="DIR",
                   help=f"asv results folder with the history across commits (default: {DEFAULT_RESULTS}/ when it "
                        "exists; without it, trends come from --runs)")
    p.add_argument("--runs", nargs="+", action="extend", default=[], metavar="FILE",
                   help="ttfg results files (from `ttfg run --out FILE`) or folders of them; without history each "
                        "file is one commit")
    p.add_argument("--last", type=options.count(1, 10**7, "--last"), metavar="N", help="only the newest N commits")
    p.add_argument("--threshold", type=options.threshold, default=0.05, metavar="FRACTION",
                   help="smallest relative step reported (default: 0.05; counters use at most 0.01)")
    p.add_argument("--skip-bad-history", action="store_true",
                   help="leave out asv result files that cannot be read, listing each (default: such a file is an "
                        "error, exit 2, since dropping it would hide commits and regressions)")
    p.add_argument("--machine", help="asv machine to show when the history holds several (default: the newest)")
    p.add_argument("--force", action="store_true",
                   help="show timings of results files measured on different machines side by side (refused by "
                        "default, naming the differing fingerprint fields); the report says so")


def add_report_commands(sub) -> None:
    """Register ``report`` and ``regressions`` on the ``ttfg`` subparsers."""
    p = sub.add_parser(
        "report", help="write an HTML trend report with plots",
        description="Write one self-contained HTML file (plots embedded, no scripts, nothing fetched): environment, "
                    "a summary per case, detected steps, trend plots per model and metric across commits, the "
                    "latest run's phase breakdown, allocation and counter trends, cold versus warm compile "
                    "cache, and the studies among the results files (`ttfg study`: effect charts, depth growth fits; "
                    "study files feed only that section). Prints the path written. Exit 2 on bad input (nothing "
                    "is written then).")
    _common(p)
    p.add_argument("--out", default=DEFAULT_OUT, metavar="FILE", help=f"HTML file to write (default: {DEFAULT_OUT})")
    p.add_argument("--back", type=options.count(1, 10**7, "--back"), default=10, metavar="N",
                   help="the summary also compares with N commits back (default: 10)")
    p.add_argument("--asv-html", metavar="DIR",
                   help="asv site to link to (default: asv/ beside --out, i.e. reports/asv, when it has index.html)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser(
        "regressions", help="list detected steps in the history (terminal table)",
        description="Detect level changes in every case's metrics across commits and print them, regressions first "
                    "(largest first). Informational: exit 0 whether or not regressions are found (use `ttfg gate` "
                    "to fail CI); exit 2 on bad input.")
    _common(p)
    p.add_argument("--only-regressions", action="store_true", help="leave improvements out")
    p.add_argument("--format", choices=("table", "json"), default="table",
                   help="table (default), or json: every step with its values in the metric's unit, for scripts")
    p.set_defaults(func=cmd_regressions)


#: What ttfg writes besides results files, by the ``format`` field; a folder given to
#: ``--runs`` (a gate's ``--out-dir``) holds these beside base.json and head.json.
OTHER_OUTPUTS = {"ttfg-gate": "a gate outcome", "ttfg-comparison": "a comparison",
                 "ttfg-expectations-check": "an expectations check"}


def _output_kind(path: Path) -> str | None:
    """The kind of a ttfg output that is not a results file, read from its first bytes."""
    import re

    try:
        with path.open("rb") as fh:
            head = fh.read(4096).decode("utf-8", "replace")
    except OSError:
        return None
    match = re.search(r'"format"\s*:\s*"([^"]+)"', head)
    return OTHER_OUTPUTS.get(match.group(1)) if match else None


def _run_files(paths: list[str], notes: list[str] | None = None) -> list[Path]:
    """Results files named directly or found in folders; a folder's other ttfg outputs
    (gate.json and the like) are skipped by kind, with a note."""
    from ..errors import UsageError

    files: list[Path] = []
    for name in paths:
        path = Path(name)
        if path.is_dir():
            found = []
            for candidate in sorted(path.glob("*.json")):
                kind = _output_kind(candidate)
                if kind:
                    if notes is not None:
                        notes.append(f"{candidate}: {kind}, not a results file; skipped")
                    continue
                found.append(candidate)
            if not found:
                raise UsageError(f"{path}: folder holds no results files (*.json)")
            files += found
        else:
            files.append(path)  # a missing file is reported by record.load, by name
    return files


def load_inputs(args, notes: list[str]):
    """``(history frame or None, [Results])`` from the command's arguments; notes say what was skipped."""
    from ..errors import UsageError
    from ..history import asv_results
    from ..results.record import load

    from ..results.machines import check_machines

    runs = [load(path) for path in _run_files(args.runs, notes)]
    measured = [r for r in runs if r.study is None]  # a study's file only feeds its own section
    if len(measured) > 1:
        notes += check_machines([(str(r.path), r.fingerprint) for r in measured], "timings",
                                getattr(args, "force", False), action="report")
    folder = Path(args.results or DEFAULT_RESULTS)
    if not folder.is_dir():
        if args.results:
            raise UsageError(f"--results {folder}: no such folder")
        notes.append(f"no asv history ({folder}/ does not exist); trends come from the results files")
        return None, runs
    history = asv_results.load(folder, dropna=True, skip_bad=args.skip_bad_history)  # n/a values make no point
    for bad in history.attrs.get("skipped_files", []):
        notes.append(f"skipped a bad history file (--skip-bad-history): {bad}")
    if history is None or not len(history):
        notes.append(f"asv history in {folder}/ is empty")
        return None, runs
    return history, runs


def _print_notes(notes: list[str]) -> None:
    for note in notes:
        print(f"note: {note}", file=sys.stderr)


def cmd_report(args) -> int:
    from ..errors import UsageError
    from ..files import atomic_write_text
    from ..present.report import asv_link_for, prepare, render

    if args.back < 1:
        raise UsageError(f"--back must be >= 1, got {args.back}")
    from .outputs import output_file

    out = output_file(args.out, "--out", create_parents=True)
    notes: list[str] = []
    history, runs = load_inputs(args, notes)
    prepared = prepare(history, runs, last=args.last, threshold=args.threshold, machine=args.machine)
    prepared.notes[:0] = notes
    html = render(prepared, asv_link=asv_link_for(out, args.asv_html), back=args.back, threshold=args.threshold)
    path = atomic_write_text(out, html)
    _print_notes(prepared.notes)
    steps = prepared.trends.steps
    n_reg = int((steps["kind"] == "regression").sum()) if len(steps) else 0
    print(f"{prepared.trends.n_commits} commit(s), {len(prepared.trends.cases())} case(s), "
          f"{n_reg} regression(s), {len(steps) - n_reg} improvement(s) detected", file=sys.stderr)
    print(path)
    return 0


def regressions_table(prepared, only_regressions: bool = False):
    """The detected steps as a rich table (regressions first, largest first)."""
    from rich.markup import escape

    from ..present import fmt
    from ..present.tables import case_cells, case_layout, fitted
    from ..history.points import metric

    steps = prepared.trends.steps
    if only_regressions and len(steps):
        steps = steps[steps["kind"] == "regression"]
    rows = list(steps.itertuples(index=False))
    varying, fixed = case_layout([r.case for r in rows])
    title = f"detected steps over {prepared.trends.n_commits} commit(s) ({prepared.source})"
    table = fitted(f"{title}: {fixed}" if fixed else title,
                   [("kind", "left"), *((c, "left") for c in varying), ("metric", "left"),
                    ("between commits", "left"), ("date", "left"), ("before", "right"), ("after", "right"),
                    ("change", "right")], label=1 + len(varying))
    for r in rows:
        info = metric(r.metric)
        style = "red" if r.kind == "regression" else "green"
        date = r.date_after.strftime("%Y-%m-%d") if hasattr(r.date_after, "strftime") and r.date_after == r.date_after else ""
        table.add_row(f"[{style}]{r.kind}[/]", *(escape(c) for c in case_cells(r.case, varying)), escape(info.brief),
                      escape(f"{r.label_before} → {r.label_after}"), date,
                      fmt.value(r.before, info.unit), fmt.value(r.after, info.unit), f"[{style}]{fmt.change(r.change)}[/]")
    return table


#: Version of ``ttfg regressions --format json``'s document.
REGRESSIONS_VERSION = 1


def regressions_json(prepared, only_regressions: bool, notes: list[str]) -> dict:
    """The detected steps for scripts: every column of the table, unformatted (the metric's unit)."""
    import math

    from ..history.trends import STEP_COLUMNS
    from ..history.points import metric

    steps = prepared.trends.steps
    if only_regressions and len(steps):
        steps = steps[steps["kind"] == "regression"]

    def plain(value):
        if hasattr(value, "isoformat"):
            return None if value != value else value.isoformat()
        if hasattr(value, "item"):
            value = value.item()
        return None if isinstance(value, float) and not math.isfinite(value) else value

    rows = [{**{k: plain(v) for k, v in zip(STEP_COLUMNS, (getattr(r, c) for c in STEP_COLUMNS))},
             "unit": metric(r.metric).unit} for r in steps.itertuples(index=False)]
    every = prepared.trends.steps
    return {"format": "ttfg-regressions", "version": REGRESSIONS_VERSION, "exit_code": 0, "source": prepared.source,
            "commits": prepared.trends.n_commits, "series": len(prepared.trends.series),
            "regressions": int((every["kind"] == "regression").sum()) if len(every) else 0,
            "improvements": int((every["kind"] != "regression").sum()) if len(every) else 0,
            "notes": notes, "steps": rows}


def cmd_regressions(args) -> int:
    import json

    from ..present.report import prepare
    from ..present.tables import console as make_console

    notes: list[str] = []
    history, runs = load_inputs(args, notes)
    prepared = prepare(history, runs, last=args.last, threshold=args.threshold, machine=args.machine)
    _print_notes(notes + prepared.notes)
    if args.format == "json":
        print(json.dumps(regressions_json(prepared, args.only_regressions, notes + prepared.notes), indent=1,
                         allow_nan=False))
        return 0
    console = make_console()
    steps = prepared.trends.steps
    n_reg = int((steps["kind"] == "regression").sum()) if len(steps) else 0
    if len(steps) and not (args.only_regressions and not n_reg):
        console.print(regressions_table(prepared, args.only_regressions))
    console.print(f"{n_reg} regression(s), {len(steps) - n_reg} improvement(s) in "
                  f"{len(prepared.trends.series)} series over {prepared.trends.n_commits} commit(s)", highlight=False)
    return 0


__all__ = ["add_report_commands", "cmd_regressions", "cmd_report", "load_inputs", "regressions_json",
           "regressions_table"]
