"""What a probe's process ran on, as read from the process itself: the native runtimes it loaded, and its threads.

Why measured, not declared: whether a case's allocation counts repeat depends on what its
process runs (XLA's thread pool allocates as its threads happen to run), and that was looked
up from what a backend *declares* it imports. The starter backend ``ttfg init`` writes for a jax
library declares ``modules = ["jax", "<package>"]``, never ``jaxlib``, so a Haiku library's
unsteady allocation count (+4.9 % on a comment-only pull request) decided "regressed". The
probe now reads, after the first gradient, which runtimes are in ``sys.modules`` and which of
their shared objects are mapped (``/proc/self/maps``), and how many threads the process has
(``/proc/self/task``); every steadiness rule reads this record. A backend's declared modules
stay a hint for the import phase only.

The record is a sample's optional ``runtimes`` field (results format version 2, addition of
2026-12-06): ``{"modules": [...], "libraries": [...], "threads": N, "threads_at_start": M}``. A file written before
has none, and its samples read as before: the declared modules decide (:func:`runs_on` of None).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

#: Native runtimes ttfg tells apart: name -> (the top-level module that brings it, substrings of its shared objects'
#: file names). The name is the one the registry keys steadiness by (``Metric.unsteady``: ``jaxlib``).
RUNTIMES: dict[str, tuple[str, tuple[str, ...]]] = {
    "jaxlib": ("jaxlib", ("xla_extension", "libjax", "jaxlib")),
    "torch": ("torch", ("libtorch", "libc10")),
    "tensorflow": ("tensorflow", ("libtensorflow",)),
}


#: A runtime that started at least this many threads in the process runs a pool (one helper thread is no pool).
POOL = 2


@dataclass(frozen=True)
class Runtimes:
    """The native runtimes one probe process had loaded after its first gradient, and its thread count.

    ``modules``: the :data:`RUNTIMES` whose module was in ``sys.modules``; ``libraries``: the shared objects of
    theirs that were mapped (file names, sorted); ``threads``: the process's OS threads then (every thread a
    native runtime started counts, which ``threading`` does not see).
    """

    modules: tuple[str, ...] = ()
    libraries: tuple[str, ...] = ()
    threads: int = 1
    #: The process's threads when the probe started, before any framework was imported (NumPy's BLAS pool has its
    #: own); None where not read. The threads beyond them were started by what the case ran.
    threads_at_start: int | None = None

    @property
    def names(self) -> frozenset[str]:
        """The runtimes found by module or by library (``jaxlib``, ``torch``)."""
        found = set()
        for name, (module, parts) in RUNTIMES.items():
            if module in self.modules or any(p in lib for lib in self.libraries for p in parts):
                found.add(name)
        return frozenset(found)

    @property
    def multithreaded(self) -> str | None:
        """Why this process ran a multithreaded native runtime (``jaxlib, which started 15 threads``), or None: no
        native runtime loaded, or fewer than :data:`POOL` threads started after the probe's start.

        Measured on a 2-CPU VM (2026-12-06): the probe starts with 2 threads (NumPy's BLAS pool); a jax.jit first
        gradient leaves 17 (XLA's ``tf_XLAEigen`` pool and its compile threads), torch eager and autograd 3 (one
        helper, in a process without a runtime too), torch.compile 3 to 5 (Inductor's compile workers)."""
        if not self.names:
            return None
        started = self.threads - (self.threads_at_start if self.threads_at_start is not None else 1)
        if started < POOL:
            return None
        return f"{', '.join(sorted(self.names))}, with {started} thread(s) started after the probe's start"

    def to_json(self) -> dict[str, Any]:
        return {"modules": list(self.modules), "libraries": list(self.libraries), "threads": self.threads,
                "threads_at_start": self.threads_at_start}

    @classmethod
    def from_json(cls, data: dict) -> "Runtimes":
        return cls(tuple(data.get("modules") or ()), tuple(data.get("libraries") or ()), int(data.get("threads") or 1),
                   data.get("threads_at_start"))


def merged(records: Iterable["Runtimes | None"]) -> "Runtimes | None":
    """One record for several processes (a case's count samples): every runtime any loaded, the most threads; None when
    no process carried a record (an older file: the declared modules decide)."""
    got = [r for r in records if r is not None]
    if not got:
        return None
    most = max(got, key=lambda r: r.threads - (r.threads_at_start if r.threads_at_start is not None else 1))
    return Runtimes(tuple(sorted({m for r in got for m in r.modules})),
                    tuple(sorted({lib for r in got for lib in r.libraries})), most.threads, most.threads_at_start)


def runs_on(record: "Runtimes | None", declared: frozenset[str]) -> frozenset[str]:
    """What a case's processes ran on: the measured runtimes where a record exists, else what the backend declares."""
    return declared if record is None else record.names


__all__ = ["POOL", "RUNTIMES", "Runtimes", "merged", "runs_on"]
