"""A gate side: a source tree (a revision of the measured project) and the environment that runs it.

Everything above ``measure/`` sees sides only: the gate's tiers, attribution, history
and reports do not care whether two sides differ in code, in packages, or in both. What
a side holds:

- ``revision`` and ``tree``: the commit and the throwaway worktree it is checked out in
  (``worktrees.py``);
- ``installed``: that tree's project, installed into a cached folder of its own
  (``sources.py``) that goes first on every probe's ``PYTHONPATH``;
- ``env``: the interpreter and exact packages its probes run in (``environments.py``):
  the current interpreter, or one built from requirement lines or from the revision's
  own declared dependencies;
- ``whence``: where that interpreter, with that path, imports the measured project's
  modules and the frameworks from, asked before the first pair.

The rule that follows from the last round's silent "unchanged": two sides that would
import the same files in the same environment measure one thing twice, so
:func:`check_distinct` refuses them (exit 2, naming the files) before any sample.

Sides are opened one way, by a :class:`SideOpener` (``open``: built, checked out, installed,
located and checked, in that order): the gate, each comparison of a bisect, each
``regressions --confirm`` re-run and each release of a sweep take one, and their tests pass
one whose sides are plain folders instead of replacing the use cases' functions.

A side may be *deferred* (``open(defer=...)``): its environment is built, but it is checked out,
installed, located and checked only when its first process is about to start (:meth:`Side.open`,
which :meth:`Side.run_settings` calls). The gate defers the base of a pull request proven to run
the base's program: the base's stored first process usually stands in for it, and then its
worktree, install and location were work for nothing (on fresh runners a second comment-only gate
of jax.jit resnet15 took 4.5-4.8 s, its first 7.8-8.5 s: docs/measurements.md).
"""

from __future__ import annotations

import os
import sys
import threading
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Collection, Iterator, Mapping

from ..provision import environments
from ..provision.environments import Environment, Request
from ..provision.sources import Installed, InstallError, Whence, install, ttfg_overlay, whence
from ..provision.target import ProbeTarget
from ..provision.worktrees import Revision, worktrees
from ..errors import TtfgError

if TYPE_CHECKING:
    from .cases import Case
    from .runner import RunSettings

#: The entry-point groups a measured project plugs its backends and models into.
BACKEND_GROUP, MODEL_GROUP = "ttfg.backends", "ttfg.models"


class SameCode(TtfgError):
    """Base and head would import the same files in the same environment: one thing measured twice."""


#: Held while a deferred side is opened: two threads of the count tier may ask for it at once. Reentrant: opening a
#: side locates it, which asks for its run settings.
_OPENING = threading.RLock()


