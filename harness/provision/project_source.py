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
  user's index, working tree, refs or objects: a temporary index read from ``HEAD``, the changed
  files added to it (untracked ones too, unlike ``git stash create``, so a new module the plugin
  imports is there), written as a tree and committed on top of ``HEAD`` with fixed dates, all in a
  private object store (``GIT_OBJECT_DIRECTORY``, with the repository's objects as an alternate)
  deleted afterwards. The same files give the same commit, so the install is cached like a
  revision's; the results name the snapshot, ``HEAD``, the changed files and their size. The
  install checks ``HEAD`` out and lays the snapshot's tree over it (``git read-tree --reset -u``
  from the private store), so a build that asks git for a version still finds ``HEAD``.

Before, the snapshot's objects went into the user's ``.git``: a 300 MB untracked file in the
package made ``run --env`` write a 293 MB blob there (784 KB -> 293,868 KB), unreachable until
``git gc``, without a word. What git ignores is never taken; interpreter caches (``__pycache__/``,
``*.pyc``) are neither taken nor make the tree "dirty"; a snapshot over ``--snapshot-limit``
(100 MiB by default) is refused before anything is written, naming the largest files. A submodule
whose own files have uncommitted changes is refused, naming it (its working tree is not
snapshotted); one checked out at another commit is recorded at that commit.
"""

from __future__ import annotations

import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .. import fmt
from ..errors import UsageError
from .sources import Installed, install
from .submodules import checkout as checkout_submodules
from .submodules import gitlinks
from .worktrees import GitError, Revision, git, repo_root, worktrees

#: ``--snapshot-limit``'s default: a working tree's uncommitted files larger than this together are refused.
SNAPSHOT_LIMIT_BYTES = 100 * 2**20

#: The snapshot commit's author and dates: fixed, so the same files give the same commit (and cache entry).
_SNAPSHOT_IDENTITY = {"GIT_AUTHOR_NAME": "ttfg", "GIT_AUTHOR_EMAIL": "ttfg@localhost",
                      "GIT_COMMITTER_NAME": "ttfg", "GIT_COMMITTER_EMAIL": "ttfg@localhost",
                      "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000", "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000"}


class SnapshotTooLarge(UsageError):
    """The working tree's uncommitted files are larger than the snapshot limit (exit 2; nothing was written)."""


class DirtySubmodule(UsageError):
    """A submodule of the install-path has uncommitted changes of its own, which a snapshot does not take."""


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
    #: The bytes of the changed files the snapshot copied (None: no snapshot).
    snapshot_bytes: int | None = None

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
                f"(uncommitted: {files}; {len(self.changed)} file(s), {fmt.bytes_(self.snapshot_bytes)} copied)")

    def to_json(self) -> dict:
        return {"project": self.installed.project, "install_path": self.folder or ".", "commit": self.commit,
                "head": self.head, "snapshot": self.snapshot, "changed": list(self.changed),
                "snapshot_bytes": self.snapshot_bytes}


def _cache_file(path: str) -> bool:
    """An interpreter's cache (``__pycache__/``, ``*.pyc``): rebuilt by any import, never the user's code."""
    parts = path.split("/")
    return "__pycache__" in parts or parts[-1].endswith((".pyc", ".pyo"))


def _status(repo: Path, folder: str) -> tuple[list[str], dict[str, bool]]:
    """``(files, submodules)`` under ``folder`` that differ from ``HEAD``: changed files (tracked, staged or not,
    and untracked ones git does not ignore; caches left out), and ``{submodule: has changes of its own}`` for
    each submodule that differs (another commit checked out or staged, or changes inside it).

    ``--no-optional-locks``: a status must not rewrite the user's index to refresh its stat data.
    """
    out = git(repo, "--no-optional-locks", "status", "--porcelain=v2", "-z", "--no-renames", "--untracked-files=all",
              "--ignore-submodules=none", "--", folder or ".")
    files, submodules = [], {}
    for entry in out.stdout.split("\0"):
        kind = entry[:2]
        if kind == "? ":
            path = entry[2:]
        elif kind in ("1 ", "u "):
            fields = entry.split(" ", 8 if kind == "1 " else 10)
            path, sub = fields[-1], fields[2]
            if sub.startswith("S"):  # S<c><m><u>: commit changed, tracked changes, untracked files inside
                submodules[path] = sub[2] == "M" or sub[3] == "U"
        else:
            continue
        if not _cache_file(path) and path not in submodules:
            files.append(path)
    return sorted(files), submodules


