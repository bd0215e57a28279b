"""``ttfg check``, ``run``, ``show`` and ``study``: measuring cases, parsed and printed.

The use cases are ``app/check.py``, ``app/run.py`` and ``app/study.py``; this module turns
options into their requests, draws progress, and prints the tables and the closing lines.
"""

from __future__ import annotations

import contextlib

from rich.text import Text

from . import options
from .common_args import add_env, add_repeat, add_selection, add_snapshot_limit, add_threads, add_timeout
from .selection import runnable_selection, selection
from .shards import add_shard_options, shard_selection


def cmd_check(args) -> int:
    from .. import fmt
    from ..app import check
    from ..present.check_views import check_table
    from ..present.terminal import console as make_console

    as_json = args.format == "json"
    console = make_console(stderr=as_json)  # with --format json, stdout holds only the document
    cases, skipped = selection(args)
    cases, skipped, shard = shard_selection(args, cases, skipped, console)
    if shard is not None and not shard.cases:
        console.print(f"shard {shard.label} has no case: nothing to check here", highlight=False)
        if as_json:
            print(check_document([], args.tolerance, 0))
        return 0

    console.print(f"checking {fmt.plural(len(cases), 'case')} against the float64 reference "
                  f"(tolerance {fmt.number(args.tolerance)}); {len(skipped)} skipped", highlight=False)
    # Each result is printed once, in the table. Before it, progress says what is done: a line that
    # replaces itself on a terminal, one line per case in a log (a torch.compile case takes 25 s).
    done = []

    def progress(result):
        done.append(result)
        line = f"[{len(done)}/{len(cases)}] checked {result.case_id} in {fmt.seconds(result.seconds)}"
        if console.is_terminal:
            status.update(line)
        else:
            console.print(line, highlight=False)

    with console.status("checking", spinner="dots") if console.is_terminal else contextlib.nullcontext() as status:
        results, code = check.run(cases, skipped, args.tolerance, on_result=progress)
    console.print(check_table(results, args.tolerance))
    if as_json:
        print(check_document(results, args.tolerance, code))
    if code == 2:
        console.print(Text.assemble(("nothing could run", "red"), ": every selected case was skipped"))
    elif code == 1:
        console.print(Text("gradient check failed", style="red"))
    return code


def check_document(results, tolerance: float, code: int) -> str:
    """``ttfg check --format json``: one strict JSON document, a row per case (the table's columns,
    unrounded), for scripts that must not parse a table whose layout follows the terminal's width."""
    import dataclasses
    import json
    import math

    def finite(value):
        return None if isinstance(value, float) and not math.isfinite(value) else value

    rows = [{k: finite(v) for k, v in dataclasses.asdict(r).items()} for r in results]
    return json.dumps({"format": "ttfg-check", "version": 1, "tolerance": tolerance, "exit_code": code,
                       "results": rows}, allow_nan=False)


