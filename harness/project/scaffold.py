"""What ``ttfg init`` writes into a user's repository, planned in full before anything is written.

Why a plan first: ``init`` must either write everything or nothing. It refuses a folder that
is not a git repository or not a Python project, and it refuses to overwrite any existing
file without ``--force``; both checks run over the whole plan before the first write, and
the plan is then written as one set (``files.replace_together``: every file or none, new
folders removed again on a failure), so a refusal or a failure leaves the repository as it was.

The files (templates in ``templates/``, rendered with Jinja2), at the repository's root:

- ``ttfg.toml``: the project's selection (its own plugins' models and backends), budget,
  minimum effect, results folder, and ``install-path`` for a project in a subfolder. A
  config the project already has (``ttfg.toml``, or ``[tool.ttfg]`` in ``pyproject.toml``)
  is completed instead: the keys it lacks are added, the ones it sets are kept and named,
  and no second config is written;
- ``asv.conf.json``: builds *this* project per commit (one ``--no-deps`` wheel: asv 0.6.6's
  default build leaves the dependencies' wheels beside it and fails with "Found multiple
  wheels"), follows the default branch, and installs ttfg in the ``install_command`` (a
  ``pip+`` matrix entry with a path or URL is cut at its first folder by asv 0.6.6);
- ``.ttfg/ttfg_suites/ttfg.py``: the config's selection (``asv_selection``), then
  ``from ttfg.history.asv_tracks import *``, so the benchmark functions are never copied. In
  ``.ttfg/``, not at the root: a package at the root changed the user's build. setuptools'
  automatic discovery of a flat layout refused it ("Multiple top-level packages discovered in a
  flat-layout: ['jlib', 'ttfg_suites']": ``pip install -e .`` and every revision the gate installs
  failed), and pdm-backend ships every root folder with an ``__init__.py``, so its wheels carried
  ``ttfg_suites``. A folder whose name starts with a dot is no import name, setuptools skips it
  (``[._]*``), pdm-backend finds no ``__init__.py`` in it, and hatchling and flit ship only the
  project's own package (``tests/test_init_builds.py`` builds all five before and after ``init``);
- ``.github/workflows/ttfg-perf-gate.yml`` and ``ttfg-trend.yml``, after ttfg's own
  ``ci/workflows/``: ttfg installed from where this ttfg came from (``ttfg_source``), the
  pull-request filter over every dependency declaration (``declarations``), the trend on
  the default branch (``default_branch``);
- ``.gitignore`` lines for ``.ttfg/runs/`` (the config's ``output``: results kept in ``.ttfg/`` for the
  reason the suites are), ``runs/``, ``.asv/``, ``reports/`` and ``.ttfg-counts/`` (the workflows' count
  store), those it lacks;
- when the project declares no ttfg plugin: a starter for the framework it declares, in its
  package, with its entry point appended to its ``pyproject.toml``. By default a function case
  (``ttfg_cases.py``: ``case()`` returns the library's own loss-and-gradient call and its
  arguments, written with the framework's public API, ``torch.compile``, ``jax.jit``, ``nnx.jit``,
  ``eqx.filter_jit``, Haiku's ``transform``), so the library is measured as its users call it and
  the framework's counters (HLO ops, FX graphs) reach the structural tier; with ``--starter
  backend``, a library backend building the model from ttfg's layer spec (``ttfg_plugin.py``),
  whose gradient ``ttfg check`` compares with the float64 reference. A function named like a
  model is refused (``--model NAME`` would be ambiguous).
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..errors import UsageError
from . import declarations, ttfg_source
from .pyproject import Project, import_name

#: Where the asv suites go: a package (asv imports it by its folder's name) inside ``.ttfg/``, a folder no
#: build backend's discovery takes for a package (see the module's docstring).
SUITES_DIR = ".ttfg/ttfg_suites"
#: Where ``init`` put the suites before: a package at the root, which breaks a flat layout's build.
OLD_SUITES_DIR = "ttfg_suites"
#: Where a project's results go (the config's ``output``): in ``.ttfg/`` too. setuptools' flat-layout
#: discovery takes any folder with an identifier's name for a package, so a ``runs/`` or ``reports/`` left at
#: the root by ``ttfg gate`` or ``ttfg report`` broke ``pip install -e .`` the same way (["jlib", "runs"]).
OUTPUT = ".ttfg/runs"
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
    #: ``new`` (refused when it exists, unless --force), ``append`` (added to an existing file) or
    #: ``replace`` (an existing file completed: the config).
    mode: str = "new"


def _render(name: str, **context) -> str:
    from jinja2 import Environment, StrictUndefined

    source = resources.files("ttfg.project").joinpath("templates", name).read_text()
    env = Environment(undefined=StrictUndefined, keep_trailing_newline=True, trim_blocks=False)
    return env.from_string(source).render(**context)


#: What ``init`` writes for a project that declares no plugin (``--starter``): a function case (the default: the
#: library's own loss-and-gradient call, ``case() -> (fn, args)``), or a library backend built from ttfg's spec.
STARTERS = ("function", "backend")
#: The frameworks a starter library backend exists for (a function starter exists for every one of
#: ``declarations.FRAMEWORKS``).
BACKEND_FRAMEWORKS = ("flax", "equinox", "jax", "torch", "autograd")


def selection(project: Project, configured: dict | None = None,
              framework: str | None = None, starter: str = "function") -> tuple[list[str], list[str], bool]:
    """``(models, backends, starter)``: the existing config's selection where it has one, else the project's
    own plugins, else the starter's names (``starter`` True: a starter is written; ``framework``:
    ``--framework``; a function starter's case is its name as a model, with the ``function`` backend)."""
    configured = configured or {}
    if not project.declares_plugin() and not ({"models", "backends"} & set(configured)):
        model, backend = starter_names(project, framework, starter)
        return [model], [backend], True
    if project.functions and not project.models and not project.backends:  # its own function cases
        return (list(configured.get("models") or project.functions),
                list(configured.get("backends") or ["function"]), False)
    models = list(configured.get("models") or project.models or [FALLBACK_MODEL])
    backends = list(configured.get("backends") or project.backends or [FALLBACK_BACKEND])
    return models, backends, False


