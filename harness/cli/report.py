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

from rich.text import Text

from . import options
from .. import fmt

DEFAULT_RESULTS = "results"
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
    from ..results.jsonfile import sniff_format

    return OTHER_OUTPUTS.get(sniff_format(path))


GATE_KIND = OTHER_OUTPUTS["ttfg-gate"]


def _run_files(paths: list[str], notes: list[str] | None = None, gates: list[Path] | None = None) -> list[Path]:
    """Results files named directly or found in folders; a folder's other ttfg outputs
    (gate.json and the like) are skipped by kind, with a note. A gate's outcome goes to
    ``gates`` when given (the report states its verdict), else it is skipped like the others."""
    from ..errors import UsageError

    files: list[Path] = []
    for name in paths:
        path = Path(name)
        if path.is_dir():
            found = []
            for candidate in sorted(path.glob("*.json")):
                kind = _output_kind(candidate)
                if kind == GATE_KIND and gates is not None:
                    gates.append(candidate)
                elif kind:
                    if notes is not None:
                        notes.append(f"{candidate}: {kind}, not a results file; skipped")
                    continue
                else:
                    found.append(candidate)
            if not found:
                raise UsageError(f"{path}: folder holds no results files (*.json)")
            files += found
        elif gates is not None and path.is_file() and _output_kind(path) == GATE_KIND:
            gates.append(path)
        else:
            files.append(path)  # a missing file is reported by record.load, by name
    return files


def load_gate(paths: list[Path]) -> dict | None:
    """The newest gate outcome among ``paths`` (``gate.json``), read as JSON; bad input names the file."""
    import json

    from ..errors import UsageError

    docs = []
    for path in paths:
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise UsageError(f"{path}: cannot read the gate's outcome: {exc}") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("cases"), list):
            raise UsageError(f"{path}: cases: expected a list of gated cases")
        docs.append((path.stat().st_mtime, doc))
    return max(docs, key=lambda d: d[0])[1] if docs else None


def load_inputs(args, notes: list[str], gates: list[Path] | None = None, history_with_runs: bool = True):
    """``(history frame or None, [Results], gap)`` from the command's arguments; notes say what was skipped.

    ``gap``: asv result files that could not be read were left out without ``--skip-bad-history``;
    the caller still reports the rest and exits 2. ``gates``: receives the gate outcomes found
    among ``--runs``. ``history_with_runs``: read the default ``results/`` even when ``--runs``
    were given (``ttfg regressions``); the report reads it then only when ``--results`` asks.
    """
    from ..errors import UsageError
    from ..history import asv_results
    from ..results.record import load

    from ..results.machines import check_machines

    runs = [load(path) for path in _run_files(args.runs, notes, gates)]
    measured = [r for r in runs if r.study is None]  # a study's file only feeds its own section
    if len(measured) > 1:
        notes += check_machines([(str(r.path), r.fingerprint) for r in measured], "timings",
                                getattr(args, "force", False), action="report")
    folder = Path(args.results or default_results())
    if not args.results and args.runs and not history_with_runs:
        if folder.is_dir():
            notes.append(f"the asv history in {folder}/ is not shown (it may come from another machine): "
                         f"--results {folder} adds it, in a part of its own below the run")
        return None, runs, False
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
        notes.append(f"exit 2: {fmt.plural(len(skipped), 'history file')} in {folder}/ cannot be read; repair or remove them "
                     "(--skip-bad-history accepts the gap)")
    if not len(history):
        if skipped and not runs:  # nothing left to report: the files left out are the whole story
            raise asv_results.HistoryError(f"nothing to report: every history file in {folder}/ was left out: "
                                           + "; ".join(skipped))
        notes.append(f"asv history in {folder}/ is empty")
        return None, runs, gap
    return history, runs, gap


def default_results() -> str:
    """The asv results folder when ``--results`` is not given: ``results_dir`` of ./asv.conf.json (what
    ``ttfg init`` writes says ``.asv/results``), else ``results``."""
    conf = Path("asv.conf.json")
    if conf.is_file():
        from ..errors import UsageError
        from ..history.asv_record import load_config

        try:
            folder = load_config(conf).get("results_dir")
        except UsageError:
            folder = None
        if isinstance(folder, str) and folder:
            return folder
    return DEFAULT_RESULTS


def confirmations_path(args) -> Path:
    from ..history import confirm

    return Path(args.confirmations) if args.confirmations else confirm.path_for(args.results or default_results())


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
    from .outputs import not_an_input, output_file

    out = output_file(args.out, "--out", create_parents=True)
    not_an_input(out, "--out", [*args.runs, args.confirmations])
    url = commit_url(args)
    notes: list[str] = []
    gates: list[Path] = []
    history, runs, gap = load_inputs(args, notes, gates, history_with_runs=False)
    gate = load_gate(gates)
    prepared = prepare(history, runs, last=args.last, threshold=args.threshold, machine=args.machine,
                       confirmations=load_confirmations(args), gate=gate, environment=args.environment)
    prepared.notes[:0] = notes
    _print_history_source(prepared)
    html = render(prepared, asv_link=asv_link_for(out, args.asv_html), back=args.back, threshold=args.threshold,
                  commit_url=url)
    path = atomic_write_text(out, html)
    _print_notes(prepared.notes)
    print(report_line(prepared, history is not None), file=sys.stderr)
    print(path)
    return 2 if gap else 0


