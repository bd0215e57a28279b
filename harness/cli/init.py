"""``ttfg init``: set up a user's repository for ttfg; parsing and printing (the use case: ``app/init.py``)."""

from __future__ import annotations


def cmd_init(args) -> int:
    from ..app.init import init
    from ..present.terminal import console as make_console

    console = make_console()
    done = init(args.repo, args.force, args.commit_url, project_dir=args.project_dir,
                ttfg_requirement=args.ttfg_requirement, default_branch=args.default_branch, framework=args.framework,
                starter=args.starter)
    project, folder, files, models, backends, starter = (done.project, done.folder, done.files, done.models,
                                                         done.backends, done.starter)
    where = f"{folder}/{done.project_dir}" if done.project_dir else str(folder)
    console.print(f"ttfg init: {project.name} in {where}, measuring {', '.join(models)} x {', '.join(backends)}"
                  + ((" (a starter function case: the project declared no plugin)" if done.kind == "function" else
                      " (a starter library backend: the project declared no plugin)") if starter
                     else " (the project's own plugins)"), highlight=False, markup=False)
    if done.found:
        console.print(f"  {done.found}", highlight=False, markup=False)
    if done.framework is not None:
        console.print(f"  starter framework {done.framework.describe()}", highlight=False, markup=False)
    console.print(f"  default branch: {done.branch} (the trend workflow and asv follow it); CI installs "
                  f"{done.requirement}", highlight=False, markup=False)
    for line in done.kept:
        console.print(f"  kept the config's {line}", highlight=False, markup=False)
    for f in files:
        verb = {"append": "appended to", "replace": "completed"}.get(f.mode, "wrote")
        console.print(f"  {verb} {f.path}: {f.what}", highlight=False, markup=False)
    for line in done.notes:
        console.print(f"  note: {line}", highlight=False, markup=False)
    console.print("next:", highlight=False)
    if starter:
        install = f"./{done.project_dir}" if done.project_dir else "."
        console.print(f"  pip install -e {install}     (once: registers the starter's new entry points)",
                      highlight=False)
    if done.kind == "function":
        console.print("  ttfg run             the starter's case: import, build and first call, cold, with the "
                      "framework's counters", highlight=False)
    else:
        console.print("  ttfg check           every selected case's gradient against the float64 reference",
                      highlight=False)
    console.print("  ttfg gate --base HEAD~1   the last commit against its parent, as the PR workflow does",
                  highlight=False)
    return 0


def add_init_command(sub) -> None:
    from ..project.declarations import FRAMEWORKS  # the starters' frameworks, in the order init prefers them
    from ..project.scaffold import BACKEND_FRAMEWORKS, STARTERS

    p = sub.add_parser("init", help="set up a project's repository: config, asv, suites, CI workflows",
                       description="Write into a git repository holding a Python project (pyproject.toml with "
                                   "[project], at the root or in --project-dir): ttfg.toml (its selection: the "
                                   "models and backends the project plugs into ttfg; an existing ttfg.toml or "
                                   "[tool.ttfg] is completed, never overwritten), asv.conf.json (asv builds the "
                                   "project per commit on the default branch), .ttfg/ttfg_suites/ (the "
                                   "config's selection and one import of ttfg's asv benchmarks; in a folder no build "
                                   "backend takes for a package, so the project builds and ships as before), "
                                   ".github/workflows/ttfg-perf-gate.yml and ttfg-trend.yml (ttfg installed from where this ttfg came "
                                   "from, with the instructions extra), .gitignore lines, and, when the project "
                                   "declares no ttfg plugin, a starter for the framework it declares, with its "
                                   "entry point: by default a function case (PACKAGE/ttfg_cases.py, case() returning "
                                   "the library's own loss-and-gradient call and its arguments), or, with --starter "
                                   "backend, a library backend built from ttfg's layer spec. All or nothing: existing files are not "
                                   "overwritten without --force, and exit 2 writes nothing outside a git "
                                   "repository's root or a Python project.")
    p.add_argument("--repo", default=".", metavar="DIR", help="the repository's root (default: the current folder)")
    p.add_argument("--force", action="store_true", help="overwrite files ttfg init wrote before")
    p.add_argument("--commit-url", metavar="TEMPLATE",
                   help="link commits in reports: an http(s) URL with {sha}, "
                        "e.g. 'https://github.com/OWNER/REPO/commit/{sha}'")
    p.add_argument("--project-dir", metavar="DIR",
                   help="the project's folder inside the repository (a monorepo's python/); written to the config "
                        "as install-path (default: the root, or the one subfolder with a pyproject.toml)")
    p.add_argument("--ttfg-requirement", metavar="REQ",
                   help="the pip requirement CI installs ttfg with, e.g. 'ttfg @ git+https://github.com/OWNER/"
                        "ttfg@COMMIT' (default: where this ttfg was installed from; the instructions extra is added)")
    p.add_argument("--starter", choices=STARTERS, default="function",
                   help="what is written for a project that declares no ttfg plugin: 'function' (default), a "
                        "function case measuring the library's own loss-and-gradient call (jitted or "
                        "torch.compile'd, as users write it), for " + ", ".join(FRAMEWORKS) + "; 'backend', a "
                        "library backend building the model from ttfg's layer spec, whose gradient `ttfg check` "
                        "compares with a float64 reference (" + ", ".join(BACKEND_FRAMEWORKS) + ")")
    p.add_argument("--framework", choices=FRAMEWORKS,
                   help="the starter's framework (default: what the project declares: a required "
                        "dependency before an optional one, then " + ", ".join(FRAMEWORKS) + "; autograd when it "
                        "declares none)")
    p.add_argument("--default-branch", metavar="NAME",
                   help="the branch pull requests merge into (default: origin's HEAD, else main or master)")
    p.set_defaults(func=cmd_init)


__all__ = ["add_init_command", "cmd_init"]
