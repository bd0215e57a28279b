"""Issue 45's rows for ``bad_inputs.py``: what ``init``, the gate and ``run --env`` must never do to a user's project.

One row or more per item, each a real ``ttfg`` process on a scratch repository made here:
``init`` on a flat-layout setuptools project with automatic discovery (the project must still
build, with no suites package in its wheel); a gate whose head records a submodule commit that
cannot be fetched (exit 2 naming the submodule, never a regression); ``run --env`` over a dirty
tree whose untracked file is over ``--snapshot-limit`` (exit 2 naming the file and the flag, the
user's ``.git`` unchanged: this row builds one environment, autograd 1.9.1, in a scratch
``TTFG_CACHE_DIR``, seconds from uv's cache); ``init`` on a project declaring torch and jax (the
choice and what was declared are said) and ``--framework`` with a name no starter has.

Rows are plain dicts (``bad_inputs.Row``'s fields): this module is imported by the script, so it
cannot import the script's ``Row`` back.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Callable

#: The scratch project's plugin module: a backend of ttfg's autograd, under the project's name.
PLUGIN = ("from ttfg.engines.autograd_numpy import AutogradBackend\n\n\n"
          "class Backend(AutogradBackend):\n    name = \"snap.autograd\"\n")


def _git_size(repo: Path) -> int:
    return sum(p.stat().st_size for p in (repo / ".git").rglob("*") if p.is_file())


def projects(d: Path, project: Callable[..., Path], git: Callable[..., str]) -> dict:
    """The scratch repositories; ``project`` and ``git`` are ``bad_inputs``' ``_project`` and ``_git``."""
    made = {}
    # Item 1: a flat layout (the package at the root), setuptools' automatic discovery (no package list).
    flat = project(d / "flat", "jlib")
    git(flat, "mv", "src/jlib", "jlib")
    git(flat, "commit", "-q", "-m", "a flat layout")
    made["flat"] = flat
    # Item 2: the head records a submodule commit that exists nowhere (its URL is a folder that is not there).
    plugin = '\n[project.entry-points."ttfg.backends"]\n"lost.autograd" = "lost:Backend"\n'
    lost = project(d / "sub-lost", "lost", tail=plugin)
    git(lost, "commit", "-q", "-am", "a backend plugin")
    git(lost, "checkout", "-q", "-b", "lost")
    (lost / ".gitmodules").write_text(f'[submodule "vendor"]\n\tpath = vendor\n\turl = {d / "no-such-vendor"}\n')
    git(lost, "add", ".gitmodules")
    git(lost, "update-index", "--add", "--cacheinfo", f"160000,{'e' * 40},vendor")
    git(lost, "commit", "-q", "-m", "vendor a library nobody can fetch")
    git(lost, "checkout", "-q", "main")
    made["sub-lost"] = lost
    # Item 3: a project whose plugin this interpreter finds (PYTHONPATH: its src/ and a dist-info), a config,
    # and a 3 MiB untracked file: over a 1 MiB --snapshot-limit.
    snap = project(d / "snap", "snap", {"src/snap/__init__.py": PLUGIN, "ttfg.toml": 'budget = "1m"\n'},
                   tail='\n[project.entry-points."ttfg.backends"]\n"snap.autograd" = "snap:Backend"\n')
    git(snap, "commit", "-q", "-am", "a backend plugin")
    info = d / "snap-site" / "snap-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: snap\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text('[ttfg.backends]\nsnap.autograd = snap:Backend\n')
    (snap / "src" / "snap" / "weights.bin").write_bytes(os.urandom(3 * 2**20))
    made["snap"] = snap
    made["snap-git-bytes"] = _git_size(snap)
    # Item 4: a project declaring two frameworks.
    made["two-frameworks"] = project(d / "two-frameworks", "duo", deps=("torch>=2", "jax>=0.4"))
    made["no-framework"] = project(d / "no-framework", "plain")
    return made


def _builds_without_suites(flat: Path) -> str | None:
    """None when the flat project still builds a wheel and the wheel carries no ttfg suites."""
    out = flat / "dist"
    done = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(flat)],
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        return "the project no longer builds: " + (done.stderr.strip().splitlines() or ["?"])[-1]
    names = [n for wheel in out.glob("*.whl") for n in zipfile.ZipFile(wheel).namelist()]
    return next((f"the wheel ships {n}" for n in names if "ttfg_suites" in n), None)


def rows(d: Path, m: dict, requirement: str, contains: Callable, both: Callable,
         out: Callable[[str], str]) -> list[dict]:
    """Issue 45's rows (``contains`` and ``both`` are ``bad_inputs``' ``_contains`` and ``_all``)."""
    tiny = ["--model", "resnet15:blocks=2", "--backend", "autograd"]
    snap = m["snap"]
    return [
        dict(what="init 45.1: a flat-layout setuptools project with automatic discovery still builds", expect=0,
             argv=["init", "--repo", str(m["flat"]), "--ttfg-requirement", requirement],
             check=lambda p: _builds_without_suites(m["flat"])),
        dict(what="init 45.2: gate, the head records a submodule commit that cannot be fetched",
             argv=["gate", "--repo", str(m["sub-lost"]), "--base", "main", "--head", "lost", *tiny,
                   "--out-dir", out("sub-lost")],
             check=both(contains("submodule vendor"), contains("eeeeeeeeee"))),
        dict(what="init 45.3: run `--snapshot-limit 0`", argv=["run", *tiny, "--snapshot-limit", "0"],
             check=contains("above 0 bytes")),
        dict(what="init 45.3: run --env over a dirty tree, a 3 MiB untracked file, `--snapshot-limit 1MiB`",
             argv=["run", "--model", "resnet15:blocks=2", "--backend", "snap.autograd", "--repeat", "1", "--env",
                   "autograd==1.9.1", "--snapshot-limit", "1MiB", "--out", out("snap.json")],
             cwd=snap, env={"PYTHONPATH": f"{snap / 'src'}:{d / 'snap-site'}", "TTFG_CACHE_DIR": str(d / "snap-cache")},
             check=both(contains("src/snap/weights.bin (3 MiB)"), contains("--snapshot-limit 4MiB"),
                        lambda p: None if _git_size(snap) == m["snap-git-bytes"] else "the user's .git changed")),
        dict(what="init 45.4: init on a project declaring torch and jax", expect=0,
             argv=["init", "--repo", str(m["two-frameworks"]), "--ttfg-requirement", requirement],
             check=both(contains("declared jax (dependencies), torch (dependencies)"),
                        contains("--framework torch"))),
        dict(what="init 45.4: init `--framework mxnet`",
             argv=["init", "--repo", str(m["no-framework"]), "--ttfg-requirement", requirement, "--framework",
                   "mxnet"],
             check=lambda p: None if not (m["no-framework"] / "ttfg.toml").exists() else "ttfg.toml was written"),
    ]


__all__ = ["projects", "rows"]
