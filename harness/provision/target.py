"""Where a probe runs, apart from what it samples: one way to open a side.

Why one module: ``ttfg run --env``, the gate, ``ttfg releases``, ``ttfg study env`` and
``ttfg regressions --confirm`` all start probes in some interpreter with some import
path. Each used to swap the interpreter and ``PYTHONPATH`` its own way (``Runner.settings_for``
on one route, ``Side.run_settings`` on the other), and the findings about environments
that measured the wrong packages lived in the gap between the routes. Now a
:class:`ProbeTarget` (interpreter, import roots, the environment it stands for) is built
from an environment in one place (:meth:`ProbeTarget.of`), and the child's environment
variables are built in one place (:func:`child_environ`).

The child's environment is an allowlist, not a denylist (pyperf's ``create_environ``
is the model): a variable the parent happens to have (a ``JAX_PLATFORMS``, a
``TORCH_LOGS``, a library's own switch) would otherwise change what is measured, on one
machine and not another, without a trace in the results. What passes: what a process
needs to find programs, its home, temporary folders and locale (Inductor runs the C
compiler from ``PATH``), the library path, the compiler and device choice, and the
OpenBLAS core type (older OpenBLAS builds compute wrong results without it on some
processors). Everything else a probe sees is set here and recorded.

The tools ttfg runs for itself (git, uv, an interpreter asked what it holds) are the other
kind of child, and :func:`tool_environ` builds theirs: the parent's whole environment, because
that is where git and uv read their configuration, caches, indexes and credentials
(``UV_CACHE_DIR``, ``UV_INDEX_URL``, ``PIP_FIND_LINKS``, ``GIT_*``, ``SSH_AUTH_SOCK``), less
``PYTHONPATH``, which would put the parent's packages into another interpreter (a build
backend's, a built environment's), plus what the caller adds.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

#: The parent's variables a probe inherits (pyperf's allowlist, plus what compilers and BLAS need).
INHERITED = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP", "TMP",
             "LD_LIBRARY_PATH", "CC", "CXX", "CUDA_VISIBLE_DEVICES", "CUDA_HOME",
             "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "SYSTEMROOT")
#: Prefixes of inherited variables (the locale's categories).
INHERITED_PREFIXES = ("LC_",)
#: The packages every record names, whether asked for or not.
RECORDED = ("jax", "jaxlib", "torch", "autograd", "numpy", "scipy", "ml-dtypes", "flax")


def normalised(name: str) -> str:
    """A distribution's name as packaging compares it (``ML_Dtypes`` -> ``ml-dtypes``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass
class Environment:
    """A built (or the current) environment: what runs a side's probes, and what it holds."""

    name: str
    python: str
    #: ``{distribution: version}`` of everything installed (normalised names).
    packages: dict[str, str]
    interpreter: str
    key: str | None = None
    path: Path | None = None
    requested: tuple[str, ...] | None = None
    origin: str = ""
    cached: bool = True
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    #: Editable and local installs, ``{distribution: {url, editable, tree}}``: ``tree`` digests their files, read
    #: when the environment was opened (``local_installs.py``), so the identity follows their bytes.
    local: dict[str, dict] = field(default_factory=dict)

    @property
    def current(self) -> bool:
        return self.key is None

    def version(self, package: str) -> str | None:
        return self.packages.get(normalised(package))

    def recorded(self) -> dict[str, str | None]:
        """The versions every record names: each framework's and numpy's (None: not installed)."""
        return {p: self.version(p) for p in RECORDED}

    def to_json(self) -> dict:
        """What a results file records (``environment.env``): name, interpreter, key, versions."""
        data = {"name": self.name, "python": self.python, "interpreter": self.interpreter, "key": self.key,
                "requested": None if self.requested is None else list(self.requested), "origin": self.origin,
                "versions": self.recorded(), "packages": dict(sorted(self.packages.items()))}
        if self.local:
            data["local"] = {name: dict(entry) for name, entry in sorted(self.local.items())}
        return data

    @property
    def digest(self) -> str:
        """The environment's identity: its interpreter, exact packages and the files of its editable and local
        installs (``results.identity.digest``)."""
        from ..results.identity import digest

        return digest(self.to_json())

    def differs_from(self, other: "Environment") -> dict[str, tuple[str | None, str | None]]:
        """Packages whose versions differ: ``{name: (mine, theirs)}``."""
        names = set(self.packages) | set(other.packages)
        return {n: (self.packages.get(n), other.packages.get(n)) for n in sorted(names)
                if self.packages.get(n) != other.packages.get(n)}


