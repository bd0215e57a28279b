"""``ttfg init``: set up a user's repository for ttfg; parsing and printing (the use case: ``app/init.py``)."""

from __future__ import annotations


def cmd_init(args) -> int:
    from ..app.init import init
    from ..present.terminal import console as make_console

    console = make_console()
    done = init(args.repo, args.force, args.commit_url)
    project, folder, files, models, backends, starter = (done.project, done.folder, done.files, done.models,
                                                         done.backends, done.starter)
    console.print(f"ttfg init: {project.name} in {folder}, measuring {', '.join(models)} x {', '.join(backends)}"
                  + (" (a starter plugin: the project declared none)" if starter else " (the project's own plugins)"),
                  highlight=False)
    for f in files:
        console.print(f"  {'appended to' if f.mode == 'append' else 'wrote'} {f.path}: {f.what}", highlight=False)
    console.print("next:", highlight=False)
    if starter:
        console.print("  pip install -e .     (once: registers the starter's new entry points)", highlight=False)
    console.print("  ttfg check           every selected case's gradient against the float64 reference", highlight=False)
    console.print("  ttfg gate --base HEAD~1   the last commit against its parent, as the PR workflow does",
                  highlight=False)
    return 0


def add_init_command(sub) -> None:
    p = sub.add_parser("init", help="set up a project's repository: config, asv, suites, CI workflows",
                       description="Write into a git repository holding a Python project (pyproject.toml with "
                                   "[project]): ttfg.toml (its selection: the models and backends the project "
                                   "plugs into ttfg), asv.conf.json (asv builds the project per commit), "
                                   "ttfg_suites/ (one import of ttfg's asv benchmarks), .github/workflows/ttfg-"
                                   "perf-gate.yml and ttfg-trend.yml, and, when the project declares no ttfg "
                                   "plugin, a starter model and backend with their entry points. Existing files "
                                   "are not overwritten without --force. Exit 2, writing nothing, outside a git "
                                   "repository's root or a Python project.")
    p.add_argument("--repo", default=".", metavar="DIR", help="the repository's root (default: the current folder)")
    p.add_argument("--force", action="store_true", help="overwrite files ttfg init wrote before")
    p.add_argument("--commit-url", metavar="TEMPLATE",
                   help="link commits in reports: an http(s) URL with {sha}, "
                        "e.g. 'https://github.com/OWNER/REPO/commit/{sha}'")
    p.set_defaults(func=cmd_init)


__all__ = ["add_init_command", "cmd_init"]
