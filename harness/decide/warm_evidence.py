"""Whether a warm gate measures a case warm: decided from what the processes that populated its caches showed.

Why not from the backend's declaration (``Backend.persistent_caches``): a plugin on jax that did
not name ``caches.JAX`` (a library's own backend) was "measured cold" although its process looked
jax's cache up at every compile, so the warm gate could never catch a traced function whose
cache key changes between processes, on the code it exists for. The probe now reads the
frameworks' cache counters in every process whatever its backend (``measure/cache_watch.py``,
recorded as ``ColdEvidence.lookups``), and the populating process of each side says it: a case
whose populating process looked a persistent cache up (jax's, Inductor's, or a cache the plugin
declares with its counters) is measured warm; one whose processes looked none up is measured
cold, said with what was seen. The declaration is only a hint, read where no process could say
(a populating process that failed, or a probe of an older ttfg that did not read the counters).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

if TYPE_CHECKING:
    from ..engines import PersistentCache
    from ..results.model import Sample

#: The framework caches the probe reads in every process (``ColdEvidence.lookups``'s key prefix, in words).
FRAMEWORKS = (("jax", "jax"), ("inductor", "Inductor"))


@dataclass(frozen=True)
class Seen:
    """What one side's populating process showed: whether it looked a persistent cache up (None: it cannot say), and
    that in words."""

    used: bool | None
    words: str


@dataclass(frozen=True)
class WarmCall:
    """A case's decision: ``warm`` or measured cold, and the evidence in words (for a cold one: why)."""

    warm: bool
    words: str


def seen(sample: "Sample | None", extra: "tuple[PersistentCache, ...]" = ()) -> Seen:
    """What a populating process showed of the frameworks' caches (``ColdEvidence.lookups``) and of ``extra`` caches
    (those a plugin declares beside the frameworks', read through their counters)."""
    if sample is None or not sample.ok:
        error = getattr(sample, "error", None)
        return Seen(None, "its populating process failed" + (f" ({error})" if error else ""))
    lookups = sample.cold_evidence.lookups if sample.cold_evidence is not None else None
    parts, used, known = [], False, lookups is not None
    unseen = bool(lookups and lookups.get("jax_unobserved"))
    if unseen:
        parts.append("jax was loaded inside the first gradient, after the probe could listen")
    for key, name in FRAMEWORKS:
        if lookups is not None and f"{key}_lookups" in lookups:
            looked, hits = lookups[f"{key}_lookups"], lookups.get(f"{key}_hits", 0)
            parts.append(f"{name} cache {looked} lookup(s), {hits} hit(s)")
            used = used or looked > 0
    for cache in extra:
        counts = cache.counts(sample.counters or {})
        if counts is not None:
            known = True
            misses, hits = counts
            parts.append(f"{cache.what} {misses + hits} lookup(s), {hits} hit(s)")
            used = used or misses + hits > 0
    if not known:
        return Seen(None, "its probe did not read the caches' counters (an older ttfg)")
    if not parts:
        return Seen(False, "neither jax nor torch's Inductor was loaded")
    return Seen(True if used else None if unseen else False, ", ".join(parts))


def decide(backend: str, populated: "Mapping[str, Sample | None]", declared: "tuple[PersistentCache, ...]",
           extra: "tuple[PersistentCache, ...]" = ()) -> WarmCall:
    """Measured warm when any side's populating process looked a persistent cache up; cold when the processes that
    could say looked none up; the declaration (``declared``) decides only when no process could say.

    Warm on either side, not both: a head that turned its cache off while the base used it is a warm start lost,
    which the miss comparison of warm samples shows (``tier_structural.cache_step``).
    """
    found = {role: seen(sample, extra) for role, sample in populated.items()}
    said = "; ".join(f"{role}: {s.words}" for role, s in found.items())
    if any(s.used for s in found.values()):
        return WarmCall(True, f"its process used a persistent compile cache ({said})")
    if any(s.used is False for s in found.values()):
        hint = (f"; {backend} declares {', '.join(c.what for c in declared)}, which its process never looked up"
                if declared else "")
        return WarmCall(False, "no persistent compile cache was used by its process: no jax or Inductor cache "
                        f"lookups ({said}){hint}, so it is measured cold")
    if declared:
        return WarmCall(True, f"no process could say which caches it used ({said}), so {backend}'s declared "
                        f"{', '.join(c.what for c in declared)} is trusted")
    return WarmCall(False, f"no process could say which caches it used ({said}) and {backend} declares no "
                    "persistent compile cache, so it is measured cold")


__all__ = ["FRAMEWORKS", "Seen", "WarmCall", "decide", "seen"]