@dataclass
class Side:
    """One side of a comparison: which revision, checked out where, installed where, run in which environment."""

    role: str
    revision: Revision
    #: The worktree (its git state is recorded).
    tree: Path
    #: The tree's project, installed; None only where a test's fake sampler runs no process.
    installed: Installed | None = None
    env: Environment | None = None
    whence: Whence | None = None
    #: The second import root of a built environment: the running ttfg mapped as a folder (a gate side whose
    #: project is not ttfg), or a release sweep's plugins as installed here (its first root is ttfg).
    ttfg_overlay: Path | None = None
    #: The measured project's distribution name while the side is not installed (a deferred side's is its
    #: sibling's: :meth:`SideOpener.open`); the install's once there is one.
    project: str | None = None
    #: Opens a deferred side (:meth:`open`); None once the side is open.
    pending: Callable[[], None] | None = field(default=None, repr=False, compare=False)

    @property
    def measured_project(self) -> str | None:
        """The measured project's distribution name: its install's, or a deferred side's (:attr:`project`)."""
        return self.installed.project if self.installed is not None else self.project

    @property
    def deferred(self) -> bool:
        """Whether the side is not checked out yet (no process of it has run)."""
        return self.pending is not None

    def open(self) -> "Side":
        """This side, ready for a process: a deferred side is checked out, installed, located and checked now, once
        (a failure is raised here, as :meth:`SideOpener.open` raises it for a side opened at once)."""
        if self.pending is None:  # open already: no lock to wait for while another side is being opened
            return self
        with _OPENING:
            pending, self.pending = self.pending, None
            if pending is not None:
                pending()
        return self

    @property
    def python(self) -> str:
        return self.env.python if self.env is not None else sys.executable

    @property
    def source(self) -> Path:
        """The import root a probe puts first on ``PYTHONPATH``: the installed revision (the tree itself
        only for a test's fake sampler, which starts no process)."""
        return self.installed.root if self.installed is not None else self.tree

    @property
    def built_env(self) -> bool:
        """Whether the side runs in a built environment (not the current interpreter)."""
        return self.env is not None and not self.env.current

    @property
    def target(self) -> ProbeTarget:
        """Where this side's probes run: its interpreter, its installed revision first on the path, and in
        a built environment ttfg's overlay after it (the parent's path would leak its packages in)."""
        return ProbeTarget.of(self.env, source=self.source, overlay=self.ttfg_overlay)

    def run_settings(self, run: "RunSettings", *, opening: bool = True) -> "RunSettings":
        """``run`` for this side's probes: the same sampling, this side's target. Every process of a side takes its
        settings here, so a deferred side is opened first; ``opening=False`` is for what only keys a fact by the
        side (its interpreter and environment, the same before and after it is opened) or records it."""
        if opening:
            self.open()
        return replace(run, target=self.target)

    def to_json(self) -> dict:
        """What a results file records of the side (``environment.side``)."""
        return {"role": self.role, "tree": str(self.tree), "python": self.python,
                "env": self.env.name if self.env else None,
                "install": self.installed.to_json() if self.installed else None,
                "imports": self.whence.to_json() if self.whence else None,
                **({"deferred": True} if self.deferred else {})}


def build_environments(requests: Mapping[str, Request], on_note: Callable[[str], None]) -> dict[str, Environment]:
    """``{role: Environment}``; one build per distinct request (an upgrade gate's sides share none)."""
    built: dict[tuple, Environment] = {}
    out = {}
    for role, request in requests.items():
        key = (request.requirements, request.python)
        if key not in built:
            env = environments.build(request, on_note)
            if not env.current:
                on_note(f"{role} environment {env.name}: "
                        + ", ".join(f"{k} {v}" for k, v in env.recorded().items() if v)
                        + (" (cached)" if env.cached else f" (built in {env.seconds:.1f} s)"))
            built[key] = env
        out[role] = replace(built[key], name=request.name)
    return out


@contextmanager
def prepared(repo: Path, revisions: Mapping[str, Revision], requests: Mapping[str, Request] | None = None,
             on_note: Callable[[str], None] | None = None, prefix: str = "ttfg-gate-",
             project_dir: str = "", defer: Collection[str] = ()) -> Iterator[dict[str, Side]]:
    """Build each side's environment, check each revision out and install its project; yields ``{role: Side}``.

    ``requests`` (default: the current interpreter for every side) names each side's
    environment; ``project_dir`` is the project's folder inside the repository (the config's
    ``install-path``; the root by default). Environments are built first: they take longest, and a bad one should
    fail before anything is checked out. The worktrees are removed on exit (normal, error,
    Ctrl-C); installs and environments stay in the cache for the next gate. A role in ``defer`` gets its
    environment now and its checkout and install when :meth:`Side.open` first asks (its ``tree`` is the repository
    until then, and its :attr:`Side.project` the other sides' project).

    Raises
    ------
    InstallError, EnvError
        When a revision's project or an environment cannot be built, naming the side.
    """
    note = on_note or (lambda text: None)
    requests = requests or {role: Request(environments.CURRENT, None, "this interpreter") for role in revisions}
    envs = build_environments(requests, note)
    with ExitStack() as stack:
        sides = {role: Side(role, rev, Path(repo), env=envs[role]) for role, rev in revisions.items()}

        def check_out(roles: list[str]) -> None:
            """Check ``roles`` out and install them, filling their sides in (removed with the others on exit)."""
            trees = stack.enter_context(worktrees(repo, {r: revisions[r] for r in roles}, prefix=prefix))
            for role in roles:
                side, rev = sides[role], revisions[role]
                side.tree = trees[role]
                side.installed = install(side.tree / project_dir, rev.commit, sys.executable, what=role,
                                         folder=project_dir)
                note(f"{role}: {side.installed.project} at {rev.short} "
                     + (f"installed in {side.installed.seconds:.1f} s" if not side.installed.cached
                        else "from the cache") + f" ({side.installed.root})")
                side.ttfg_overlay = ttfg_overlay(not side.env.current, side.installed.packages)

        now = [role for role in revisions if role not in defer]
        if now:
            check_out(now)
        project = next((sides[role].installed.project for role in now), None)
        for role in defer:
            sides[role].project = project
            sides[role].pending = lambda role=role: check_out([role])
        yield sides


