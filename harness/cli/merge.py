"""``ttfg merge results|gate|asv``: shards' outputs into one; argument parsing and output only.

The merging lives in ``ttfg.results.merge`` (results files) and, through ``ttfg.app.merge``,
``ttfg.decide.merge_gate`` (gate outcomes) and ``ttfg.history.asv_merge`` (asv result
files); the merged gate's summary is rendered by ``ttfg.present.shard_views``. Every input is checked before
anything is written: a bad input exits 2 naming the files and leaves nothing behind.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..files import atomic_write_text

MERGE_HELP = """\
Merge the outputs of `--shard I/N` runs into one, as if one runner had done all
the work.

  results  results files of `ttfg run --shard` (or a gate's base.json/head.json)
           -> one results file
  gate     gate output folders of `ttfg gate --shard` -> one gate.json,
           summary.md, base.json, head.json and one exit code
  asv      asv result files of `ttfg asv record --shard`, one commit and
           machine -> one

Refused, naming the files, exit 2, nothing written: a file that is not a shard's
output, shards of different partitions (selection, N or --costs), the same shard
twice, a case in two files, a missing shard or a case of its shard that a shard
lost (results), a gate.json without a verdict for a case of its shard, files of
different revisions, settings or machine fingerprints (--force merges different
machines and says so), conflicting asv values, an output that is also an input,
and an output folder that a running gate is writing.
"""

GATE_EXIT = """\
exit codes (merge gate): the worst of every shard's own exit code and of the
merged verdicts, 2 over 1 over 0
  0  every shard present and exited 0, no regression
  1  a regression (or violated expectation) in any shard, or a shard that
     exited 1
  2  a shard is missing, did not finish or exited 2 (reported by name, never a
     pass), a base that cannot run, nothing gated, or inputs that cannot be
     merged (then nothing is written)
"""


#: What ``ttfg merge gate`` writes in its ``--out-dir``, as one set.
GATE_OUTPUTS = ("base.json", "head.json", "gate.json", "summary.md")


def _print_notes(console, notes) -> None:
    from rich.text import Text

    for note in notes:
        console.print(Text.assemble(("note", "yellow"), f": {note}"), highlight=False)


def cmd_merge_results(args) -> int:
    from ..results.io import dumps, load
    from ..results.merge import merge_results
    from ..present.terminal import console as make_console

    from .outputs import holding, not_an_input, output_file

    output_file(args.out, "--out", create_parents=True)
    not_an_input(args.out, "--out", args.files)
    with holding([args.out], "--out"):
        merged, notes = merge_results([load(p) for p in args.files], force=args.force)
        text = dumps(merged, args.out)
        atomic_write_text(args.out, text)
    console = make_console()
    _print_notes(console, notes)
    measured = sum(1 for c in merged.cases if not c.skipped)
    console.print(f"merged {len(args.files)} shard(s): {measured} case(s), "
                  f"{len(merged.cases) - measured} skipped -> {args.out}", highlight=False)
    return 0


def cmd_merge_gate(args) -> int:
    from ..app.merge import merge_gate
    from ..present.terminal import console as make_console

    from .outputs import holding, not_an_input_dir, output_dir

    out_dir = output_dir(args.out_dir, "--out-dir", files=GATE_OUTPUTS)
    not_an_input_dir(out_dir, "--out-dir", args.dirs, GATE_OUTPUTS)
    # A running gate holds its base.json and head.json: a merge into its folder is refused, not interleaved.
    with holding([out_dir / name for name in GATE_OUTPUTS if name.endswith(".json")], "--out-dir"):
        merged = merge_gate(args.dirs, out_dir, force=args.force, step_summary=os.environ.get("GITHUB_STEP_SUMMARY"))
    console = make_console()
    console.print(merged.summary, highlight=False)
    files = merged.doc.outcome.files if merged.doc.outcome is not None else {}
    console.print(f"results: {', '.join([*files.values(), str(out_dir / 'gate.json')])}, "
                  f"{out_dir / 'summary.md'}", highlight=False)
    if merged.warning:
        _print_notes(console, [merged.warning])
    return merged.exit_code


def cmd_merge_asv(args) -> int:
    from ..app.merge import merge_asv
    from ..present.terminal import console as make_console

    from .outputs import not_an_input, output_dir, output_file

    if (args.out is None) == (args.results_dir is None):
        from ..errors import UsageError

        raise UsageError("give exactly one of --out FILE and --results-dir DIR")
    output_file(args.out, "--out", create_parents=True)
    not_an_input(args.out, "--out", args.files)
    output_dir(args.results_dir, "--results-dir")
    out, notes = merge_asv(args.files, Path(args.out) if args.out else None,
                           Path(args.results_dir) if args.results_dir else None)
    console = make_console()
    _print_notes(console, notes)
    console.print(f"merged asv results -> {out}", highlight=False)
    return 0


def add_merge_commands(sub) -> None:
    """Register ``ttfg merge results|gate|asv``."""
    import argparse

    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("merge", help="merge the outputs of --shard I/N runs into one",
                       description=MERGE_HELP, formatter_class=fmt)
    msub = p.add_subparsers(dest="merge_command", metavar="WHAT", required=True)
    force_help = ("merge shards measured on different machines (refused by default, naming the differing "
                  "fingerprint fields); the output says so")

    r = msub.add_parser("results", help="shards' results files -> one results file", description=MERGE_HELP,
                        formatter_class=fmt)
    r.add_argument("files", nargs="+", metavar="FILE", help="one results file per shard")
    r.add_argument("--out", required=True, metavar="FILE", help="the merged results file")
    r.add_argument("--force", action="store_true", help=force_help)
    r.set_defaults(func=cmd_merge_results)

    g = msub.add_parser("gate", help="shards' gate outputs -> one verdict, summary and exit code",
                        description=MERGE_HELP, formatter_class=fmt, epilog=GATE_EXIT)
    g.add_argument("dirs", nargs="+", metavar="DIR",
                   help="one gate output folder (--out-dir of `ttfg gate --shard`) or gate.json per shard")
    g.add_argument("--out-dir", default="runs/gate", metavar="DIR",
                   help="where the merged gate.json, summary.md, base.json and head.json go (default: runs/gate)")
    g.add_argument("--force", action="store_true", help=force_help)
    g.set_defaults(func=cmd_merge_gate)

    a = msub.add_parser("asv", help="shards' asv result files of one commit -> one", description=MERGE_HELP,
                        formatter_class=fmt)
    a.add_argument("files", nargs="+", metavar="FILE", help="asv result files (results/<machine>/<commit>-<env>.json)")
    a.add_argument("--out", metavar="FILE", help="the merged file")
    a.add_argument("--results-dir", metavar="DIR",
                   help="write to DIR/<machine>/<the shards' file name> instead (an asv results folder), with "
                        "machine.json when DIR lacks it and the shards' benchmarks.json, as asv run does")
    a.set_defaults(func=cmd_merge_asv)
