"""``ttfg asv record``'s logic: asv history for chosen commits, without asv building environments.

asv 0.6.6 measures a commit range only in environments it builds (a virtualenv per
environment, the project installed per commit). An ``existing`` environment is much
cheaper but refuses ranges, needs ``--set-commit-hash`` to save anything, and measures
whatever checkout the suites sit in, dirty or not. This command covers that gap: for
each commit it checks out a clean git worktree, runs ``asv run --environment existing``
there with the worktree's own suites and project, files the result under that commit,
and finally runs ``asv publish``. Each revision's project (ttfg itself, or the user's
library) is installed into a folder of its own (``provision/sources.py``, cached by commit)
that goes first on ``PYTHONPATH`` for asv and for every probe, and the command refuses
to file results unless that install is what the interpreter imports. It also passes the machine explicitly (``--machine``,
registered with ``asv machine --yes`` when asv does not know it yet) and restricts asv to
the selected cases with ``-b`` (see ``ttfg.history.asv_suite.bench_patterns``), so a narrow
run neither forks a process per unmeasured combination nor blanks values stored earlier
for the same commit. Everything it runs is printed; the plain asv commands work as well.

The git side (resolving revisions, the throwaway worktrees) is the gate's own helper,
``ttfg.provision.worktrees``; the command line is ``ttfg.cli.asv``.
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
from ..provision.sources import Installed, install, whence
from ..provision.target import tool_environ
from ..provision.worktrees import git, pruned_note, repo_root, resolve, worktrees
from .asv_conf import load_config

__all__ = ["ASV", "ensure_machine", "publish_branches", "record"]

#: asv itself runs in this interpreter; ``--python`` only chooses the measured one (it needs asv_runner).
ASV = [sys.executable, "-m", "asv"]


def _run(cmd: list[str], cwd: Path | str, env: dict | None = None, check: bool = True) -> int:
    print("+ " + shlex.join(cmd), flush=True)
    code = subprocess.run(cmd, cwd=cwd, env=env).returncode
    if check and code != 0:
        raise UsageError(f"{shlex.join(cmd[:4])} ... exited with status {code}")
    return code


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
        if branch and git(root, "rev-parse", "--verify", "--quiet", f"{branch}^{{commit}}", check=False).returncode == 0:
            out.append(branch)
    current = git(root, "rev-parse", "--abbrev-ref", "HEAD").stdout.strip()
    if current not in out:
        out.append(current)
    return out


def _check_imports(python: str, env: dict, installed: Installed, rev: str) -> None:
    """Refuse to file results under ``rev`` unless its interpreter imports the revision's own install."""
    found = whence(python, env, list(installed.packages), {})
    for module, origin in found.modules.items():
        if not origin or not Path(origin).resolve().is_relative_to(installed.root.resolve()):
            raise UsageError(f"{rev}: {python} would import {module} from {origin}, not from the revision's "
                             f"install in {installed.root}; the history would not be that revision's")