def starter_names(project: Project, framework: str | None = None, starter: str = "function") -> tuple[str, str]:
    """The starter's model and backend: ``mylab_loss`` and ``function`` (a function starter), or
    ``mylab_model`` and ``mylab.torch`` (a backend starter, named by its framework)."""
    base = import_name(project.name)
    if starter == "function":
        return f"{base}_loss", "function"
    return f"{base}_model", f"{base}.{declarations.choose(project.root, framework).framework}"


@dataclass
class Setup:
    """Where and how ``init`` writes: the repository, the project in it, and what the files install."""

    repo: Path
    project: Project
    #: The default branch (the trend workflow's ``on: push``, asv's ``branches``).
    branch: str
    #: The pip requirement a runner installs ttfg with (``ttfg_source``), unquoted.
    requirement: str
    commit_url: str | None = None
    #: The existing config (``project.config.Config``) or None.
    config: object | None = None
    #: ``--ttfg-requirement`` as typed (kept in the config), or None.
    typed_requirement: str | None = None
    #: ``--framework``: the starter's framework, or None to choose from what the project declares.
    framework: str | None = None
    #: ``--starter``: what is written for a project that declares no plugin (:data:`STARTERS`).
    starter: str = "function"

    @property
    def folder(self) -> str:
        """The project's folder relative to the repository (posix), "" at its root."""
        rel = self.project.root.resolve().relative_to(self.repo.resolve()).as_posix()
        return "" if rel == "." else rel


def plan(setup: Setup) -> tuple[list[Planned], list[str]]:
    """Every file ``init`` would write, and the existing config keys it keeps (``KEY = value``, for the report).

    Raises
    ------
    Refused
        When a starter plugin is needed but cannot be placed (no package folder found, or
        the entry points are an inline table that cannot be extended by appending).
    """
    project, folder = setup.project, setup.folder
    configured = setup.config.values if setup.config is not None else {}
    models, backends, starter = selection(project, configured, setup.framework, setup.starter)
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    paths = declarations.watched_paths(setup.repo, project.root, project.package_dir)
    context = dict(project=project, models=models, backends=backends, branch=setup.branch, python=python,
                   ttfg_install=ttfg_source.shell(setup.requirement), commit_url=setup.commit_url,
                   suites_dir=SUITES_DIR, suites_depth=SUITES_DIR.count("/") + 1, paths=paths, folder=folder,
                   install_dir=f"./{folder}" if folder else ".", ttfg_requirement=setup.requirement, output=OUTPUT)
    config_file, kept = _config(setup, context)
    files = [
        config_file,
        Planned("asv.conf.json", _render("asv.conf.json.j2", **context),
                f"asv builds {project.name} at each commit (one --no-deps wheel) and installs ttfg beside it"),
        Planned(f"{SUITES_DIR}/__init__.py", "", "the asv suites' package"),
        Planned(f"{SUITES_DIR}/ttfg.py", _render("suite.py.j2", **context),
                "the asv suites: the config's selection, then one import of ttfg.history.asv_tracks"),
        Planned(".github/workflows/ttfg-perf-gate.yml", _render("perf-gate.yml.j2", **context),
                "pull requests: the gate, its summary as one PR comment"),
        Planned(".github/workflows/ttfg-trend.yml", _render("trend.yml.j2", **context),
                f"pushes to {setup.branch} and nightly: asv history, confirmed steps, the report"),
    ]
    ignore = _gitignore(setup.repo)
    if ignore is not None:
        files.append(ignore)
    if starter:
        files += _starter(setup, context)
    return [f for f in files if f is not None], kept


