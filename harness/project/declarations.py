"""What a project declares about its dependencies: the files that declare them, and its framework.

Why: two things ``ttfg init`` writes depend on it. The pull-request workflow's ``paths:``
filter must fire on a dependency-only change (a bumped pin in ``requirements.txt``, a
range in ``constraints.txt``, a lock file), or a dependency bump is never gated. And the
starter backend is written for the framework the project declares, read from
``pyproject.toml``'s dependencies and extras and its requirements files, so a torch library
is not handed an autograd starter.

Which one when a project declares several (:func:`choose`): a required dependency
(``[project] dependencies``) before one only in an extra or a requirements file (a torch
library that lists jax in a ``bench`` extra is a torch library), then the order of
:data:`FRAMEWORKS`: flax, equinox, haiku, jax, torch, autograd. flax, equinox and haiku first because they
declare jax too and the starter should use the front end the library builds on; jax before
torch is a convention, not a judgement, so ``init`` says what was declared and why it chose,
and ``ttfg init --framework`` chooses another. docs/how-to/guard-your-project.md states the
same order (``tests/test_init_framework.py`` holds the two together).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ..provision.dependencies import DECLARATION_PATTERNS

#: Frameworks a starter exists for, the most specific first (flax, equinox and haiku declare jax too).
FRAMEWORKS = ("flax", "equinox", "haiku", "jax", "torch", "autograd")
#: The distribution a framework is declared by, where it is not the framework's own name.
DISTRIBUTIONS = {"haiku": "dm-haiku"}
#: The modules each starter imports (the project's package is added to them).
MODULES = {"flax": ("jax", "flax"), "equinox": ("jax", "equinox"), "haiku": ("jax", "haiku"), "jax": ("jax",),
           "torch": ("torch",),
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


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declarations(folder: Path) -> dict[str, list[str]]:
    """``{distribution name: [where it is declared, ...]}``: ``dependencies``, ``extra 'NAME'`` (pyproject's
    ``[project]``) and requirements files by name."""
    found: dict[str, list[str]] = {}

    def add(line: str, where: str) -> None:
        match = _NAME.match(line)
        if match:
            places = found.setdefault(_normalized(match.group(1)), [])
            if where not in places:
                places.append(where)

    try:
        data = tomllib.loads((folder / "pyproject.toml").read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        data = {}
    project = data.get("project", {}) if isinstance(data.get("project"), dict) else {}
    for line in project.get("dependencies", []):
        if isinstance(line, str):
            add(line, "dependencies")
    for extra, lines in (project.get("optional-dependencies") or {}).items():
        for line in lines if isinstance(lines, list) else []:
            if isinstance(line, str):
                add(line, f"extra '{extra}'")
    for path in _requirement_files(folder):
        try:
            lines = path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            if line.strip() and not line.lstrip().startswith(("#", "-")):
                add(line, path.relative_to(folder).as_posix())
    return found


def declared_names(folder: Path) -> set[str]:
    """The distribution names the project depends on: pyproject's dependencies and extras, requirements files."""
    return set(declarations(folder))


@dataclass(frozen=True)
class FrameworkChoice:
    """The framework a starter backend is written for, what the project declared, and why this one."""

    framework: str
    #: ``{framework: [where declared, ...]}`` for each framework of :data:`FRAMEWORKS` the project declares.
    declared: dict[str, list[str]] = field(default_factory=dict)
    #: One sentence: why this framework.
    reason: str = ""

    def describe(self) -> str:
        """``torch: declared torch (dependencies), jax (extra 'bench'); <reason>``, as ``init`` prints it."""
        listed = ", ".join(f"{name} ({', '.join(places)})" for name, places in self.declared.items())
        return f"{self.framework}: " + (f"declared {listed}; " if listed else "") + self.reason


def choose(folder: Path, wanted: str | None = None) -> FrameworkChoice:
    """The starter's framework for the project in ``folder``: ``wanted`` (``--framework``) when given, else a
    required dependency before an optional one, then the order of :data:`FRAMEWORKS` (``jaxlib`` counts as
    jax); autograd when none is declared (no framework to install beyond ttfg's own dependencies)."""
    found = declarations(folder)
    for place in found.get("jaxlib", []):
        if place not in found.setdefault("jax", []):
            found["jax"].append(place)
    declared = {f: found[DISTRIBUTIONS.get(f, f)] for f in FRAMEWORKS if DISTRIBUTIONS.get(f, f) in found}
    order = ", ".join(FRAMEWORKS[:-1])
    if wanted is not None:
        return FrameworkChoice(wanted, declared, "chosen with --framework"
                               + ("" if wanted in declared or wanted == "autograd" else
                                  f" ({wanted} is not declared: declare it, or the starter cannot import it)"))
    if not declared:
        return FrameworkChoice("autograd", declared, f"the project declares none of {order}: an autograd starter "
                               "(HIPS autograd, installed with ttfg); --framework NAME writes another")
    required = [f for f, places in declared.items() if "dependencies" in places]
    pool = required or list(declared)
    chosen = pool[0]
    if len(declared) == 1:
        reason = "the one framework it declares"
    elif len(pool) == 1 and required:
        reason = "the one it requires ([project] dependencies); the others are optional"
    else:
        reason = (f"the first {'required ' if required else ''}one in ttfg's order ({order}: a front end before "
                  f"the jax it builds on, then jax before torch)")
    others = [f for f in declared if f != chosen]
    return FrameworkChoice(chosen, declared, reason + (f"; --framework {others[0]} writes a {others[0]} starter "
                                                       "instead" if others else ""))


def framework(folder: Path) -> str:
    """The framework a starter backend is written for (:func:`choose`)."""
    return choose(folder).framework


__all__ = ["DISTRIBUTIONS", "FRAMEWORKS", "MODULES", "FrameworkChoice", "choose", "declarations", "declared_names", "framework",
           "includes", "watched_paths"]
