"""The repository's default branch: what the trend workflow and ``asv.conf.json`` follow.

Why not the current branch: ``ttfg init`` is often run on a feature branch, and a trend
job whose ``on: push`` names that branch never runs once it is merged. The default branch
is what the remote says (``refs/remotes/origin/HEAD``), else ``main`` or ``master`` when
one of them exists here or on origin; when none can be told, ``init`` asks for
``--default-branch`` rather than guess.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError

#: The names taken for the default branch when the remote does not say, in this order.
USUAL = ("main", "master")


class Unknown(UsageError):
    """The default branch cannot be told; the message names the option to pass."""


def default_branch(repo: Path, given: str | None = None) -> str:
    """``given`` when set, else the remote's default branch, else ``main`` / ``master`` when present.

    Raises
    ------
    Unknown
        When none of these is known (the message names ``--default-branch``), or ``given`` is
        not a valid branch name.
    """
    from ..provision.worktrees import git

    if given is not None:
        name = given.strip()
        if not name or git(repo, "check-ref-format", "--branch", name, check=False).returncode != 0:
            raise Unknown(f"--default-branch {given!r}: not a valid branch name")
        return name
    out = git(repo, "symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD", check=False)
    if out.returncode == 0 and out.stdout.strip().startswith("origin/"):
        return out.stdout.strip()[len("origin/"):]
    for name in USUAL:
        for ref in (f"refs/heads/{name}", f"refs/remotes/origin/{name}"):
            if git(repo, "show-ref", "--verify", "--quiet", ref, check=False).returncode == 0:
                return name
    current = git(repo, "rev-parse", "--abbrev-ref", "HEAD", check=False).stdout.strip()
    raise Unknown(f"{repo}: cannot tell the repository's default branch (no refs/remotes/origin/HEAD, no main or "
                  f"master branch{f'; the current branch is {current}' if current and current != 'HEAD' else ''}); "
                  "pass --default-branch NAME, the branch pull requests merge into")


__all__ = ["USUAL", "Unknown", "default_branch"]
