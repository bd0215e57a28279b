"""Commits of a history in git's order: the measured branch's first-parent line, never dates.

Why: asv orders a history by the commits' author dates (ties broken by hash), and the
trends used to do the same. A rebase gives several commits one author date, a
cherry-pick or a rebased old branch gives a newer commit an older date; either way the
commits came out of order, a step was split or reversed, and a 2x jump in HLO ops at a
known commit read as "0 regressions, 2 improvements". What a maintainer means by "the
history" is the branch as merged: ``git rev-list --first-parent <branch>``, oldest first.

Where the repository and the branch come from: the ``repo`` and the first of the
``branches`` of the ``asv.conf.json`` whose ``results_dir`` is the history's folder
(looked for beside the folder and above it, then in the working folder), the way asv
itself finds them; without one, the git repository holding the folder and its
``HEAD``. A branch missing locally (a CI clone that fetched only the pull request) is
looked for as ``origin/<branch>``.

Commits git knows but the line does not hold (a pull request's commits, or those a
merge brought in) come right after the line's commit they branched from (the first
commit of the line on their own first-parent chain), in their order along that chain.
When git cannot place every commit (no repository, the branch unknown, a commit the
repository lacks: a results folder copied from elsewhere, a shallow clone), the whole
history falls back to the date order and :attr:`CommitOrder.note` says so and why:
``ordered by date: ...``; the callers put that note into every output.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from ..provision.worktrees import GitError, git

#: Where the date-order fallback note starts; every output that shows a history carries it.
DATE_ORDER = "ordered by date"


@dataclass(frozen=True)
class CommitOrder:
    """Where each commit stands (0 = oldest), and how that order was found."""

    #: commit -> rank; empty when git could not order the commits (date order then).
    rank: Mapping[str, int] = field(default_factory=dict)
    #: ``"git"`` or ``"date"``.
    by: str = "date"
    #: What the outputs say about the order; None when the branch's line holds every commit.
    note: str | None = None

    @property
    def by_git(self) -> bool:
        return self.by == "git"


def by_date(why: str) -> CommitOrder:
    """The fallback: date order, and the note saying why git's order was not available."""
    return CommitOrder({}, "date", f"{DATE_ORDER}: {why}")


@dataclass(frozen=True)
class Source:
    """The repository whose branch orders a history, and how it was found."""

    repo: Path | None
    branch: str | None
    #: Why there is no repository (when ``repo`` is None).
    why: str = ""


def _config_for(results_dir: Path) -> tuple[Path, dict] | None:
    """The asv.conf.json that names ``results_dir``: beside it or up to two folders above
    (``.asv/results``), else the working folder's, whatever folder it names."""
    from ..errors import UsageError
    from .asv_conf import load_config

    target = results_dir.resolve()
    near = [target.parent, target.parent.parent]
    cwd = Path.cwd().resolve()
    for folder in dict.fromkeys([*near, cwd]):
        conf = folder / "asv.conf.json"
        if not conf.is_file():
            continue
        try:
            data = load_config(conf)
        except UsageError:
            continue
        if not isinstance(data, dict):
            continue
        named = data.get("results_dir", "results")
        if folder == cwd or (isinstance(named, str) and (folder / named).resolve() == target):
            return conf, data
    return None


def locate(results_dir: str | os.PathLike, repo: str | os.PathLike | None = None,
           branch: str | None = None) -> Source:
    """The repository and branch of a results folder's history; ``repo``/``branch`` override the config."""
    results_dir = Path(results_dir)
    found = _config_for(results_dir) if repo is None or branch is None else None
    if found is not None:
        conf, data = found
        named = data.get("repo")
        if repo is None and isinstance(named, str) and data.get("dvcs", "git") == "git":
            if "://" in named or named.startswith("git@"):
                return Source(None, branch, f"{conf} names a remote repository ({named}); git's order needs a "
                                            "local clone")
            repo = Path(named) if Path(named).is_absolute() else conf.parent / named
        branches = data.get("branches")
        if branch is None and isinstance(branches, list) and branches and isinstance(branches[0], str):
            branch = branches[0]
    start = Path(repo) if repo is not None else (results_dir if results_dir.is_dir() else Path.cwd())
    try:
        out = git(start, "rev-parse", "--show-toplevel", check=False)
    except GitError as exc:
        return Source(None, branch, str(exc))
    if out.returncode != 0:
        return Source(None, branch, f"no git repository at {start}")
    return Source(Path(out.stdout.strip()), branch)


