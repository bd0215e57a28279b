"""``ttfg report`` and ``ttfg regressions``: the command-line side of the trend report.

Kept out of ``cli.py`` so the report can grow without touching the core commands;
``cli.build_parser`` calls :func:`add_report_commands` once. Nothing here imports an
AD framework, and heavy imports (pandas, matplotlib) happen only when a command runs.

History comes from asv results through ``ttfg.history.asv_results.load`` when that module
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
                   help="accept asv result files that cannot be read: exit 0 without them (default: they are left "
                        "out and named, the rest is still reported, and the exit code is 2, since the gap hides "
                        "commits and regressions)")
    p.add_argument("--machine", help="asv machine to show when the history holds several (default: the newest)")
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
        description="Write one self-contained HTML file (plots embedded, no scripts, nothing fetched): environment, "
                    "a summary per case, detected steps, trend plots per model and metric across commits, the "
                    "latest run's phase breakdown, allocation and counter trends, cold versus warm compile "
                    "cache, and the studies among the results files (`ttfg study`: effect charts, depth growth fits; "
                    "study files feed only that section). Prints the path written. Exit 2 on bad input (nothing "
                    "is written then), and when asv result files in the history cannot be read: the report is "
                    "built without them, naming each (--skip-bad-history: exit 0).")
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
    p.set_defaults(func=cmd_report)

    p = sub.add_parser(
        "regressions", help="list detected steps in the history (terminal table); --confirm re-measures them",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=REGRESSIONS_HELP)
    _common(p)
    p.add_argument("--only-regressions", action="store_true", help="leave improvements out")
    p.add_argument("--confirm", action="store_true",
                   help="re-measure the unconfirmed timing steps, paired, and store the outcomes")
    p.add_argument("--budget", default="10m", metavar="DURATION",
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


#: What ttfg writes besides results files, by the ``format`` field; a folder given to
#: ``--runs`` (a gate's ``--out-dir``) holds these beside base.json and head.json.
OTHER_OUTPUTS = {"ttfg-gate": "a gate outcome", "ttfg-comparison": "a comparison",
                 "ttfg-expectations-check": "an expectations check", "ttfg-explain": "an attribution (ttfg explain)"}


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
    """``(history frame or None, [Results], gap)`` from the command's arguments; notes say what was skipped.

    ``gap``: asv result files that could not be read were left out without ``--skip-bad-history``;
    the caller still reports the rest and exits 2.
    """
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
        return None, runs, False
    history = asv_results.load(folder, dropna=True, skip_bad=True)  # n/a values make no point
    skipped = history.attrs.get("skipped_files", [])
    for bad in skipped:
        notes.append(f"left out an unreadable history file, its commit missing from these trends: {bad}")
    gap = bool(skipped) and not args.skip_bad_history
    if gap:
        notes.append(f"exit 2: {len(skipped)} history file(s) in {folder}/ cannot be read; repair or remove them "
                     "(--skip-bad-history accepts the gap)")
    if not len(history):
        notes.append(f"asv history in {folder}/ is empty")
        return None, runs, gap
    return history, runs, gap


def confirmations_path(args) -> Path:
    from ..history import confirm

    return Path(args.confirmations) if args.confirmations else confirm.path_for(args.results or DEFAULT_RESULTS)


def load_confirmations(args) -> dict:
    from ..history import confirm

    return confirm.load(confirmations_path(args))


def commit_url(args) -> str | None:
    """``--commit-url``, checked; else asv.conf.json's ``show_commit_url`` (hash appended)."""
    from ..errors import UsageError

    if args.commit_url:
        if not args.commit_url.startswith(("https://", "http://")) or "{sha}" not in args.commit_url:
            raise UsageError(f"--commit-url {args.commit_url!r}: expected an http(s) URL with {{sha}}, e.g. "
                             "'https://github.com/OWNER/REPO/commit/{sha}'")
        return args.commit_url
    conf = Path("asv.conf.json")
    if conf.is_file():
        from ..history.asv_record import load_config

        try:
            url = load_config(conf).get("show_commit_url")
        except UsageError:
            return None
        if isinstance(url, str) and url.startswith(("https://", "http://")):
            return url
    return None


