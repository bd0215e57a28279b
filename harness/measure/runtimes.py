"""Reads, inside a probe, which native runtimes its process loaded and how many threads it has (``results.runtimes``).

Called by the probe after the first gradient, when every runtime the gradient needed is
loaded and its thread pools have started. Reads only the process itself: ``sys.modules``,
``/proc/self/maps`` (the mapped shared objects) and ``/proc/self/task`` (its OS threads);
where ``/proc`` is missing (macOS), the modules and ``threading.active_count()`` alone.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

from ..results.runtimes import RUNTIMES, Runtimes


def mapped_libraries(maps: str) -> list[str]:
    """The file names of the known runtimes' shared objects in a ``/proc/self/maps`` text, sorted, once each."""
    parts = [p for _, ps in RUNTIMES.values() for p in ps]
    found = set()
    for line in maps.splitlines():
        fields = line.split(None, 5)
        if len(fields) < 6 or ".so" not in fields[5]:
            continue
        name = os.path.basename(fields[5].strip())
        if any(p in name for p in parts):
            found.add(name)
    return sorted(found)


def thread_count() -> int:
    """The process's OS threads (``/proc/self/task``), at least the threads ``threading`` knows of."""
    try:
        native = len(os.listdir("/proc/self/task"))
    except OSError:
        native = 0
    return max(native, threading.active_count(), 1)


#: The process's threads when this module was imported (the probe imports it before any framework).
AT_START = thread_count()


def observe() -> Runtimes:
    """This process's record, now (with its threads at the probe's start, :data:`AT_START`)."""
    modules = tuple(sorted(name for name, (module, _) in RUNTIMES.items() if module in sys.modules))
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        maps = ""
    return Runtimes(modules, tuple(mapped_libraries(maps)), thread_count(), AT_START)


__all__ = ["mapped_libraries", "observe", "thread_count"]