#: The folders ttfg writes results to; the repository should not track them (``runs/`` and ``reports/``: the
#: workflows' own paths, which CI writes after the project is installed; ``.ttfg-counts/``: the count store the
#: workflows keep in the workspace, and a local gate given it: a commit that added it would change the tree).
IGNORED = (f"{OUTPUT}/", "runs/", ".asv/", "reports/", ".ttfg-counts/")


def _gitignore(repo: Path) -> Planned | None:
    path = repo / ".gitignore"
    have = path.read_text(errors="replace").splitlines() if path.is_file() else []
    present = {line.strip().strip("/") for line in have}
    missing = [line for line in IGNORED if line.strip("/") not in present]
    if not missing:
        return None
    text = "# ttfg's results, asv's environments and history, reports, the count store (written by `ttfg init`)\n" + \
        "".join(f"{line}\n" for line in missing)
    return Planned(".gitignore", text, f"ignores {', '.join(missing)}", mode="append" if path.exists() else "new")


def _toml_line(key: str, value) -> str:
    return f"{key} = {json.dumps(value)}"


_TABLE = re.compile(r"^[ \t]*\[[ \t]*tool[ \t]*\.[ \t]*ttfg[ \t]*\][ \t]*(#.*)?$", re.M)


def _config(setup: Setup, context: dict) -> tuple[Planned, list[str]]:
    """A new ``ttfg.toml``, or the keys missing from the existing config merged into it (never a second
    config, never a key overwritten)."""
    wanted = {"models": context["models"], "backends": context["backends"], "output": OUTPUT}
    if setup.folder:
        wanted["install-path"] = setup.folder
    if setup.commit_url:
        wanted["commit-url"] = setup.commit_url
    if setup.typed_requirement:
        wanted["ttfg-requirement"] = setup.typed_requirement
    if setup.config is None:
        extra = {k: v for k, v in wanted.items() if k not in ("models", "backends", "commit-url", "output")}
        return Planned("ttfg.toml", _render("ttfg.toml.j2", **context, extra=extra),
                       "the config: selection, budget, results folder"), []
    cfg = setup.config
    kept = [f"{k} = {v!r}" for k, v in cfg.values.items()]  # as the file says them
    missing = {k: v for k, v in wanted.items() if k not in cfg}
    rel = Path(cfg.path).resolve().relative_to(setup.repo.resolve()).as_posix()
    if not missing:
        return None, kept
    lines = "".join(_toml_line(k, v) + "\n" for k, v in missing.items())
    text = Path(cfg.path).read_text()
    note = "# added by `ttfg init` (the keys this config did not set)\n"
    if cfg.section:
        header = _TABLE.search(text)
        if header is None:
            raise Refused(f"{cfg.path}: [tool.ttfg] is not a plain table header that ttfg init can add keys under; "
                          f"add {', '.join(missing)} yourself (nothing was written)")
        merged = text[:header.end()] + "\n" + note + lines + text[header.end():].lstrip("\n")
    else:
        merged = note + lines + "\n" + text
    return (Planned(rel, merged, f"the existing config: added {', '.join(missing)}", mode="replace"), kept)


