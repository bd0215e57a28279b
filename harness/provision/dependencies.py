"""What a revision depends on, resolved by uv from the revision's own files.

Why: a pull request that only bumps a dependency changes nothing in the code, and a gate
that runs both sides in one interpreter measures the same packages twice and calls the
change "unchanged". So before the first pair the gate asks what each side *resolves to*.

Why uv reads the files, not ttfg: a hand-written reader of requirement files disagreed
with pip on the first hostile input (a bump inside a ``-r requirements/base.txt``
include was not seen; a range in ``constraints.txt`` was dropped, so both sides got the
same numpy; a pin changed in ``pyproject.toml`` was ignored because ``requirements.txt``
took precedence). uv's ``pip compile`` reads what pip reads: includes (``-r``, ``-c``),
line continuations, hashes, ranges, markers, extras, ``pyproject.toml``'s
``[project] dependencies``; ``uv export`` reads ``uv.lock``.

What a revision declares, all of it at once (each file that exists, in the project's
folder; a conflict between them is the revision's problem and is refused, quoting uv):

- ``requirements.txt``, with whatever it includes;
- ``pyproject.toml``'s ``[project] dependencies`` (optional groups are not installed:
  a pull request's environment is what ``pip install .`` gives);
- ``constraints.txt``: ttfg's convention is that it pins everything the project runs
  with, so its lines are requirements too (ranges kept);
- ``uv.lock`` (through ``uv export --locked``), in place of the above when present. A lock that
  no longer matches its ``pyproject.toml`` (what ``uv lock --check`` fails on: a pin bumped
  without relocking) is refused, naming both files: read with ``--frozen`` it was taken as the
  truth, and a head that bumped autograd 1.9.1 -> 1.8.0 was "measured once", exit 0;
- dependencies a build backend computes (``[project] dynamic = ["dependencies"]``, from
  ``[tool.setuptools.dynamic] dependencies = {file = [...]}``, hatch-requirements-txt's
  ``[tool.hatch.metadata.hooks.requirements_txt] files``, a PDM or setuptools build hook): uv
  asks the backend for the metadata (PEP 517 ``prepare_metadata_for_build_wheel``), so what is
  resolved is what ``pip install .`` installs; the files a table names count as declarations
  (:func:`dynamic_files`), and when none is named every changed file of the project may feed the
  backend, so both sides are resolved (a pin bumped in ``deps.in`` was gated in one interpreter).

``poetry.lock``, ``Pipfile.lock`` and ``pylock.toml`` are compared, not read: when one
of them changes the gate refuses to guess and says how to choose environments by hand.

When declarations changed: both sides are resolved, and identical resolutions mean the
change resolved to the same packages (measured once, and every verdict says so); only
different resolutions are built and measured as two environments.
"""

from __future__ import annotations

import fnmatch
import re
import subprocess
import tarfile
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

#: Files that can carry dependency declarations, as glob patterns relative to a project's folder (a change to
#: one means: resolve both sides and compare). ``ttfg init``'s pull-request workflow watches the same files.
DECLARATION_PATTERNS = ("pyproject.toml", "setup.cfg", "setup.py", "requirements*.txt", "requirements*.in",
                        "requirements/**", "constraints*.txt", "constraints*.in", "*.lock", "pylock*.toml", "Pipfile")
#: Lock files ttfg can compare but not build from.
UNREADABLE = ("poetry.lock", "Pipfile.lock", "pylock.toml")
RESOLVE_TIMEOUT_S = 300


class DeclarationError(Exception):
    """A revision's declarations cannot be resolved (uv's message is quoted)."""


@dataclass
class Resolution:
    """What one revision's declarations resolve to: exact requirement lines, and the files they came from."""

    lines: tuple[str, ...] = ()
    #: The declaration files read, relative to the project's folder (``requirements.txt``, ``pyproject.toml`` ...).
    files: tuple[str, ...] = ()

    @property
    def source(self) -> str:
        return " + ".join(self.files) if self.files else "nothing declared"

    def differs(self, other: "Resolution") -> dict[str, tuple[str | None, str | None]]:
        """``{package: (mine, theirs)}`` for every package whose pin differs (None: absent on that side)."""
        mine, theirs = _pins(self.lines), _pins(other.lines)
        return {n: (mine.get(n), theirs.get(n)) for n in sorted(set(mine) | set(theirs)) if mine.get(n) != theirs.get(n)}


def _pins(lines: tuple[str, ...]) -> dict[str, str]:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    out = {}
    for line in lines:
        req = Requirement(line)
        out[canonicalize_name(req.name)] = str(req.specifier) + (f"; {req.marker}" if req.marker else "")
    return out


def is_declaration(path: str) -> bool:
    """Whether a file of the repository can carry dependency declarations (``DECLARATION_PATTERNS``)."""
    name = PurePosixPath(path).name
    return any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(path, p) or fnmatch.fnmatch(path, "*/" + p)
               for p in DECLARATION_PATTERNS)


