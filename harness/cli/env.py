"""``ttfg env list|build|prune``: the cached environments (``app/environments.py``), shown and managed.

An environment is an interpreter plus an exact set of packages, built with uv and kept
in the user cache folder; gates, ``run --env`` and release sweeps build them on demand.
This command shows what is cached (name, key, frameworks, size on disk, age), builds
one ahead of time, and removes them.
"""

from __future__ import annotations

import json
import sys

ENV_HELP = """\
Environments: an interpreter plus an exact set of packages, built with uv and
cached (the user cache folder, or $TTFG_CACHE_DIR), keyed by the interpreter
and the resolved requirements. `ttfg gate` builds them per side when base and
head declare different dependencies, or when given --base-env/--head-env;
`ttfg run --env` and `ttfg releases` build one per requirement set. A cached
one is reused in well under a second; their files are hard-linked from uv's
package cache, so ten jax releases do not cost ten copies.
"""


def cmd_env_list(args) -> int:
    from .. import fmt
    from ..app import environments
    from ..present.terminal import console as make_console, fitted
    from ..present.untrusted import plain

    found = environments.listing()
    envs = found.envs
    if args.format == "json":
        sys.stdout.write(json.dumps({"environments": [e.to_json() for e in envs],
                                     "uv_cache_bytes": found.uv_cache_bytes}, indent=1) + "\n")
        return 0
    console = make_console()
    if not envs:
        console.print("no cached environments (ttfg env build REQS builds one)", highlight=False)
        return 0
    table = fitted("cached environments", [("name", "left"), ("frameworks", "left"), ("size", "right"),
                                           ("age", "right"), ("key", "left")], boxed=True)
    for e, age in zip(envs, found.ages):
        names = " = ".join(e.names) if len(e.names) > 1 else e.name  # one environment asked for under several names
        frameworks = (f"broken: {e.problem} (ttfg env prune {e.key})" if e.problem
                      else " ".join(f"{k} {v}" for k, v in e.versions.items()))
        table.add_row(plain(names), plain(frameworks), fmt.bytes_(e.size_bytes), age, e.key)
    console.print(table)
    total = sum(e.size_bytes for e in envs)
    console.print(f"{len(envs)} environment(s), {fmt.bytes_(total)} counted apart; files hard-linked from uv's "
                  f"cache ({fmt.bytes_(found.uv_cache_bytes)}) are shared", highlight=False)
    return 0


def cmd_env_build(args) -> int:
    from .. import fmt
    from ..app import environments

    env = environments.build_one(args.requirements, on_note=lambda text: print(text, file=sys.stderr, flush=True))
    if env is None:
        print("'current' is this interpreter: nothing to build", file=sys.stderr)
        return 0
    versions = ", ".join(f"{k} {v}" for k, v in env.recorded().items() if v)
    how = "cached" if env.cached else f"built in {fmt.seconds(env.seconds)}"
    print(f"{env.name}: {versions} ({how}); python {env.python}")
    return 0


def cmd_env_prune(args) -> int:
    from ..app import environments

    older_s = args.older_than.seconds if args.older_than is not None else None
    if args.counts:  # the count store: every kept count sample, all or --older-than
        return _prune_counts(args, older_s)
    if args.sources:  # the installed revisions the gate keeps by commit and project folder
        if args.names:
            from ..errors import UsageError

            raise UsageError("--sources removes installed revisions, all or --older-than; names are environments'")
        gone = environments.prune_sources(older_s, on_note=print)
        for key, age in gone:
            print(f"removed installed revision {key} ({age} old)")
        if not gone:
            print("nothing matched: no installed revision removed")
        return 0
    if not args.all and not args.names and args.older_than is None:
        from ..errors import UsageError

        raise UsageError("say what to remove: NAME or KEY ..., --older-than DURATION, or --all (or --sources)")
    removed = environments.prune(args.names, older_s, args.all, on_note=print)
    for e, age in removed:
        print(f"removed {e.name} ({e.key}, {age} old)")
    if not removed:
        print("nothing matched: no environment removed")
    return 0


def _prune_counts(args, older_s: float | None) -> int:
    """``env prune --counts``: the count store's entries (and those set aside as corrupt), all or the older ones."""
    from .. import fmt
    from ..app import environments
    from ..errors import UsageError

    if args.names or args.all or args.sources:
        raise UsageError("--counts removes the stored count samples, all or --older-than; it takes no names, "
                         "--all or --sources")
    root, removed, freed = environments.prune_counts(older_s)
    if removed:
        print(f"removed {removed} stored count(s) from {root} ({fmt.bytes_(freed)})")
    else:
        print(f"nothing matched: no stored count removed ({root})")
    return 0


def add_env_commands(sub) -> None:
    """Register ``env`` and its actions on the ``ttfg`` subparsers."""
    import argparse

    from . import options

    p = sub.add_parser("env", help="cached environments: list, build, prune", description=ENV_HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    esub = p.add_subparsers(dest="env_command", metavar="ACTION")
    p.set_defaults(func=lambda args, parser=p: (parser.print_help(), 2)[1])
    c = esub.add_parser("list", help="what is cached: name, frameworks, size, age")
    c.add_argument("--format", choices=("table", "json"), default="table")
    c.set_defaults(func=cmd_env_list)
    c = esub.add_parser("build", help="build (or find) an environment ahead of time",
                        description="REQS: requirement lines ('jax==0.4.38 jaxlib==0.4.38'), NAME=REQS, or "
                                    "NAME=@requirements.txt")
    c.add_argument("requirements", metavar="REQS")
    c.set_defaults(func=cmd_env_build)
    c = esub.add_parser("prune", help="remove cached environments")
    c.add_argument("names", nargs="*", metavar="NAME|KEY")
    c.add_argument("--older-than", type=options.duration("--older-than"), metavar="DURATION",
                   help="those built longer ago than this, e.g. 168h")
    c.add_argument("--all", action="store_true", help="every cached environment")
    c.add_argument("--sources", action="store_true",
                   help="remove the installed revisions instead (the gate's cache of each commit's project, keyed "
                        "by commit and install-path): all, or with --older-than")
    c.add_argument("--counts", action="store_true",
                   help="remove the stored count samples instead (the count store the gate and bisect reuse, "
                        "$TTFG_COUNT_STORE_DIR or counts/ in the cache folder): all, or with --older-than")
    c.set_defaults(func=cmd_env_prune)