def cmd_run(args) -> int:
    import json
    from pathlib import Path

    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from .. import fmt
    from ..app import run
    from ..present.run_views import run_summary
    from ..present.terminal import console as make_console

    from .config import project_folder
    from .outputs import output_file

    output_file(args.out, "--out", create_parents=True)
    as_json = args.format == "json"
    console = make_console(stderr=as_json)  # with --format json, stdout holds only the document
    cases, skipped = runnable_selection(args, console, "run")
    if not cases:
        return 2
    cases, skipped, shard = shard_selection(args, cases, skipped, console)
    out = Path(args.out) if args.out else None

    class Printed(run.RunEvents):
        def note(self, text):
            console.print(text, highlight=False)

        def no_instructions(self, why):
            console.print(Text.assemble(("no instruction samples", "yellow"), f": {why}"), highlight=False)

    request = run.RunRequest(
        cases, skipped, out, repeat=args.repeat, timeout_s=args.timeout, threads=args.threads, cache=args.cache,
        allocations=args.allocations, alloc_repeat=args.alloc_repeat, python_allocators=args.python_allocators,
        instructions=args.instructions, profiles=args.profiles, shard=shard, envs=list(getattr(args, "env", None) or ()),
        project_folder=project_folder(args), snapshot_limit=getattr(args, "snapshot_limit", None))
    prepared = run.prepare(request, Printed())
    if prepared.nothing:
        for s in prepared.skipped:
            console.print(f"skipped {s.id}: {s.reason}", highlight=False)
        console.print(Text.assemble(("nothing to run", "red"), ": no environment has the selected backends' frameworks"))
        return 2
    steps = prepared.steps
    console.print(f"{fmt.plural(len(prepared.cases), 'case')}, {fmt.plural(steps, 'cold process', 'cold processes')}, "
                  f"{len(prepared.skipped)} skipped"
                  + (f"; results -> {out}" if out else ""), highlight=False)
    progress = Progress(TextColumn("{task.description}", markup=False), BarColumn(),
                        TextColumn("{task.completed}/{task.total}"),
                        TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(), console=console, transient=True)

    logged = not console.is_terminal  # a CI log or a pipe: rich's bar draws nothing there

    def on_sample(done, total, case, sample):
        progress.update(task, completed=done, description=f"{case.id} [{sample.kind}]")
        if not sample.ok:
            progress.console.print(Text.assemble(("failed", "red"), f" {case.id} {sample.kind} #{sample.index}: "
                                                 f"{sample.error}"), highlight=False)
        elif logged:
            console.print(sample_line(done, total, case, sample), highlight=False)

    with progress:
        task = progress.add_task("starting", total=steps)
        report = run.measure(prepared, on_sample)
    results = report.results
    print_results(results, console, wide=args.wide, stderr=as_json)
    if out:
        console.print(f"results: {out}" + ("" if "out" in getattr(args, "typed", {"out"}) else " (no --out: the project's results folder; "
                                           "ttfg show FILE prints these tables again)"), highlight=False)
    bad = report.bad
    if report.status == run.INTERRUPTED:
        console.print(Text.assemble(("interrupted", "yellow"), ": finished samples are kept in the results file"))
    elif report.status == run.WRITE_ERROR:
        write_error = report.write_error
        console.print(Text.assemble(("stopped", "red"), f": cannot write {write_error.filename}: "
                                    f"{write_error.strerror}; every sample saved before this is kept in it"),
                      highlight=False)
    elif report.status == run.EMPTY_SHARD:
        console.print(f"shard {shard.label} has no case (more shards than cases): nothing to measure here",
                      highlight=False)
    elif report.status == run.SHARD_SKIPPED:
        console.print(Text.assemble(("nothing measured", "red"), f": every case of shard {shard.label} was skipped "
                                    "here"), highlight=False)
    elif report.status == run.NOTHING_MEASURED:
        console.print(Text.assemble(("nothing measured", "red"), f": no case has a good sample ({', '.join(bad)})"),
                      highlight=False)
    elif report.status == run.SOME_FAILED:
        console.print(Text.assemble((f"{len(bad)} case(s) have no good sample", "red"), f": {', '.join(bad)}"),
                      highlight=False)
    if as_json:
        print(json.dumps(run_summary(results, report.code, report.interrupted), indent=1, allow_nan=False))
    return report.code


def sample_line(done: int, total: int, case, sample) -> str:
    """One progress line per finished sample, for output that is not a terminal (CI logs, pipes)."""
    from .. import fmt

    what = {"timing": ("first_grad_s", "first gradient"), "allocations": ("alloc_count", "allocations"),
            "instructions": ("instructions", "instructions")}.get(sample.kind)
    value = getattr(sample, what[0], None) if what else None
    shown = f": {what[1]} {fmt.metric_value(what[0], value)}" if what and value is not None else ""
    return f"[{done}/{total}] {case.id} {sample.kind} #{sample.index}{shown}"


def print_results(results, console, wide: bool = False, stderr: bool = False) -> None:
    """A results file's tables, skipped and failed cases and noise floor: what ``ttfg run`` ends with and
    ``ttfg show`` prints again."""
    from ..present import noise_views
    from ..present.run_views import failures_table, run_tables, skipped_lines
    from ..present.terminal import console as make_console

    tables = run_tables(results, wide=wide)
    shown = make_console(stderr=stderr, width=10_000) if wide else console  # --wide: never wrapped
    for table in tables:
        shown.print(table)
    for line in skipped_lines(results):
        console.print(line, highlight=False)
    fails = failures_table(results)
    if fails is not None:
        console.print(fails)
    console.print(noise_views.headline(results.noise), highlight=False)


