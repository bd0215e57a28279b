"""Environment metadata, collected once per run: every number carries its conditions.

Package versions are read from installed distribution metadata, so collecting them
imports no framework.
"""

from __future__ import annotations

import os
import platform
import socket
import sys
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

from ..provision.worktrees import GitError, git as run_git
from ..results.record import now_iso

PACKAGES = ("ttfg", "numpy", "jax", "jaxlib", "torch", "autograd", "scipy", "memray", "asv")
#: Environment variables that change what is measured; recorded when set.
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "XLA_FLAGS",
               "PYTHONHASHSEED", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def package_versions(names=PACKAGES) -> dict[str, str | None]:
    out = {}
    for name in names:
        try:
            out[name] = importlib_metadata.version(name)
        except importlib_metadata.PackageNotFoundError:
            out[name] = None
    return out


def plugin_versions() -> dict[str, str]:
    """Installed distributions that add backends or models through entry points, with their versions."""
    from ttfg import models
    from ttfg.models import plugins

    from .. import engines

    return plugins.distributions((engines.GROUP, models.GROUP))


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_flags() -> list[str]:
    """The CPU's feature flags, sorted (``flags`` on x86, ``Features`` on ARM); empty when unreadable."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key = line.split(":", 1)[0].strip()
            if key in ("flags", "Features"):
                return sorted(set(line.split(":", 1)[1].split()))
    except OSError:
        pass
    return []


def fingerprint(thread_env: dict[str, str] | None = None):
    """This machine as far as it changes the numbers (:class:`~ttfg.results.model.Fingerprint`).

    ``thread_env``: the thread variables the measured processes get (the runner's
    ``probe_env``); without it, this process's own.
    """
    from ..results.model import Fingerprint
    from .machine import meminfo

    threads = thread_env if thread_env is not None else {k: os.environ[k] for k in THREAD_VARS if k in os.environ}
    memory = (meminfo(Path("/")) or {}).get("MemTotal")
    return Fingerprint(cpu_model=cpu_model(), cpu_arch=platform.machine(), cpu_flags=cpu_flags(),
                       cores=os.cpu_count() or 0, memory_bytes=memory, kernel=platform.release(),
                       python=f"{platform.python_implementation()} {platform.python_version()}",
                       packages={**package_versions(), **plugin_versions()},
                       threads={k: str(v) for k, v in sorted(threads.items())})


def git_state(root: str | os.PathLike | None = None) -> dict[str, Any]:
    """Commit, branch and dirty flag of the checkout ttfg runs from (nulls outside git)."""
    root = Path(root or Path(__file__).resolve().parents[2])

    def git(*args: str) -> str | None:
        try:
            out = run_git(root, *args, check=False, timeout=10)
        except GitError:  # no git here, or it hung
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "branch": git("rev-parse", "--abbrev-ref", "HEAD"),
            "dirty": None if status is None else bool(status)}


def collect(settings_env: dict[str, str] | None = None) -> dict[str, Any]:
    """Everything a reader needs to judge whether two results are comparable."""
    try:
        load = list(os.getloadavg())
    except OSError:
        load = None
    env = {**{k: os.environ[k] for k in THREAD_VARS if k in os.environ}, **(settings_env or {})}
    return {
        "collected": now_iso(),
        "hostname": socket.gethostname(),
        "python": sys.version.split()[0],
        "python_executable": sys.executable,
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "loadavg_start": load,
        "packages": {**package_versions(), **plugin_versions()},
        "probe_env": env,
        "git": git_state(),
    }
