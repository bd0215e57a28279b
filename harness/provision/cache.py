"""ttfg's build cache: folders that cost seconds to make (installed revisions, environments), made once.

Why a cache at all: a gate side needs its revision's project installed, and an
environment needs its packages; both take seconds and both are pure functions of
their key (a commit's files never change; an environment is its interpreter and its
resolved requirements). So each is built once, in the user cache folder, and reused.

Why these rules, and not a plain ``mkdir``:

- **Half-built entries are never used.** An entry is valid only once its marker file
  (``.ttfg-complete``) exists, and the marker is the last thing written. A build that
  fails, runs out of disk or is interrupted removes what it made; a build that was
  killed outright (no chance to clean up) leaves no marker, and the next use removes
  the leftovers and builds again.
- **One builder at a time.** Building takes an exclusive ``flock`` on a sidecar
  (``.KEY.lock``); a second process asking for the same key waits for the first and
  then uses its entry. The kernel drops the lock when a process dies.
- **Entries are built in place**, at their final path: a virtual environment cannot be
  moved after it is made, and the marker already makes the swap atomic for readers.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from ..errors import TtfgError

MARKER = ".ttfg-complete"


class CacheError(TtfgError):
    """The cache folder cannot be used (not writable, not a folder)."""


def root() -> Path:
    """The user cache folder ttfg builds in: ``$TTFG_CACHE_DIR``, else the platform's (``~/.cache/ttfg``)."""
    override = os.environ.get("TTFG_CACHE_DIR")
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_cache_dir("ttfg"))


@dataclass(frozen=True)
class Entry:
    """A finished cache entry: its folder, whether it was already there, and how long getting it took."""

    path: Path
    cached: bool
    seconds: float


def folder(kind: str) -> Path:
    """``root()/kind``, made and checked writable.

    Raises
    ------
    CacheError
        When it cannot be (``TTFG_CACHE_DIR`` a file, a read-only folder), naming it.
    """
    folder = root() / kind
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-test-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise CacheError(f"the cache folder {folder} cannot be written ({exc.strerror or exc}); "
                         "set TTFG_CACHE_DIR to a writable folder") from None
    return folder


def complete(path: Path) -> bool:
    """Whether ``path`` is a finished entry (its marker exists)."""
    return (path / MARKER).is_file()


@contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    import fcntl

    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # blocks: a second builder waits for the first
        yield
    finally:
        os.close(fd)


def get(kind: str, key: str, build: Callable[[Path], None]) -> Entry:
    """The entry ``kind/key``, calling ``build(folder)`` to make it when it is missing or unfinished.

    Parameters
    ----------
    kind : str
        A sub-folder of the cache (``sources``, ``envs``).
    key : str
        The entry's name: one safe path component that says what it holds.
    build : callable
        Fills the (empty, existing) folder; raises on failure.

    Raises
    ------
    CacheError
        When the cache folder cannot be written.
    Exception
        Whatever ``build`` raised; the folder is removed first.
    """
    if not key or "/" in key or key in (".", "..") or key.startswith("."):
        raise ValueError(f"cache key {key!r} is not one path component")
    started = time.monotonic()
    path = folder(kind) / key
    if complete(path):
        return Entry(path, True, time.monotonic() - started)
    with _locked(path.parent / f".{key}.lock"):
        if complete(path):  # another process built it while we waited
            return Entry(path, True, time.monotonic() - started)
        shutil.rmtree(path, ignore_errors=True)  # leftovers of a build that was killed
        path.mkdir(parents=True)
        try:
            build(path)
            (path / MARKER).write_text(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) + "\n")
        except BaseException:
            shutil.rmtree(path, ignore_errors=True)
            raise
    return Entry(path, False, time.monotonic() - started)


def entries(kind: str) -> list[Path]:
    """The finished entries of ``kind`` (for listing and pruning).

    Raises
    ------
    CacheError
        When the cache folder is a file (``TTFG_CACHE_DIR`` pointing at one): nothing could ever be cached there.
    """
    if root().exists() and not root().is_dir():
        raise CacheError(f"the cache folder {root()} is not a folder; set TTFG_CACHE_DIR to a writable folder")
    where = root() / kind
    if not where.is_dir():
        return []
    return sorted(p for p in where.iterdir() if p.is_dir() and complete(p))


def remove(path: Path) -> None:
    """Remove one entry, marker first, so a reader never sees a half-removed entry as finished."""
    with _locked(path.parent / f".{path.name}.lock"):
        (path / MARKER).unlink(missing_ok=True)
        shutil.rmtree(path, ignore_errors=True)


#: Use locks this process holds (``hold``): released when it exits, however it exits.
_HELD: dict[Path, int] = {}


def hold(path: Path) -> None:
    """Mark an entry as in use by this process until it exits (a shared lock on ``.KEY.use``).

    Why: ``ttfg env prune`` in another terminal removed an environment a running gate was
    measuring in; its probes then failed as if the head could not run. Pruning now skips
    an entry some process holds.
    """
    import fcntl

    lock = path.parent / f".{path.name}.use"
    if lock in _HELD:
        return
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
    fcntl.flock(fd, fcntl.LOCK_SH)
    _HELD[lock] = fd


def in_use(path: Path) -> bool:
    """Whether another process holds the entry (:func:`hold`); this process's own holds do not count."""
    import fcntl

    lock = path.parent / f".{path.name}.use"
    if lock in _HELD or not lock.exists():
        return False
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def size_bytes(path: Path) -> int:
    """Bytes on disk under ``path``, each hard-linked file counted once (uv's cache links them)."""
    seen, total = set(), 0
    for dirpath, _, files in os.walk(path):
        for name in files:
            try:
                st = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            total += st.st_blocks * 512
    return total


__all__ = ["CacheError", "Entry", "MARKER", "complete", "entries", "folder", "get", "hold", "in_use", "remove", "root",
           "size_bytes"]