def cmd_show(args) -> int:
    """Print a saved results file's tables again, as ``ttfg run`` printed them."""
    from ..results import record

    results = record.load(args.file)
    from ..present.terminal import console as make_console

    console = make_console()
    console.print(f"{args.file}: {len(results.cases)} case(s), written {results.created or '?'}", highlight=False)
    print_results(results, console, wide=args.wide)
    return 0


def cmd_study(args) -> int:
    import json
    from pathlib import Path

    from .. import fmt
    from ..app import study
    from ..app.selection import normalized_model
    from ..errors import UsageError
    from ..files import atomic_write_text
    from ..present.study_views import depth_table, effects_table
    from ..present.terminal import console as make_console

    if args.repeat < 2:
        raise UsageError(f"--repeat must be >= 2 for an interval, got {args.repeat}")

    from .config import project_folder
    from .outputs import not_an_input, output_file

    args.model = normalized_model(args.model)
    console = make_console()
    out = output_file(args.out or f"runs/study-{args.study}.json", "--out", create_parents=True)
    output_file(args.json, "--json")
    not_an_input(args.json, "--json", [out])
    request = study.StudyRequest(args.study, args.model, args.backend, Path(out), repeat=args.repeat,
                                 timeout_s=args.timeout, threads=args.threads, envs=list(args.env or ()),
                                 project_folder=project_folder(args), snapshot_limit=args.snapshot_limit)
    console.print(f"{args.study} study on {args.model}: results -> {out}", highlight=False)

    def on_sample(done, total, case, sample):
        status = Text("ok") if sample.ok else Text.assemble(("failed", "red"), f": {sample.error}")
        first = sample.first_grad_s
        console.print(Text.assemble(f"  [{done}/{total}] {case.id} ",
                                    "" if first is None else fmt.seconds(first) + " ", status), highlight=False)

    try:
        result = study.run(request, lambda line: console.print(line, highlight=False), on_sample)
    except KeyboardInterrupt:
        console.print(Text.assemble(("interrupted", "yellow"), f": finished samples are kept in {out}"))
        return 2
    for note in result.notes:
        console.print(f"skipped {note}", highlight=False)
    if not any(c.good() for c in result.results.cases):
        console.print(Text.assemble(("nothing measured", "red"), f": every process of the {args.study} study "
                                    f"failed; the samples and their errors are in {out}"), highlight=False)
        return 2
    console.print(depth_table(result) if args.study == "depth" else effects_table(result))
    if args.json:
        atomic_write_text(args.json, json.dumps(result.to_json(), indent=1, allow_nan=False))
    return 0


