"""``ttfg asv ...``: the command line only; the use case is ``ttfg.app.asv`` (the logic ``ttfg.history.asv_record``)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path


def cmd_asv_record(args) -> int:
    from ..app.asv import RecordRequest, record

    from .config import project_dir

    extra = (["--show-stderr"] if args.show_stderr else []) + shlex.split(args.asv_args)
    return record(RecordRequest(args.revs or ["HEAD"], Path(args.config), args.machine, args.python, args.all_params,
                                not args.no_publish, extra, shard=args.shard, costs=args.costs,
                                project_dir=project_dir(args, Path(args.config).resolve().parent)))


def add_asv_commands(sub) -> None:
    """Register ``ttfg asv ...`` on the main parser's subparsers."""
    import argparse
    import textwrap

    asv = sub.add_parser("asv", help="asv history helpers (the plain asv commands work too)",
                         description="Helpers around airspeed velocity; see docs/how-to/history-with-asv.md.")
    asv_sub = asv.add_subparsers(dest="asv_command", metavar="ASV_COMMAND", required=True)
    p = asv_sub.add_parser(
        "record", help="measure commits in clean worktrees with the current interpreter, then asv publish",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.fill(
            "For each REV: a git worktree at that commit, `asv run --environment existing:PYTHON "
            "--set-commit-hash SHA --machine NAME -b <selected cases>` with that worktree's suites and "
            "harness, results filed under the commit in the config's results_dir; then `asv publish`. "
            "The cases come from TTFG_ASV_MODELS / _BACKENDS / _VARIANTS / _REPEAT / _ALLOCATIONS. "
            "Exit 1 when asv reports a failure for some commit.", 78, break_on_hyphens=False),
        epilog="examples:\n  ttfg asv record HEAD~3 HEAD~2 HEAD~1 HEAD\n"
               "  TTFG_ASV_BACKENDS=jax.jit ttfg asv record main HEAD --machine ci-2core\n"
               "  ttfg asv record HEAD --show-stderr")
    p.add_argument("revs", nargs="*", metavar="REV", help="commits to measure (default: HEAD)")
    p.add_argument("--machine", help="asv machine name (default: $TTFG_ASV_MACHINE, else this host's name); "
                                     "registered with `asv machine --yes` if asv does not know it")
    p.add_argument("--config", default="asv.conf.json", help="asv config (default: asv.conf.json)")
    p.add_argument("--python", default=sys.executable, help="interpreter to measure in (default: this one)")
    p.add_argument("--all-params", action="store_true",
                   help="run every parameter combination (unselected ones store NaN) instead of -b <selected>")
    p.add_argument("--no-publish", action="store_true", help="skip `asv publish`")
    p.add_argument("--show-stderr", action="store_true", help="pass --show-stderr to asv run")
    p.add_argument("--asv-args", default="", metavar="ARGS", help="more arguments for asv run, one string: --asv-args='-q'")
    from .shards import add_shard_options

    add_shard_options(p)
    p.set_defaults(func=cmd_asv_record)
