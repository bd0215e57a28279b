"""A gate side: a source tree (a revision of the measured project) and the interpreter that runs it.

Everything above ``measure/`` sees sides only: the gate's tiers, attribution, history
and reports do not care how two sides differ. What a side holds:

- ``revision`` and ``tree``: the commit and the throwaway worktree it is checked out in
  (``worktrees.py``);
- ``installed``: that tree's project, installed into a cached folder of its own
  (``sources.py``) that goes first on every probe's ``PYTHONPATH``;
- ``python``: the interpreter its probes run in;
- ``whence``: where that interpreter, with that path, imports the measured project's
  modules from, asked before the first pair.

The rule that follows from the last round's silent "unchanged": two sides that would
import the same files measure one thing twice, so :func:`check_distinct` refuses them
(exit 2, naming the files) before any sample is taken.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Mapping

from .sources import Installed, InstallError, Whence, install, whence
from .worktrees import Revision, worktrees
from ..errors import TtfgError

if TYPE_CHECKING:
    from .cases import Case
    from .runner import RunSettings

#: The entry-point groups a measured project plugs its backends and models into.
BACKEND_GROUP, MODEL_GROUP = "ttfg.backends", "ttfg.models"


class SameCode(TtfgError):
    """Base and head would import the same files: the comparison would measure one thing twice."""


@dataclass
class Side:
    """One side of a comparison: which revision, checked out where, installed where, run by which Python."""

    role: str
    revision: Revision
    #: The worktree (its git state is recorded).
    tree: Path
    #: The tree's project, installed; None only where a test's fake sampler runs no process.
    installed: Installed | None = None
    python: str = sys.executable
    whence: Whence | None = None

    @property
    def source(self) -> Path:
        """The import root a probe puts first on ``PYTHONPATH``: the installed revision (the tree itself
        only for a test's fake sampler, which starts no process)."""
        return self.installed.root if self.installed is not None else self.tree

    def run_settings(self, run: "RunSettings") -> "RunSettings":
        """``run`` for this side's probes: its import root and interpreter."""
        return replace(run, source=self.source, python=self.python)

    def to_json(self) -> dict:
        """What a results file records of the side (``environment.side``)."""
        return {"role": self.role, "tree": str(self.tree), "python": self.python,
                "install": self.installed.to_json() if self.installed else None,
                "imports": self.whence.to_json() if self.whence else None}


@contextmanager
def prepared(repo: Path, revisions: Mapping[str, Revision], on_note: Callable[[str], None] | None = None,
             prefix: str = "ttfg-gate-") -> Iterator[dict[str, Side]]:
    """Check each revision out and install its project; yields ``{role: Side}``.

    The worktrees are removed on exit (normal, error, Ctrl-C); the installs stay in the
    cache, keyed by commit, for the next gate on the same base.

    Raises
    ------
    InstallError
        When a revision's project cannot be built, naming the side and quoting the build log.
    """
    note = on_note or (lambda text: None)
    with worktrees(repo, revisions, prefix=prefix) as trees:
        sides = {}
        for role, rev in revisions.items():
            installed = install(trees[role], rev.commit, sys.executable, what=role)
            note(f"{role}: {installed.project} at {rev.short} "
                 + (f"installed in {installed.seconds:.1f} s" if not installed.cached else "from the cache")
                 + f" ({installed.root})")
            sides[role] = Side(role, rev, trees[role], installed)
        yield sides


def _modules_of(cases: list["Case"]) -> tuple[list[str], dict[str, list[str]]]:
    """The built-in modules the cases run, and the plugin entry points they name (by group).

    A plugin's module is asked of each side (its entry points are the side's own install's),
    a built-in's is fixed (``ttfg.engines.autograd_numpy``).
    """
    from .. import engines
    from ttfg import models

    modules, eps = set(), {BACKEND_GROUP: set(), MODEL_GROUP: set()}
    for case in cases:
        for registry, group, name in ((engines, BACKEND_GROUP, case.backend),
                                      (models, MODEL_GROUP, case.model.split(":")[0])):
            try:
                entry = registry.entry(name)
            except KeyError:
                entry = None
            if entry is not None and entry.builtin:
                modules.add(entry.target.split(":")[0])
            else:
                eps[group].add(name)
    return sorted(modules), {group: sorted(names) for group, names in eps.items()}


def probe_environment(side: Side, run: "RunSettings") -> dict[str, str]:
    """The environment a probe of this side runs with (its ``PYTHONPATH`` decides what it imports)."""
    from .runner import probe_env

    return probe_env(side.run_settings(run), Path(os.environ.get("TMPDIR", "/tmp")), "cold")


def locate(sides: Mapping[str, Side], cases: list["Case"], run: "RunSettings") -> None:
    """Ask each side's interpreter where the measured project and the cases' modules come from (fills ``whence``)."""
    modules, eps = _modules_of(cases)
    for side in sides.values():
        packages = list(side.installed.packages) if side.installed else []
        side.whence = whence(side.python, probe_environment(side, run), sorted(set(modules + packages)), eps)


def measured_files(side: Side) -> dict[str, str]:
    """``{module: file}`` of the measured project's modules, as the side would import them."""
    if side.whence is None or side.installed is None:
        return {}
    packages = set(side.installed.packages)
    return {m: f for m, f in side.whence.modules.items() if m.split(".")[0] in packages and f}


def check_distinct(sides: Mapping[str, Side], cases: list["Case"]) -> None:
    """Refuse, before any sample, a comparison whose sides would import the same code.

    Three ways that happens, each refused with the files named:

    - a side imports the measured project from somewhere other than its own install
      (a ``.pth`` or a path that comes before it);
    - the selected cases run none of the measured project's modules (a user's project
      gated on ttfg's built-in model and backend: both sides run ttfg's own code);
    - base and head import the very same files.

    Raises
    ------
    SameCode
    """
    if any(s.installed is None or s.whence is None for s in sides.values()):
        return
    for side in sides.values():
        for module, origin in side.whence.modules.items():
            if origin and origin.startswith("cannot import"):
                raise InstallError(f"{side.role} ({side.revision.short}): {module}: {origin}")
        files = measured_files(side)
        outside = {m: f for m, f in files.items() if not Path(f).resolve().is_relative_to(side.installed.root.resolve())}
        if outside:
            module, origin = next(iter(outside.items()))
            raise SameCode(f"{side.role} ({side.revision.short}) would import {module} from {origin}, not from its "
                           f"own install of the revision ({side.installed.root}); something on the path shadows it "
                           "(a .pth file or PYTHONPATH), so the gate would not measure that revision")
    project = next(iter(sides.values())).installed.project
    modules, _ = _modules_of(cases)
    runs_project = False
    for side in sides.values():
        plugin_modules = [v["module"] for v in side.whence.entry_points.values()]
        runs_project |= any(m.split(".")[0] in side.installed.packages for m in modules + plugin_modules)
    if not runs_project:
        names = ", ".join(sorted({c.backend for c in cases} | {c.model for c in cases}))
        raise SameCode(f"the selected cases ({names}) run none of {project}'s code: base and head would measure "
                       f"the same installed code twice. Select a model or backend that {project} provides "
                       f"(ttfg list shows where each comes from)")
    roles = list(sides)
    if len(roles) == 2:
        a, b = (measured_files(sides[r]) for r in roles)
        same = sorted(m for m in a if a[m] == b.get(m))
        if same:
            raise SameCode(f"base and head would both import {same[0]} from {a[same[0]]}: the comparison would "
                           "measure the same files twice")


__all__ = ["SameCode", "Side", "check_distinct", "locate", "measured_files", "prepared"]
