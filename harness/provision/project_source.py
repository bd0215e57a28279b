"""The user's project inside a built environment: installed from its install-path, as the upgrade gate does.

Why: ``ttfg run --env``, ``ttfg releases --backend <plugin>`` and ``ttfg study env`` run each
case in an environment built from requirements. The library's own backend and model must be
importable there. Linking in the plugin *as this interpreter has it* (an editable install's
working folder, whatever state it is in) measured code that no results file could name. Here
the project at the config's ``install-path`` is installed like a gate side's revision
(``sources.install``: a folder of its own, first on the probe's path, cached by commit and
install-path), and the results say which state of it was measured.

Which state, and why a working tree is measured rather than refused: ``ttfg run`` in this
interpreter measures the working tree (the project is installed editable), so ``ttfg run --env``
measures the same files; refusing uncommitted changes would make the two disagree while the user
is working on exactly those files. What was measured must still have a name, so:

* a clean install-path (no tracked change and no untracked, not ignored file under it) is
  installed from ``HEAD``, through the same cached install as a gate of that commit;
* otherwise the working tree is snapshotted as a commit (``snapshot``) that never touches the
  user's index, working tree or refs: a temporary index read from ``HEAD``, the install-path's
  files added to it (untracked ones too, unlike ``git stash create``, so a new module the plugin
  imports is there), written as a tree and committed on top of ``HEAD`` with fixed dates. The
  same files give the same commit, so the install is cached like a revision's; the results name
  the snapshot, ``HEAD``, and the changed files. ``git show <snapshot>`` shows it while the object
  lives (until git collects unreachable objects).
"""

from __future__ import annotations

import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .sources import Installed, install
from .worktrees import GitError, Revision, git, repo_root, worktrees

#: The snapshot commit's author and dates: fixed, so the same files give the same commit (and cache entry).
_SNAPSHOT_IDENTITY = {"GIT_AUTHOR_NAME": "ttfg", "GIT_AUTHOR_EMAIL": "ttfg@localhost",
                      "GIT_COMMITTER_NAME": "ttfg", "GIT_COMMITTER_EMAIL": "ttfg@localhost",
                      "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000", "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000"}


@dataclass(frozen=True)
class ProjectSource:
    """The user's project as a built environment's probes import it, and which state of it that is."""

    installed: Installed
    #: The project's folder inside its repository (``install-path``), posix, "" for the root.
    folder: str
    #: The checked-out commit (``HEAD``).
    head: str
    #: The working tree's snapshot commit when the install-path had uncommitted changes; None: ``HEAD`` itself.
    snapshot: str | None = None
    #: The files under the install-path that differ from ``HEAD`` (empty when clean).
    changed: tuple[str, ...] = ()

    @property
    def commit(self) -> str:
        """The commit that was installed: the snapshot, else ``HEAD``."""
        return self.snapshot or self.head

    @property
    def root(self) -> Path:
        """The folder to put first on a probe's path."""
        return self.installed.root

    def describe(self) -> str:
        where = f" ({self.folder}/)" if self.folder else ""
        if self.snapshot is None:
            return f"{self.installed.project}{where} at {self.head[:10]}"
        files = ", ".join(self.changed[:5]) + (f" and {len(self.changed) - 5} more" if len(self.changed) > 5 else "")
        return (f"{self.installed.project}{where}: the working tree, snapshot {self.snapshot[:10]} on {self.head[:10]} "
                f"(uncommitted: {files})")

    def to_json(self) -> dict:
        return {"project": self.installed.project, "install_path": self.folder or ".", "commit": self.commit,
                "head": self.head, "snapshot": self.snapshot, "changed": list(self.changed)}


def changed_files(repo: Path, folder: str) -> list[str]:
    """Files under ``folder`` that differ from ``HEAD``: tracked changes, staged or not, and untracked files
    that are not ignored (paths relative to the repository's root)."""
    out = git(repo, "status", "--porcelain=v1", "-z", "--no-renames", "--untracked-files=all", "--", folder or ".")
    return sorted(entry[3:] for entry in out.stdout.split("\0") if len(entry) > 3)


def snapshot(repo: Path, folder: str, head: str) -> str:
    """A commit on ``head`` holding the working tree's files under ``folder`` (everything else as in ``head``);
    the user's index, working tree and refs are left as they are."""
    with tempfile.TemporaryDirectory(prefix="ttfg-snapshot-") as tmp:
        env = {**_SNAPSHOT_IDENTITY, "GIT_INDEX_FILE": str(Path(tmp) / "index")}

        def run(*args: str) -> str:
            out = git(repo, *args, check=False, env=env)
            if out.returncode != 0:
                raise GitError(f"git {' '.join(args)} failed: {out.stderr.strip()[-500:]}")
            return out.stdout.strip()

        run("read-tree", head)
        run("add", "-A", "--", folder or ".")
        tree = run("write-tree")
        return run("commit-tree", tree, "-p", head, "-m", f"ttfg: the working tree of {folder or '.'} on {head[:10]}")


def install_project(project_folder: Path, on_note=None) -> ProjectSource:
    """Install the project at ``project_folder`` (the config's install-path) for built environments' probes.

    Raises
    ------
    GitError
        When the folder is not inside a git repository (nothing could name what was measured).
    InstallError
        When the project cannot be built (the build log's tail is quoted).
    """
    note = on_note or (lambda text: None)
    repo = repo_root(project_folder)
    rel = project_folder.resolve().relative_to(repo.resolve()).as_posix()
    folder = "" if rel == "." else rel
    head = git(repo, "rev-parse", "HEAD").stdout.strip()
    changed = tuple(changed_files(repo, folder))
    commit = snapshot(repo, folder, head) if changed else head
    with worktrees(repo, {"project": Revision("project", commit, "")}, prefix="ttfg-project-") as trees:
        installed = install(trees["project"] / folder, commit, sys.executable, what="the project", folder=folder)
    found = ProjectSource(installed, folder, head, commit if changed else None, changed)
    note(f"project in built environments: {found.describe()}"
         + (" (cached)" if installed.cached else f" (installed in {installed.seconds:.1f} s)"))
    return found


__all__ = ["ProjectSource", "changed_files", "install_project", "snapshot"]
