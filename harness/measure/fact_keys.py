"""The :class:`~ttfg.results.fact_key.FactKey` of a case measured here: what every stored fact is filed under.

One builder for every store: a bisect's reusable counts (``app/bisect_counts.py``), the count
margins (``decide/count_margins.py``), the noise calibration (``decide/noise.py``), and the
stored baseline that builds on them. Two facts are exchangeable only when their keys are equal,
so every store must compute a key the same way: a calibration in this interpreter and a gate
side running in it give the same key; a side in another environment, another interpreter,
another ttfg, another CPU does not.

What is read here, once per process where it cannot change (the ttfg source digest, valgrind's
version, the CPU): the rest comes from the side (its environment, its probe target) and the run's
settings.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from ..provision.target import inherited
from ..results.fact_key import FactKey

if TYPE_CHECKING:
    from ..provision.environments import Environment
    from .cases import Case
    from .runner import RunSettings


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=1)
def ttfg_source() -> str:
    """A digest of the running ttfg's Python files (its package and its models): the code that measures."""
    from ttfg import models

    package = Path(__file__).resolve().parents[1]
    found = hashlib.sha256()
    for folder in dict.fromkeys([package, Path(models.__file__).resolve().parent]):
        for path in sorted(folder.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            found.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return found.hexdigest()[:16]


@functools.lru_cache(maxsize=1)
def _ttfg() -> tuple:
    from .metadata import package_versions

    return (("version", package_versions(("ttfg",))["ttfg"]), ("source", ttfg_source()))


def ttfg() -> dict:
    """The measuring ttfg: its version and its source's digest (read once per process)."""
    return dict(_ttfg())


@functools.lru_cache(maxsize=1)
def _valgrind_version() -> str | None:
    try:
        out = subprocess.run(["valgrind", "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def valgrind() -> dict:
    """How a count is taken: callgrind's command, the probe's variables under it, CPU pinning, valgrind's version."""
    from . import instructions

    return {"command": instructions.command(Path("OUT"))[:-1], "probe_env": dict(instructions.PROBE_ENV),
            "one_cpu": instructions.pins(), "version": _valgrind_version()}


@functools.lru_cache(maxsize=2)
def _machine(host: bool) -> tuple:
    import socket

    from .metadata import cpu_flags, cpu_model

    facts = {"cpu": cpu_model(), "cpu_count": os.cpu_count() or 1, "flags": _digest(cpu_flags())}
    if host:
        facts["hostname"] = socket.gethostname()
    return tuple(facts.items())


def machine(host: bool = False) -> dict:
    """The CPU model, count and flags' digest; with ``host``, the host name too (for facts about wall time)."""
    return dict(_machine(host))


def probe(run: "RunSettings") -> dict:
    """The probe's settings that change what it measures (the target's interpreter and environment are apart)."""
    target = run.target
    return {"threads": run.threads, "python_allocators": run.python_allocators, "isolated": target.isolated,
            "inherited": _digest(inherited(os.environ)),
            "pythonpath": None if target.isolated else os.environ.get("PYTHONPATH")}


@functools.lru_cache(maxsize=4)
def current_environment(python: str = sys.executable) -> "Environment":
    """This interpreter as an environment (its packages and editable installs read once per process)."""
    from ..provision.environments import current

    return current(python)


def key(case: "Case", env: "Environment | None", run: "RunSettings", counted: bool,
        measured: str | None = None) -> FactKey:
    """The key of ``case`` measured in ``env`` (None: the run's interpreter as it is) with ``run``'s settings.

    ``counted``: a fact about counts (valgrind's settings enter the key, the host does not); else a fact about
    wall time (the host enters, valgrind does not). An environment holding an editable or local install whose
    files are too many to digest gets a key of its own each time: nothing stored is reused for it
    (:func:`unreusable` says why).

    ``measured``: the distribution a side's own checkout replaces (the project a gate or a bisect measures, put
    first on the probe's path). Its editable install's files are left out of the key: they are the working tree
    the command runs in (in CI, each push's head), which the side never imports, and with them in it no stored
    base count was ever found again by the next push of a pull request (issue 39).
    """
    env = env if env is not None else current_environment(run.target.python)
    if measured is not None:
        from ..provision.target import normalised

        drop = normalised(measured)
        if any(normalised(name) == drop for name in env.local):
            env = dataclasses.replace(env, local={n: e for n, e in env.local.items() if normalised(n) != drop})
    local = {name: str(entry.get("tree") or "") for name, entry in sorted(env.local.items())}
    environment = env.digest if not unreusable(env) else f"{env.digest}-unique-{uuid.uuid4().hex[:8]}"
    return FactKey(case.to_json(), environment, run.target.python, env.interpreter, ttfg(), probe(run),
                   machine(host=not counted), valgrind() if counted else None, local)


def unreusable(env: "Environment") -> str | None:
    """Why nothing stored may be reused for ``env`` (an install whose files were not digested), or None."""
    from ..provision.local_installs import undigested

    found = undigested(env.local)
    return "; ".join(f"{name}: {why}" for name, why in found.items()) or None


__all__ = ["current_environment", "key", "machine", "probe", "ttfg", "ttfg_source", "unreusable", "valgrind"]
