"""``ttfg asv record``: asv history for chosen commits, without asv building environments.

asv 0.6.6 measures a commit range only in environments it builds (a virtualenv per
environment, the project installed per commit). An ``existing`` environment is much
cheaper but refuses ranges, needs ``--set-commit-hash`` to save anything, and measures
whatever checkout the suites sit in, dirty or not. This command covers that gap: for
each commit it checks out a clean git worktree, runs ``asv run --environment existing``
there with the worktree's own suites and harness, files the result under that commit,
and finally runs ``asv publish``. It also passes the machine explicitly (``--machine``,
registered with ``asv machine --yes`` when asv does not know it yet) and restricts asv to
the selected cases with ``-b`` (see ``harness.history.asv_suite.bench_patterns``), so a narrow
run neither forks a process per unmeasured combination nor blanks values stored earlier
for the same commit. Everything it runs is printed; the plain asv commands work as well.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ..errors import UsageError

#: asv itself runs in this interpreter; ``--python`` only chooses the measured one (it needs asv_runner).
ASV = [sys.executable, "-m", "asv"]


def _run(cmd: list[str], cwd: Path | str, env: dict | None = None, check: bool = True) -> int:
    print("+ " + shlex.join(cmd), flush=True)
    code = subprocess.run(cmd, cwd=cwd, env=env).returncode
    if check and code != 0:
        raise UsageError(f"{shlex.join(cmd[:4])} ... exited with status {code}")
    return code


def _git(root: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    if out.returncode != 0:
        raise UsageError(f"git {' '.join(args)}: {out.stderr.strip()}")
    return out.stdout.strip()


def load_config(path: Path) -> dict:
    """The asv config as asv reads it (JSON5: comments and trailing commas allowed)."""
    from asv import util

    try:
        return util.load_json(str(path), js_comments=True)
    except (OSError, util.UserError) as exc:
        raise UsageError(f"cannot read asv config {path}: {exc}") from None


def ensure_machine(name: str | None) -> str:
    """Register ``name`` with ``asv machine --yes`` unless asv knows it; return the name used."""
    from asv.machine import Machine, MachineCollection
    from asv.util import UserError as AsvUserError

    name = name or os.environ.get("TTFG_ASV_MACHINE") or Machine.get_unique_machine_name()
    try:
        MachineCollection.load(name)
    except AsvUserError:
        _run(ASV + ["machine", "--yes", "--machine", name], cwd=".")
    return name


def publish_branches(root: Path, configured: list) -> list[str]:
    """Branches for ``asv publish``: the configured ones that exist here, plus the current one.

    asv publish draws only commits reachable from ``branches``; a PR branch's commits
    would be left out (with a warning) unless its branch is listed. Detached: ``HEAD``.
    """
    out = []
    for branch in configured:
        check = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{branch}^{{commit}}"], cwd=root,
                               capture_output=True)
        if branch and check.returncode == 0:
            out.append(branch)
    current = _git(root, "rev-parse", "--abbrev-ref", "HEAD")
    if current not in out:
        out.append(current)
    return out


def record(revs: list[str], config: Path, machine: str | None, python: str, all_params: bool,
           publish: bool, asv_args: list[str]) -> int:
    config = config.resolve()
    conf = load_config(config)
    base = config.parent
    root = Path(_git(base, "rev-parse", "--show-toplevel"))
    absolute = {key: str((base / conf.get(key, default)).resolve())
                for key, default in (("results_dir", "results"), ("html_dir", "html"), ("env_dir", "env"))}
    bench_dir = conf.get("benchmark_dir", "benchmarks")
    machine = ensure_machine(machine)
    patterns: list[str] = []
    if not all_params:
        from ..history.asv_suite import bench_patterns

        patterns = bench_patterns()
        if not patterns:
            raise UsageError("the TTFG_ASV_* selection has no runnable case")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    tmp = Path(tempfile.mkdtemp(prefix="ttfg-asv-"))
    failed = []
    try:
        for rev in revs:
            sha = _git(root, "rev-parse", "--verify", f"{rev}^{{commit}}")
            tree = tmp / sha[:12]
            _git(root, "worktree", "add", "--detach", "--quiet", str(tree), sha)
            try:
                if not (tree / bench_dir / "__init__.py").exists():
                    print(f"ttfg asv: {rev} ({sha[:8]}) has no asv suites; history starts where they were added",
                          file=sys.stderr)
                    failed.append(rev)
                    continue
                # branches=[sha]: in an existing environment asv runs the suite once per configured
                # branch head (and fails on a branch missing here), labelling each run --set-commit-hash.
                run_conf = tmp / f"{sha[:12]}.asv.conf.json"
                run_conf.write_text(json.dumps({**conf, "version": 1, "repo": str(root), **absolute, "branches": [sha],
                                                "benchmark_dir": str(tree / bench_dir)}, indent=1))
                cmd = ASV + ["run", "--config", str(run_conf), "--environment", f"existing:{python}",
                             "--set-commit-hash", sha, "--machine", machine]
                for pattern in patterns:
                    cmd += ["-b", pattern]
                if _run(cmd + asv_args, cwd=tree, env=env, check=False) != 0:
                    failed.append(rev)
            finally:
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=root, capture_output=True)
        if publish:
            pub_conf = tmp / "publish.asv.conf.json"
            pub_conf.write_text(json.dumps({**conf, "version": 1, "repo": str(root), **absolute,
                                            "branches": publish_branches(root, conf.get("branches") or []),
                                            "benchmark_dir": str(base / bench_dir)}, indent=1))
            _run(ASV + ["publish", "--config", str(pub_conf)], cwd=base, env=env)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failed:
        print(f"ttfg asv: asv reported failures for: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def cmd_asv_record(args) -> int:
    extra = (["--show-stderr"] if args.show_stderr else []) + shlex.split(args.asv_args)
    return record(args.revs or ["HEAD"], Path(args.config), args.machine, args.python, args.all_params,
                  not args.no_publish, extra)


def add_asv_commands(sub) -> None:
    """Register ``ttfg asv ...`` on the main parser's subparsers."""
    import argparse

    asv = sub.add_parser("asv", help="asv history helpers (the plain asv commands work too)",
                         description="Helpers around airspeed velocity; see README.md, 'History with asv'.")
    asv_sub = asv.add_subparsers(dest="asv_command", metavar="ASV_COMMAND", required=True)
    p = asv_sub.add_parser(
        "record", help="measure commits in clean worktrees with the current interpreter, then asv publish",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="For each REV: a git worktree at that commit, `asv run --environment existing:PYTHON "
                    "--set-commit-hash SHA --machine NAME -b <selected cases>` with that worktree's suites and "
                    "harness, results filed under the commit in the config's results_dir; then `asv publish`. "
                    "The cases come from TTFG_ASV_MODELS / _BACKENDS / _VARIANTS / _REPEAT / _ALLOCATIONS. "
                    "Exit 1 when asv reports a failure for some commit.",
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
    p.set_defaults(func=cmd_asv_record)
