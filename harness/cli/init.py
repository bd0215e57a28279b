"""``ttfg init``: set up a user's repository for ttfg; the plan and the files are ``ttfg.project.scaffold``."""

from __future__ import annotations

from pathlib import Path


def cmd_init(args) -> int:
    from ..measure.worktrees import GitError, git
    from ..present.terminal import console as make_console
    from ..project import pyproject, scaffold

    console = make_console()
    if args.commit_url:
        from ..project.config import KEYS

        problem = KEYS["commit-url"].check(args.commit_url)
        if problem:
            raise scaffold.Refused(f"--commit-url {args.commit_url!r}: {problem}")
    folder = Path(args.repo).resolve()
    if not folder.is_dir():
        raise scaffold.Refused(f"--repo {args.repo}: no such folder")
    try:
        top = Path(git(folder, "rev-parse", "--show-toplevel").stdout.strip())
    except GitError:
        raise scaffold.Refused(f"{folder}: not a git repository; ttfg measures a project's commits, so run "
                               "`git init` and commit first (nothing was written)") from None
    if top.resolve() != folder:
        raise scaffold.Refused(f"{folder}: not the root of its git repository ({top}); run ttfg init at the root, "
                               "where the project's pyproject.toml is (nothing was written)")
    try:
        project = pyproject.read(folder)
    except pyproject.NotAProject as exc:
        raise scaffold.Refused(f"{exc} (nothing was written)") from None
    branch = git(folder, "rev-parse", "--abbrev-ref", "HEAD", check=False).stdout.strip()
    if branch in ("", "HEAD"):
        branch = "main"
    files = scaffold.plan(project, branch, args.commit_url)
    scaffold.write(project, files, args.force)
    models, backends, starter = scaffold.selection(project)
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
