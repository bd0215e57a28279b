"""The options several commands share, each defined once with one help text.

Why one module: ``--repeat``, ``--timeout``, ``--threads``, ``--env`` and the case
selection were defined by each command that takes them, and their help texts, metavars
and even validators drifted apart. A command adds them here by name (``add_timeout(p)``);
the type is always the ``cli/options.py`` validator, so a bad value is refused the same
way everywhere. A comparison's options come in groups (``add_revisions``, ``add_environments``,
``add_decision``) that ``ttfg gate`` and ``ttfg bisect`` both call, so each bisect step is a gate
with the gate's own options, defined once. Modelled on asv's ``asv/commands/common_args.py``.
"""

from __future__ import annotations

import argparse

from . import options


def add_selection(parser: argparse.ArgumentParser, default_model: str = "all", backend_help: str | None = None) -> None:
    """``--model``, ``--backend``, ``--variant`` (each repeatable, or 'all'); ``backend_help`` says a command's
    own default backends."""
    group = parser.add_argument_group("case selection (each repeatable, or 'all')")
    group.add_argument("--model", action="append", metavar="NAME[:k=v]",
                       help=f"model, optionally sized: resnet15:blocks=30, convnext_tiny:depths=1x1x3x1 (default: {default_model})")
    group.add_argument("--backend", action="append", metavar="NAME", help=backend_help or "backend name (default: all)")
    group.add_argument("--variant", action="append", metavar="SEL",
                       help="'default' (each backend's own), 'all', or axis=value[,axis=value] such as chain=scan (default: default)")
    parser.set_defaults(default_model=default_model)


def add_repeat(parser: argparse.ArgumentParser, default: int = 5) -> None:
    """``--repeat N``: fresh processes per case."""
    parser.add_argument("--repeat", type=options.repeat, default=default, metavar="N",
                        help="fresh processes per case, per arm in a study (which needs at least 2); 3 or more "
                             "also give ttfg run an in-run noise estimate; ttfg shards uses it for the expected wall "
                             f"time (default: {default})")


def add_timeout(parser: argparse.ArgumentParser, default: float = 600) -> None:
    """``--timeout SECONDS``: one sample's process is stopped after this long."""
    parser.add_argument("--timeout", type=options.timeout, default=default, metavar="SECONDS",
                        help=f"per sample, that is per measured process (default: {default:g})")


def add_threads(parser: argparse.ArgumentParser, default: int = 1) -> None:
    """``--threads N``: the intra-op threads of every framework."""
    parser.add_argument("--threads", type=options.threads, default=default, metavar="N",
                        help=f"intra-op threads for every framework (default: {default}, the least noisy here)")


def add_env(parser: argparse.ArgumentParser) -> None:
    """``--env REQS`` (repeatable): environments built with uv and cached, to run the cases in."""
    parser.add_argument("--env", action="append", metavar="REQS",
                        help="an environment to run in: 'current', requirement lines ('jax==0.4.38 "
                             "jaxlib==0.4.38'), NAME=REQS or NAME=@requirements.txt; repeatable: ttfg run measures "
                             "every case once per environment (the environment is part of each case), the env study "
                             "compares two (the first is the control), the other studies run in one; built with uv "
                             "and cached, see ttfg env")


#: The backend a comparison measures when none is named (``ttfg gate``, ``ttfg bisect``).
COMPARED_BACKEND = "backend name (default: jax.jit)"


def add_revisions(parser: argparse.ArgumentParser) -> None:
    """``--allow-dirty`` and ``--repo``: the repository whose revisions a comparison checks out."""
    parser.add_argument("--allow-dirty", action="store_true",
                        help="measure the committed head although tracked files have uncommitted changes")
    parser.add_argument("--repo", default=".", metavar="DIR", help="the git repository (default: the current folder's)")


