"""Side openers for the use cases' tests: the gate, the bisect and ``regressions --confirm`` take a
``measure.sides.SideOpener``, and these open sides without worktrees, installs or environments.

A fake sampler then reads each side's folder (``run.target.source``); everything else in the use case
runs as it runs for a user, so no use case's function is replaced.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Callable

from ttfg.measure.sides import Side, SideOpener
from ttfg.provision.worktrees import Revision, worktrees

from .conftest import GitRepo


class FolderSides(SideOpener):
    """Each side is a folder (``folder(revision)``, made when missing), in this interpreter or in ``env`` (an
    environment, or a callable asked for it at every opening, as a real run reads its environments anew); nothing is
    located (a side without an install is never asked where it imports from, and a fake sampler starts no process)."""

    def __init__(self, folder: Callable[[Revision], Path], env=None):
        self.folder, self.env = folder, env
        #: The revisions of every comparison opened, in order.
        self.opened: list[dict[str, Revision]] = []

    @contextmanager
    def open(self, repo, revisions, cases, run, requests=None, **_):
        self.opened.append(dict(revisions))
        env = self.env() if callable(self.env) else self.env
        sides = {}
        for role, rev in revisions.items():
            folder = self.folder(rev)
            folder.mkdir(parents=True, exist_ok=True)
            sides[role] = Side(role, rev, folder, env=env)
        yield sides


class PlainWorktrees(SideOpener):
    """Each side is its revision's worktree, nothing installed: a fake sampler reads the tree itself."""

    @contextmanager
    def open(self, repo, revisions, cases, run, requests=None, *, prefix="ttfg-test-", **_):
        with worktrees(repo, revisions, prefix=prefix) as trees:
            yield {role: Side(role, rev, trees[role]) for role, rev in revisions.items()}


def two_commits(root: Path) -> Path:
    """A repository of two empty commits (``HEAD~1`` and ``HEAD``): what a gate of fake sides resolves."""
    repo = GitRepo.init(root)
    for n in (1, 2):
        repo.commit(f"commit {n}")
    return root
