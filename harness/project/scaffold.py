"""What ``ttfg init`` writes into a user's repository, planned in full before anything is written.

Why a plan first: ``init`` must either write everything or nothing. It refuses a folder that
is not a git repository or not a Python project, and it refuses to overwrite any existing
file without ``--force``; both checks run over the whole plan before the first write, so a
refusal leaves the repository as it was.

The files (templates in ``templates/``, rendered with Jinja2):

- ``ttfg.toml``: the project's selection (its own plugins' models and backends), budget,
  minimum effect, results folder;
- ``asv.conf.json``: builds *this* project per commit (one ``--no-deps`` wheel: asv 0.6.6's
  default build leaves the dependencies' wheels beside it and fails with "Found multiple
  wheels"), and installs ttfg in the ``install_command`` (a ``pip+`` matrix entry with a
  path or URL is cut at its first folder by asv 0.6.6);
- ``ttfg_suites/ttfg.py``: one line, ``from ttfg.history.asv_tracks import *``, so the
  benchmark functions are never copied;
- ``.github/workflows/ttfg-perf-gate.yml`` and ``ttfg-trend.yml``, from ttfg's own
  ``ci/workflows/``;
- when the project declares no ttfg plugin: a starter model and backend module in its
  package, and their entry points appended to ``pyproject.toml``.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from importlib import resources

from ..errors import UsageError
from .pyproject import Project, import_name

#: Where the asv suites go (a package: asv imports it by its folder's name).
SUITES_DIR = "ttfg_suites"
#: ttfg's own default case when a project declares a backend but no model.
FALLBACK_MODEL = "resnet15"
#: ttfg's own backend when a project declares a model but no backend (HIPS autograd: no framework to install).
FALLBACK_BACKEND = "autograd"


class Refused(UsageError):
    """``ttfg init`` will not write: the message says why, and nothing was written."""


@dataclass
class Planned:
    """One file ``init`` writes: its path in the repository, its text, and what it is for."""

    path: str
    text: str
    what: str
    #: ``new`` (refused when it exists, unless --force) or ``append`` (an edit of an existing file).
    mode: str = "new"


def _render(name: str, **context) -> str:
    from jinja2 import Environment, StrictUndefined

    source = resources.files("ttfg.project").joinpath("templates", name).read_text()
    env = Environment(undefined=StrictUndefined, keep_trailing_newline=True, trim_blocks=False)
    return env.from_string(source).render(**context)


def ttfg_requirement() -> tuple[str, str]:
    """How to install the running ttfg elsewhere: ``(for a CI's pip, for asv's install_command)``.

    From an index: ``ttfg==VERSION`` for both. From a local folder (an editable or path
    install, as in development): the folder for asv here, and ``ttfg==VERSION`` for CI, which
    cannot see this machine's folders. From a VCS URL: that URL at the installed commit.
    """
    from importlib import metadata

    dist = metadata.distribution("ttfg")
    pinned = f"ttfg=={dist.version}"
    raw = dist.read_text("direct_url.json")
    if not raw:
        return pinned, pinned
    info = json.loads(raw)
    url = info.get("url", "")
    if "vcs_info" in info:
        vcs = info["vcs_info"]
        spec = f"'ttfg @ {vcs.get('vcs', 'git')}+{url}@{vcs.get('commit_id', '')}'"
        return spec, spec
    if url.startswith("file://"):
        import shlex

        return pinned, shlex.quote(url[len("file://"):])
    return pinned, pinned


def selection(project: Project) -> tuple[list[str], list[str], bool]:
    """``(models, backends, starter)``: the project's own plugins, or the starter's names when it has none."""
    if not project.declares_plugin():
        return [starter_names(project)[0]], [starter_names(project)[1]], True
    return (project.models or [FALLBACK_MODEL]), (project.backends or [FALLBACK_BACKEND]), False


def starter_names(project: Project) -> tuple[str, str]:
    """The starter model's and backend's names: ``mylab_model`` and ``mylab.autograd``."""
    base = import_name(project.name)
    return f"{base}_model", f"{base}.autograd"


def plan(project: Project, branch: str, commit_url: str | None = None) -> list[Planned]:
    """Every file ``init`` would write for ``project``.

    Raises
    ------
    Refused
        When a starter plugin is needed but cannot be placed (no package folder found, or
        the entry points are an inline table that cannot be extended by appending).
    """
    models, backends, starter = selection(project)
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    ci_req, asv_req = ttfg_requirement()
    paths = []
    if project.package_dir is not None:
        paths = [f"{project.package_dir.relative_to(project.root).as_posix()}/**", "pyproject.toml", "ttfg.toml"]
    context = dict(project=project, models=models, backends=backends, branch=branch, python=python,
                   ttfg_ci_requirement=ci_req, ttfg_install=asv_req, commit_url=commit_url, suites_dir=SUITES_DIR,
                   paths=paths)
    files = [
        Planned("ttfg.toml", _render("ttfg.toml.j2", **context), "the config: selection, budget, results folder"),
        Planned("asv.conf.json", _render("asv.conf.json.j2", **context),
                f"asv builds {project.name} at each commit (one --no-deps wheel) and installs ttfg beside it"),
        Planned(f"{SUITES_DIR}/__init__.py", "", "the asv suites' package"),
        Planned(f"{SUITES_DIR}/ttfg.py", _render("suite.py.j2", **context),
                "the asv suites: one import of ttfg.history.asv_tracks"),
        Planned(".github/workflows/ttfg-perf-gate.yml", _render("perf-gate.yml.j2", **context),
                "pull requests: the gate, its summary as one PR comment"),
        Planned(".github/workflows/ttfg-trend.yml", _render("trend.yml.j2", **context),
                "pushes and nightly: asv history, confirmed steps, the report"),
    ]
    if starter:
        files += _starter(project, context)
    return files


def _starter(project: Project, context: dict) -> list[Planned]:
    if project.package_dir is None:
        wanted = import_name(project.name)
        raise Refused(f"{project.root}: {project.name} declares no ttfg plugin, and its package folder was not found "
                      f"(looked for src/{wanted}/__init__.py and {wanted}/__init__.py) to put a starter plugin in; "
                      "declare your model or backend under [project.entry-points.\"ttfg.models\"] / "
                      "[project.entry-points.\"ttfg.backends\"] and run ttfg init again")
    if project.inline_entry_points:
        raise Refused(f"{project.pyproject}: [project] has entry-points as an inline table, which ttfg init cannot "
                      "extend; add the ttfg.models / ttfg.backends groups yourself and run ttfg init again")
    model, backend = starter_names(project)
    package = project.package_dir.relative_to(project.root)
    module_path = package / "ttfg_plugin.py"
    parts = list(package.parts[1:] if package.parts[0] == "src" else package.parts)
    module = ".".join([*parts, "ttfg_plugin"])
    extra = dict(context, model_name=model, backend_name=backend, module=module)
    return [Planned(module_path.as_posix(), _render("plugin.py.j2", **extra),
                    f"a starter model ({model}) and backend ({backend}) to replace with your own"),
            Planned("pyproject.toml", _render("entry_points.toml.j2", **extra),
                    "their entry points (ttfg.models, ttfg.backends), appended", mode="append")]


def existing(project: Project, files: list[Planned]) -> list[str]:
    """The planned new files that already exist."""
    return [f.path for f in files if f.mode == "new" and (project.root / f.path).exists()]


def write(project: Project, files: list[Planned], force: bool) -> list[Planned]:
    """Write the plan (atomically, file by file); refuses, writing nothing, when a file exists and not ``force``."""
    from ..files import atomic_write_text

    clash = existing(project, files)
    if clash and not force:
        raise Refused(f"{project.root}: would overwrite {', '.join(clash)}; nothing was written (--force "
                      "overwrites them)")
    for f in files:
        path = project.root / f.path
        if f.mode == "append":
            atomic_write_text(path, path.read_text().rstrip("\n") + "\n" + f.text)
        else:
            atomic_write_text(path, f.text)
    return files


__all__ = ["FALLBACK_BACKEND", "FALLBACK_MODEL", "Planned", "Refused", "SUITES_DIR", "existing", "plan",
           "selection", "starter_names", "ttfg_requirement", "write"]
