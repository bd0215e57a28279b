"""``--shard I/N`` on run, check, gate and asv record, and ``ttfg shards N``: the command-line side.

The partition itself is ``ttfg.measure.shard`` (a pure function of the case list, N
and the costs), reached through ``ttfg.app.selection``. This module adds the options,
cuts a command's selection down to its shard, and prints the split.
"""

from __future__ import annotations

import json
import sys

from . import options

HELP_SHARD = ("run only shard I of N (e.g. 2/4): the selection is split by expected cost, the same way on every "
              "runner (see `ttfg shards N`); merge the outputs with `ttfg merge`")
HELP_COSTS = ("measured costs for the split: a ttfg results file, an asv result file or an asv results folder "
              "(default: built-in estimates per backend and model size); give every shard the same file")


def add_shard_options(parser) -> None:
    group = parser.add_argument_group("sharding over several runners")
    group.add_argument("--shard", type=options.shard, metavar="I/N", help=HELP_SHARD)
    group.add_argument("--costs", metavar="FILE", help=HELP_COSTS)


def shard_selection(args, cases, skipped, console=None):
    """The shard's ``(cases, skipped, ShardSection)``; unchanged (and None) without ``--shard``."""
    spec = getattr(args, "shard", None)
    if spec is None:
        return cases, skipped, None
    from .. import fmt
    from ..app.selection import cut_shard

    cut = cut_shard(args.model or [args.default_model], args.backend, args.variant, args.costs, spec, cases, skipped,
                    getattr(args, "pending_models", False))
    if console is not None:
        console.print(f"shard {spec.label}: {len(cut.section.cases)} of {cut.total} case(s), expected "
                      f"{fmt.seconds(cut.cost_s)} per round of processes (busiest shard "
                      f"{fmt.seconds(cut.makespan_s)}); partition {cut.digest}", highlight=False)
    return cut.cases, cut.skipped, cut.section


def cmd_shards(args) -> int:
    from ..app.selection import split
    from ..present.shard_views import partition_table
    from ..present.terminal import console as make_console

    plan = split(args.model or [args.default_model], args.backend, args.variant, args.costs, args.count)
    if plan is None:
        print("ttfg shards: error: the selection has no case", file=sys.stderr)
        return 2
    if args.format == "matrix":
        sys.stdout.write(json.dumps(plan.matrix(), separators=(",", ":")) + "\n")
        return 0
    if args.format == "json":
        sys.stdout.write(json.dumps(plan.to_json(), indent=None if args.compact else 1, allow_nan=False) + "\n")
        return 0
    console = make_console()
    console.print(partition_table(plan, args.repeat))
    return 0


def add_shards_command(sub) -> None:
    from .common_args import add_repeat, add_selection

    p = sub.add_parser("shards", help="print how the selection splits over N runners (--shard I/N)",
                       description="Split the selected cases into N shards by expected cost (longest processing "
                                   "time first, ties by case id): the partition `--shard I/N` uses on `ttfg run`, "
                                   "`check`, `gate` and `asv record`. It depends only on the case list, N and "
                                   "--costs, so every runner computes the same one. `--format matrix` prints a "
                                   "GitHub Actions matrix on one line ({\"include\": [{\"shard\": \"1/4\", "
                                   "\"index\": 1, \"cases\": 3}, ...]}) for $GITHUB_OUTPUT; `--format json` the "
                                   "whole partition.")
    p.add_argument("count", type=options.shard_count, metavar="N", help="number of shards (runners)")
    add_selection(p, default_model="resnet15")
    p.add_argument("--costs", metavar="FILE", help=HELP_COSTS)
    add_repeat(p)
    p.add_argument("--format", choices=("table", "json", "matrix"), default="table")
    p.add_argument("--compact", action="store_true", help="JSON on one line (for $GITHUB_OUTPUT)")
    p.set_defaults(func=cmd_shards)
