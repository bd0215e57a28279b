"""The repository a command measures: is it a project ttfg can measure, and where in it the project lives.

Why a use case: ``gate`` and ``regressions --confirm`` check out revisions of ``--repo`` and
install the project in each; the config (``cli/config.py``) checks before any worktree that
the repository plugs something into ttfg and that ``install-path`` names a project inside it.
Finding the repository's root is git's job (``provision.worktrees``), so it happens here.
"""

from __future__ import annotations

from pathlib import Path


def check_repo_has_plugin(repo: Path, folder: Path | None = None) -> None:
    """``--repo`` at a project that plugs nothing into ttfg: nothing of it would be measured, so refuse now,
    before worktrees and installs (ttfg's own repository is the one exception: its code is what is measured)."""
    from ..provision.worktrees import repo_root
    from ..project import pyproject

    root = repo_root(repo)
    project = pyproject.read(folder if folder is not None and folder.is_dir() else root)
    if project.name != "ttfg" and not project.declares_plugin():
        sub = project.root.resolve().relative_to(root.resolve()).as_posix() \
            if project.root.resolve().is_relative_to(root.resolve()) else "."
        init = f"ttfg init --repo {root}" + (f" --project-dir {sub}" if sub != "." else "")
        raise pyproject.NotAProject(
            f"--repo {repo}: {project.name} ({project.pyproject}) declares no ttfg plugin (no "
            f"[project.entry-points.\"{pyproject.MODEL_GROUP}\"] or \"{pyproject.BACKEND_GROUP}\"), so no case "
            f"would run its code and both sides would measure the same installed code; `{init}` "
            "writes a starter plugin")


def project_dir(cfg, repo: Path) -> str | None:
    """The project's folder inside ``repo``'s git repository, as the config ``cfg``'s ``install-path`` gives it
    (posix, "" for the root), or None when no config says (each command's own default then).

    Raises
    ------
    ConfigError
        For a folder outside the repository, or one that holds no Python project here.
    """
    from ..provision.worktrees import repo_root
    from ..project import config as project_config

    folder = cfg.project_folder() if cfg is not None else None
    if folder is None:
        return None
    root = repo_root(repo).resolve()
    where = cfg.where("install-path") if "install-path" in cfg else f"{cfg.path} (its folder, the default install-path)"
    if not folder.is_relative_to(root):
        raise project_config.ConfigError(f"{where}: {folder} is outside the git repository {root}; the project "
                                         "each revision installs must be inside it")
    if not any((folder / name).is_file() for name in ("pyproject.toml", "setup.py", "setup.cfg")):
        raise project_config.ConfigError(f"{where}: {folder} holds no Python project (no pyproject.toml, setup.py "
                                         "or setup.cfg); install-path names the folder each revision installs")
    rel = folder.relative_to(root).as_posix()
    return "" if rel == "." else rel


def project_folder(cfg) -> Path | None:
    """The user's project to install into built environments (``run --env``, ``study env``, ``releases``): the
    config ``cfg``'s install-path, checked; None without a config, when the config's folder holds no Python
    project and no install-path names one, or outside git (the plugins are then linked in as this
    interpreter has them).

    Raises
    ------
    ConfigError
        For an install-path that names no project folder inside the repository (as ``ttfg config`` says).
    """
    from ..provision.worktrees import GitError, repo_root
    from ..project import config as project_config

    if cfg is None or cfg.root is None:
        return None
    problem = cfg.install_path_problem()
    if problem:
        raise project_config.ConfigError(f"{cfg.where('install-path')}: {problem}")
    folder = cfg.project_folder()
    if not any((folder / name).is_file() for name in ("pyproject.toml", "setup.py", "setup.cfg")):
        return None
    try:
        repo_root(folder)
    except GitError:
        return None
    return folder


__all__ = ["check_repo_has_plugin", "project_dir", "project_folder"]
