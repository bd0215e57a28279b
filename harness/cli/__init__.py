"""The ``ttfg`` command line. Each subcommand imports what it needs when it runs.

``ttfg --help`` and ``ttfg list`` import no AD framework (a test holds us to that).
Exit codes are the product's contract with CI, and there are only three: 0 pass,
1 a real finding (gradient mismatch, regression, failed case, violated expectation),
2 anything else: bad input, nothing could run, an interruption, or an internal error
(a bug). A traceback never exits 1, because CI would read it as "regression":
``main`` maps every unexpected exception to 2 with a one-line message, and ``--debug``
shows the traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Sequence

from rich.text import Text

from ..errors import TtfgError
from . import options

#: The only exit codes ttfg uses (see the module docstring).
EXIT_OK, EXIT_FOUND, EXIT_BROKEN = 0, 1, 2
from ..files import atomic_write_text
from .asv import add_asv_commands
from .report import add_report_commands
from .gate import add_gate_commands
from .explain import add_explain_command
from .doctor import add_doctor_commands
from .env import add_env_commands
from .releases import add_releases_command
from .merge import add_merge_commands
from .shards import add_shard_options, add_shards_command, shard_selection
from .config import add_config_commands, apply as apply_config, mark_defaults
from .init import add_init_command

EPILOG = """\
examples:
  ttfg init                         ttfg.toml, asv, CI workflows for a project
  ttfg config                       effective settings and where each comes from
  ttfg doctor --calibrate           missing tools, noise, what a gate sees here
  ttfg list                         models, backends, variants, availability
  ttfg check --model resnet15       every backend against the float64 reference
  ttfg run --model resnet15 --backend all --repeat 3 --out runs/r.json
  ttfg show runs/r.json             a saved run's tables again
  ttfg study chain                  scan vs unrolled, paired, with intervals
  ttfg compare base.json head.json  regression verdicts between results files
  ttfg gate --base origin/main      interleaved, paired base/head measurement
  ttfg explain runs/gate            where a gate's change went
  ttfg report --runs runs/r.json    HTML report with plots
  ttfg regressions --runs runs/     detected steps across commits
  ttfg shards 4 --backend all       the matrix split over 4 runners, --shard I/N
  ttfg merge results runs/shard-*.json --out runs/r.json
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
    from ..measure.cases import select

    # With --env, a backend's framework is looked for in each environment, not in this interpreter.
    return select(args.model or [args.default_model], args.backend, args.variant,
                  check_availability=not getattr(args, "env", None))


def runnable_selection(args, console, what: str):
    """The selection's cases and skips; when every case is skipped, says why and gives no cases."""
    cases, skipped = selection(args)
    if not cases:
        for s in skipped:
            console.print(f"skipped {s.id}: {s.reason}", highlight=False)
        console.print(Text.assemble((f"nothing to {what}", "red"), ": every selected case was skipped"))
    return cases, skipped


