"""Links from a user-code ``file:line`` in summary.md to that line at the head commit, through ``commit-url``.

Why: a pull request's comment names ``mylab/ops.py:4`` as where the change went; one click should open that line of
the head revision, as the commits in the report already open their pages. ``commit-url`` is a *commit* page's
template (``https://github.com/OWNER/REPO/commit/{sha}``); GitHub, GitLab (``/-/commit/{sha}``), Gitea and Forgejo
show a file of that commit at ``.../blob/{sha}/PATH#L4``, so a template whose page is ``/commit/{sha}`` (or asv's
``show_commit_url`` ending ``/commit/``, the hash appended) gives the line's URL; any other template links nothing
rather than a wrong page.

The path a gate knows is the file's place inside the side's install (``mylab/ops.py``, ``decide/python_calls.
locate``); the repository may keep it elsewhere (``src/mylab/ops.py``, a monorepo's ``python/src/...``). It is found
among the head commit's files (:func:`linker`): the one file whose path ends with it, else no link.
"""

from __future__ import annotations

import re
from typing import Callable, Iterable

__all__ = ["Linker", "blob_url", "linker"]

#: ``file:line`` -> the line's URL, or None (no template, a file the head does not hold once).
Linker = Callable[[str], "str | None"]

_COMMIT_PAGE = re.compile(r"/commit/\{sha\}/?$")


def blob_url(template: str | None, sha: str, path: str, line: int | None) -> str | None:
    """``https://github.com/o/r/blob/<sha>/src/mylab/ops.py#L4`` from the commit template; None when the template
    is no ``.../commit/{sha}`` page or ``sha`` is not a hash."""
    if template and "{sha}" not in template:  # asv's show_commit_url: the hash is appended
        template += "{sha}"
    if not template or not _COMMIT_PAGE.search(template) or not re.fullmatch(r"[0-9a-f]{7,64}", sha or ""):
        return None
    from urllib.parse import quote

    base = _COMMIT_PAGE.sub("/blob/{sha}/", template).replace("{sha}", sha)
    return base + quote(path.lstrip("/")) + (f"#L{line}" if line else "")


def linker(template: str | None, sha: str, files: Iterable[str]) -> Linker:
    """A :data:`Linker` for the head commit ``sha`` whose tracked files are ``files`` (repository paths)."""
    tracked = list(files)

    def link(where: str) -> str | None:
        m = re.fullmatch(r"(.+?)(?::(\d+))?", where or "")
        if not m or not template:
            return None
        rel = m.group(1).lstrip("./")
        found = [f for f in tracked if f == rel or f.endswith("/" + rel)]
        if len(found) != 1:
            return None
        return blob_url(template, sha, found[0], int(m.group(2)) if m.group(2) else None)

    return link