def _resolve_branch(repo: Path, branch: str | None) -> str | None:
    """The revision naming the branch here: itself, else ``origin/<branch>``; ``HEAD`` when none is configured."""
    names = [branch, f"origin/{branch}"] if branch else ["HEAD"]
    for name in names:
        if git(repo, "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}", check=False).returncode == 0:
            return name
    return None


def _known(repo: Path, commits: list[str]) -> set[str]:
    """The commits the repository holds (one ``git cat-file --batch-check`` for all)."""
    if not commits:
        return set()
    out = git(repo, "cat-file", "--batch-check=%(objecttype) %(objectname)", check=False,
              input="".join(f"{c}\n" for c in commits))
    found = {line.split()[1] for line in out.stdout.splitlines() if line.startswith("commit ")}
    return {c for c in commits if c in found}


def order(dates: Mapping[str, object], source: Source) -> CommitOrder:
    """Rank the commits of ``dates`` (commit -> date, used only among commits git leaves tied).

    Ranks follow the branch's first-parent line, oldest first; a commit off the line
    comes after the line's commit it branched from. When any commit cannot be placed,
    every commit falls back to date order (``by_date``) with the reason.
    """
    commits = [str(c) for c in dates]
    if not commits:
        return CommitOrder({}, "git")
    if source.repo is None:
        return by_date(source.why or "no git repository at hand")
    repo = source.repo
    try:
        ref = _resolve_branch(repo, source.branch)
        if ref is None:
            return by_date(f"branch {source.branch!r} is not in the git repository at {repo}")
        line = git(repo, "rev-list", "--first-parent", ref).stdout.split()[::-1]  # oldest first
        at = {c: i for i, c in enumerate(line)}
        off = [c for c in commits if c not in at]
        known = _known(repo, off)
        missing = [c for c in off if c not in known]
        if missing:
            return by_date(f"{len(missing)} of {len(commits)} commits are not in the git repository at {repo} "
                           f"(e.g. {missing[0][:12]}): results from elsewhere, or a shallow clone")
        anchor: dict[str, tuple[int, int]] = {}
        if off:
            # One walk for all of them: each commit's first parent, then each chain followed in Python.
            first_parent = {}
            for row in git(repo, "rev-list", "--first-parent", "--parents", *off).stdout.splitlines():
                parts = row.split()
                first_parent[parts[0]] = parts[1] if len(parts) > 1 else None
        for c in off:
            x, steps = c, 0
            while x is not None and x not in at:
                x, steps = first_parent.get(x), steps + 1
            if x is None:
                return by_date(f"commit {c[:12]} shares no history with {ref} in {repo}")
            anchor[c] = (at[x], steps)
    except GitError as exc:
        return by_date(f"git could not order the commits: {exc}")
    key = {c: anchor.get(c, (at.get(c, -1), 0)) for c in commits}
    ranked = sorted(commits, key=lambda c: (key[c], _date_key(dates[c]), c))
    note = None
    if off:
        note = (f"{len(off)} of {len(commits)} commits are not on {ref}'s first-parent line; each is placed after "
                "the commit it branched from")
    return CommitOrder({c: i for i, c in enumerate(ranked)}, "git", note)


def _date_key(date) -> float:
    try:
        import pandas as pd

        value = pd.Timestamp(date)
        return float("inf") if value is pd.NaT else value.value
    except (TypeError, ValueError):
        return float("inf")


__all__ = ["CommitOrder", "DATE_ORDER", "Source", "by_date", "locate", "order"]