#: How a revision gate chooses its sides' environments (``--envs``).
ENV_MODES = ("auto", "current", "declared")


@dataclass
class EnvPlan:
    """Each side's environment request, and what the choice leaves unmeasured (said in every verdict)."""

    requests: dict[str, Request]
    #: Files that can declare dependencies and differ between base and head.
    changed: list[str]
    #: Set when a dependency change is deliberately not measured (``--envs current``).
    unmeasured: str | None = None
    #: Set when declarations changed but both sides resolve to the same packages: measured once, and said.
    same_packages: str | None = None
    #: ``{package: (base, head)}`` where the two resolutions differ (empty when not resolved or the same).
    differences: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)

    def describe(self) -> str:
        names = {role: r.name for role, r in self.requests.items()}
        if len(set(names.values())) == 1 and all(r.current for r in self.requests.values()):
            note = self.unmeasured or self.same_packages
            return "both sides in this interpreter" + (f" ({note})" if note else "")
        return "; ".join(f"{role} in {r.name} ({r.origin})" for role, r in self.requests.items())


def plan_environments(repo: Path, base: Revision, head: Revision, base_env: str | None = None,
                      head_env: str | None = None, mode: str = "auto", project_dir: str = "") -> EnvPlan:
    """Choose each side's environment, before anything is built.

    - ``--base-env``/``--head-env`` given: those (a side without one runs in this interpreter);
      an upgrade gate gives both for one revision.
    - ``auto`` (the default): when no file that can declare dependencies differs between base
      and head, both run in this interpreter, the fast path. When one does, uv resolves each
      revision's own declarations (``dependencies.py``): the same packages on both sides are
      measured once, in this interpreter, and the plan says the change resolved to the same
      packages; different packages are built as one environment per side.
    - ``declared``: always each revision's resolved declarations, each in its environment.
    - ``current``: this interpreter for both; a dependency change is then *not measured*,
      and the plan says so, for every verdict to repeat.

    Raises
    ------
    UsageError
        For an unknown mode, a bad environment option, declarations uv cannot resolve, or a
        changed lock ttfg cannot build from (naming the files and the options that choose by hand).
    """
    from ..errors import UsageError
    from ..provision.dependencies import DeclarationError, changed_declarations, resolve_at, unreadable

    current = Request(environments.CURRENT, None, "this interpreter")
    if (base_env or head_env) and mode != "auto":
        raise UsageError(f"--envs {mode} chooses environments from the revisions' declarations; --base-env/--head-env "
                         "name them: give one or the other")
    if base_env or head_env:
        return EnvPlan({"base": environments.parse(base_env, "--base-env") if base_env else current,
                        "head": environments.parse(head_env, "--head-env") if head_env else current}, [])
    if mode not in ENV_MODES:
        raise UsageError(f"--envs {mode!r}: choose one of {', '.join(ENV_MODES)}")
    changed = changed_declarations(repo, base.commit, head.commit, project_dir) if base.commit != head.commit else []
    if mode == "current" or (mode == "auto" and not changed):
        unmeasured = (f"the dependency change ({', '.join(changed)}) was not measured: both sides ran in this "
                      "interpreter (--envs current)") if changed else None
        return EnvPlan({"base": current, "head": current}, changed, unmeasured)
    by_hand = ("Choose environments with --base-env/--head-env, or pass --envs current to measure the code alone "
               "(the dependency change is then not measured, and every verdict says so)")
    locks = unreadable(changed)
    if locks:
        raise UsageError(f"{', '.join(locks)} changed between base and head, and ttfg cannot build an environment "
                         f"from {'it' if len(locks) == 1 else 'them'}. {by_hand}")
    resolved = {}
    for role, rev in (("base", base), ("head", head)):
        try:
            resolved[role] = resolve_at(repo, rev.commit, project_dir)
        except DeclarationError as exc:
            raise UsageError(f"the {role} side's dependencies cannot be resolved: {exc}. {by_hand}") from None
    differences = resolved["base"].differs(resolved["head"])
    if mode == "auto" and not differences:
        same = (f"the dependency files changed ({', '.join(changed)}) but resolve to the same packages on both "
                "sides: measured once, in this interpreter") if changed else None
        return EnvPlan({"base": current, "head": current}, changed, same_packages=same)
    requests = {}
    for role, rev in (("base", base), ("head", head)):
        if not resolved[role].lines:
            raise UsageError(f"the {role} side declares no dependencies to build an environment from "
                             f"(requirements.txt, pyproject.toml's [project] dependencies, constraints.txt or uv.lock "
                             f"at {rev.short}). {by_hand}")
        requests[role] = Request(f"{role}-{rev.short[:8]}", resolved[role].lines,
                                 f"{resolved[role].source} at {rev.short}")
    return EnvPlan(requests, changed, differences=differences)


