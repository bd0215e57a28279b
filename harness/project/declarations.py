"""What a project declares about its dependencies: the files that declare them, and its framework.

Why: two things ``ttfg init`` writes depend on it. The pull-request workflow's ``paths:``
filter must fire on a dependency-only change (a bumped pin in ``requirements.txt``, a
range in ``constraints.txt``, a lock file), or a dependency bump is never gated. And the
starter backend is written for the framework the project declares (torch, jax, flax,
equinox, autograd), read from ``pyproject.toml``'s dependencies and its requirements
files, so a torch library is not handed an autograd starter.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from ..provision.dependencies import DECLARATION_PATTERNS

#: Frameworks a starter backend exists for, the most specific first (flax and equinox declare jax too).
FRAMEWORKS = ("flax", "equinox", "jax", "torch", "autograd")
#: The modules each starter imports (the project's package is added to them).
MODULES = {"flax": ("jax", "flax"), "equinox": ("jax", "equinox"), "jax": ("jax",), "torch": ("torch",),
           "autograd": ("autograd",)}
_INCLUDE = re.compile(r"^\s*(?:-r|-c|--requirement|--constraint)(?:\s+|=)(\S+)", re.M)
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _requirement_files(folder: Path) -> list[Path]:
    found = [*folder.glob("requirements*.txt"), *folder.glob("constraints*.txt")]
    if (folder / "requirements").is_dir():
        found += [p for p in (folder / "requirements").rglob("*") if p.is_file()]
    return sorted(found)


def includes(folder: Path, root: Path) -> list[str]:
    """The files the requirements files include (``-r``/``-c``) outside the usual patterns, relative to ``root``."""
    out = []
    for path in _requirement_files(folder):
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        for target in _INCLUDE.findall(text):
            resolved = (path.parent / target).resolve()
            if resolved.is_relative_to(root.resolve()):
                out.append(resolved.relative_to(root.resolve()).as_posix())
    return sorted(set(out))


def watched_paths(root: Path, folder: Path, package_dir: Path | None) -> list[str]:
    """The pull-request workflow's ``paths:``: the project's code, every dependency declaration (the files a
    ``pyproject.toml`` reads dynamic dependencies from included: a pin bumped in ``deps.in`` is a dependency
    change), ttfg's files.

    Empty (no filter: every pull request is gated) when the code's folder cannot be told, or when a build hook
    computes the dependencies from files no table names: a filter that missed the code or a declaration would
    let a pull request that changes it pass ungated.
    """
    rel = folder.resolve().relative_to(root.resolve()).as_posix()
    prefix = "" if rel == "." else rel + "/"
    if not prefix and package_dir is None:
        return []
    paths = [f"{prefix}**"] if prefix else []
    if not prefix and package_dir is not None:
        paths.append(f"{package_dir.resolve().relative_to(root.resolve()).as_posix()}/**")
    paths += list(DECLARATION_PATTERNS)  # the files the gate resolves again when one changes
    paths += [p for p in includes(folder, root) if not (prefix and p.startswith(prefix))]
    dynamic = _dynamic(folder)
    if dynamic is None:  # a build hook computes the dependencies from files no table names: gate every change
        return []
    if not prefix:  # under a project folder, its ``**`` holds them already
        paths += dynamic
    paths += ["ttfg.toml", ".github/workflows/ttfg-perf-gate.yml"]
    return list(dict.fromkeys(paths))


def _dynamic(folder: Path) -> list[str] | None:
    """The files ``pyproject.toml`` reads dynamic dependencies from (``dependencies.dynamic_files``)."""
    from ..provision.dependencies import dynamic_files

    try:
        return dynamic_files((folder / "pyproject.toml").read_text(errors="replace"))
    except OSError:
        return []


def declared_names(folder: Path) -> set[str]:
    """The distribution names the project depends on: pyproject's dependencies and extras, requirements files."""
    lines: list[str] = []
    try:
        data = tomllib.loads((folder / "pyproject.toml").read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        data = {}
    project = data.get("project", {}) if isinstance(data.get("project"), dict) else {}
    lines += [d for d in project.get("dependencies", []) if isinstance(d, str)]
    for extra in (project.get("optional-dependencies") or {}).values():
        lines += [d for d in extra if isinstance(d, str)] if isinstance(extra, list) else []
    for path in _requirement_files(folder):
        try:
            lines += [line for line in path.read_text(errors="replace").splitlines()
                      if line.strip() and not line.lstrip().startswith(("#", "-"))]
        except OSError:
            continue
    names = set()
    for line in lines:
        match = _NAME.match(line)
        if match:
            names.add(re.sub(r"[-_.]+", "-", match.group(1)).lower())
    return names


def framework(folder: Path) -> str:
    """The framework a starter backend is written for: the first of :data:`FRAMEWORKS` the project declares
    (``jaxlib`` counts as jax), else autograd (no framework to install beyond ttfg's own dependencies)."""
    names = declared_names(folder)
    if "jaxlib" in names:
        names.add("jax")
    return next((f for f in FRAMEWORKS if f in names), "autograd")


__all__ = ["FRAMEWORKS", "MODULES", "declared_names", "framework", "includes", "watched_paths"]
