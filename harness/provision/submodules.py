"""A checked-out revision's git submodules, at the commits it records, recursively.

Why: ``git worktree add`` checks out the superproject only, so a package that vendors a
submodule (``src/mylab/_vendor``, imported by ``ops.py``) was installed without it. ``run --env``
then failed "No module named 'mylab._vendor'", and a gate whose head added the submodule called
the head's failure to import a regression (exit 1): a false finding. Now every worktree
(``worktrees.worktrees``) and the working tree's snapshot (``project_source``) get their
submodules at the commits the revision records, and a submodule that cannot be had is an
:class:`SubmoduleError`, exit 2, naming it.

Where a submodule comes from: the user's own checkout of it when it holds the recorded commit
(offline, and it has commits not pushed yet), else the URL ``git submodule init`` configured in
the user's repository, else the one in ``.gitmodules``. Each is a plain ``git clone`` into the
temporary tree, not ``git submodule update``: that would write the URL and ``active`` flag into
the user's ``.git/config`` for a submodule not initialised there, keep the clone under the user's
``.git``, and refuse a local path ("transport 'file' not allowed") since git 2.38.1.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .sources import InstallError

#: Runs ``git -C DIR ARGS`` (``check=`` as ``worktrees.git``, the one git runner, which passes itself in:
#: ``worktrees`` calls this module, so importing it here would be a circle).
Git = Callable[..., "subprocess.CompletedProcess"]

#: How deep submodules of submodules are followed (git's own recursion has no limit; a cycle would).
MAX_DEPTH = 8


class SubmoduleError(InstallError):
    """A submodule of the revision cannot be checked out: the revision's code is incomplete (exit 2)."""


@dataclass(frozen=True)
class Gitlink:
    """One submodule of a tree: where it goes, the commit the tree records, its name and URL in .gitmodules."""

    path: str
    commit: str
    name: str | None = None
    url: str | None = None


def gitlinks(git: Git, tree: Path, index_entries: str | None = None) -> list[Gitlink]:
    """The submodules ``tree``'s index records (``git ls-files --stage``), with their .gitmodules names and URLs.

    ``index_entries`` is that listing (``-z``) when it comes from another index (a snapshot's).
    """
    listing = index_entries if index_entries is not None else git(tree, "ls-files", "--stage", "-z").stdout
    links = []
    for entry in listing.split("\0"):
        info, _, path = entry.partition("\t")
        fields = info.split()
        if len(fields) == 3 and fields[0] == "160000":
            links.append((path, fields[1]))
    if not links:
        return []
    names: dict[str, str] = {}
    if (tree / ".gitmodules").is_file():
        found = git(tree, "config", "-f", ".gitmodules", "-z", "--get-regexp", r"^submodule\..*\.path$", check=False)
        for item in found.stdout.split("\0"):
            key, _, value = item.partition("\n")
            if key:
                names[value] = key[len("submodule."):-len(".path")]
    out = []
    for path, commit in links:
        name = names.get(path)
        url = git(tree, "config", "-f", ".gitmodules", "--get", f"submodule.{name}.url", check=False).stdout.strip() \
            if name else ""
        out.append(Gitlink(path, commit, name, url or None))
    return out


def _sources(git: Git, link: Gitlink, source: Path | None, repo: Path | None) -> list[str]:
    """Where to clone ``link`` from, best first: the user's checkout of it, the configured URL, .gitmodules'."""
    found = []
    local = source / link.path if source is not None else None
    if local is not None and (local / ".git").exists() and \
            git(local, "cat-file", "-e", f"{link.commit}^{{commit}}", check=False).returncode == 0:
        found.append(str(local))
    if repo is not None and link.name:
        configured = git(repo, "config", "--get", f"submodule.{link.name}.url", check=False).stdout.strip()
        if configured:
            found.append(configured)
    if link.url and not link.url.startswith(("./", "../")):  # a relative URL is the superproject's remote's
        found.append(link.url)
    return list(dict.fromkeys(found))


def _clone(git: Git, dest: Path, origin: str, commit: str) -> str | None:
    """Clone ``origin`` into ``dest`` and check out ``commit``; None, or git's complaint (``dest`` emptied)."""
    done = git(dest.parent, "clone", "--quiet", "--no-checkout", origin, str(dest), check=False)
    if done.returncode == 0:
        done = git(dest, "checkout", "--quiet", "--detach", commit, check=False)
        if done.returncode != 0:  # a commit no branch of the origin holds: ask for it by name
            fetched = git(dest, "fetch", "--quiet", "origin", commit, check=False)
            done = git(dest, "checkout", "--quiet", "--detach", commit, check=False) if fetched.returncode == 0 \
                else fetched
        if done.returncode == 0:
            return None
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True, exist_ok=True)
    text = (done.stderr or done.stdout).strip()
    return text.splitlines()[-1] if text else f"git exited {done.returncode}"


def checkout(git: Git, tree: Path, source: Path | None, repo: Path | None = None,
             links: list[Gitlink] | None = None, depth: int = 0) -> list[str]:
    """Check out every submodule of ``tree`` at its recorded commit, and theirs; returns the paths checked out.

    Parameters
    ----------
    git : callable
        ``worktrees.git``.
    tree : Path
        A checked-out revision (a worktree, or a submodule inside one).
    source : Path or None
        The user's checkout of the same repository (its submodules are the first place to look).
    repo : Path or None
        The user's repository, whose config may hold the URL ``git submodule init`` resolved.
    links : list of Gitlink, optional
        The submodules to check out (default: those ``tree``'s index records).

    Raises
    ------
    SubmoduleError
        When a submodule has no URL to fetch from, cannot be fetched, or lacks its recorded commit.
    """
    done = []
    for link in links if links is not None else gitlinks(git, tree):
        dest = tree / link.path
        dest.mkdir(parents=True, exist_ok=True)
        where = f"submodule {link.path}" + (f" ({link.name})" if link.name and link.name != link.path else "")
        if depth >= MAX_DEPTH:
            raise SubmoduleError(f"{where}: submodules nested deeper than {MAX_DEPTH} levels; not followed")
        origins = _sources(git, link, source, repo)
        if not origins:
            raise SubmoduleError(f"{where} at {link.commit[:10]}: no URL to fetch it from (none in .gitmodules or "
                                 "the repository's config, and no checkout of it holds that commit); run `git "
                                 "submodule update --init --recursive` in your checkout, so the revision's code is "
                                 "complete")
        problems = []
        for origin in origins:
            problem = _clone(git, dest, origin, link.commit)
            if problem is None:
                break
            problems.append(f"{origin}: {problem}")
        else:
            raise SubmoduleError(f"{where}: its recorded commit {link.commit[:10]} cannot be checked out ("
                                 + "; ".join(problems) + "); without it the revision's code is incomplete, so "
                                 "nothing was measured. Fetch it in your checkout (`git submodule update --init "
                                 "--recursive`) or push it where .gitmodules points")
        done.append(link.path)
        inner = source / link.path if source is not None and (source / link.path / ".git").exists() else None
        done += [f"{link.path}/{p}" for p in checkout(git, dest, inner, inner, depth=depth + 1)]
    return done


__all__ = ["Gitlink", "MAX_DEPTH", "SubmoduleError", "checkout", "gitlinks"]