def _modules_of(cases: list["Case"]) -> tuple[list[str], list[str], dict[str, list[str]]]:
    """The built-in modules the cases run, the frameworks they import, and the plugin entry points they name.

    A plugin's module is asked of each side (its entry points are the side's own install's),
    a built-in's is fixed (``ttfg.engines.autograd_numpy``).
    """
    from .. import engines
    from ..engines import function
    from ttfg import models

    modules, frameworks, eps = set(), set(), {BACKEND_GROUP: set(), MODEL_GROUP: set()}
    for case in cases:
        if case.is_function:  # its module, or its entry point, is the side's own (a library's, at its revision)
            found = function.entry(case.model)
            if found.group == function.GROUP:
                eps.setdefault(function.GROUP, set()).add(case.model)
            else:
                modules.add(found.target.split(":")[0])
            continue
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
        try:
            frameworks.update(engines.get(case.backend).modules)
        except Exception:  # a plugin that cannot load: its probe says why
            pass
    return sorted(modules), sorted(frameworks), {group: sorted(names) for group, names in eps.items()}


def provides(side: Side, case: "Case") -> bool:
    """Whether the side's revision provides the case's backend and model: a built-in always does; a plugin's
    entry point must be in the side's own install (``whence``; a side not yet located is given the benefit)."""
    if side.whence is None:
        return True
    _, _, eps = _modules_of([case])
    return all(f"{group}:{name}" in side.whence.entry_points for group, names in eps.items() for name in names)


def split_cases(cases: "list[Case]", base: Side, head: Side) -> "tuple[list[Case], list[Case], list[Case]]":
    """``(common, new, removed)``: the cases both sides provide (:func:`provides`), those only the head does (a
    revision that adds a backend or a model: its own install resolves it) and those only the base does. One
    rule for every command that installs two revisions: the gate, each comparison of a bisect, ``regressions
    --confirm``; each says what it does with the new and the removed ones.

    Raises
    ------
    UsageError
        For a case whose model neither side provides and this interpreter does not know (a name kept for the
        installs to resolve, ``measure.cases.select(pending_models=True)``), naming it.
    """
    from ..errors import UsageError
    from .cases import known_model

    common, new, removed = [], [], []
    for case in cases:
        in_base, in_head = provides(base, case), provides(head, case)
        if not (in_base or in_head) and not known_model(case.model):  # kept for the installs to resolve: none does
            raise UsageError(f"unknown model {case.model.split(':')[0]!r}: neither this interpreter nor the base's "
                             "or the head's install provides it (ttfg list shows the models known here)")
        (common if in_base == in_head else new if in_head else removed).append(case)
    return common, new, removed


def probe_environment(side: Side, run: "RunSettings") -> dict[str, str]:
    """The environment a probe of this side runs with (its ``PYTHONPATH`` decides what it imports)."""
    from .runner import probe_env

    return probe_env(side.run_settings(run), Path(os.environ.get("TMPDIR", "/tmp")), "cold")