def report_line(prepared, with_history: bool) -> str:
    """What the page leads with, in one line: the gate's decision, or the run; then the history's counts."""
    from .. import fmt
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
                     f"{_counts(trends)}")
    return "; ".join(parts)


def _print_history_source(prepared) -> None:
    """Which machine's and environment's asv history the steps come from (several may be stored)."""
    history = prepared.history
    if history is not None and len(history.points):
        print(f"history: machine {history.machine or '?'}, environment {history.environment or '?'} "
              "(another: --machine, --environment)", file=sys.stderr)


def _counts(trends) -> str:
    from .. import fmt

    text = f"{fmt.plural(trends.n_regressions(), 'regression')}, {fmt.plural(trends.n_improvements(), 'improvement')}"
    n_cand = len(trends.candidates())
    return text + (f"; {fmt.plural(n_cand, 'unconfirmed timing candidate')}, not counted" if n_cand else "")


def regressions_table(prepared, only_regressions: bool = False, candidates: bool = False):
    """Steps as a rich table: the counted ones (deterministic, confirmed), or the timing candidates."""
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
    title = f"{what} over {fmt.plural(trends.n_commits, 'commit')} ({prepared.source})"
    table = fitted(f"{title}: {fixed}" if fixed else title,
                   [("kind", "left"), ("status", "left"), *((c, "left") for c in varying), ("metric", "left"),
                    ("between commits", "left"), ("date", "left"), ("before", "right"), ("after", "right"),
                    ("change", "right"), ("p", "right")], label=2 + len(varying))
    for r in rows:
        info = metric(r.metric)
        style = ("red" if r.kind == "regression" else "green") if not candidates else "yellow"
        date = r.date_after.strftime("%Y-%m-%d") if hasattr(r.date_after, "strftime") and r.date_after == r.date_after else ""
        table.add_row(Text(r.kind, style=style), r.status, *case_cells(r.case, varying), info.brief,
                      f"{r.label_before} → {r.label_after}", date,
                      fmt.value(r.before, info.unit), fmt.value(r.after, info.unit), Text(fmt.change(r.change), style=style),
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

    from ..fmt import parse_duration
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
                       confirmations=stored, environment=args.environment)
    _print_history_source(prepared)
    code = 2 if gap else 0
    if args.format == "json":
        if confirming:
            code = _confirm(args, prepared, stored_path, budget, make_console(stderr=True))
        _print_notes(notes + prepared.notes)
        print(json.dumps(regressions_json(prepared, args.only_regressions, notes + prepared.notes, code), indent=1,
                         allow_nan=False))
        return code
    console = make_console()
    if confirming:
        code = _confirm(args, prepared, stored_path, budget, console)
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
    console.print(f"{_counts(trends)} in {len(trends.series)} series over {fmt.plural(trends.n_commits, 'commit')}",
                  highlight=False)
    return code


def _confirm(args, prepared, stored_path: Path, budget: float, console) -> int:
    """Re-measure the candidates, storing the outcomes after each gate run; re-apply them; 2 when a commit was missing.

    The confirmations file has one writer: this run holds its lock from before the first
    gate run to the last save, so a second ``--confirm`` on the same file is refused
    (exit 2) before it measures, and reads what this one saved when it runs later.
    """
    from ..history import confirm
    from ..measure.worktrees import repo_root

    from .outputs import holding, output_dir, output_file

    output_dir(args.confirm_dir, "--confirm-dir")
    output_file(stored_path, "--confirmations", create_parents=True)
    repo = repo_root(args.repo)
    missing: list[str] = []

    def note(text: str) -> None:
        console.print(f"confirm: {text}", highlight=False)
        if text.startswith("cannot confirm"):
            missing.append(text)

    with holding([stored_path], "--confirmations"):
        saved = {"entries": confirm.load(stored_path), "path": stored_path}  # under the lock: the latest on disk

        def save(new: list) -> None:
            saved["entries"] = confirm.merge(saved["entries"], new)
            saved["path"] = confirm.save(stored_path, saved["entries"])

        from .config import project_dir

        found = confirm.confirm(prepared.trends, repo, budget, args.confirm_dir, redo=args.reconfirm,
                                max_steps=args.max_steps, on_note=note, on_done=save,
                                project_dir=project_dir(args, Path(repo)) or "")
    if not found:
        console.print("confirm: no unconfirmed timing step to re-measure", highlight=False)
        return 0
    merged, path = saved["entries"], saved["path"]
    confirm.apply(prepared.trends, merged)
    counts: dict[str, int] = {}
    for c in found:
        counts[c.status] = counts.get(c.status, 0) + 1
    console.print(f"confirm: {fmt.plural(len(found), 'step')}: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
                  + f"; saved in {path}", highlight=False)
    if missing:
        console.print(Text.assemble(("confirm", "red"), f": {fmt.plural(len(missing), 'gate run')} could not start "
                                    "because a commit is missing from the repository (exit 2); every other step was "
                                    "re-measured and saved"), highlight=False)
        return 2
    return 0


__all__ = ["add_report_commands", "cmd_regressions", "cmd_report", "load_inputs", "regressions_json",
           "regressions_table"]