def changed_files(repo: Path, folder: str, status: tuple[list[str], dict[str, bool]] | None = None) -> list[str]:
    """Files under ``folder`` that differ from ``HEAD`` (paths relative to the repository's root): tracked
    changes, staged or not, untracked files that are not ignored, and submodules at another commit; never an
    interpreter's cache. ``status``: :func:`_status`'s answer, when the caller has it."""
    files, submodules = status or _status(repo, folder)
    return sorted([*files, *(path for path in submodules if _moved(repo, path))])


def _moved(repo: Path, submodule: str) -> bool:
    """Whether the submodule's checked-out commit differs from the one ``HEAD`` records."""
    recorded = git(repo, "rev-parse", f"HEAD:{submodule}", check=False).stdout.strip()
    checked_out = git(repo / submodule, "rev-parse", "HEAD", check=False).stdout.strip()
    return recorded != checked_out


def _check_submodules(repo: Path, submodules: dict[str, bool]) -> None:
    """Refuse a submodule with uncommitted changes of its own (caches aside): the snapshot records a submodule
    by its commit, so those changes would silently not be measured."""
    for path, own in submodules.items():
        inner = changed_files(repo / path, "") if own else []
        if inner:
            shown = ", ".join(inner[:5]) + (f" and {len(inner) - 5} more" if len(inner) > 5 else "")
            raise DirtySubmodule(
                f"submodule {path} has uncommitted changes of its own ({shown}); a snapshot of the working tree "
                f"takes a submodule at its commit, so they would not be measured: commit them in {path} (and "
                f"`git add {path}` to record that commit), or undo them; nothing was installed")


def _sizes(repo: Path, paths: list[str]) -> dict[str, int]:
    """Bytes of each path that exists as a file (a deleted file or a submodule copies nothing)."""
    out = {}
    for path in paths:
        full = repo / path
        if full.is_file() or full.is_symlink():
            out[path] = full.lstat().st_size
    return out


def check_size(sizes: dict[str, int], limit: int) -> int:
    """The snapshot's bytes; refused over ``limit``, naming the largest files and the flag.

    Raises
    ------
    SnapshotTooLarge
    """
    total = sum(sizes.values())
    if total > limit:
        largest = sorted(sizes.items(), key=lambda item: -item[1])[:5]
        shown = ", ".join(f"{path} ({fmt.bytes_(size)})" for path, size in largest)
        raise SnapshotTooLarge(
            f"the working tree's uncommitted files come to {fmt.bytes_(total)}, over the snapshot limit of "
            f"{fmt.bytes_(limit)}; the largest: {shown}. Ignore what is not code (.gitignore), commit, or raise "
            f"the limit with --snapshot-limit {total // 2**20 + 1}MiB; nothing was written")
    return total


class _Private:
    """A private object store over the user's repository: objects written here never reach its ``.git``."""

    def __init__(self, repo: Path, folder: Path):
        objects = git(repo, "rev-parse", "--path-format=absolute", "--git-path", "objects").stdout.strip()
        (folder / "objects").mkdir(exist_ok=True)
        self.repo = repo
        #: Variables added to git's environment (``worktrees.git`` through ``target.tool_environ``).
        self.env = {**_SNAPSHOT_IDENTITY, "GIT_OBJECT_DIRECTORY": str(folder / "objects"),
                    "GIT_ALTERNATE_OBJECT_DIRECTORIES": objects, "GIT_INDEX_FILE": str(folder / "index"),
                    "GIT_LITERAL_PATHSPECS": "1"}

    def run(self, *args: str, where: Path | None = None, stdin: str | None = None) -> str:
        out = git(where or self.repo, *args, check=False, input=stdin, env=self.env)
        if out.returncode != 0:
            raise GitError(f"git {' '.join(args)} failed: {out.stderr.strip()[-500:]}")
        return out.stdout.strip()


