"""Output paths checked before any work: a run that measures for an hour must not fail at the end.

Each check raises :class:`~ttfg.errors.UsageError` (exit 2) naming the option and
the path: a missing parent folder, a folder where a file is expected, a file where a
folder is expected, a place this user cannot write, an existing target that is not a
regular file (a device such as ``/dev/null``, a FIFO: writing would replace it), an
output that is one of the command's own inputs (``merge results s1.json s2.json --out
s1.json`` would destroy a shard), and an output another ttfg process is writing (its
one-writer lock is held). Nothing is left behind here (a probe file is made and
removed); the writers create what they write, atomically, when there is something to
write.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

from ..errors import UsageError
from ..files import not_replaceable


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
    why = not_replaceable(p)
    if why:
        raise UsageError(f"{option} {p}: {why}")
    if p.exists() and not os.access(p, os.W_OK):
        raise UsageError(f"{option} {p}: the file exists and is not writable")
    parent = p.parent
    if not parent.exists():
        if not create_parents:
            raise UsageError(f"{option} {p}: the folder {parent} does not exist")
        parent = _nearest_existing(parent)
    _check_folder(parent, option, p)
    return p


def output_dir(path: str | os.PathLike | None, option: str, files: tuple[str, ...] = ()) -> Path | None:
    """Check that ``path`` is (or can be made as) a writable folder; ``None`` passes through.

    ``files``: the names the command writes in it; each must be absent or a regular file.
    """
    if path is None:
        return None
    p = Path(path)
    if str(path).strip() == "":
        raise UsageError(f"{option}: an empty path")
    if p.exists() and not p.is_dir():
        raise UsageError(f"{option} {p}: is a file, not a folder")
    _check_folder(_nearest_existing(p), option, p)
    for name in files:
        why = not_replaceable(p / name)
        if why:
            raise UsageError(f"{option} {p}: {p / name} {why}")
    return p


def _same(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def not_an_input(out: str | os.PathLike | None, option: str, inputs) -> None:
    """Refuse an output file that is one of the inputs (the same file, by any path)."""
    if out is None:
        return
    for given in inputs:
        if given is not None and _same(Path(out), Path(given)):
            raise UsageError(f"{option} {out}: is also an input ({given}); writing it would replace what is "
                             "being read: choose another path")


def not_an_input_dir(out_dir: str | os.PathLike | None, option: str, inputs, files: tuple[str, ...]) -> None:
    """Refuse an output folder that holds an input, or whose ``files`` would replace an input."""
    if out_dir is None:
        return
    out_dir = Path(out_dir)
    for given in inputs:
        given = Path(given)
        folder = given if given.is_dir() else given.parent
        if _same(out_dir, folder) and (given.is_dir() or given.name in files):
            raise UsageError(f"{option} {out_dir}: is also an input ({given}); writing there would replace what "
                             "is being read: choose another folder")
        for name in files:
            if _same(out_dir / name, given):
                raise UsageError(f"{option} {out_dir}: its {name} is also an input ({given}): choose another folder")


def not_held(paths, option: str) -> None:
    """Refuse outputs whose one-writer lock another ttfg process holds (a running run or gate writes them).

    Checked again when the outputs are written (:func:`holding`); this check is so that
    nothing is done first.
    """
    with holding(paths, option):
        pass


@contextmanager
def holding(paths, option: str):
    """Hold the one-writer lock of every path in ``paths`` while writing them; a held one is a UsageError."""
    from ..files import FileBusy, OneWriter

    locks = []
    try:
        for path in map(Path, paths):
            if path.parent.is_dir():  # a folder not made yet holds nothing
                try:
                    locks.append(OneWriter(path).acquire())
                except FileBusy as exc:
                    raise UsageError(f"{option}: {exc}") from None
        yield
    finally:
        for lock in reversed(locks):
            lock.release()




__all__ = ["holding", "not_an_input", "not_an_input_dir", "not_held", "output_dir", "output_file"]
