"""What ttfg needs to know of a user's project, read from its ``pyproject.toml`` without building it.

``ttfg init`` writes files that name the project (asv's ``project``, the workflows'
selection) and must know whether the project already plugs models or backends into ttfg
(``[project.entry-points."ttfg.models"]`` / ``"ttfg.backends"``), and where its import
package lives (``src/NAME/`` or ``NAME/``) to put a starter plugin there. Reading the
file is enough for all of that; nothing is imported or built.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError

#: The entry-point groups a project plugs into ttfg with (a function case: ``engines/function.py``).
MODEL_GROUP, BACKEND_GROUP, FUNCTION_GROUP = "ttfg.models", "ttfg.backends", "ttfg.functions"


class NotAProject(UsageError):
    """The folder is not a Python project ttfg can work with; the message says why."""


@dataclass
class Project:
    """A Python project at the root of a git repository."""

    root: Path
    name: str
    #: ``{group: {entry name: "module:attr"}}`` for ttfg's three groups (empty when none).
    plugins: dict[str, dict[str, str]] = field(default_factory=dict)
    #: The import package's folder (``src/mylab``), or None when it cannot be told.
    package_dir: Path | None = None
    #: ``[build-system] requires``.
    build_requires: list[str] = field(default_factory=list)
    #: True when ``entry-points`` is an inline table of ``[project]`` (new tables cannot be appended then).
    inline_entry_points: bool = False

    @property
    def pyproject(self) -> Path:
        return self.root / "pyproject.toml"

    @property
    def package(self) -> str | None:
        return self.package_dir.name if self.package_dir else None

    @property
    def models(self) -> list[str]:
        return sorted(self.plugins.get(MODEL_GROUP, {}))

    @property
    def backends(self) -> list[str]:
        return sorted(self.plugins.get(BACKEND_GROUP, {}))

    @property
    def functions(self) -> list[str]:
        return sorted(self.plugins.get(FUNCTION_GROUP, {}))

    def declares_plugin(self) -> bool:
        return bool(self.models or self.backends or self.functions)


def import_name(dist_name: str) -> str:
    """``my-lab`` -> ``my_lab``: the usual import name of a distribution."""
    return re.sub(r"[-.]+", "_", dist_name).lower()


def _package_dir(root: Path, name: str) -> Path | None:
    wanted = import_name(name)
    for candidate in (root / "src" / wanted, root / wanted):
        if (candidate / "__init__.py").is_file():
            return candidate
    src = root / "src"
    found = sorted(p.parent for p in src.glob("*/__init__.py")) if src.is_dir() else []
    return found[0] if len(found) == 1 else None


def read(root: str | Path) -> Project:
    """The project whose ``pyproject.toml`` is in ``root``.

    Raises
    ------
    NotAProject
        When there is no ``pyproject.toml``, it is not valid TOML, or it has no
        ``[project]`` table with a ``name``.
    """
    root = Path(root)
    path = root / "pyproject.toml"
    if not path.is_file():
        extra = " (it has a setup.py: add a pyproject.toml with a [project] table)" if (root / "setup.py").is_file() \
            else ""
        raise NotAProject(f"{root}: not a Python project: no pyproject.toml{extra}")
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise NotAProject(f"{path}: cannot be read as TOML: {exc}") from None
    project = data.get("project")
    if not isinstance(project, dict) or not isinstance(project.get("name"), str):
        raise NotAProject(f"{path}: no [project] table with a name; ttfg needs the project's name and its "
                          "entry points there (PEP 621)")
    eps = project.get("entry-points", {})
    plugins = {group: dict(eps.get(group, {})) for group in (MODEL_GROUP, BACKEND_GROUP, FUNCTION_GROUP)
               if isinstance(eps, dict) and isinstance(eps.get(group), dict)}
    inline = "entry-points" in project and not re.search(r"^\s*\[project\.entry-points", path.read_text(), re.M)
    build = data.get("build-system", {})
    return Project(root, project["name"], plugins, _package_dir(root, project["name"]),
                   list(build.get("requires", [])) if isinstance(build, dict) else [], inline)


__all__ = ["BACKEND_GROUP", "FUNCTION_GROUP", "MODEL_GROUP", "NotAProject", "Project", "import_name", "read"]
