"""The options several commands share, each defined once with one help text.

Why one module: ``--repeat``, ``--timeout``, ``--threads``, ``--env`` and the case
selection were defined by each command that takes them, and their help texts, metavars
and even validators drifted apart. A command adds them here by name (``add_timeout(p)``);
the type is always the ``cli/options.py`` validator, so a bad value is refused the same
way everywhere. Modelled on asv's ``asv/commands/common_args.py``.
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


def add_snapshot_limit(parser: argparse.ArgumentParser) -> None:
    """``--snapshot-limit SIZE``: how large a snapshot of the project's uncommitted files may be."""
    parser.add_argument("--snapshot-limit", type=options.size, metavar="SIZE",
                        help="a built environment installs the project's working tree when it has uncommitted "
                             "changes, as a snapshot in a private git object store; refuse (exit 2, naming the "
                             "largest files) when those files come to more than SIZE (default: 100MiB; e.g. 500MB, "
                             "2GiB)")


__all__ = ["add_env", "add_repeat", "add_selection", "add_snapshot_limit", "add_threads", "add_timeout"]