def add_run_commands(sub) -> None:
    """Register ``check``, ``run`` and ``study`` on the ``ttfg`` subparsers."""
    p = sub.add_parser("check", help="check every case's gradient against a float64 reference",
                       description="Compute each selected case's gradient once and compare it with a float64 "
                                   "reference (HIPS autograd). A library's function case is compared with the reference "
                                   "its case() returns as (fn, args, reference), leaf by leaf; without one it is run "
                                   "and said unchecked. Exit 1 when any case exceeds the tolerance or fails, "
                                   "2 when nothing could run.")
    add_selection(p)
    p.add_argument("--tolerance", type=options.tolerance, default=1e-4, metavar="FRACTION",
                   help="largest allowed max|g - ref| / max|ref| per tensor (default: 1e-4)")
    p.add_argument("--format", choices=("table", "json"), default="table",
                   help="table (default), or json: per case its status, loss, errors, worst tensor, time and "
                        "detail, and the exit code, on stdout (progress and the table go to stderr)")
    add_shard_options(p)
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("run", help="measure time to first gradient in fresh processes",
                       description="Measure each selected case in fresh processes, interleaved round-robin, and "
                                   "write one results file. Each sample records import, build, the first gradient "
                                   "split into trace/lower/compile/execute where the backend can tell, a warm "
                                   "second gradient, process TTFG, CPU time of the whole process tree, peak RSS and "
                                   "structural counters. Exit 1 when a case has no good sample.")
    add_selection(p, default_model="resnet15")
    add_repeat(p)
    add_env(p)
    add_snapshot_limit(p)
    add_timeout(p)
    add_threads(p)
    p.add_argument("--cache", choices=("cold", "warm", "both"), default="cold",
                   help="cold: fresh empty compile caches per sample (default); warm: persistent caches "
                        "populated beforehand (JAX compilation cache, Inductor FX graph cache); both: side by side")
    p.add_argument("--warm-cache", dest="cache", action="store_const", const="warm", help="same as --cache warm")
    p.add_argument("--allocations", action="store_true",
                   help="also count allocations in the first gradient (memray), in separate processes")
    p.add_argument("--alloc-repeat", type=options.repeat, default=1, metavar="N",
                   help="allocation processes per case (default: 1)")
    p.add_argument("--python-allocators", action="store_true", help="memray: trace pymalloc allocations too")
    p.add_argument("--instructions", action="store_true",
                   help="also count instructions of the first-gradient window, per phase where the backend "
                        "splits it (callgrind switched on for the window only; 10 CPU-s for autograd, 1.5 CPU-min "
                        "for jax.jit resnet15)")
    p.add_argument("--profiles", type=options.count(0, options.MAX_REPEAT, "--profiles"), default=0, metavar="N",
                   help="also sample the first gradient's Python stacks (pyinstrument) in N processes per case, "
                        "for ttfg explain's function-level diff (default: 0)")
    p.add_argument("--out", metavar="FILE",
                   help="results file (JSON), rewritten after every sample (default: run-DATE-TIME.json in the "
                        "project's results folder: output in [tool.ttfg], else runs/)")
    p.add_argument("--wide", action="store_true",
                   help="one table with every column (times, phases, counters) however wide, instead of three "
                        "that fit the terminal")
    p.add_argument("--format", choices=("table", "json"), default="table",
                   help="table (default), or json: per case every metric's median, min, max, n and CV, the "
                        "noise floor and the exit code on stdout (progress and tables go to stderr)")
    add_shard_options(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("study", help="controlled experiments: params, chain or depth, with intervals",
                       description="params: closure vs args; chain: scan vs unrolled (effects from paired, "
                                   "interleaved cold processes, with 95 % intervals per backend); depth: sweep the "
                                   "model's depth and fit t = a + b*depth^k per backend and phase, with an interval "
                                   "for k (is compile time linear in depth?).")
    p.add_argument("study", choices=("params", "chain", "depth", "env"))
    p.add_argument("--model", default="resnet15", metavar="NAME[:k=v]",
                   help="model, optionally sized, such as convnext_tiny (default: resnet15)")
    p.add_argument("--backend", action="append", metavar="NAME", help="repeatable; default: the backends the study applies to")
    add_repeat(p)
    add_timeout(p)
    add_threads(p)
    add_env(p)
    add_snapshot_limit(p)
    p.add_argument("--out", metavar="FILE", help="results file (default: runs/study-STUDY.json)")
    p.add_argument("--json", metavar="FILE", help="also write the analysis (effects or fits) as JSON")
    p.set_defaults(func=cmd_study)


def add_show_command(sub) -> None:
    """Register ``show`` (after ``config``: its place in ``ttfg --help``)."""
    p = sub.add_parser("show", help="print a saved results file again, as ttfg run printed it",
                       description="Print the tables of a results file (from ttfg run, or a gate's base.json / "
                                   "head.json) again: times, phases, counters, skipped and failed cases, the noise "
                                   "floor. Exit 2 when the file is missing or not a results file.")
    p.add_argument("file", metavar="FILE", help="a results file (JSON)")
    p.add_argument("--wide", action="store_true", help="one table with every column however wide")
    p.set_defaults(func=cmd_show)


__all__ = ["add_run_commands", "add_show_command", "check_document", "cmd_check", "cmd_run", "cmd_show", "cmd_study",
           "print_results", "sample_line"]
