"""Environment metadata, collected once per run: every number carries its conditions.

Package versions are read from installed distribution metadata, so collecting them
imports no framework.
"""

from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

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


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_state(root: str | os.PathLike | None = None) -> dict[str, Any]:
    """Commit, branch and dirty flag of the checkout ttfg runs from (nulls outside git)."""
    root = Path(root or Path(__file__).resolve().parents[2])

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
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
        "packages": package_versions(),
        "probe_env": env,
        "git": git_state(),
    }
