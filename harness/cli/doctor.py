"""``ttfg doctor``: parsing and printing only. The use case: ``app/doctor.py`` (facts from
``measure/machine.py``, calibration from ``decide/calibrate.py``); output: ``present/doctor.py``."""

from __future__ import annotations

import argparse

DESCRIPTION = """\
Check this machine before trusting a number: the tools ttfg uses (git,
valgrind, hardware counters, Chromium, asv's machine file, the backends) and
the noise sources (load, busy processes, CPU steal, cores and thread settings,
frequency governor, turbo, memory, swap, VM or container), each with a verdict
(ok, warn, missing, unknown) and what to do. It changes no setting.

With --calibrate it also measures A/A pairs of cold processes, states the
smallest effect a 5- and a 10-minute gate can detect here, and stores the
result in the cache folder ($TTFG_CACHE_DIR, else ~/.cache/ttfg:
calibration.json), under each case's key (the case, its environment with the
files of editable installs, the interpreter, ttfg, the machine): for a day,
ttfg run and ttfg gate record it as their noise floor for that case alone, and
the gate warns before it starts when its --min-effect is below what its budget
can detect. A case under another key is "not calibrated here".

With --calibrate-counts N (3 or more) it counts N processes of each selected
case (instructions under callgrind, allocations under memray) and keeps each
case's count margin under the same key (count_margins.json, beside it): the
gate's instructions tier then decides that case on its own margin, not the
conservative default. A stored margin outside 0.05 %-10 %, or from fewer than
3 processes, is set aside and named, never applied. The processes run one per
CPU at once (a count does not depend on the load; each counted probe is pinned
to a CPU of its own).

Exit 2 when something required is missing (git, or every backend) or when a
calibration is interrupted (what it measured so far is printed), else 0."""


def add_doctor_commands(sub) -> None:
    from . import options
    from .common_args import add_selection
    from ..fmt import Duration

    p = sub.add_parser("doctor", help="check tools and noise sources; --calibrate: what a gate can detect here",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--calibrate", action="store_true",
                   help="measure paired A/A cold processes (autograd or torch.eager, and jax.jit, on resnet15)")
    p.add_argument("--budget", type=options.duration("--budget"), default=Duration.parse("60s"), metavar="DURATION",
                   help="calibration wall-clock budget, such as 60, 90s, 2m (default: 60s)")
    p.add_argument("--calibrate-counts", type=options.count(3, 100, "--calibrate-counts"), metavar="N",
                   help="count N processes of each selected case (instructions, allocations) and keep each case's "
                        "count margin for the gate (twice their spread; refreshed only when it moved by more than a "
                        "third); select with --model and --backend (default: resnet15 with jax.jit)")
    add_selection(p, default_model="resnet15", backend_help="backend name (default with --calibrate-counts: jax.jit; with --calibrate: the default calibration cases unless a backend is given here or in the config)")
    p.add_argument("--format", choices=("table", "json"), default="table", help="output (default: table)")
    p.set_defaults(func=cmd_doctor)


def cmd_doctor(args) -> int:
    import json

    from ..app import doctor
    from ..present import doctor as view

    budget_s = args.budget.seconds
    as_json = args.format == "json"
    out = view.console()
    progress = view.console(stderr=True) if as_json else out
    findings, missing = doctor.examine_machine()
    if not as_json:
        for table in view.findings_tables(findings):
            out.print(table)
        out.print(view.summary_line(findings, missing))
    calibration = stored_at = None
    if args.calibrate:
        if args.backend:  # the project's cases (--backend, or the config's backends): what its gate measures
            from .selection import runnable_selection

            cases, notes = runnable_selection(args, progress, "calibrate")[0], []
        else:
            cases, notes = doctor.cases_to_calibrate()
        what = f"{cases[0].model} with {', '.join(c.backend for c in cases)}" if cases else "nothing"
        progress.print(f"calibrating for about {budget_s:g} s on {what} (Ctrl-C stops and keeps what is done)",
                       highlight=False)
        calibration = doctor.run_calibration(
            cases, budget_s, on_pair=lambda case, a, b: progress.print(view.pair_line(case, a, b), highlight=False))
        calibration.notes += notes
        if not as_json:
            view.print_calibration(out, calibration)
        stored_at = doctor.store(calibration, lambda line: progress.print(line, highlight=False))
    if args.calibrate_counts:
        from .selection import runnable_selection

        args.backend = args.backend or ["jax.jit"]
        cases, _ = runnable_selection(args, progress, "calibrate")
        progress.print(f"counting {args.calibrate_counts} processes of each kind for {len(cases)} case(s)",
                       highlight=False)
        doctor.calibrate_counts(cases, args.calibrate_counts, lambda line: progress.print(line, highlight=False))
    code = 2 if missing or (calibration is not None and calibration.interrupted) else 0
    if as_json:
        print(json.dumps({**view.doctor_json(findings, missing, calibration, code),
                          "stored": None if stored_at is None else str(stored_at)}, indent=1))
    return code
