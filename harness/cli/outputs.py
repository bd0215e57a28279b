"""Output paths checked before any work: a run that measures for an hour must not fail at the end.

Each check raises :class:`~ttfg.errors.UsageError` (exit 2) naming the option and
the path: a missing parent folder, a folder where a file is expected, a file where a
folder is expected, or a place this user cannot write. Nothing is left behind here
(a probe file is made and removed); the writers create what they write, atomically,
when there is something to write.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import UsageError


def _can_create_in(folder: Path) -> str | None:
    """Why a file cannot be created in ``folder``, or None. ``os.access`` alone says yes to
    root everywhere, even on a read-only filesystem, so a file is made and removed."""
    import tempfile

    if not os.access(folder, os.W_OK | os.X_OK):
        return "is not writable"
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".ttfg-write-check-"):
            pass
    except OSError as exc:
        return f"is not writable ({exc.strerror})"
    return None


def _check_folder(folder: Path, option: str, asked: Path) -> None:
    """``folder`` (an existing path) must be a folder where this user can create files."""
    if not folder.is_dir():
        raise UsageError(f"{option} {asked}: {folder} is a file, not a folder")
    why = _can_create_in(folder)
    if why:
        raise UsageError(f"{option} {asked}: the folder {folder} {why}")


def _nearest_existing(path: Path) -> Path:
    for parent in (path, *path.parents):
        if parent.exists():
            return parent
    return Path(".")


def output_file(path: str | os.PathLike | None, option: str, create_parents: bool = False) -> Path | None:
    """Check that ``path`` can be written as a file; ``None`` passes through.

    ``create_parents``: the command makes missing folders itself (``runs/...``
    defaults), so only the nearest existing ancestor must be a writable folder.
    """
    if path is None:
        return None
    p = Path(path)
    if str(path).strip() == "":
        raise UsageError(f"{option}: an empty path")
    if p.is_dir():
        raise UsageError(f"{option} {p}: is a folder; give a file name")
    if p.exists() and not os.access(p, os.W_OK):
        raise UsageError(f"{option} {p}: the file exists and is not writable")
    parent = p.parent
    if not parent.exists():
        if not create_parents:
            raise UsageError(f"{option} {p}: the folder {parent} does not exist")
        parent = _nearest_existing(parent)
    _check_folder(parent, option, p)
    return p


def output_dir(path: str | os.PathLike | None, option: str) -> Path | None:
    """Check that ``path`` is (or can be made as) a writable folder; ``None`` passes through."""
    if path is None:
        return None
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise UsageError(f"{option} {p}: is a file, not a folder")
    _check_folder(_nearest_existing(p), option, p)
    return p


__all__ = ["output_dir", "output_file"]