def cmd_list(args) -> int:
    from ttfg import models

    from .. import engines

    from ..engines import variants
    from ..errors import BrokenPlugin, UsageError
    from ..measure.cases import model_problem
    from ..present.terminal import console as make_console, fitted

    console = make_console()
    broken = []  # reasons, printed whole below the tables (too long for a cell)
    mt = fitted("models", [(col, "left") for col in ("model", "parameters", "input", "description", "from")],
                boxed=True)
    for name in models.names():
        origin = models.entry(name).origin
        try:
            problem = model_problem(name)
        except UsageError as exc:  # a plugin builder that rejects its own defaults
            problem = f"{models.entry(name).describe()}: {exc}"
        if problem:
            mt.add_row(name, "", "", Text.assemble(("broken plugin, skipped", "red"), " (below)"), origin)
            broken.append(problem)
            continue
        spec = models.load(name)
        mt.add_row(name, f"{spec.parameter_count():,}", "x".join(map(str, spec.input_shape)), models.description(name),
                   origin)
    for entry in models.shadowed():
        mt.add_row(entry.name, "", "", Text.assemble(("ignored plugin", "red"), " (below)"), entry.origin)
        broken.append(f"{entry.describe()}: {entry.problem}")
    console.print(mt)
    # The descriptions go below the table, one line each: the table keeps to what fits a row.
    bt = fitted("backends", [(col, "left") for col in ("backend", "available", *variants.AXES, "from")], boxed=True)
    described = []
    notes = []
    for name in engines.names():
        origin = engines.entry(name).origin
        try:
            cls = engines.get(name)
        except BrokenPlugin as exc:
            bt.add_row(name, Text.assemble(("no: broken plugin, skipped", "red"), " (below)"),
                       *("" for _ in variants.AXES), origin)
            broken.append(str(exc))
            continue
        why = cls.availability()
        axes = [" ".join(cls.supports[a]) for a in variants.AXES]
        bt.add_row(name, "yes" if not why else f"no: {why}", *axes, origin)
        described.append(f"  {name}: {cls.description}")
        for key, reason in cls.why_not.items():
            notes.append(f"{name} {key}: {reason}")
        combo = cls.unsupported_combination({"params": "closure", "chain": "scan"})
        if combo and all(v in cls.supports[a] for a, v in (("params", "closure"), ("chain", "scan"))):
            notes.append(f"{name} params=closure,chain=scan: {combo}")
    for entry in engines.shadowed():
        bt.add_row(entry.name, Text.assemble(("no: ignored plugin", "red"), " (below)"), *("" for _ in variants.AXES),
                   entry.origin)
        broken.append(f"{entry.describe()}: {entry.problem}")
    console.print(bt)
    console.print("what each backend does:")
    for line in described:
        console.print(line, highlight=False)
    console.print("variant axes: " + "; ".join(f"{a} = {' | '.join(v)}" for a, v in variants.AXES.items())
                  + " (first listed per backend is its default)")
    if notes:
        console.print("unsupported variants:")
        for note in notes:
            console.print(f"  {note}", highlight=False)
    if broken:
        console.print(Text.assemble(("plugins that cannot be used", "red"),
                                    " (their cases are skipped; everything else runs):"))
        for reason in broken:
            console.print(f"  {reason}", highlight=False, soft_wrap=True)
    return 0


