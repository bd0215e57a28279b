"""A revision's project, installed into a folder of its own that a probe imports first.

Why not a worktree on ``PYTHONPATH``: what a probe imports is decided by the installed
packages, not by the folder it runs in. ttfg installs one import name, ``ttfg``, mapped
from the repository's ``harness/`` and ``models/`` folders, so a worktree's folders are
not importable as ``ttfg`` at all; and a user's library is usually installed editable
(``pip install -e .``, often from a ``src/`` layout), which points at the working tree,
so both sides of a gate would import the same files and the gate would say "unchanged"
about code it never measured twice. Each side therefore installs its own worktree
(without dependencies, with the project's own build backend: setuptools, hatchling or
any PEP 517 backend) into a folder that goes first on the probe's ``PYTHONPATH``. A
folder on ``PYTHONPATH`` comes before site-packages and before the finders of editable
installs, so the revision's files win; :func:`whence` then proves it, side by side.

Installs are cached by (project tree's commit, interpreter): a commit's files never
change, so a second gate on the same base installs only the head. Measured on the
2-core VM: installing ttfg itself from a worktree with uv takes 1.6-1.9 s; a cached
one costs a directory lookup.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from . import cache
from .target import tool_environ
from ..errors import TtfgError

#: How much of a failed build's log reaches the terminal.
LOG_TAIL_CHARS = 3000
#: Seconds one install may take before it is stopped.
INSTALL_TIMEOUT_S = 900
#: How an install is made, part of every cache key: an entry made another way (before the bytecode
#: was compiled, say) is never reused. An A/A gate of one stale install against one fresh one counted
#: a stale side's import compiling its .pyc files as build instructions: 4,955,739 against 642,019.
#: r3: the worktree carries its submodules (an r2 entry of a package vendoring one lacks its files).
INSTALL_RECIPE = "r3"


class InstallError(TtfgError):
    """A revision's project could not be built or installed; the message carries the build log's tail."""


def uv_binary() -> str:
    """The uv executable: the one the ``uv`` package ships (a dependency of ttfg), else ``uv`` on PATH."""
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        if found:
            return found
    raise InstallError("uv is not installed: ttfg builds revisions and environments with it (pip install uv)")


def uv_environ() -> dict[str, str]:
    """uv's environment, for every uv ttfg runs: a tool's (``target.tool_environ``: its cache, index and
    credential variables pass, ``PYTHONPATH`` does not reach a build backend), without progress bars."""
    return tool_environ({"UV_NO_PROGRESS": "1"})


def interpreter_tag(python: str) -> str:
    """A short name for an interpreter: its version and a hash of its path (wheels differ per interpreter)."""
    out = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2]); print(sys.prefix)"],
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise InstallError(f"the interpreter {python} does not start: {out.stderr.strip()[-500:]}")
    version, prefix = out.stdout.split("\n")[:2]
    return f"py{version.replace('.', '')}-{hashlib.sha256(f'{python}|{prefix}'.encode()).hexdigest()[:8]}"


@dataclass(frozen=True)
class Installed:
    """One revision of a project, installed: put ``root`` first on ``PYTHONPATH`` to import it."""

    root: Path
    #: The distribution's name, from the installed metadata.
    project: str
    #: Its top-level import names (``mylab``; ``ttfg`` for ttfg itself).
    packages: tuple[str, ...]
    commit: str | None
    cached: bool
    seconds: float

    def to_json(self) -> dict:
        return {"root": str(self.root), "project": self.project, "packages": list(self.packages),
                "commit": self.commit, "cached": self.cached, "install_s": round(self.seconds, 3)}


def _tail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= LOG_TAIL_CHARS else "... " + text[-LOG_TAIL_CHARS:]


def _build(tree: Path, python: str, target: Path, what: str) -> None:
    """``uv pip install --no-deps --target`` of the tree (build isolation: any PEP 517 backend)."""
    # --compile-bytecode: the revision's first probe must not pay for compiling its .pyc files.
    cmd = [uv_binary(), "pip", "install", "--no-deps", "--quiet", "--compile-bytecode", "--target", str(target),
           "--python", python, str(tree)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, cwd=target,
                             env=uv_environ(), stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise InstallError(f"{what}: installing the project from {tree} took over {INSTALL_TIMEOUT_S} s") from None
    if out.returncode != 0:
        raise InstallError(f"{what}: installing the project from {tree} failed (uv exited {out.returncode}):\n"
                           + _tail(out.stderr + out.stdout))


def _installed_names(root: Path) -> tuple[str, tuple[str, ...]]:
    """The distribution name and top-level import names of an install folder, read from the distribution's own
    record (:func:`top_level_names`)."""
    infos = sorted(root.glob("*.dist-info"))
    if len(infos) != 1:
        raise InstallError(f"{root}: expected one installed distribution, found {len(infos)}")
    from importlib.metadata import PathDistribution

    dist = PathDistribution(infos[0])
    return dist.metadata["Name"], top_level_names(dist, root)


def top_level_names(dist, root: Path) -> tuple[str, ...]:
    """The top-level import names a distribution installed into ``root``: the first part of every file its
    ``RECORD`` lists (``importlib.metadata``'s ``files``), a module's stem, an extension's name; the
    ``.dist-info``, ``.data``, scripts and files outside ``root`` left out.

    Why from the record, not the folder: a namespace package (``labco/lablib/``, ``labco`` without an
    ``__init__.py``) has no ``__init__.py`` at its top, and the folder scan this replaced missed it, so the
    side's check of where the project is imported from did not know the project's own package. Without a
    record (none was written), the folder is read: packages and modules at its top.
    """
    files = dist.files
    if files is None:
        return tuple(sorted({p.name for p in root.iterdir() if p.is_dir() and p.name.isidentifier()
                             and ((p / "__init__.py").is_file() or any(p.rglob("*.py")))}
                            | {p.stem for p in root.glob("*.py")}))
    names = set()
    for f in files:
        parts = f.parts
        if not parts or parts[0] in ("..", "bin", "__pycache__") or parts[0].endswith((".dist-info", ".data")):
            continue
        if len(parts) > 1:
            if parts[0].isidentifier():
                names.add(parts[0])
        elif f.suffix == ".py":
            names.add(f.stem)
        elif f.suffix in (".so", ".pyd"):
            names.add(f.name.split(".")[0])
    return tuple(sorted(names))


def install(tree: Path, commit: str | None, python: str = sys.executable, what: str = "revision",
            folder: str = "") -> Installed:
    """Install the project at ``tree`` (a worktree of ``commit``) into its own cached folder.

    Parameters
    ----------
    tree : Path
        The project's source tree (a git worktree at ``commit``).
    commit : str or None
        The commit the tree holds; None for a tree with uncommitted changes (never cached).
    python : str
        The interpreter that will import it.
    what : str
        Who asks (``base``, ``head``), for messages.
    folder : str
        The project's folder inside the repository (``install-path``), part of the cache key: one commit
        of a repository holding two projects installs two different things.

    Raises
    ------
    InstallError
        When the build fails (with the log's tail) or uv is missing.
    """
    started = time.monotonic()
    if commit is None:
        import tempfile

        root = Path(tempfile.mkdtemp(prefix="ttfg-source-"))
        try:
            _build(tree, python, root, what)
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        project, packages = _installed_names(root)
        return Installed(root, project, packages, None, False, time.monotonic() - started)
    relative = folder.strip("/")
    where = f"-{hashlib.sha256(relative.encode()).hexdigest()[:8]}" if relative not in ("", ".") else ""
    key = f"{commit[:16]}{where}-{interpreter_tag(python)}-{INSTALL_RECIPE}"
    entry = cache.get("sources", key, lambda folder: _build(tree, python, folder, f"{what} ({commit[:10]})"))
    cache.hold(entry.path)  # `ttfg env prune --sources` in another process leaves it while this one measures
    project, packages = _installed_names(entry.path)
    return Installed(entry.path, project, packages, commit, entry.cached, time.monotonic() - started)


#: Run in a side's interpreter with its PYTHONPATH: where would each module be imported from?
#: Self-contained (standard library only), so it runs against any revision's code.
_WHENCE = r"""
import importlib.metadata as md, importlib.util, json, sys
ask = json.loads(sys.argv[1])
out = {"modules": {}, "entry_points": {}}
def origin(name):
    try:
        spec = importlib.util.find_spec(name)
    except Exception as exc:
        return "cannot import: %s: %s" % (type(exc).__name__, exc)
    return None if spec is None else (spec.origin or (list(spec.submodule_search_locations or []) or [None])[0])
for group, names in ask["entry_points"].items():
    eps = md.entry_points(group=group)
    for name in names:
        found = [ep for ep in eps if ep.name == name]
        if found:
            module = found[0].value.split(":")[0]
            dist = getattr(found[0], "dist", None)
            out["entry_points"][group + ":" + name] = {"module": module, "dist": dist.metadata["Name"] if dist else None}
            out["modules"][module] = origin(module)
for name in ask["modules"]:
    out["modules"][name] = origin(name)
print(json.dumps(out))
"""


@dataclass
class Whence:
    """Where one side's interpreter imports the measured modules from."""

    modules: dict[str, str | None] = field(default_factory=dict)
    entry_points: dict[str, dict] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"modules": dict(self.modules), "entry_points": dict(self.entry_points)}


def whence(python: str, env: dict[str, str], modules: list[str], entry_points: dict[str, list[str]]) -> Whence:
    """Ask ``python`` (with ``env``, a probe's environment) where it finds ``modules`` and the plugins' modules.

    Raises
    ------
    InstallError
        When the interpreter cannot answer (its error is quoted).
    """
    ask = json.dumps({"modules": modules, "entry_points": entry_points})
    out = subprocess.run([python, "-c", _WHENCE, ask], capture_output=True, text=True, env=env, timeout=120,
                         stdin=subprocess.DEVNULL, cwd=env.get("TMPDIR") or "/")
    if out.returncode != 0:
        raise InstallError(f"{python} cannot say where it imports {', '.join(modules)} from: "
                           f"{_tail(out.stderr)}")
    data = json.loads(out.stdout.strip().splitlines()[-1])
    return Whence(data["modules"], data["entry_points"])





def self_overlay() -> Path:
    """A folder that makes the running ttfg importable by another interpreter (put it on ``PYTHONPATH``).

    Why: an environment built for a side holds the framework and ttfg's probe tools, not
    ttfg; its probes import ttfg from here. Installed ttfg is one folder (a symlink to it
    does); an editable checkout is mapped the way the build maps it (``harness/`` is
    ``ttfg``, ``models/`` is ``ttfg.models``), as a folder of symlinks. The key covers the
    folders and their entries, so a module added to the checkout gets a new overlay.
    """
    from ttfg import models

    package = Path(__file__).resolve().parents[1]  # ttfg/ (harness/ in a checkout)
    models_dir = Path(models.__file__).resolve().parent
    entries = sorted(p.name for p in package.iterdir() if p.name not in ("__pycache__", "models"))
    key = hashlib.sha256(json.dumps([str(package), str(models_dir), entries]).encode()).hexdigest()[:16]

    def build(folder: Path) -> None:
        target = folder / "ttfg"
        if models_dir.parent == package:
            target.symlink_to(package, target_is_directory=True)
            return
        target.mkdir()
        for name in entries:
            (target / name).symlink_to(package / name)
        (target / "models").symlink_to(models_dir, target_is_directory=True)

    return cache.get("self", f"ttfg-{key}", build).path


def ttfg_overlay(built_env: bool, packages: Iterable[str] = ()) -> Path | None:
    """The import root after a project's that makes ttfg importable, where a probe needs one: in a built environment
    (its ``PYTHONPATH`` holds none of this interpreter's packages) whose project is not ttfg itself. None in the
    current interpreter (ttfg is installed there) and for a project that is ttfg (its install brings it).

    The one rule for a gate's sides (``measure.sides.prepared``) and ``ttfg run --env``'s project
    (``measure.runner.Runner``)."""
    return self_overlay() if built_env and "ttfg" not in packages else None


def plugins_overlay(entry_points: dict[str, list[str]]) -> Path | None:
    """A folder that makes this interpreter's plugin distributions importable by another interpreter: their
    top-level packages (symlinks to where this interpreter imports them from) and their entry points (a
    minimal ``.dist-info`` each), so a built environment runs the library's own backend and model.

    Why: ``ttfg run --env`` and ``ttfg study env`` run each case in a built environment whose
    ``PYTHONPATH`` holds only ttfg (the parent's path would leak this interpreter's packages in); a
    library's plugin was then an "unknown backend" there. ``entry_points`` is ``{group: [name, ...]}``;
    None when none of them is installed here (nothing to add).
    """
    import importlib.metadata as md
    import importlib.util

    dists: dict[str, md.Distribution] = {}
    for group, names in entry_points.items():
        for ep in md.entry_points(group=group):
            if ep.name in names and ep.dist is not None:
                dists[ep.dist.metadata["Name"]] = ep.dist
    if not dists:
        return None
    links: dict[str, str] = {}
    infos = []
    for name, dist in sorted(dists.items()):
        tops = (dist.read_text("top_level.txt") or "").split()
        tops += [ep.module.split(".")[0] for ep in dist.entry_points]
        for top in dict.fromkeys(tops):
            spec = importlib.util.find_spec(top)
            if spec is None:
                continue
            where = spec.submodule_search_locations[0] if spec.submodule_search_locations else spec.origin
            if where:
                links[top if spec.submodule_search_locations else Path(where).name] = str(Path(where).resolve())
        infos.append((name, dist.version, dist.read_text("entry_points.txt") or ""))
    key = hashlib.sha256(json.dumps([sorted(links.items()), infos]).encode()).hexdigest()[:16]

    def build(folder: Path) -> None:
        for link, target in links.items():
            (folder / link).symlink_to(target, target_is_directory=Path(target).is_dir())
        for name, version, entry_points_txt in infos:
            info = folder / f"{name.replace('-', '_')}-{version}.dist-info"
            info.mkdir()
            (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
            (info / "entry_points.txt").write_text(entry_points_txt)

    return cache.get("plugins", f"plugins-{key}", build).path


__all__ = ["InstallError", "Installed", "Whence", "install", "interpreter_tag", "plugins_overlay", "self_overlay",
           "top_level_names", "ttfg_overlay", "uv_binary", "uv_environ", "whence"]
