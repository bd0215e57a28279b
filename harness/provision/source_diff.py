"""What two commits of one repository hold differently: each changed path, how git saw it, and its two contents.

Why here: the gate's source tier (``decide/source_proof.py``) asks whether a pull request changed the code at
all or only its comments, and the answer must come from what git stores, not from the worktrees a gate checks out
(a worktree may be a snapshot, or already installed into). Git reads the tree, with renames off (a renamed
module is a deleted one and a new one: a rename changes what imports it), whole repository (a file outside the
measured project's folder may still be imported by it).
"""

from __future__ import annotations

from dataclasses import dataclass

from .worktrees import git

#: Git's file modes a changed path may have and still be read as a file's bytes (a submodule's commit is no file).
FILE_MODES = ("100644", "100755")


@dataclass(frozen=True)
class Change:
    """One path that differs between two commits."""

    path: str
    #: Git's status letter (``git diff --raw``): M modified, A added, D deleted, T type changed, ...
    status: str
    #: The modes on each side (``000000`` where the path is absent), as git prints them.
    base_mode: str
    head_mode: str


def changes(repo, base: str, head: str) -> list[Change]:
    """Every path that differs between the two commits, renames off, the whole repository.

    Raises
    ------
    provision.worktrees.GitError
        When git cannot compare them (a commit it does not have).
    """
    out = git(repo, "diff", "--raw", "-z", "--no-renames", "--no-abbrev", base, head).stdout
    fields = out.split("\0")
    found = []
    for meta, path in zip(fields[0::2], fields[1::2]):
        if not meta.startswith(":"):
            continue
        base_mode, head_mode, _, _, status = meta[1:].split(" ", 4)
        found.append(Change(path, status[:1], base_mode, head_mode))
    return found


def content(repo, commit: str, path: str) -> bytes:
    """The bytes ``path`` holds at ``commit`` (``git cat-file blob``).

    Raises
    ------
    provision.worktrees.GitError
        When the path holds no blob there.
    """
    return git(repo, "cat-file", "blob", f"{commit}:{path}", binary=True).stdout


__all__ = ["Change", "FILE_MODES", "changes", "content"]