def _starter(setup: Setup, context: dict) -> list[Planned]:
    project = setup.project
    groups = ("ttfg.functions" if setup.starter == "function" else
              "ttfg.models\" / \"ttfg.backends")
    if project.package_dir is None:
        wanted = import_name(project.name)
        raise Refused(f"{project.root}: {project.name} declares no ttfg plugin, and its package folder was not found "
                      f"(looked for src/{wanted}/__init__.py and {wanted}/__init__.py) to put a starter in; "
                      f"declare your own under [project.entry-points.\"{groups}\"] and run ttfg init again")
    if project.inline_entry_points:
        raise Refused(f"{project.pyproject}: [project] has entry-points as an inline table, which ttfg init cannot "
                      f"extend; add the {groups.replace(chr(34), '')} group yourself and run ttfg init again")
    model, backend = starter_names(project, setup.framework, setup.starter)
    framework = declarations.choose(project.root, setup.framework).framework
    package = project.package_dir.relative_to(project.root)
    prefix = f"{setup.folder}/" if setup.folder else ""
    parts = list(package.parts[1:] if package.parts[0] == "src" else package.parts)
    if setup.starter == "function":
        return _function_starter(setup, context, model, framework, package, prefix, parts)
    if framework not in BACKEND_FRAMEWORKS:
        raise Refused(f"--starter backend: no starter library backend for {framework} (there is one for "
                      f"{', '.join(BACKEND_FRAMEWORKS)}); a function starter (the default) measures a {framework} "
                      "library's own call (nothing was written)")
    module_path = f"{prefix}{(package / 'ttfg_plugin.py').as_posix()}"
    module = ".".join([*parts, "ttfg_plugin"])
    modules = [*declarations.MODULES[framework], parts[0]]
    extra = dict(context, model_name=model, backend_name=backend, module=module, framework=framework,
                 modules=modules)
    return [Planned(module_path, _render("plugin.py.j2", **extra),
                    f"a starter library backend ({backend}, {framework}) and its model ({model}): put "
                    f"{project.name}'s own code in library_loss"),
            Planned(f"{prefix}pyproject.toml", _render("entry_points.toml.j2", **extra),
                    "their entry points (ttfg.models, ttfg.backends), appended", mode="append")]


def model_clash(name: str) -> str | None:
    """Where a model named ``name`` comes from (built in, or a package's entry point), or None: a function case
    must not take a model's name (``--model NAME`` would be ambiguous)."""
    from ttfg import models

    try:
        found = models.entry(name)
    except KeyError:
        return None
    return f"ttfg's built-in model {name!r}" if found.builtin else f"the model {found.describe()}"


def _function_starter(setup: Setup, context: dict, name: str, framework: str, package: Path, prefix: str,
                      parts: list[str]) -> list[Planned]:
    project = setup.project
    clash = model_clash(name)
    if clash is not None:
        raise Refused(f"the starter's function {name!r} has the name of a model ({clash}); a function case must not "
                      "take a model's name: rename that model, or write the starter under another name with "
                      "--starter backend (nothing was written)")
    module_path = f"{prefix}{(package / 'ttfg_cases.py').as_posix()}"
    module = ".".join([*parts, "ttfg_cases"])
    extra = dict(context, function_name=name, module=module, framework=framework)
    return [Planned(module_path, _render("cases.py.j2", **extra),
                    f"a starter function case ({name}, {framework}): case() returns (fn, args); put "
                    f"{project.name}'s own loss-and-gradient call in it"),
            Planned(f"{prefix}pyproject.toml", _render("function_entry_point.toml.j2", **extra),
                    "its entry point (ttfg.functions), appended", mode="append")]


def existing(repo: Path, files: list[Planned]) -> list[str]:
    """The planned new files that already exist."""
    return [f.path for f in files if f.mode == "new" and (repo / f.path).exists()]


def write(repo: Path, files: list[Planned], force: bool) -> list[Planned]:
    """Write the whole plan or nothing: refused when a file exists and not ``force``; a failure while writing
    (a full disk, a folder in the way, Ctrl-C) leaves no file and no new folder behind."""
    from ..files import replace_together

    clash = existing(repo, files)
    if clash and not force:
        raise Refused(f"{repo}: would overwrite {', '.join(clash)}; nothing was written (--force "
                      "overwrites them; the config is never overwritten, only completed)")
    texts = {}
    for f in files:
        path = repo / f.path
        if f.mode == "append" and path.exists():
            texts[path] = path.read_text().rstrip("\n") + "\n" + f.text
        else:
            texts[path] = f.text
    made = sorted({d for path in texts for d in [path.parent, *path.parent.parents]
                   if d.is_relative_to(repo) and not d.exists()}, key=lambda d: len(d.parts), reverse=True)
    try:
        replace_together(texts)
    except BaseException:
        for folder in made:
            try:
                folder.rmdir()
            except OSError:
                pass
        raise
    return files


__all__ = ["BACKEND_FRAMEWORKS", "FALLBACK_BACKEND", "FALLBACK_MODEL", "IGNORED", "STARTERS", "Planned", "Refused",
           "SUITES_DIR", "Setup", "existing", "model_clash", "plan", "selection", "starter_names", "write"]