def add_environments(parser: argparse.ArgumentParser, sides: bool = False) -> None:
    """The environments a comparison's sides run in: ``--envs``, and with ``sides`` the gate's ``--base-env`` and
    ``--head-env`` (an upgrade gate of one revision)."""
    envs = parser.add_argument_group("environments (each side's interpreter and packages)")
    if sides:
        envs.add_argument("--base-env", metavar="REQS",
                          help="the base side's environment: requirement lines ('jax==0.10.1 jaxlib==0.10.1'), "
                               "NAME=REQS, NAME=@requirements.txt, or 'current'; with --head-env and no --base: an "
                               "upgrade gate of one revision in two environments")
        envs.add_argument("--head-env", metavar="REQS", help="the head side's environment (as --base-env)")
    envs.add_argument("--envs", choices=("auto", "declared", "current"), default="auto",
                      help="without --base-env/--head-env: 'auto' (default) runs both sides in this interpreter "
                           "when no dependency declaration changed, and else resolves each revision's own "
                           "(requirements.txt with its includes, pyproject dependencies, constraints.txt, uv.lock; "
                           "read by uv): the same packages are measured once and said, different ones each in its "
                           "own environment; 'declared' always builds them; 'current' forces this interpreter, and "
                           "every verdict then says the dependency change was not measured")


def add_decision(parser: argparse.ArgumentParser) -> None:
    """How a comparison samples and decides, the gate's and each step of a bisect's: the budget, the metric and its
    guard, the effect and level, the pairs, timeouts and threads, the tiers, counts and profiles."""
    from ..app.gate import DEFAULT_TIERS
    from ..fmt import Duration

    parser.add_argument("--budget", type=options.duration("--budget"), default=Duration.parse("10m"),
                        metavar="DURATION",
                        help="wall-clock budget for the timing pairs, e.g. 600, 90s, 10m, 1h (default: 10m)")
    parser.add_argument("--metric", default="first_grad_s",
                        help="the timing shown in progress lines and the noise floor, always guarded (default: "
                             "first_grad_s)")
    parser.add_argument("--guard", type=options.guard, default=None, metavar="LIST",
                        help="the timings the time tier guards, comma-separated, alpha divided among them (default: "
                             "first_grad_s,process_ttfg_s,import_s,build_s, with --metric in first_grad_s's place)")
    parser.add_argument("--min-effect", type=options.min_effect, default=None, metavar="FRACTION",
                        help="minimum relative effect, 0.05 or 5%% (default: the metric's, 0.05 for timings); the "
                             "gate warns before it starts when its budget cannot detect it here")
    parser.add_argument("--alpha", type=options.alpha, default=0.01, help="overall significance level (default: 0.01)")
    parser.add_argument("--min-pairs", type=options.count(2, options.MAX_REPEAT, "--min-pairs"), default=5,
                        help="pairs before the first look (default: 5)")
    parser.add_argument("--max-pairs", type=options.count(2, options.MAX_REPEAT, "--max-pairs"), default=60,
                        help="pairs at most per case (default: 60)")
    parser.add_argument("--max-failures", type=options.count(1, options.MAX_REPEAT, "--max-failures"), default=3,
                        help="consecutive failed samples of one side before its case stops (default: 3)")
    add_timeout(parser)
    add_threads(parser)
    parser.add_argument("--tiers", type=options.tiers, default=",".join(DEFAULT_TIERS), metavar="LIST",
                        help="tiers that may decide, comma-separated, from structural, source, instructions, time "
                             f"(default: {','.join(DEFAULT_TIERS)})")
    parser.add_argument("--count-repeat", type=options.count(1, options.MAX_REPEAT, "--count-repeat"), default=1,
                        help="instruction and allocation processes per side and case in the instructions tier "
                             "(default: 1)")
    parser.add_argument("--profiles", type=options.count(0, options.MAX_REPEAT, "--profiles"), default=3, metavar="N",
                        help="for each regressed case, N processes per side with sampled Python stacks (pyinstrument), "
                             "and one counting Python calls (cProfile), for the function-level attribution; 0: none "
                             "(default: 3)")


def add_snapshot_limit(parser: argparse.ArgumentParser) -> None:
    """``--snapshot-limit SIZE``: how large a snapshot of the project's uncommitted files may be."""
    parser.add_argument("--snapshot-limit", type=options.size, metavar="SIZE",
                        help="a built environment installs the project's working tree when it has uncommitted "
                             "changes, as a snapshot in a private git object store; refuse (exit 2, naming the "
                             "largest files) when those files come to more than SIZE (default: 100MiB; e.g. 500MB, "
                             "2GiB)")


__all__ = ["COMPARED_BACKEND", "add_decision", "add_env", "add_environments", "add_repeat", "add_revisions",
           "add_selection", "add_snapshot_limit", "add_threads", "add_timeout"]