def record(revs: list[str], config: Path, machine: str | None, python: str, all_params: bool,
           publish: bool, asv_args: list[str], shard=None, costs: str | None = None,
           project_dir: str | None = None) -> int:
    """Measure each of ``revs`` in its own clean worktree with asv, then publish; 1 when asv reported a failure.

    ``shard`` (a ``ShardSpec``) measures only that shard of the selection, passed to the
    suite as ``TTFG_ASV_SHARD`` (and ``costs`` as ``TTFG_ASV_COSTS``); each shard's result
    file holds its cases, and ``ttfg merge asv`` joins the shards' files of one commit.
    ``project_dir`` is the project's folder inside the repository (the config's ``install-path``);
    by default the folder of ``asv.conf.json``.
    """
    shard_env = {}
    if shard is not None:
        shard_env["TTFG_ASV_SHARD"] = shard.label
        if costs:
            shard_env["TTFG_ASV_COSTS"] = str(Path(costs).resolve())
    config = config.resolve()
    conf = load_config(config)
    base = config.parent
    root = repo_root(base)
    absolute = {key: str((base / conf.get(key, default)).resolve())
                for key, default in (("results_dir", "results"), ("html_dir", "html"), ("env_dir", "env"))}
    bench_dir = conf.get("benchmark_dir", "benchmarks")
    # Inside each revision's worktree: where asv.conf.json sits, and the project that is installed.
    here = base.resolve().relative_to(root.resolve()) if base.resolve().is_relative_to(root.resolve()) else Path()
    project = Path(project_dir) if project_dir is not None else here
    machine = ensure_machine(machine)
    patterns: list[str] = []
    if not all_params:
        from dataclasses import replace

        from .asv_suite import Selection, bench_patterns

        selection = Selection.from_env()
        if shard is not None:
            selection = replace(selection, shard=shard_env["TTFG_ASV_SHARD"], costs=shard_env.get("TTFG_ASV_COSTS"))
        patterns = bench_patterns(selection)
        if not patterns and shard is not None:
            print(f"ttfg asv: shard {shard.label} has no case of the TTFG_ASV_* selection: nothing to record",
                  file=sys.stderr)
            return 0
        if not patterns:
            raise UsageError("the TTFG_ASV_* selection has no runnable case")
    env = tool_environ(shard_env)  # asv is a tool: it reads its own settings from the environment
    if (pruned := pruned_note(root)) is not None:  # an earlier record killed outright left its worktrees
        print(f"ttfg asv: {pruned}", file=sys.stderr)
    tmp = Path(tempfile.mkdtemp(prefix="ttfg-asv-"))  # the generated asv configs
    failed = []
    try:
        for rev in revs:
            revision = resolve(root, rev)
            sha = revision.commit
            with worktrees(root, {sha[:12]: revision}, prefix="ttfg-asv-") as trees:
                tree = trees[sha[:12]]
                if not (tree / here / bench_dir / "__init__.py").exists():
                    print(f"ttfg asv: {rev} ({sha[:8]}) has no asv suites; history starts where they were added",
                          file=sys.stderr)
                    failed.append(rev)
                    continue
                # The revision's own project, installed apart and first on the path: the suites and
                # every probe they start import it, not whatever the interpreter has installed.
                installed = install(tree / project, sha, python, what=f"{rev} ({sha[:8]})", folder=project.as_posix())
                rev_env = {**env, "PYTHONPATH": str(installed.root), "ASV_PYTHONPATH": str(installed.root)}
                _check_imports(python, rev_env, installed, rev)
                print(f"ttfg asv: {rev} ({sha[:8]}): measuring {installed.project} installed in {installed.root}"
                      + (" (cached)" if installed.cached else f" ({installed.seconds:.1f} s)"), flush=True)
                # branches=[sha]: in an existing environment asv runs the suite once per configured
                # branch head (and fails on a branch missing here), labelling each run --set-commit-hash.
                run_conf = tmp / f"{sha[:12]}.asv.conf.json"
                run_conf.write_text(json.dumps({**conf, "version": 1, "repo": str(root), **absolute, "branches": [sha],
                                                "benchmark_dir": str(tree / here / bench_dir)}, indent=1))
                # --record-samples: keep every cold process's timing (asv_suite returns them as samples).
                cmd = ASV + ["run", "--config", str(run_conf), "--environment", f"existing:{python}",
                             "--set-commit-hash", sha, "--machine", machine, "--record-samples"]
                for pattern in patterns:
                    cmd += ["-b", pattern]
                if _run(cmd + asv_args, cwd=tree, env=rev_env, check=False) != 0:
                    failed.append(rev)
                for filed in sorted(Path(absolute["results_dir"], machine).glob(f"{sha[:8]}-*.json")):
                    # asv names the file COMMIT-ENVIRONMENT.json: the environment report and regressions read
                    print(f"ttfg asv: {rev} ({sha[:8]}) filed in {filed} (machine {machine}, environment "
                          f"{filed.stem[len(sha[:8]) + 1:]}; ttfg regressions --environment chooses it)", flush=True)
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
