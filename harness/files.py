"""The one atomic file writer: every file ttfg writes for a user goes through here.

Why atomic: results files are rewritten after every sample and read by other
commands (and by people) while a run goes on; an interruption or a full disk must
leave either the old file or the new one, never half of one. So the text goes to a
temporary file in the same folder (same file system, so the rename is atomic),
is flushed and fsynced, and is renamed over the target.

Why the mode is handled: ``tempfile.mkstemp`` creates its file with mode 0600, and
the rename would hand that mode to the target, so a results file or a report would
end up readable by its owner only. The file gets the mode an ordinary ``open()``
would give it: an existing target's mode is kept, a new file gets 0666 less the
user's umask.

Why only regular files are replaced: the rename replaces whatever the path names.
``ttfg report --out /dev/null`` run as root (as in CI containers) turned the device
node into a regular 0666 file, and a FIFO given to ``compare --output`` became a
plain file. An existing target that is not a regular file (a device, a FIFO, a
socket, a folder) is refused (:func:`not_replaceable`), here and by the commands'
checks before any work.

Why a set of files is replaced together (:func:`replace_together`): ``ttfg merge
gate`` writes ``base.json``, ``head.json``, ``gate.json`` and ``summary.md``, which
are read as one outcome. Writing them one by one let a full disk or a Ctrl-C leave a
new ``base.json`` beside an old ``gate.json``. Every file is written to a temporary
file first; only when all are on disk are they renamed, with SIGINT and SIGTERM held
back for the few microseconds the renames take.
"""

from __future__ import annotations

import errno
import os
import signal
import stat
import tempfile
from pathlib import Path

__all__ = ["FileBusy", "OneWriter", "append_step_summary", "atomic_write_bytes", "atomic_write_text",
           "not_replaceable", "replace_together"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _mode_for(path: Path) -> int:
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return 0o666 & ~_umask()


def not_replaceable(path: str | os.PathLike) -> str | None:
    """Why writing ``path`` would destroy something that is not a file ttfg may replace, or None.

    An absent path and an existing regular file (also through a symbolic link) may be
    written; a device, FIFO, socket or folder may not.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError:
        return None  # unreadable here: the write itself reports it, naming the file
    if stat.S_ISREG(st.st_mode):
        return None
    kind = ("a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode) else
            "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else
            "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
    return f"exists and is {kind}, not a regular file; ttfg replaces only regular files"


def _refuse_special(path: Path) -> None:
    why = not_replaceable(path)
    if why:
        raise OSError(errno.EEXIST, why, str(path))


def _write_temporary(path: Path, data: bytes) -> str:
    """``data`` in a fsynced temporary file beside ``path``, with the mode ``path`` should get; its name."""
    mode = _mode_for(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        if exc.filename is None:  # write/fsync on a descriptor: name the file the user asked for
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
        raise
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (creating its folder); returns the path.

    The temporary file is removed when anything fails, Ctrl-C included. A target that
    exists and is not a regular file is refused (``OSError`` naming it), never replaced.
    """
    path = Path(path)
    _refuse_special(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _write_temporary(path, data)
    try:
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> Path:
    """:func:`atomic_write_bytes` for text (UTF-8 unless told otherwise)."""
    return atomic_write_bytes(path, text.encode(encoding))


def replace_together(files: dict[str | os.PathLike, str | bytes | None]) -> list[Path]:
    """Write every ``{path: text or bytes}`` atomically, as one set: all of them, or none.

    A value of None removes that path: a file of the set that this outcome has no
    content for must not stay behind from an older one. Each file is written and
    fsynced to a temporary file beside its target first; a failure there (a full disk,
    Ctrl-C) removes the temporary files and leaves every target as it was. Then the
    temporary files are renamed over their targets and the removals done, with SIGINT
    and SIGTERM blocked until the last one (a signal that arrives meanwhile is delivered
    right after). Targets that are not regular files are refused before anything is written.
    """
    targets = {Path(p): (d.encode("utf-8") if isinstance(d, str) else d) for p, d in files.items()}
    for path in targets:
        _refuse_special(path)
    written: dict[Path, str] = {}
    try:
        for path, data in targets.items():
            if data is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                written[path] = _write_temporary(path, data)
        blocked = {signal.SIGINT, signal.SIGTERM}
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
        try:
            for path, data in targets.items():
                if data is None:
                    path.unlink(missing_ok=True)
                else:
                    os.replace(written.pop(path), path)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    finally:
        for tmp in written.values():
            Path(tmp).unlink(missing_ok=True)
    return [p for p, d in targets.items() if d is not None]


def append_step_summary(path: str | os.PathLike | None, text: str) -> str | None:
    """Append ``text`` to ``path`` (``$GITHUB_STEP_SUMMARY``) when given; a warning to print when it cannot be.

    Why a warning and not an error: the summary is a copy of ``summary.md``, which is
    written; a step-summary file that cannot be written (a read-only or vanished path)
    turned a finished merge or gate into exit 2 and lost its verdict's exit code.
    """
    if not path:
        return None
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(text + "\n")
    except OSError as exc:
        return f"$GITHUB_STEP_SUMMARY {path}: cannot append the summary ({exc.strerror or exc}); it is in summary.md"
    return None


class FileBusy(OSError):
    """Another process holds the one-writer lock of a file; ``holder`` is what it wrote in the lock."""

    def __init__(self, path: Path, holder: str):
        super().__init__(f"{path} is being written by another ttfg process ({holder}); "
                         "wait for it to finish or choose another path")
        self.path, self.holder = path, holder


class OneWriter:
    """An exclusive, non-blocking lock that makes one process the only writer of ``path``.

    Why: two runs given the same ``--out`` would each rewrite the whole file after every
    sample and silently drop the other's samples. The second one is refused instead.

    The lock is ``flock`` on a hidden sidecar (``.NAME.lock``) beside the file, because
    the file itself is replaced by each atomic write (a lock on it would lock a dead
    inode). The kernel drops the lock when the process dies, so a crash never leaves a
    stale lock; the sidecar is removed on release. Acquiring re-checks that the sidecar
    it locked is still the one on disk, so a release racing an acquire cannot give two
    writers.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.lock_path = self.path.parent / f".{self.path.name}.lock"
        self._fd: int | None = None

    def acquire(self) -> "OneWriter":
        import fcntl

        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o666 & ~_umask())
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(fd, 200).decode("utf-8", "replace").strip() or "pid unknown"
                os.close(fd)
                raise FileBusy(self.path, holder) from None
            try:
                same = os.fstat(fd).st_ino == os.stat(self.lock_path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)  # the holder released and removed it between our open and lock: retry
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        try:
            self.lock_path.unlink(missing_ok=True)  # unlink while still holding the lock, then unlock
        finally:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "OneWriter":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
