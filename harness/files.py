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
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

__all__ = ["atomic_write_bytes", "atomic_write_text"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _mode_for(path: Path) -> int:
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return 0o666 & ~_umask()


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (creating its folder); returns the path.

    The temporary file is removed when anything fails, Ctrl-C included.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = _mode_for(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> Path:
    """:func:`atomic_write_bytes` for text (UTF-8 unless told otherwise)."""
    return atomic_write_bytes(path, text.encode(encoding))
