"""Git revisions materialised as throwaway worktrees, one folder per revision.

Why worktrees: the gate measures a base and a head revision on the same machine,
interleaved, and each needs its own source tree to install (``sources.py``) without
touching the user's checkout. ``git worktree add --detach`` gives each revision its own
folder in a second or so, and its submodules follow (``submodules.py``); all are removed on
exit, on an error and on Ctrl-C.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping

from ..errors import TtfgError
from .target import tool_environ


class GitError(TtfgError):
    """A git problem the user can fix: not a repository, an unknown revision, a dirty tree."""


def git(repo: str | Path, *args: str, check: bool = True, timeout: float = 120, input: str | None = None,
        env: Mapping[str, str] | None = None, binary: bool = False) -> subprocess.CompletedProcess:
    """Run ``git -C repo ARGS``, the one way ttfg runs git; raise :class:`GitError` with git's message on failure.

    Each caller keeps what it needs: ``timeout`` (a tree's archive may take longer than a
    ``rev-parse``), ``input`` (``cat-file --batch-check`` reads commits on stdin), and ``env``,
    variables added to git's environment (``target.tool_environ``: a snapshot's own index and
    author). ``check=False`` returns git's answer whatever its exit status; git that cannot run
    at all (not installed, past its timeout) is a :class:`GitError` either way. ``binary``: the output as
    bytes (a file's content, ``cat-file blob``), not text.
    """
    try:
        out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=not binary, timeout=timeout,
                             input=input, env=tool_environ(env))
    except FileNotFoundError:
        raise GitError("git is not installed or not on PATH") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"git {' '.join(args)} took over {timeout:g} s in {repo}") from None
    if check and out.returncode != 0:
        said = (out.stderr.strip() or out.stdout.strip()) if not binary else out.stderr.decode(errors="replace").strip()
        raise GitError(f"git {' '.join(args)} failed in {repo}: {said}")
    return out


def repo_root(path: str | Path = ".") -> Path:
    """The top folder of the git repository containing ``path``.

    Raises
    ------
    GitError
        When ``path`` is not inside a git repository.
    """
    out = git(path, "rev-parse", "--show-toplevel", check=False)
    if out.returncode != 0:
        raise GitError(f"{Path(path).resolve()} is not inside a git repository; the gate compares git revisions")
    return Path(out.stdout.strip())


@dataclass(frozen=True)
class Revision:
    """A revision as the user named it and as git resolved it: one value from the option to the report (a bisect's
    ``--good`` keeps its name and subject in every comparison it takes part in)."""

    name: str
    commit: str
    subject: str
    #: The author (``Name <email>``) and the author date (ISO 8601), where a report shows them ("" when not read).
    author: str = ""
    date: str = ""

    @property
    def short(self) -> str:
        return self.commit[:10]

    def to_json(self) -> dict:
        return {"rev": self.name, "commit": self.commit, "subject": self.subject}

    def described(self) -> dict:
        """The commit as a report shows it: its hash, short hash, subject, author and date."""
        return {"commit": self.commit, "short": self.short, "subject": self.subject, "author": self.author,
                "date": self.date}


#: ``git log``'s format for what a :class:`Revision` holds besides its commit: subject, author, date.
LOG_FORMAT = "%s%x00%an <%ae>%x00%aI"


def from_log(name: str, commit: str, text: str) -> Revision:
    """The :class:`Revision` of ``commit`` from a line of git's output in :data:`LOG_FORMAT`."""
    parts = (text.split("\x00") + ["", "", ""])[:3]
    return Revision(name, commit, *(part.strip() for part in parts))


def resolve(repo: str | Path, name: str, role: str = "revision") -> Revision:
    """Resolve a revision name to a commit.

    Parameters
    ----------
    repo : path
        The repository.
    name : str
        Anything ``git rev-parse`` accepts: a branch, ``origin/main``, a tag, a SHA.
    role : str
        ``base`` or ``head``, for the message.

    Returns
    -------
    Revision

    Raises
    ------
    GitError
        When the revision does not exist (with a hint about shallow clones).
    """
    out = git(repo, "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}", check=False)
    if out.returncode != 0 or not out.stdout.strip():
        shallow = git(repo, "rev-parse", "--is-shallow-repository", check=False).stdout.strip() == "true"
        hint = (" (this clone is shallow: fetch full history, e.g. actions/checkout with fetch-depth: 0)"
                if shallow else " (fetch it first, or check the spelling)")
        what = role if role == "revision" else f"{role} revision"  # never "revision revision 'HEAD~2'"
        raise GitError(f"{what} {name!r} not found in {repo}{hint}")
    commit = out.stdout.strip()
    return from_log(name, commit, git(repo, "log", "-1", f"--format={LOG_FORMAT}", commit, check=False).stdout)


def dirty_files(repo: str | Path, paths: tuple[str, ...] = ()) -> list[str]:
    """Tracked files with uncommitted changes (staged or not), under ``paths`` or anywhere.

    Parameters
    ----------
    repo : path
    paths : tuple of str
        Folders to look in; empty: the whole repository (a revision's whole project is
        installed and measured, so any tracked file may matter).

    Returns
    -------
    list of str
        Paths relative to the repository root; empty when clean.
    """
    out = git(repo, "status", "--porcelain", "--untracked-files=no", "--", *paths)
    return [line[3:] for line in out.stdout.splitlines() if line.strip()]


@contextmanager
def worktrees(repo: str | Path, revisions: Mapping[str, Revision], prefix: str = "ttfg-gate-",
              submodules: bool = True) -> Iterator[dict[str, Path]]:
    """Check each revision out as a detached worktree in a temporary folder, with its submodules.

    Parameters
    ----------
    repo : path
        The repository the revisions belong to.
    revisions : mapping
        ``{name: Revision}``; each gets the folder ``<tmp>/<name>``.
    prefix : str
        Of the temporary folder's name (it says who made it).
    submodules : bool
        Check out the submodules at the commits each revision records (``submodules.py``); False leaves
        that to the caller (a snapshot records other commits than its revision).

    Yields
    ------
    dict
        ``{name: folder}``. On exit (normal, error or Ctrl-C) every worktree is
        removed, the temporary folder deleted and git's worktree list pruned.
    """
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    made: dict[str, Path] = {}
    try:
        for name, rev in revisions.items():
            folder = tmp / name
            git(repo, "worktree", "add", "--detach", str(folder), rev.commit)
            made[name] = folder
            _mark(folder)
            if submodules:
                from .submodules import checkout

                checkout(git, folder, Path(repo), Path(repo))
        yield dict(made)
    finally:
        for folder in made.values():
            git(repo, "worktree", "remove", "--force", str(folder), check=False)
        shutil.rmtree(tmp, ignore_errors=True)
        git(repo, "worktree", "prune", check=False)


#: The file in a worktree's admin folder that says ttfg added it, and which process did.
MARKER = "ttfg-worktree"


def _mark(folder: Path) -> None:
    """Write :data:`MARKER` into ``folder``'s admin folder (``git rev-parse --absolute-git-dir`` inside it)."""
    admin = Path(git(folder, "rev-parse", "--absolute-git-dir").stdout.strip())
    (admin / MARKER).write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "folder": str(folder)}))