def _print_notes(notes: list[str]) -> None:
    for note in notes:
        print(f"note: {note}", file=sys.stderr)


def cmd_report(args) -> int:
    if args.releases:
        from .releases import report_releases

        return report_releases(args)
    from ..errors import UsageError
    from ..files import atomic_write_text
    from ..present.report import asv_link_for, prepare, render

    if args.back < 1:
        raise UsageError(f"--back must be >= 1, got {args.back}")
    from .outputs import output_file

    out = output_file(args.out, "--out", create_parents=True)
    url = commit_url(args)
    notes: list[str] = []
    history, runs, gap = load_inputs(args, notes)
    prepared = prepare(history, runs, last=args.last, threshold=args.threshold, machine=args.machine,
                       confirmations=load_confirmations(args))
    prepared.notes[:0] = notes
    html = render(prepared, asv_link=asv_link_for(out, args.asv_html), back=args.back, threshold=args.threshold,
                  commit_url=url)
    path = atomic_write_text(out, html)
    _print_notes(prepared.notes)
    print(f"{prepared.trends.n_commits} commit(s), {len(prepared.trends.cases())} case(s), {_counts(prepared.trends)}",
          file=sys.stderr)
    print(path)
    return 2 if gap else 0


def _counts(trends) -> str:
    text = f"{trends.n_regressions()} regression(s), {trends.n_improvements()} improvement(s)"
    n_cand = len(trends.candidates())
    return text + (f"; {n_cand} unconfirmed timing candidate(s), not counted" if n_cand else "")


def regressions_table(prepared, only_regressions: bool = False, candidates: bool = False):
    """Steps as a rich table: the counted ones (deterministic, confirmed), or the timing candidates."""
    from rich.markup import escape

    from .. import fmt
    from ..present.tables import case_cells, case_layout, fitted
    from ..history.points import metric

    trends = prepared.trends
    steps = trends.candidates() if candidates else trends.counted()
    if only_regressions and len(steps):
        steps = steps[steps["kind"] == "regression"]
    rows = list(steps.itertuples(index=False))
    varying, fixed = case_layout([r.case for r in rows])
    what = "candidates: timing steps not confirmed (not counted)" if candidates else "detected steps"
    title = f"{what} over {trends.n_commits} commit(s) ({prepared.source})"
    table = fitted(f"{title}: {fixed}" if fixed else title,
                   [("kind", "left"), ("status", "left"), *((c, "left") for c in varying), ("metric", "left"),
                    ("between commits", "left"), ("date", "left"), ("before", "right"), ("after", "right"),
                    ("change", "right"), ("p", "right")], label=2 + len(varying))
    for r in rows:
        info = metric(r.metric)
        style = ("red" if r.kind == "regression" else "green") if not candidates else "yellow"
        date = r.date_after.strftime("%Y-%m-%d") if hasattr(r.date_after, "strftime") and r.date_after == r.date_after else ""
        table.add_row(f"[{style}]{r.kind}[/]", escape(r.status), *(escape(c) for c in case_cells(r.case, varying)),
                      escape(info.brief),
                      escape(f"{r.label_before} → {r.label_after}"), date,
                      fmt.value(r.before, info.unit), fmt.value(r.after, info.unit), f"[{style}]{fmt.change(r.change)}[/]",
                      fmt.p_value(r.p_value) if r.p_value == r.p_value else "")
    return table


#: Version of ``ttfg regressions --format json``'s document.
REGRESSIONS_VERSION = 1


