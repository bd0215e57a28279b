"""What a probe's process shows of the frameworks' persistent compile caches, whatever its backend.

Why in the probe and not in the backend: a backend reports the counters it remembers to. A
plugin on jax that never counted jax's compile events (a library's own backend, written before
``ttfg init``'s starter did) showed no cache at all, so the warm gate called it "measured cold"
and could never see a traced function whose cache key changes between processes. The probe
knows which frameworks its process loaded, and reads them itself:

- jax: ``jax.monitoring`` listeners (``engines.jax_common.CompileEvents``, the one set per
  process that ttfg's jax backends also use: nothing is counted twice), registered as soon as
  jax is loaded (after the import phase, again before the first gradient);
- torch: Inductor's own counters, ``torch._dynamo.utils.counters["inductor"]`` (its FX graph
  cache hits and misses), read only when Dynamo is already loaded: importing it costs seconds,
  and a process that never loaded it compiled nothing with Inductor.

Two things come out. The first gradient's counters a backend did not report itself are added,
under the names ttfg's own backends use (``backend_compiles`` and ``persistent_cache_hits``
when jax is loaded; ``fxgraph_cache_misses`` and ``fxgraph_cache_hits`` when Inductor looked its
cache up), so the structural tier compares a plugin's as it compares jax.jit's; a backend's own
values are never replaced. And :meth:`CacheWatch.lookups`, the cache lookups the whole process
showed by framework (``jax_lookups``, ``jax_hits``, ``inductor_lookups``, ``inductor_hits``; a
framework's keys only when it was loaded; ``jax_unobserved`` when jax was first loaded inside the
first gradient, after the probe could listen): the warm gate decides from them whether a case's
process used a persistent cache at all (``decide/warm_evidence.py``).

Nothing here imports a framework.
"""

from __future__ import annotations

import sys
from typing import Any

#: Inductor's FX graph cache counters (``counters["inductor"]``) by the name ttfg's counters give them.
INDUCTOR_COUNTERS = {"fxgraph_cache_hit": "fxgraph_cache_hits", "fxgraph_cache_miss": "fxgraph_cache_misses"}


def _inductor() -> dict[str, int] | None:
    """Inductor's cache counters now (hits, misses, bypasses), or None when Dynamo was never loaded."""
    utils = sys.modules.get("torch._dynamo.utils")
    counters = getattr(utils, "counters", None)
    if counters is None:
        return None
    found = counters.get("inductor", {})
    return {name: int(found.get(name, 0)) for name in ("fxgraph_cache_hit", "fxgraph_cache_miss",
                                                       "fxgraph_cache_bypass")}


class CacheWatch:
    """One probe's view of the caches: :meth:`listen` after imports, :meth:`start` and :meth:`window` around the
    first gradient, :meth:`lookups` at the end."""

    def __init__(self) -> None:
        self._jax: Any = None
        self._jax_mark: Any = None
        self._inductor_mark: dict[str, int] | None = None

    def listen(self) -> None:
        """Register jax's listeners if jax is loaded now (once per process: ``CompileEvents.get``)."""
        if self._jax is None and "jax" in sys.modules:
            from ..engines.jax_common import CompileEvents

            self._jax = CompileEvents.get()

    def start(self) -> None:
        """Just before the first gradient: where the counts stand."""
        self.listen()
        self._jax_mark = self._jax.mark() if self._jax is not None else None
        self._inductor_mark = _inductor()

    def window(self, counters: dict[str, Any]) -> dict[str, Any]:
        """``counters`` (the backend's own) with the first gradient's cache counters it did not report added."""
        out = dict(counters)
        if self._jax_mark is not None:
            _, counts = self._jax.since(self._jax_mark)
            for name, value in counts.items():
                out.setdefault(name, value)
        now = _inductor()
        if now is not None and sum(now.values()):  # Inductor compiled in this process
            before = self._inductor_mark or {}
            for name, ours in INDUCTOR_COUNTERS.items():
                out.setdefault(ours, now[name] - before.get(name, 0))
        return out

    def lookups(self) -> dict[str, int]:
        """The persistent-cache lookups and hits the process showed since jax's listeners were registered (jax) or
        since it started (Inductor), by framework; a framework that was not loaded has no keys."""
        out: dict[str, int] = {}
        if self._jax is None and "jax" in sys.modules:  # loaded inside the first gradient: its lookups were unseen
            out["jax_unobserved"] = 1
        elif self._jax is not None:
            counts = self._jax.counts
            hits = int(counts.get("persistent_cache_hits", 0))
            # Every lookup records compile_requests_use_cache; a write records cache_misses (entries over the minimum
            # size only), so the larger of the two readings is the lookups seen.
            looked = max(int(counts.get("persistent_cache_lookups", 0)),
                         hits + int(counts.get("persistent_cache_misses", 0)))
            out.update(jax_lookups=looked, jax_hits=hits)
        now = _inductor()
        if now is not None:
            out.update(inductor_lookups=now["fxgraph_cache_hit"] + now["fxgraph_cache_miss"],
                       inductor_hits=now["fxgraph_cache_hit"])
        return out


__all__ = ["CacheWatch", "INDUCTOR_COUNTERS"]
