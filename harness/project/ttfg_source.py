"""Where a fresh CI runner installs ttfg from: the requirement ``ttfg init`` writes into its files.

Why a module: the workflows and ``asv.conf.json`` run on machines that see neither this
one's folders nor, necessarily, an index that holds this ttfg's version. ``ttfg==0.1.0``
from PyPI fails there (no such distribution), and a local path works only here. So the
requirement names where the running ttfg came from, read from its installation record
(``direct_url.json``, PEP 610): a VCS URL at its commit, an archive URL, an index version
when there is no record; for a folder (an editable install from a git checkout), that
checkout's ``remote.origin.url`` at its HEAD commit. When none of these reaches beyond
this machine, ``init`` refuses and asks for ``--ttfg-requirement`` (or the config's
``ttfg-requirement``) instead of writing a line that fails on the runner.

Every requirement carries the ``instructions`` extra: the workflows install valgrind, and
without the extra the gate's instruction counts fall back to wall time.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from ..errors import UsageError

#: The extra every generated install gets (callgrind's client requests; valgrind comes from apt).
EXTRA = "instructions"
_ASK = ("pass --ttfg-requirement 'ttfg @ git+https://github.com/OWNER/ttfg@COMMIT' (any pip requirement naming "
        "ttfg), or set ttfg-requirement in the config")


class NoSource(UsageError):
    """No requirement a CI runner could install this ttfg from; the message says why and what to pass."""


def with_extra(requirement: str) -> str:
    """``requirement`` with the ``instructions`` extra added; it must name the ttfg distribution.

    Raises
    ------
    NoSource
        For a text that is not a requirement naming ttfg (a bare path or URL names no distribution).
    """
    from packaging.requirements import InvalidRequirement, Requirement

    text = requirement.strip()
    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        raise NoSource(f"ttfg requirement {requirement!r}: not a pip requirement ({exc}); {_ASK}") from None
    if req.name.lower() != "ttfg":
        raise NoSource(f"ttfg requirement {requirement!r}: names {req.name!r}, not ttfg; {_ASK}")
    req.extras = set(req.extras) | {EXTRA}
    return str(req)


def _public_url(url: str) -> str | None:
    """A remote URL a runner can reach, for pip's ``git+``: ``None`` for a local path or ``file:`` URL.

    ``git@host:owner/repo.git`` becomes ``ssh://git@host/owner/repo.git``; credentials in an
    http(s) URL are dropped (they must never be written into a repository's files).
    """
    url = url.strip()
    if not url or url.startswith(("/", ".", "~", "file:")) or re.match(r"^[A-Za-z]:[\\/]", url):
        return None
    scp = re.match(r"^([\w.-]+)@([\w.-]+):(?!//)(.+)$", url)
    if scp:
        return f"ssh://{scp.group(1)}@{scp.group(2)}/{scp.group(3)}"
    if url.startswith(("https://", "http://")):
        return re.sub(r"^(https?://)[^/@]*@", r"\1", url)
    if url.startswith(("ssh://", "git://")):
        return url
    return None


def _checkout(folder: Path) -> tuple[str | None, str | None]:
    """``(remote.origin.url, HEAD commit)`` of the git checkout holding ``folder`` (None where unknown)."""
    from ..provision.worktrees import git

    remote = git(folder, "config", "--get", "remote.origin.url", check=False)
    head = git(folder, "rev-parse", "HEAD", check=False)
    return (remote.stdout.strip() or None if remote.returncode == 0 else None,
            head.stdout.strip() or None if head.returncode == 0 else None)


def detected(record: dict | None, version: str, folder: Path | None) -> str:
    """The requirement for a ttfg installed as ``record`` (its ``direct_url.json``, None from an index).

    ``folder``: the checkout the running ttfg's code is in (an editable install's record may
    name another folder than the one imported from).

    Raises
    ------
    NoSource
        When the record names only this machine: a folder without a reachable remote, a ``file:`` URL.
    """
    if not record:
        return f"ttfg[{EXTRA}]=={version}"
    url = record.get("url", "")
    vcs = record.get("vcs_info")
    if isinstance(vcs, dict):
        public = _public_url(url)
        if public is None:
            raise NoSource(f"this ttfg was installed from {url}, which a CI runner cannot reach; {_ASK}")
        commit = vcs.get("commit_id") or vcs.get("requested_revision")
        return f"ttfg[{EXTRA}] @ {vcs.get('vcs', 'git')}+{public}" + (f"@{commit}" if commit else "")
    if "archive_info" in record and url.startswith(("https://", "http://")):
        return f"ttfg[{EXTRA}] @ {url}"
    local = folder or (Path(url[len("file://"):]) if url.startswith("file://") else None)
    if local is None:
        raise NoSource(f"this ttfg was installed from {url or 'an unknown place'}, which a CI runner cannot reach; "
                       f"{_ASK}")
    remote, commit = _checkout(local)
    public = _public_url(remote) if remote else None
    if public is None or commit is None:
        from ..provision.worktrees import git

        top = git(local, "rev-parse", "--show-toplevel", check=False)
        local = Path(top.stdout.strip()) if top.returncode == 0 and top.stdout.strip() else local
        why = ("is not a git checkout" if commit is None else "has no remote.origin.url" if remote is None
               else f"has remote.origin.url {remote}, a path on this machine")
        raise NoSource(f"this ttfg is installed from the folder {local}, which {why}: a CI runner cannot install "
                       f"it from there; {_ASK}")
    return f"ttfg[{EXTRA}] @ git+{public}@{commit}"


def requirement(configured: str | None = None) -> str:
    """The requirement (with the ``instructions`` extra) a runner installs ttfg with: ``configured`` when
    given, else where the running ttfg came from (:func:`detected`).

    Raises
    ------
    NoSource
        When it cannot be told, or ``configured`` does not name ttfg.
    """
    if configured and configured.strip():
        return with_extra(configured)
    from importlib import metadata

    dist = metadata.distribution("ttfg")
    raw = dist.read_text("direct_url.json")
    record = json.loads(raw) if raw else None
    folder = None
    if record and "dir_info" in record:
        folder = Path(__file__).resolve().parents[1]  # the ttfg package's folder, in the checkout imported from
    return detected(record, dist.version, folder)


def shell(requirement_text: str) -> str:
    """The requirement as one shell word (``pip install`` in a workflow, asv's ``install_command``)."""
    return shlex.quote(requirement_text)


__all__ = ["EXTRA", "NoSource", "detected", "requirement", "shell", "with_extra"]