def locate(sides: Mapping[str, Side], cases: list["Case"], run: "RunSettings") -> None:
    """Ask each side's interpreter where the measured project, the cases' modules and the frameworks come from."""
    modules, frameworks, eps = _modules_of(cases)
    for side in sides.values():
        packages = list(side.installed.packages) if side.installed else []
        side.whence = whence(side.python, probe_environment(side, run), sorted(set(modules + packages + frameworks)),
                             eps)


def measured_files(side: Side) -> dict[str, str]:
    """``{module: file}`` of the measured project's modules, as the side would import them."""
    if side.whence is None or side.installed is None:
        return {}
    packages = set(side.installed.packages)
    return {m: f for m, f in side.whence.modules.items() if m.split(".")[0] in packages and f}


def _inside(path: str, folder: Path) -> bool:
    return Path(path).resolve().is_relative_to(folder.resolve())


def environments_differ(sides: Mapping[str, Side]) -> bool:
    """Whether the sides run in environments with different packages."""
    envs = [s.env for s in sides.values() if s.env is not None]
    return len(envs) == 2 and bool(envs[0].differs_from(envs[1]))


def check_imports(side: Side, cases: list["Case"]) -> None:
    """Refuse a side in a built environment that would import a framework from outside that environment.

    Raises
    ------
    SameCode
        Naming the module, the file and the environment.
    """
    if not side.built_env or side.env.path is None or side.whence is None:
        return
    _, frameworks, _ = _modules_of(cases)
    own = set(side.installed.packages) if side.installed is not None else set()
    for module in frameworks:
        if module not in side.whence.modules:
            continue
        if module.split(".")[0] in own:
            # The project itself (``ttfg init``'s starter lists its package among the backend's modules): a side
            # imports it from the revision's own install, never from the environment, and check_distinct holds it
            # to that install. Held to the environment, every flat- or src-layout library's dependency bump was
            # refused ("would import hklab from .../sources/..., outside it").
            continue
        origin = side.whence.modules[module]
        if origin is None:  # not installed there: every sample would fail and read as "head cannot run", exit 1
            raise InstallError(f"environment {side.env.name} has no {module}: the {side.role} side cannot run "
                               f"{', '.join(sorted({c.backend for c in cases}))} (add it to the environment's "
                               "requirements)")
        if origin.startswith("cannot import"):
            raise InstallError(f"environment {side.env.name}: {module}: {origin}")
        if origin and not _inside(origin, side.env.path):
            raise SameCode(f"{side.role} runs in environment {side.env.name} but would import {module} from "
                           f"{origin}, outside it: the environment would not be what is measured")


def check_distinct(sides: Mapping[str, Side], cases: list["Case"]) -> None:
    """Refuse, before any sample, a comparison whose sides would measure the same thing.

    Each way that happens is refused with the files named:

    - a side imports the measured project from somewhere other than its own install
      (a ``.pth`` or a path that comes before it);
    - a side in a built environment imports a framework from outside that environment;
    - in one environment, the selected cases run none of the measured project's modules
      (a user's project gated on ttfg's built-in model and backend: both sides would run
      ttfg's own code);
    - in one environment, base and head import the very same files.

    Raises
    ------
    SameCode, InstallError
    """
    if any(s.installed is None or s.whence is None for s in sides.values()):
        return
    modules, frameworks, _ = _modules_of(cases)
    for side in sides.values():
        for module, origin in side.whence.modules.items():
            if origin and origin.startswith("cannot import"):
                raise InstallError(f"{side.role} ({side.revision.short}): {module}: {origin}")
        outside = {m: f for m, f in measured_files(side).items() if not _inside(f, side.installed.root)}
        if outside:
            module, origin = next(iter(outside.items()))
            raise SameCode(f"{side.role} ({side.revision.short}) would import {module} from {origin}, not from its "
                           f"own install of the revision ({side.installed.root}); something on the path shadows it "
                           "(a .pth file or PYTHONPATH), so the gate would not measure that revision")
        check_imports(side, cases)
    if environments_differ(sides):
        return  # the packages differ: that is what this comparison measures
    project = next(iter(sides.values())).installed.project
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
            raise SameCode(f"base and head would both import {same[0]} from {a[same[0]]} in the same environment: "
                           "the comparison would measure the same files twice")