def dynamic_files(pyproject: str) -> list[str] | None:
    """The files a ``pyproject.toml`` (its text) reads its dynamic dependencies from, relative to its folder:
    ``[]`` when its dependencies are not dynamic, None when they are but no table ttfg knows names the files (a
    build hook computes them: any file may feed it).

    Known tables: setuptools' ``[tool.setuptools.dynamic]`` (``dependencies`` and each
    ``optional-dependencies`` group, ``{file = ...}``) and hatch-requirements-txt's
    ``[tool.hatch.metadata.hooks.requirements_txt]`` (``files`` and ``optional-dependencies``).
    """
    try:
        data = tomllib.loads(pyproject)
    except tomllib.TOMLDecodeError:
        return []  # uv says what is wrong with it
    project = data.get("project") if isinstance(data.get("project"), dict) else {}
    dynamic = project.get("dynamic") if isinstance(project.get("dynamic"), list) else []
    if not {"dependencies", "optional-dependencies"} & set(dynamic):
        return []
    tool = data.get("tool") if isinstance(data.get("tool"), dict) else {}

    def files(value) -> list[str]:
        if isinstance(value, dict):
            value = value.get("file")
        value = [value] if isinstance(value, str) else value
        return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []

    found: list[str] = []
    setuptools = ((tool.get("setuptools") or {}).get("dynamic") or {}) if isinstance(tool.get("setuptools"), dict) else {}
    hatch = (((tool.get("hatch") or {}).get("metadata") or {}).get("hooks") or {}).get("requirements_txt") or {} \
        if isinstance(tool.get("hatch"), dict) else {}
    for table, key in ((setuptools, "dependencies"), (hatch, "files")):
        if isinstance(table, dict):
            found += files(table.get(key))
            groups = table.get("optional-dependencies")
            for group in (groups.values() if isinstance(groups, dict) else ()):
                found += files(group)
    return sorted(set(found)) or None


def _dynamic_at(repo: Path, commit: str, project_dir: str) -> list[str] | None:
    """:func:`dynamic_files` of ``commit``'s ``pyproject.toml``, as paths of the repository."""
    path = (PurePosixPath(project_dir) / "pyproject.toml").as_posix() if project_dir else "pyproject.toml"
    from .worktrees import git

    out = git(repo, "show", f"{commit}:{path}", check=False, timeout=60)
    if out.returncode != 0:
        return []
    found = dynamic_files(out.stdout)
    if found is None:
        return None
    return [(PurePosixPath(project_dir) / f).as_posix() if project_dir else PurePosixPath(f).as_posix()
            for f in found]


def changed_declarations(repo: Path, base: str, head: str, project_dir: str = "") -> list[str]:
    """The files of the repository that can declare dependencies and differ between two commits: the usual ones
    (:data:`DECLARATION_PATTERNS`), the files the project's ``pyproject.toml`` reads dynamic dependencies from at
    either commit, and, when a build hook computes them from files no table names, every changed file of the
    project."""
    from .worktrees import git

    out = git(repo, "diff", "--name-only", "--no-renames", base, head)
    changed = [p for p in out.stdout.splitlines() if p]
    dynamic: set[str] = set()
    for commit in (base, head):
        found = _dynamic_at(repo, commit, project_dir)
        if found is None:  # any file may feed the backend's hook
            prefix = f"{project_dir.strip('/')}/" if project_dir else ""
            dynamic.update(p for p in changed if p.startswith(prefix))
        else:
            dynamic.update(found)
    return sorted(p for p in changed if is_declaration(p) or p in dynamic)


def resolve_at(repo: Path, commit: str, project_dir: str = "", python: str | None = None) -> Resolution:
    """``commit``'s declarations, resolved by uv in a copy of its tree (nothing is checked out in the repository).

    Raises
    ------
    DeclarationError
        When uv cannot read or resolve them, quoting uv and naming the commit.
    """
    from .worktrees import git

    with tempfile.TemporaryDirectory(prefix="ttfg-decl-") as tmp:
        archive = Path(tmp) / "tree.tar"
        out = git(repo, "archive", "--format=tar", "-o", str(archive), commit, check=False, timeout=300)
        if out.returncode != 0:
            raise DeclarationError(f"cannot read the files of {commit[:12]}: {out.stderr.strip()}")
        tree = Path(tmp) / "tree"
        with tarfile.open(archive) as tar:
            tar.extractall(tree, filter=_safe_member)
        short = git(repo, "rev-parse", "--short", commit).stdout.strip()
        return resolve(tree / project_dir, python, f"the declarations at {short}")