@dataclass(frozen=True)
class ProbeTarget:
    """An interpreter and the import roots put first on its path: where a side's probes run.

    ``isolated`` is true in a built environment: there ``PYTHONPATH`` holds the roots
    only, because the parent's path would leak this interpreter's packages in (a built
    environment's probes would import the parent's jax). In the current interpreter the
    roots go before the inherited ``PYTHONPATH``.
    """

    python: str = sys.executable
    #: The measured project's import root (a gate side's installed revision); None: the interpreter's own.
    source: Path | None = None
    #: The running ttfg mapped as a folder (``sources.self_overlay``), for a built environment that lacks it.
    overlay: Path | None = None
    isolated: bool = False
    #: The environment this target stands for (None: the current interpreter, as it is).
    env: Environment | None = None

    @classmethod
    def of(cls, env: Environment | None, source: Path | None = None,
           overlay: Path | None = None) -> "ProbeTarget":
        """The target of ``env`` with the project's import root ``source`` first on the path.

        In a built environment ttfg itself must be importable: ``overlay`` goes after the
        source there (``None`` when the source already holds ttfg). The current
        interpreter has ttfg installed and needs none.
        """
        if env is None or env.current:
            return cls(sys.executable if env is None else env.python, source, None, False, env)
        return cls(env.python, source, overlay, True, env)

    @property
    def roots(self) -> tuple[Path, ...]:
        """The import roots, in path order."""
        return tuple(r for r in (self.source, self.overlay) if r is not None)

    @property
    def env_name(self) -> str | None:
        return self.env.name if self.env is not None else None

    def pythonpath(self, inherited: str | None) -> str:
        """The child's ``PYTHONPATH``: the roots, then (outside a built environment) the parent's."""
        parts = [str(r) for r in self.roots]
        if not self.isolated and inherited:
            parts.append(inherited)
        return os.pathsep.join(parts)

    def asking_environ(self, parent: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment to ask this interpreter a question in (its packages, where it imports from)."""
        parent = os.environ if parent is None else parent
        env = inherited(parent)
        path = self.pythonpath(parent.get("PYTHONPATH"))
        if path:
            env["PYTHONPATH"] = path
        return env


def inherited(parent: Mapping[str, str]) -> dict[str, str]:
    """The parent's variables a child may see (:data:`INHERITED`)."""
    return {k: v for k, v in parent.items() if k in INHERITED or k.startswith(INHERITED_PREFIXES)}


def tool_environ(extra: Mapping[str, str] | None = None, parent: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a tool ttfg runs for itself (git, uv, an interpreter asked a question): the parent's,
    without ``PYTHONPATH``, plus ``extra`` (see the module docstring for why not an allowlist)."""
    parent = os.environ if parent is None else parent
    return {**{k: v for k, v in parent.items() if k != "PYTHONPATH"}, **(extra or {})}


def child_environ(target: ProbeTarget, threads: int, cache_dir: Path, cache: str,
                  parent: Mapping[str, str] | None = None, backend: str | None = None) -> dict[str, str]:
    """A probe's whole environment: inherited by allowlist, then pinned threads, hash seed and caches.

    ``cache`` is ``"cold"`` (fresh, empty compile caches under ``cache_dir``, every persistent
    cache off) or ``"warm"`` (the persistent caches on, in ``cache_dir``, so a populating run
    leaves them for the measured one). The caches are those the backends declare
    (``engines.probe_caches``: every built-in backend's, and ``backend``'s own).
    """
    from .. import engines

    parent = os.environ if parent is None else parent
    env = inherited(parent)
    count = str(threads)
    env.update({
        "PYTHONHASHSEED": "0",
        "PYTHONPATH": target.pythonpath(parent.get("PYTHONPATH")),
        "OMP_NUM_THREADS": count, "MKL_NUM_THREADS": count, "OPENBLAS_NUM_THREADS": count,
        "XDG_CACHE_HOME": str(cache_dir / "xdg"),
        "TF_CPP_MIN_LOG_LEVEL": "2",
    })
    if threads == 1:
        # Only the first token is an XLA flag. ``intra_op_parallelism_threads=1`` is not one, and XLA
        # stops reading XLA_FLAGS at it (measured: a --xla_dump_to after it dumps nothing). It is kept,
        # inert, because every stored results file's fingerprint carries this exact string, and files
        # that differ in it are refused as measured on different machines; nothing may follow it.
        env["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    from ..engines import function

    if function.declared_table():  # the config's [functions]: a probe runs in a scratch folder and reads none
        env[function.ENV] = json.dumps(function.declared_table())
    for found in engines.probe_caches(backend):
        env.update(found.variables(cache, cache_dir))
    return env


__all__ = ["INHERITED", "RECORDED", "Environment", "ProbeTarget", "child_environ", "inherited", "normalised",
           "tool_environ"]
