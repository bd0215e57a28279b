"""The ``ttfg`` command line: ``main``, the parser assembled from every command group, dispatch and exit codes.

Each command group parses and prints in a sibling module (``run.py``: check, run, show,
study; ``listing.py``: list; ``gate.py``, ``report.py``, ...), and its orchestration is a
use case in ``app/``; options several commands share are defined once in
``common_args.py``. Each subcommand imports what it needs when it runs.

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
import sys
from typing import Sequence

from ..errors import TtfgError

#: The only exit codes ttfg uses (see the module docstring).
EXIT_OK, EXIT_FOUND, EXIT_BROKEN = 0, 1, 2
from .asv import add_asv_commands
from .report import add_report_commands
from .gate import add_gate_commands
from .bisect import add_bisect_command
from .explain import add_explain_command
from .doctor import add_doctor_commands
from .env import add_env_commands
from .listing import add_list_command
from .releases import add_releases_command
from .merge import add_merge_commands
from .run import add_run_commands, add_show_command
from .shards import add_shards_command
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
  ttfg bisect --good v1 --bad HEAD  the commit where a case got slower
  ttfg report --runs runs/r.json    HTML report with plots
  ttfg regressions --runs runs/     detected steps across commits
  ttfg shards 4 --backend all       the matrix split over 4 runners, --shard I/N
  ttfg merge results runs/shard-*.json --out runs/r.json
"""


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

    add_list_command(sub)
    add_run_commands(sub)  # check, run, study
    add_report_commands(sub)
    add_asv_commands(sub)
    add_gate_commands(sub)
    add_bisect_command(sub)
    add_explain_command(sub)
    add_doctor_commands(sub)
    add_env_commands(sub)
    add_releases_command(sub)
    add_shards_command(sub)
    add_merge_commands(sub)
    add_config_commands(sub)
    add_show_command(sub)
    add_init_command(sub)
    mark_defaults(sub.choices)  # after every command: the config fills what was not typed (see cli/config.py)
    return parser


def _terminate(signum, frame):
    """SIGTERM (a cancelled CI job, ``kill``) ends a run like Ctrl-C: probes are killed,
    finished samples stay in the results file, temporary worktrees are removed; it names itself
    (``errors.Interrupted``), so what is written says SIGTERM, not Ctrl-C."""
    from ..errors import Interrupted

    raise Interrupted("SIGTERM")


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
        args.settings = apply_config(args)
        code = args.func(args)
    except TtfgError as exc:
        print(f"{name}: error: {exc}", file=sys.stderr)
        return EXIT_BROKEN
    except KeyboardInterrupt as exc:
        from ..errors import signal_name

        print(f"{name}: interrupted by {signal_name(exc)}", file=sys.stderr)
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