def cmd_check(args) -> int:
    from ..measure.check import exit_code, run_check
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
    from .. import fmt

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
        results = run_check(cases, skipped, args.tolerance, on_result=progress)
    console.print(check_table(results, args.tolerance))
    code = exit_code(results)
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
    from ..decide import noise
    from ..measure.runner import RunSettings, Runner, failed_cases
    from ..present.run_views import run_summary
    from ..present.terminal import console as make_console

    from .outputs import output_file

    output_file(args.out, "--out", create_parents=True)
    as_json = args.format == "json"
    console = make_console(stderr=as_json)  # with --format json, stdout holds only the document
    cases, skipped = runnable_selection(args, console, "run")
    if not cases:
        return 2
    cases, skipped, shard = shard_selection(args, cases, skipped, console)
    envs = _environments(args, console)
    if envs:  # the environment is part of the case: every case once per environment
        from ..measure.environments import cases_in

        cases, skipped = cases_in(envs, cases, skipped)
        if not cases:
            for s in skipped:
                console.print(f"skipped {s.id}: {s.reason}", highlight=False)
            console.print(Text.assemble(("nothing to run", "red"), ": no environment has the selected backends' frameworks"))
            return 2
    caches = {"cold": ("cold",), "warm": ("warm",), "both": ("cold", "warm")}[args.cache]
    if args.instructions:
        from ..measure import instructions

        usable, why = instructions.availability()
        if not usable:  # said once, not once per case
            console.print(Text.assemble(("no instruction samples", "yellow"), f": {why}"), highlight=False)
            args.instructions = False
    settings = RunSettings(
        repeat=args.repeat, timeout_s=args.timeout, threads=args.threads, caches=caches,
        allocations=args.allocations, alloc_repeat=args.alloc_repeat, python_allocators=args.python_allocators,
        instructions=args.instructions, profiles=args.profiles,
    )
    out = Path(args.out) if args.out else None
    runner = Runner(cases, skipped, settings, out, envs=envs)
    runner.results.shard = shard
    calibration, why_not = noise.stored()
    runner.results.noise = calibration  # None: an in-run estimate is recorded at the end
    steps = len(runner.steps)
    console.print(f"{fmt.plural(len(cases), 'case')}, {fmt.plural(steps, 'cold process', 'cold processes')}, "
                  f"{len(skipped)} skipped"
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

    interrupted = False
    write_error: OSError | None = None
    with progress:
        task = progress.add_task("starting", total=steps)
        try:
            results = runner.run(on_sample)
        except KeyboardInterrupt:
            interrupted = True
            results = runner.results
        except OSError as exc:  # a full disk or a vanished folder: stop, keep what is on disk
            write_error = exc
            results = runner.results
    if results.noise is None:
        results.noise = noise.in_run(results)
        if why_not:
            results.noise.note = "; ".join(filter(None, [results.noise.note, why_not]))
        if write_error is None:
            try:
                _save_again(results, out)
            except OSError as exc:
                write_error = exc
    print_results(results, console, wide=args.wide, stderr=as_json)
    if out:
        console.print(f"results: {out}" + ("" if "out" in getattr(args, "typed", {"out"}) else " (no --out: the project's results folder; "
                                           "ttfg show FILE prints these tables again)"), highlight=False)
    code = 0
    bad = failed_cases(results)
    if interrupted:
        console.print(Text.assemble(("interrupted", "yellow"), ": finished samples are kept in the results file"))
        code = EXIT_BROKEN
    elif write_error is not None:
        console.print(Text.assemble(("stopped", "red"), f": cannot write {write_error.filename}: "
                                    f"{write_error.strerror}; every sample saved before this is kept in it"),
                      highlight=False)
        code = EXIT_BROKEN
    elif shard is not None and not shard.cases:
        console.print(f"shard {shard.label} has no case (more shards than cases): nothing to measure here",
                      highlight=False)
    elif not cases:
        console.print(Text.assemble(("nothing measured", "red"), f": every case of shard {shard.label} was skipped "
                                    "here"), highlight=False)
        code = EXIT_BROKEN
    elif bad and len(bad) == len(results.cases) - sum(1 for c in results.cases if c.skipped):
        console.print(Text.assemble(("nothing measured", "red"), f": no case has a good sample ({', '.join(bad)})"),
                      highlight=False)
        code = EXIT_BROKEN
    elif bad:
        console.print(Text.assemble((f"{len(bad)} case(s) have no good sample", "red"), f": {', '.join(bad)}"),
                      highlight=False)
        code = 1
    if as_json:
        print(json.dumps(run_summary(results, code, interrupted), indent=1, allow_nan=False))
    return code


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


def _environments(args, console) -> dict:
    """``--env`` (repeatable): each environment built (or found cached) before any sample; ``{name: Environment}``."""
    from ..errors import UsageError
    from ..measure import environments

    envs = {}
    for text in getattr(args, "env", None) or ():
        request = environments.parse(text, "--env")
        if request.name in envs:
            raise UsageError(f"--env {text!r}: the name {request.name!r} is given twice; name them: NAME=REQS")
        env = environments.build(request, on_note=lambda line: console.print(line, highlight=False))
        console.print(f"environment {env.name}: " + ", ".join(f"{k} {v}" for k, v in env.recorded().items() if v)
                      + ("" if env.current else " (cached)" if env.cached else f" (built in {env.seconds:.1f} s)"),
                      highlight=False)
        envs[env.name] = env
    return envs


def _save_again(results, out) -> None:
    """Save a finished results file once more (its noise floor), as its one writer again."""
    from ..results.writer import save_again

    save_again(results, out)


def cmd_study(args) -> int:
    import json

    from ..errors import UsageError
    from ..measure.runner import RunSettings
    from ..decide.study import run_study
    from .. import fmt
    from ..present.study_views import depth_table, effects_table
    from ..present.terminal import console as make_console

    if args.repeat < 2:
        raise UsageError(f"--repeat must be >= 2 for an interval, got {args.repeat}")
    from ..measure.cases import normalize_model

    from .outputs import not_an_input, output_file

    args.model = normalize_model(args.model)
    console = make_console()
    out = output_file(args.out or f"runs/study-{args.study}.json", "--out", create_parents=True)
    output_file(args.json, "--json")
    not_an_input(args.json, "--json", [out])
    settings = RunSettings(repeat=args.repeat, timeout_s=args.timeout, threads=args.threads)
    console.print(f"{args.study} study on {args.model}: results -> {out}", highlight=False)

    def on_sample(done, total, case, sample):
        status = Text("ok") if sample.ok else Text.assemble(("failed", "red"), f": {sample.error}")
        first = sample.first_grad_s
        console.print(Text.assemble(f"  [{done}/{total}] {case.id} ",
                                    "" if first is None else fmt.seconds(first) + " ", status), highlight=False)

    try:
        result = run_study(args.study, args.model, args.backend, settings, out, on_sample,
                           envs=_environments(args, console))
    except KeyboardInterrupt:
        console.print(Text.assemble(("interrupted", "yellow"), f": finished samples are kept in {out}"))
        return EXIT_BROKEN
    for note in result.notes:
        console.print(f"skipped {note}", highlight=False)
    if not any(c.good() for c in result.results.cases):
        console.print(Text.assemble(("nothing measured", "red"), f": every process of the {args.study} study "
                                    f"failed; the samples and their errors are in {out}"), highlight=False)
        return EXIT_BROKEN
    console.print(depth_table(result) if args.study == "depth" else effects_table(result))
    if args.json:
        atomic_write_text(args.json, json.dumps(result.to_json(), indent=1, allow_nan=False))
    return 0


def version() -> str:
    """The installed distribution's version (``pyproject.toml``), read from its metadata: imports nothing."""
    from importlib.metadata import PackageNotFoundError, version as installed

    try:
        return installed("ttfg")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed: pip install -e .)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ttfg",
        description="Time to first gradient: measure, explain and gate the cold-start cost of\n"
                    "automatic differentiation in Python (JAX, PyTorch, HIPS autograd).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--debug", action="store_true",
                        help="on an internal error, print the whole traceback (it still exits 2)")
    parser.add_argument("--version", action="version", version=f"ttfg {version()}",
                        help="print ttfg's version (the installed distribution's) and exit")
    parser.add_argument("--config", dest="ttfg_config", metavar="FILE",
                        help="the project's config: a ttfg.toml, or a pyproject.toml with [tool.ttfg] (default: the "
                             "nearest one from here up to the git repository's root; ttfg config shows it)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("list", help="show models, backends and variants, with availability")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("check", help="check every case's gradient against a float64 reference",
                       description="Compute each selected case's gradient once and compare it with a float64 "
                                   "reference (HIPS autograd). Exit 1 when any case exceeds the tolerance or fails, "
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
    p.add_argument("--repeat", type=options.repeat, default=5, metavar="N",
                   help="fresh processes per case; 3 or more also give an in-run noise estimate (default: 5)")
    p.add_argument("--env", action="append", metavar="REQS",
                   help="run every case in this environment too: 'current', requirement lines ('jax==0.4.38 "
                        "jaxlib==0.4.38'), NAME=REQS or NAME=@requirements.txt; repeatable (the environment "
                        "is part of each case; built with uv and cached, see ttfg env)")
    p.add_argument("--timeout", type=options.timeout, default=600, metavar="SECONDS", help="per sample (default: 600)")
    p.add_argument("--threads", type=options.threads, default=1, metavar="N",
                   help="intra-op threads for every framework (default: 1, the least noisy here)")
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
    p.add_argument("--repeat", type=options.repeat, default=5, metavar="N",
                   help="cold processes per case and arm, at least 2 (default: 5)")
    p.add_argument("--timeout", type=options.timeout, default=600, metavar="SECONDS", help="per sample (default: 600)")
    p.add_argument("--threads", type=options.threads, default=1, metavar="N", help="intra-op threads (default: 1)")
    p.add_argument("--env", action="append", metavar="REQS",
                   help="the env study: two environments (first is the control), e.g. --env current --env "
                        "'jax==0.4.38 jaxlib==0.4.38'; the other studies: one environment to run in")
    p.add_argument("--out", metavar="FILE", help="results file (default: runs/study-STUDY.json)")
    p.add_argument("--json", metavar="FILE", help="also write the analysis (effects or fits) as JSON")
    p.set_defaults(func=cmd_study)
    add_report_commands(sub)
    add_asv_commands(sub)
    add_gate_commands(sub)
    add_explain_command(sub)
    add_doctor_commands(sub)
    add_env_commands(sub)
    add_releases_command(sub)
    add_shards_command(sub)
    add_merge_commands(sub)
    add_config_commands(sub)
    add_init_command(sub)
    mark_defaults(parser)  # after every command: the config fills what was not typed (see cli/config.py)
    return parser


def _terminate(signum, frame):
    """SIGTERM (a cancelled CI job, ``kill``) ends a run like Ctrl-C: probes are killed,
    finished samples stay in the results file, temporary worktrees are removed."""
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; the exit code (0, 1 or 2). With ``--format json``, an exit 2 that printed no
    document prints an error document (``json_errors``)."""
    from . import json_errors

    argv = list(sys.argv[1:] if argv is None else argv)
    command = "ttfg " + next((a for a in argv if not a.startswith("-")), "")
    watch = json_errors.Watch(json_errors.requested(argv), command.strip())
    with watch:
        code = _main(argv)
    return watch.finish(code)


def _main(argv: list[str]) -> int:
    import signal

    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _terminate)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help exits 0, a bad option 2; never anything else
        return EXIT_OK if exc.code in (0, None) else EXIT_BROKEN
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_BROKEN
    name = f"ttfg {args.command}"
    try:
        args.settings = apply_config(args, parser)
        code = args.func(args)
    except TtfgError as exc:
        print(f"{name}: error: {exc}", file=sys.stderr)
        return EXIT_BROKEN
    except KeyboardInterrupt:
        print(f"{name}: interrupted", file=sys.stderr)
        return EXIT_BROKEN
    except Exception as exc:  # a bug or an environment problem: never a "regression"
        return _internal_error(name, exc, args.debug)
    if code not in (EXIT_OK, EXIT_FOUND, EXIT_BROKEN):
        print(f"{name}: internal error: the command returned exit code {code!r}", file=sys.stderr)
        return EXIT_BROKEN
    return code


def _internal_error(name: str, exc: BaseException, debug: bool) -> int:
    """One line for the user (what failed, where), the traceback only with ``--debug``."""
    import traceback

    if debug:
        traceback.print_exception(exc)
    kind = type(exc).__name__
    if isinstance(exc, OSError) and exc.filename is not None:
        what = f"{exc.strerror or kind}: {exc.filename}"
    elif isinstance(exc, UnicodeDecodeError):
        what = f"a file is not UTF-8 text ({exc.reason} at byte {exc.start})"
    else:
        what = f"{kind}: {exc}"
    hint = "" if debug else " (run with --debug for the traceback)"
    print(f"{name}: error: {what}{hint}", file=sys.stderr)
    return EXIT_BROKEN


if __name__ == "__main__":
    sys.exit(main())