def _alive(mark: dict) -> bool:
    """Whether the process that made a marked worktree may still be running (on another machine: assumed so)."""
    if mark.get("host") != socket.gethostname():
        return True
    pid = mark.get("pid")
    if type(pid) is not int or pid <= 0:  # a marker without a process: nothing runs it
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def prune_leftovers(repo: str | Path) -> int:
    """Remove the worktrees an earlier, killed ttfg left in ``repo``; how many were removed.

    ``git worktree prune`` first (it forgets worktrees whose folder is gone, e.g. a cleaned temporary folder),
    then every worktree whose admin folder holds :data:`MARKER` of a process no longer running is removed with
    ``git worktree remove --force``, and its temporary folder (named ``ttfg-...``) deleted. A worktree without
    the marker is the user's and is never touched.
    """
    git(repo, "worktree", "prune", check=False)
    common = git(repo, "rev-parse", "--git-common-dir", check=False).stdout.strip()
    if not common:
        return 0
    admins = Path(repo, common) / "worktrees"
    removed = 0
    for admin in sorted(admins.glob(f"*/{MARKER}")):
        try:
            mark = json.loads(admin.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(mark, dict) or _alive(mark):
            continue
        gitdir = admin.parent / "gitdir"  # the worktree's own .git file, as git records it
        folder = Path(gitdir.read_text().strip()).parent if gitdir.exists() else None
        if folder is not None:
            git(repo, "worktree", "remove", "--force", str(folder), check=False)
            if str(folder) == mark.get("folder") and folder.parent.name.startswith("ttfg-"):  # its mkdtemp folder
                shutil.rmtree(folder.parent, ignore_errors=True)
        shutil.rmtree(admin.parent, ignore_errors=True)
        removed += 1
    if removed:
        git(repo, "worktree", "prune", check=False)
    return removed


def pruned_note(repo: str | Path) -> str | None:
    """:func:`prune_leftovers`, and the sentence that says how many it removed (None when none): the gate and
    bisect say it before they add worktrees of their own."""
    removed = prune_leftovers(repo)
    if not removed:
        return None
    return (f"removed {removed} worktree{'s' if removed > 1 else ''} left in {repo} by an earlier ttfg run that was "
            "killed (git worktree prune; only worktrees ttfg marked as its own)")


def revisions(repo: Path, base: str, head: str = "HEAD", allow_dirty: bool = False) -> tuple[Revision, Revision]:
    """Resolve base and head, refusing a dirty tree when head is the checked-out commit.

    Parameters
    ----------
    repo : Path
        Repository root.
    base, head : str
        Revision names.
    allow_dirty : bool
        Measure the committed head even though the working tree has uncommitted
        changes to tracked files (anywhere in the repository: the whole project is installed).

    Returns
    -------
    tuple of Revision

    Raises
    ------
    GitError
        A revision that does not exist, or a dirty tree where it matters: head is
        measured from its commit, so uncommitted changes would silently not be.
    """
    base_rev = resolve(repo, base, "base")
    head_rev = resolve(repo, head, "head")
    checked_out = resolve(repo, "HEAD", "checked-out")
    if head_rev.commit == checked_out.commit and not allow_dirty:
        check_clean(repo, f"head is the committed {head!r} ({head_rev.short})")
    return base_rev, head_rev


def check_clean(repo: Path, why: str) -> None:
    """Refuse uncommitted changes to tracked files when a measured revision is the checked-out commit (``why``
    says which): the commit is measured, not the working tree, and a silent difference would be a wrong answer.

    Raises
    ------
    GitError
        Naming up to eight of the files.
    """
    dirty = dirty_files(repo, ())
    if dirty:
        shown = ", ".join(dirty[:8]) + (f" and {len(dirty) - 8} more" if len(dirty) > 8 else "")
        raise GitError(f"uncommitted changes to tracked files ({shown}) would not be measured: {why}. Commit them, "
                       "or pass --allow-dirty to measure the commit without them")