class SideOpener:
    """Where a comparison runs: each side's environment chosen (:meth:`plan`) and its sides opened (:meth:`open`,
    :meth:`environment`). One type answers "where does this run", as nox's ``ProcessEnv`` does for a session.

    The gate, each comparison of a bisect, ``regressions --confirm`` and ``ttfg releases`` take one (this class:
    real worktrees, installs and environments, every side located and checked before its first sample); a test
    passes a subclass whose sides are folders (no worktree, install or environment, read by a fake sampler), and the
    use case runs as it runs for a user.
    """

    def plan(self, repo: Path, base: Revision, head: Revision, base_env: str | None = None,
             head_env: str | None = None, mode: str = "auto", project_dir: str = "") -> EnvPlan:
        """Each side's environment request (:func:`plan_environments`)."""
        return plan_environments(repo, base, head, base_env, head_env, mode, project_dir)

    @contextmanager
    def open(self, repo: Path, revisions: Mapping[str, Revision], cases: list["Case"], run: "RunSettings",
             requests: Mapping[str, Request] | None = None, *, on_note: Callable[[str], None] | None = None,
             prefix: str = "ttfg-gate-", project_dir: str = "",
             defer: Collection[str] = ()) -> Iterator[dict[str, Side]]:
        """The sides of one comparison, ready for their first sample: built, checked out and installed
        (:func:`prepared`, its worktrees named by ``prefix`` and removed on exit), asked where they import from
        (:func:`locate`) and shown to import different code (:func:`check_distinct`).

        A role in ``defer`` is built now and the rest when its first process is about to start (:meth:`Side.open`):
        checked out, installed, located, and checked against the other sides then. The caller vouches that it is a
        revision of the same project as the others, built from the same files (the gate defers a base only under the
        source tier's proof: no file but Python files with the base's syntax trees changed).

        Raises
        ------
        SameCode, InstallError, EnvError
            Before any sample of the side, naming the side and the files or the build log.
        """
        note = on_note or (lambda text: None)
        with prepared(repo, revisions, requests, on_note=note, prefix=prefix, project_dir=project_dir,
                      defer=defer) as sides:
            now = {role: side for role, side in sides.items() if not side.deferred}
            locate(now, cases, run)
            check_distinct(now, cases)
            for side in sides.values():
                if side.deferred:
                    side.pending = self._opening(side, side.pending, sides, cases, run, note)
            yield sides

    @staticmethod
    def _opening(side: Side, check_out: Callable[[], None], sides: Mapping[str, Side], cases: list["Case"],
                 run: "RunSettings", note: Callable[[str], None]) -> Callable[[], None]:
        """What opens a deferred side: its checkout and install, then its location and the checks of :meth:`open`."""
        def opening() -> None:
            note(f"{side.role}: a process of the {side.role} side is needed: checking {side.revision.short} out now")
            check_out()
            locate({side.role: side}, cases, run)
            check_distinct(sides, cases)
        return opening

    def environment(self, revision: Revision, request: Request, cases: list["Case"], run: "RunSettings",
                    source: Path, overlay: Path | None, on_note: Callable[[str], None] | None = None) -> Side:
        """One side whose code is fixed (``source`` first on the path, then ``overlay``: a release sweep's ttfg and
        plugins) in an environment built from ``request``: located and checked to import its frameworks from
        that environment (:func:`check_imports`).

        Raises
        ------
        EnvError, InstallError, SameCode
            Naming the environment.
        """
        env = environments.build(request, on_note or (lambda text: None))
        side = Side("base", revision, source, None, env, ttfg_overlay=overlay)
        locate({"base": side}, cases, run)
        check_imports(side, cases)
        return side


__all__ = ["ENV_MODES", "EnvPlan", "SameCode", "Side", "SideOpener", "build_environments", "plan_environments",
           "check_distinct", "check_imports", "environments_differ", "locate",
           "measured_files", "prepared", "provides", "split_cases"]