def snapshot(repo: Path, folder: str, head: str, store: Path, paths: list[str] | None = None) -> str:
    """A commit on ``head`` holding the working tree's ``paths`` (default: the changed files under ``folder``),
    everything else as in ``head``, written into the private object store in ``store`` (a temporary folder);
    the user's index, working tree, refs and objects are left as they are."""
    paths = changed_files(repo, folder) if paths is None else paths
    private = _Private(repo, store)
    private.run("read-tree", head)
    private.run("add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul", stdin="\0".join(paths))
    tree = private.run("write-tree")
    message = f"ttfg: the working tree of {folder or '.'} on {head[:10]}"
    return private.run("commit-tree", tree, "-p", head, "-m", message)


def _lay_over(tree: Path, repo: Path, head: str, commit: str, store: Path) -> None:
    """Make the worktree ``tree`` (checked out at ``head``) hold the snapshot ``commit``'s files and submodules;
    its own index and ``HEAD`` stay ``head``'s, so a build asking git for a version still finds that commit."""
    private = _Private(repo, store)
    private.env["GIT_INDEX_FILE"] = str(store / "laid-index")
    private.run("read-tree", head, where=tree)
    private.run("read-tree", "--reset", "-u", commit, where=tree)
    listing = private.run("ls-files", "--stage", "-z", where=tree) + "\0"
    checkout_submodules(git, tree, repo, repo, links=gitlinks(git, tree, listing))


def install_project(project_folder: Path, on_note=None, snapshot_limit: int = SNAPSHOT_LIMIT_BYTES) -> ProjectSource:
    """Install the project at ``project_folder`` (the config's install-path) for built environments' probes.

    Raises
    ------
    GitError
        When the folder is not inside a git repository (nothing could name what was measured).
    SnapshotTooLarge, DirtySubmodule
        A working tree whose uncommitted files exceed ``snapshot_limit`` bytes, or a submodule with changes
        of its own (exit 2, nothing written).
    InstallError
        When the project cannot be built (the build log's tail is quoted), or a submodule cannot be fetched.
    """
    note = on_note or (lambda text: None)
    repo = repo_root(project_folder)
    rel = project_folder.resolve().relative_to(repo.resolve()).as_posix()
    folder = "" if rel == "." else rel
    head = git(repo, "rev-parse", "HEAD").stdout.strip()
    status = _status(repo, folder)
    _check_submodules(repo, status[1])
    changed = tuple(changed_files(repo, folder, status))
    copied = check_size(_sizes(repo, list(changed)), snapshot_limit) if changed else None
    with tempfile.TemporaryDirectory(prefix="ttfg-snapshot-") as store:
        commit = snapshot(repo, folder, head, Path(store), list(changed)) if changed else head
        with worktrees(repo, {"project": Revision("project", head, "")}, prefix="ttfg-project-",
                       submodules=not changed) as trees:
            if changed:
                _lay_over(trees["project"], repo, head, commit, Path(store))
            installed = install(trees["project"] / folder, commit, sys.executable, what="the project", folder=folder)
    found = ProjectSource(installed, folder, head, commit if changed else None, changed, copied)
    note(f"project in built environments: {found.describe()}"
         + (" (cached)" if installed.cached else f" (installed in {installed.seconds:.1f} s)"))
    return found


__all__ = ["DirtySubmodule", "ProjectSource", "SNAPSHOT_LIMIT_BYTES", "SnapshotTooLarge", "changed_files",
           "check_size", "install_project", "snapshot"]
