"""What a revision declares it depends on, read from its own files.

Why: a pull request that only bumps jax in ``constraints.txt`` changes nothing in the
code, and a gate that runs both sides in one interpreter measures the same jax twice and
calls the change "unchanged". So before the first pair the gate compares what base and
head *declare*; when they differ, each side runs in the environment its own revision
declares (``environments.py``), and when they agree, both share one (the fast path).

What counts as a declaration, in order of precedence for building an environment:

1. ``constraints.txt``: exact pins of everything (ttfg's own convention, and a common
   one): every ``name==version`` line becomes a requirement.
2. ``requirements.txt``: its requirement lines (options such as ``-e .`` are skipped).
3. ``pyproject.toml``: ``[project] dependencies``.

Lock files ttfg cannot turn into requirement lines (``uv.lock``, ``poetry.lock``,
``pylock.toml``, ``Pipfile.lock``) still count as declarations: when one differs between
base and head the gate refuses to guess, and says how to choose environments by hand.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

#: Files whose content, when it differs, means the dependencies differ.
LOCKS = ("constraints.txt", "requirements.txt", "uv.lock", "poetry.lock", "pylock.toml", "Pipfile.lock")
#: Those ttfg can build an environment from (the rest it can only compare).
READABLE = ("constraints.txt", "requirements.txt", "pyproject.toml")


@dataclass
class Declaration:
    """One revision's dependency declarations: comparable content per file, and the lines to build from."""

    #: ``{file: normalised content}`` (for pyproject.toml, only its dependency tables).
    files: dict[str, str] = field(default_factory=dict)
    #: Requirement lines to build its environment from, and the file they came from.
    requirements: tuple[str, ...] = ()
    source: str | None = None

    def differs(self, other: "Declaration") -> list[str]:
        """The files whose declared dependencies differ between the two revisions."""
        return sorted(f for f in set(self.files) | set(other.files) if self.files.get(f) != other.files.get(f))


def _lines(text: str, pins_only: bool) -> tuple[str, ...]:
    out = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        if pins_only and not re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[^\]]*\])?\s*===?\s*\S+", line):
            continue
        out.append(line)
    return tuple(out)


def _pyproject_tables(text: str) -> tuple[str, tuple[str, ...]]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return text, ()
    project = data.get("project") or {}
    deps = tuple(project.get("dependencies") or ())
    tables = {"dependencies": list(deps), "optional-dependencies": project.get("optional-dependencies") or {},
              "build-system": (data.get("build-system") or {}).get("requires") or []}
    return repr(sorted(tables.items())), deps


def declared(tree: Path, project_dir: str = "") -> Declaration:
    """What the revision checked out at ``tree`` declares (its project in ``project_dir``, relative to the root)."""

    def read(name: str) -> str | None:
        path = tree / project_dir / name
        return path.read_text(errors="replace") if path.is_file() else None

    return _declaration(read)


def declared_at(repo: Path, commit: str, project_dir: str = "") -> Declaration:
    """What ``commit`` declares, read from git without checking it out (the project in ``project_dir``)."""
    from .worktrees import git

    def read(name: str) -> str | None:
        out = git(repo, "show", f"{commit}:{PurePosixPath(project_dir, name)}", check=False)
        return out.stdout if out.returncode == 0 else None

    return _declaration(read)


def _declaration(read) -> Declaration:
    decl = Declaration()
    for name in LOCKS:
        text = read(name)
        if text is not None:
            decl.files[name] = text
    deps: tuple[str, ...] = ()
    pyproject = read("pyproject.toml")
    if pyproject is not None:
        decl.files["pyproject.toml"], deps = _pyproject_tables(pyproject)
    if "constraints.txt" in decl.files:
        decl.requirements, decl.source = _lines(decl.files["constraints.txt"], pins_only=True), "constraints.txt"
    elif "requirements.txt" in decl.files:
        decl.requirements, decl.source = _lines(decl.files["requirements.txt"], pins_only=False), "requirements.txt"
    elif deps:
        decl.requirements, decl.source = deps, "pyproject.toml"
    return decl


def buildable(decl: Declaration, changed: list[str]) -> str | None:
    """Why an environment cannot be built from ``decl`` for the ``changed`` files, or None when it can."""
    unreadable = [f for f in changed if f not in READABLE]
    if unreadable:
        return (f"{', '.join(unreadable)} changed, and ttfg cannot build an environment from "
                f"{'it' if len(unreadable) == 1 else 'them'}")
    if not decl.requirements:
        return "no requirement lines to build from (constraints.txt, requirements.txt or [project] dependencies)"
    return None


__all__ = ["Declaration", "LOCKS", "buildable", "declared", "declared_at"]
