"""``ttfg init`` as one use case: check the repository, plan the files, write them.

The plan and the files are ``project/scaffold.py``; this checks that the folder is the
root of a git repository holding a Python project, finds its branch, writes, and tells the
CLI what was written and what the project will measure.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class Initialized:
    """What ``ttfg init`` did: the project, its folder, the files written, and the selection they measure."""

    project: object
    folder: Path
    files: list
    models: list[str]
    backends: list[str]
    #: True when the project declared no plugin and a starter model and backend were written.
    starter: bool


def init(repo: str, force: bool = False, commit_url: str | None = None) -> Initialized:
    """Write ttfg's files into the repository at ``repo``.

    Raises
    ------
    Refused
        Outside a git repository's root or a Python project, a bad ``commit_url``, or a file
        ttfg init did not write (without ``force``); nothing was written.
    """
    from ..measure.worktrees import GitError, git
    from ..project import pyproject, scaffold

    if commit_url:
        from ..project.config import KEYS

        problem = KEYS["commit-url"].check(commit_url)
        if problem:
            raise scaffold.Refused(f"--commit-url {commit_url!r}: {problem}")
    folder = Path(repo).resolve()
    if not folder.is_dir():
        raise scaffold.Refused(f"--repo {repo}: no such folder")
    try:
        top = Path(git(folder, "rev-parse", "--show-toplevel").stdout.strip())
    except GitError:
        raise scaffold.Refused(f"{folder}: not a git repository; ttfg measures a project's commits, so run "
                               "`git init` and commit first (nothing was written)") from None
    if top.resolve() != folder:
        raise scaffold.Refused(f"{folder}: not the root of its git repository ({top}); run ttfg init at the root, "
                               "where the project's pyproject.toml is (nothing was written)")
    try:
        project = pyproject.read(folder)
    except pyproject.NotAProject as exc:
        raise scaffold.Refused(f"{exc} (nothing was written)") from None
    branch = git(folder, "rev-parse", "--abbrev-ref", "HEAD", check=False).stdout.strip()
    if branch in ("", "HEAD"):
        branch = "main"
    files = scaffold.plan(project, branch, commit_url)
    scaffold.write(project, files, force)
    models, backends, starter = scaffold.selection(project)
    return Initialized(project, folder, files, models, backends, starter)


__all__ = ["Initialized", "init"]