def regressions_json(prepared, only_regressions: bool, notes: list[str], exit_code: int = 0) -> dict:
    """Every step for scripts, unformatted (the metric's unit): the counted ones (deterministic,
    confirmed) and the timing candidates alike, each with its ``status``; ``regressions`` and
    ``improvements`` count only the counted ones, ``candidates`` the others."""

    from ..history.trends import STEP_COLUMNS
    from ..history.points import metric

    steps = prepared.trends.steps
    if only_regressions and len(steps):
        steps = steps[steps["kind"] == "regression"]

    from ..results.format import strict_json

    def plain(value):
        if hasattr(value, "isoformat"):
            return None if value != value else value.isoformat()
        return strict_json(value)

    rows = [{**{k: plain(v) for k, v in zip(STEP_COLUMNS, (getattr(r, c) for c in STEP_COLUMNS))},
             "unit": metric(r.metric).unit} for r in steps.itertuples(index=False)]
    trends = prepared.trends
    return {"format": "ttfg-regressions", "version": REGRESSIONS_VERSION, "exit_code": exit_code,
            "source": prepared.source, "commits": trends.n_commits, "series": len(trends.series),
            "regressions": trends.n_regressions(), "improvements": trends.n_improvements(),
            "candidates": len(trends.candidates()), "dismissed": trends.dismissed, "notes": notes, "steps": rows}


def cmd_regressions(args) -> int:
    if args.releases:
        from .releases import list_release_steps

        return list_release_steps(args)
    import json

    from ..decide.gate import parse_duration
    from ..present.report import prepare
    from ..present.tables import console as make_console

    budget = parse_duration(args.budget) if args.confirm else None  # bad input first, before any work
    notes: list[str] = []
    history, runs, gap = load_inputs(args, notes)
    if gap and args.confirm:
        notes.append("not confirming: re-measuring steps next to a missing commit could confirm the gap")
    confirming = args.confirm and not gap
    stored_path = confirmations_path(args)
    stored = load_confirmations(args)
    prepared = prepare(history, runs, last=args.last, threshold=args.threshold, machine=args.machine,
                       confirmations=stored)
    code = 2 if gap else 0
    if args.format == "json":
        if confirming:
            code = _confirm(args, prepared, stored, stored_path, budget, make_console(stderr=True))
        _print_notes(notes + prepared.notes)
        print(json.dumps(regressions_json(prepared, args.only_regressions, notes + prepared.notes, code), indent=1,
                         allow_nan=False))
        return code
    console = make_console()
    if confirming:
        code = _confirm(args, prepared, stored, stored_path, budget, console)
    _print_notes(notes + prepared.notes)
    trends = prepared.trends
    counted, candidates = trends.counted(), trends.candidates()
    show = counted if not args.only_regressions or not len(counted) else counted[counted["kind"] == "regression"]
    if len(show):
        console.print(regressions_table(prepared, args.only_regressions))
    if args.only_regressions and len(candidates):
        candidates = candidates[candidates["kind"] == "regression"]
    if len(candidates):
        console.print(regressions_table(prepared, args.only_regressions, candidates=True))
    console.print(f"{_counts(trends)} in {len(trends.series)} series over {trends.n_commits} commit(s)",
                  highlight=False)
    return code


def _confirm(args, prepared, stored: dict, stored_path: Path, budget: float, console) -> int:
    """Re-measure the candidates, store the outcomes, re-apply them; 2 when a commit was missing."""
    from ..history import confirm
    from ..measure.worktrees import repo_root

    from .outputs import output_dir

    output_dir(args.confirm_dir, "--confirm-dir")
    repo = repo_root(args.repo)
    missing: list[str] = []

    def note(text: str) -> None:
        console.print(f"confirm: {text}", highlight=False)
        if text.startswith("cannot confirm"):
            missing.append(text)

    found = confirm.confirm(prepared.trends, repo, budget, args.confirm_dir, redo=args.reconfirm,
                            max_steps=args.max_steps, on_note=note)
    if not found:
        console.print("confirm: no unconfirmed timing step to re-measure", highlight=False)
        return 0
    merged = confirm.merge(stored, found)
    path = confirm.save(stored_path, merged)
    confirm.apply(prepared.trends, merged)
    counts: dict[str, int] = {}
    for c in found:
        counts[c.status] = counts.get(c.status, 0) + 1
    console.print(f"confirm: {len(found)} step(s): " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
                  + f"; saved in {path}", highlight=False)
    if missing:
        console.print(f"[red]confirm[/]: {len(missing)} gate run(s) could not start because a commit is missing "
                      "from the repository (exit 2); every other step was re-measured and saved", highlight=False)
        return 2
    return 0


__all__ = ["add_report_commands", "cmd_regressions", "cmd_report", "load_inputs", "regressions_json",
           "regressions_table"]
