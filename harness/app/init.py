"""``ttfg init`` as one use case: find the repository and its project, plan the files, write them.

The plan and the files are ``project/scaffold.py``; this checks that the folder is the
root of a git repository holding a Python project (at its root, in ``--project-dir``, or
in the one subfolder that holds one), finds the default branch and where CI installs ttfg
from, reads the config the project already has, writes, and tells the CLI what was written,
what was kept and what the project will measure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Initialized:
    """What ``ttfg init`` did: the project, its folder, the files written, and the selection they measure."""

    project: object
    folder: Path
    files: list
    models: list[str]
    backends: list[str]
    #: True when the project declared no plugin and a starter (a function case, or a model and backend) was written.
    starter: bool
    #: The default branch the trend workflow and asv follow.
    branch: str = "main"
    #: The requirement CI installs ttfg with.
    requirement: str = ""
    #: ``KEY = value`` of the existing config, kept as it was.
    kept: list[str] = field(default_factory=list)
    #: The project's folder in the repository ("" at its root), and how it was found.
    project_dir: str = ""
    found: str | None = None
    #: What the user should know and do by hand (a folder an earlier ``init`` wrote that breaks the build).
    notes: list[str] = field(default_factory=list)
    #: The starter's framework, what the project declared and why (``declarations.FrameworkChoice``); None
    #: without a starter.
    framework: object | None = None
    #: Which starter was written (``function`` or ``backend``: ``--starter``); None without one.
    kind: str | None = None


def _projects_below(root: Path) -> list[str]:
    """Subfolders (two levels at most, no hidden or virtualenv ones) with a pyproject.toml."""
    out = []
    for path in sorted([*root.glob("*/pyproject.toml"), *root.glob("*/*/pyproject.toml")]):
        rel = path.parent.relative_to(root)
        if any(part.startswith((".", "_")) or part in ("node_modules", "venv", "env") for part in rel.parts):
            continue
        out.append(rel.as_posix())
    return out


def _project_folder(folder: Path, project_dir: str | None):
    """``(project folder, how it was found)``; refuses a --project-dir outside the repository or ambiguity."""
    from ..project import scaffold

    if project_dir is not None:
        sub = (folder / project_dir).resolve()
        if Path(project_dir).is_absolute() or not sub.is_relative_to(folder):
            raise scaffold.Refused(f"--project-dir {project_dir}: must be a folder inside the repository {folder}, "
                                   "relative to its root (nothing was written)")
        if not sub.is_dir():
            raise scaffold.Refused(f"--project-dir {project_dir}: no such folder in {folder} (nothing was written)")
        return sub, None
    if (folder / "pyproject.toml").is_file() or (folder / "setup.py").is_file():
        return folder, None
    below = _projects_below(folder)
    if len(below) == 1:
        return folder / below[0], (f"no pyproject.toml at the repository's root; the project is in {below[0]}/ "
                                   f"(install-path = \"{below[0]}\"; --project-dir chooses another)")
    if below:
        raise scaffold.Refused(f"{folder}: no pyproject.toml at the root, and several projects below it "
                               f"({', '.join(below)}); choose one with --project-dir DIR (nothing was written)")
    return folder, None


def init(repo: str, force: bool = False, commit_url: str | None = None, *, project_dir: str | None = None,
         ttfg_requirement: str | None = None, default_branch: str | None = None,
         framework: str | None = None, starter: str = "function") -> Initialized:
    """Write ttfg's files into the repository at ``repo``, all of them or none.

    Raises
    ------
    Refused
        Outside a git repository's root or a Python project, a bad ``commit_url``, no way to tell
        the default branch or where CI installs ttfg from, or a file ttfg init did not write
        (without ``force``); nothing was written.
    """
    from ..errors import UsageError
    from ..provision.worktrees import GitError, git
    from ..project import config as project_config
    from ..project import default_branch as branches
    from ..project import declarations, pyproject, scaffold, ttfg_source

    if commit_url:
        problem = project_config.KEYS["commit-url"].check(commit_url)
        if problem:
            raise scaffold.Refused(f"--commit-url {commit_url!r}: {problem}")
    folder = Path(repo).resolve()
    if not folder.is_dir():
        raise scaffold.Refused(f"--repo {repo}: no such folder")
    try:
        top = Path(git(folder, "rev-parse", "--show-toplevel").stdout.strip()).resolve()
    except GitError:
        raise scaffold.Refused(f"{folder}: not a git repository; ttfg measures a project's commits, so run "
                               "`git init` and commit first (nothing was written)") from None
    if top != folder:
        rel = folder.relative_to(top).as_posix() if folder.is_relative_to(top) else None
        hint = f"`ttfg init --repo {top} --project-dir {rel}`" if rel else f"`ttfg init --repo {top}`"
        raise scaffold.Refused(f"{folder}: not the root of its git repository ({top}); the workflows and asv.conf.json "
                               f"belong at the root: run {hint} (nothing was written)")
    where, found = _project_folder(folder, project_dir)
    try:
        project = pyproject.read(where)
    except pyproject.NotAProject as exc:
        raise scaffold.Refused(f"{exc} (nothing was written)") from None
    try:
        existing = project_config.find(folder)
        cfg = project_config.read(existing) if existing is not None else None
        branch = branches.default_branch(folder, default_branch)
        configured = ttfg_requirement or (cfg.get("ttfg-requirement") if cfg is not None else None)
        requirement = ttfg_source.requirement(configured)
    except UsageError as exc:
        raise scaffold.Refused(f"{exc} (nothing was written)") from None
    if framework is not None and framework not in declarations.FRAMEWORKS:
        raise scaffold.Refused(f"--framework {framework!r}: choose one of {', '.join(declarations.FRAMEWORKS)} "
                               "(nothing was written)")
    if starter not in scaffold.STARTERS:
        raise scaffold.Refused(f"--starter {starter!r}: choose one of {', '.join(scaffold.STARTERS)} "
                               "(nothing was written)")
    setup = scaffold.Setup(folder, project, branch, requirement, commit_url, cfg,
                           ttfg_requirement if ttfg_requirement else None, framework, starter)
    files, kept = scaffold.plan(setup)
    scaffold.write(folder, files, force)
    models, backends, wrote_starter = scaffold.selection(project, cfg.values if cfg is not None else None, framework,
                                                         starter)
    notes = []
    if (folder / scaffold.OLD_SUITES_DIR / "__init__.py").is_file():
        notes.append(f"{scaffold.OLD_SUITES_DIR}/ is an earlier ttfg init's suites package; asv now reads "
                     f"{scaffold.SUITES_DIR}/, and a package at the root breaks a flat layout's build "
                     f"(setuptools: \"Multiple top-level packages\"): remove it, `git rm -r {scaffold.OLD_SUITES_DIR}`")
    choice = declarations.choose(project.root, framework) if wrote_starter else None
    return Initialized(project, folder, files, models, backends, wrote_starter, branch, requirement, kept,
                       setup.folder, found, notes, choice, starter if wrote_starter else None)


__all__ = ["Initialized", "init"]