def resolve(folder: Path, python: str | None = None, what: str = "the declarations") -> Resolution:
    """What the project in ``folder`` declares, resolved by uv to exact requirement lines.

    Raises
    ------
    DeclarationError
        When uv cannot resolve them (a conflict, a version that does not exist, no network),
        quoting uv.
    """
    import sys

    from .uv import resolver_message, run_uv

    python = python or sys.executable
    if (folder / "uv.lock").is_file() and (folder / "pyproject.toml").is_file():
        # --locked: what `uv lock --check` checks, then the export; a lock that no longer matches its pyproject.toml
        # is refused, never read as the truth (--frozen did).
        out = run_uv(["export", "--locked", "--no-hashes", "--no-header", "--no-annotate", "--no-emit-project",
                   "--format", "requirements-txt", "--directory", str(folder)], what, RESOLVE_TIMEOUT_S)
        if out.returncode != 0:
            message = resolver_message(out.stderr)
            if re.search(r"lockfile at .*needs to be updated", out.stderr):
                raise DeclarationError(f"{what}: uv.lock does not match pyproject.toml (`uv lock --check` fails: the "
                                       f"lock was not updated after pyproject.toml changed); run `uv lock` and commit "
                                       f"uv.lock:\n{message}")
            raise DeclarationError(f"{what}: uv cannot read uv.lock:\n{message}")
        return Resolution(_requirement_lines(out.stdout, folder), ("uv.lock", "pyproject.toml"))
    inputs = [name for name in ("constraints.txt", "requirements.txt") if (folder / name).is_file()]
    read = list(inputs)
    if _has_dependencies(folder / "pyproject.toml"):
        inputs.append("pyproject.toml")
        dynamic = dynamic_files((folder / "pyproject.toml").read_text(errors="replace"))
        read += ["pyproject.toml"] + (dynamic if dynamic is not None else ["its build backend's metadata"])
    legacy = _legacy_metadata(folder)
    if legacy:
        inputs.append(legacy)
        read.append(legacy)
    if not inputs:
        return Resolution()
    return Resolution(_compile(inputs, folder, python, f"{what} ({' + '.join(read)})"), tuple(read))


def _compile(inputs: list[str], folder: Path, python: str, what: str) -> tuple[str, ...]:
    """``uv pip compile`` of ``inputs`` (files in ``folder``): exact requirement lines, the project itself left out.

    Raises
    ------
    DeclarationError
        Quoting uv.
    """
    from .uv import resolver_message, run_uv

    out = run_uv(["pip", "compile", *inputs, "--python", python, "--quiet", "--no-header", "--no-annotate"], what,
                 RESOLVE_TIMEOUT_S, cwd=folder)
    if out.returncode != 0:
        raise DeclarationError(f"{what} cannot be resolved:\n{resolver_message(out.stderr + out.stdout)}")
    return _requirement_lines(out.stdout, folder)


def _safe_member(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    """tarfile's ``data`` filter, skipping (not failing on) a member it refuses (a link out of the tree)."""
    try:
        return tarfile.data_filter(member, dest)
    except tarfile.FilterError:
        return None


def resolve_file(path: Path, python: str | None = None) -> Resolution:
    """A requirements file (``ttfg run --env NAME=@FILE``), resolved by uv to exact requirement lines.

    Raises
    ------
    DeclarationError
        Quoting uv.
    """
    import sys

    path = path.resolve()
    return Resolution(_compile([path.name], path.parent, python or sys.executable, path.name), (path.name,))


def _has_dependencies(pyproject: Path) -> bool:
    """Whether a ``pyproject.toml`` declares ``[project] dependencies`` (a project with none adds nothing)."""
    if not pyproject.is_file():
        return False
    try:
        project = tomllib.loads(pyproject.read_text(errors="replace")).get("project") or {}
    except tomllib.TOMLDecodeError:
        return True  # uv says what is wrong with it
    return bool(project.get("dependencies")) or "dependencies" in (project.get("dynamic") or [])


def _legacy_metadata(folder: Path) -> str | None:
    """``setup.py`` (or ``setup.cfg``) when it, not ``pyproject.toml``'s ``[project]`` table, declares the project's
    metadata: its ``install_requires`` are the dependencies, read by uv through setuptools. Before, a
    ``setup.py``-only project declared "nothing", and a bump of its ``install_requires`` was measured in
    one environment for both sides."""
    pyproject = folder / "pyproject.toml"
    if pyproject.is_file():
        try:
            if "project" in tomllib.loads(pyproject.read_text(errors="replace")):
                return None
        except tomllib.TOMLDecodeError:
            return None  # uv says what is wrong with it
    if (folder / "setup.py").is_file():
        return "setup.py"
    cfg = folder / "setup.cfg"
    if cfg.is_file() and "install_requires" in cfg.read_text(errors="replace"):  # not a linter's config alone
        return "setup.cfg"
    return None


def _requirement_lines(text: str, folder: Path) -> tuple[str, ...]:
    """uv's output as requirement lines; the project itself (``-e .``, a path inside the tree) is left out:
    each side installs its own revision of it."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "-")) or str(folder) in line or "file://" in line:
            continue
        out.append(line)
    return tuple(sorted(out, key=str.lower))


def unreadable(files: list[str]) -> list[str]:
    """The changed lock files ttfg can compare but not build from."""
    return [f for f in files if PurePosixPath(f).name in UNREADABLE]


__all__ = ["DECLARATION_PATTERNS", "DeclarationError", "Resolution", "changed_declarations", "dynamic_files",
           "is_declaration", "resolve", "resolve_at", "resolve_file", "unreadable"]
