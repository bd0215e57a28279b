"""A backend's facts as it declares them: what the harness knows about a backend without running it.

Why here: the warm gate, a probe's environment, the structural tier's cache check, the shard
partition and the report's colours each kept a table keyed by the built-in backends' names
(``gate_loop.PERSISTENT_CACHES``, ``target.child_environ``'s variables, ``tiers.CACHE_COUNTERS``,
``shard.PROCESS_S``, ``plots.BACKEND_COLORS``). Adding a backend with a warm cache touched five
modules, and a plugin backend (Flax NNX in ``examples/flaxlab``, a user's library from
``ttfg init``) could not start warm at all. Now a backend declares them on its class
(``base.Backend``: ``persistent_caches``, ``costs``, ``color``, ``phases``, ``uncounted``),
:func:`problem` checks the declarations when the class is loaded (``engines.contract_problem``),
and every stage reads them as one :class:`Facts` through ``engines.facts(name)``. Facts measured in
the process, when there are some, are to override declared ones there, and nowhere else.

Nothing here imports a framework, or ``base`` (which imports this module for its types).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

_COLOR = re.compile(r"#[0-9a-fA-F]{6}")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class PersistentCache:
    """A compile cache a framework keeps on disk between processes, as a backend declares it.

    Variables are set in the probe's environment (``target.child_environ``); ``{dir}`` in a
    value is the sample's cache folder: a fresh, empty one for every cold sample, the side's
    populated one in a warm gate. ``environ`` holds what every probe gets (where the cache
    lives), ``warm`` what turns the cache on, ``cold`` what turns it off.

    ``misses`` and ``hits`` name the counters (``Engine.counters``) that report a warm first
    gradient's lookups: the structural tier compares them (``tier_structural.cache_step``).
    When ``misses`` counts every lookup rather than the misses alone (JAX's backend compile
    event spans compile-or-read), ``lookups`` is true and the misses are that count less the hits.
    """

    #: What it is, in words (``the JAX persistent compilation cache``).
    what: str
    environ: Mapping[str, str] = field(default_factory=dict)
    warm: Mapping[str, str] = field(default_factory=dict)
    cold: Mapping[str, str] = field(default_factory=dict)
    misses: str | None = None
    hits: str | None = None
    lookups: bool = False
    #: What can name the function whose cache key changed (a framework's switch or log), or why nothing can.
    explain: str = ""

    def variables(self, cache: str, cache_dir: Path) -> dict[str, str]:
        """The probe's variables for this cache in mode ``cache`` (``cold`` or ``warm``), with ``{dir}`` filled in."""
        chosen = {**self.environ, **(self.warm if cache == "warm" else self.cold)}
        return {name: value.replace("{dir}", str(cache_dir)) for name, value in chosen.items()}

    def counts(self, counters: Mapping[str, Any]) -> tuple[int, int] | None:
        """``(misses, hits)`` of a warm sample's counters, or None when this cache's lookups are not among them."""
        if self.misses is None or not isinstance(counters.get(self.misses), int):
            return None
        hits = int(counters.get(self.hits) or 0) if self.hits else 0
        return (max(counters[self.misses] - hits, 0) if self.lookups else counters[self.misses]), hits

    def miss_reasons(self) -> str:
        """What can name the function whose cache key changed, for a regression's reason (``explain``)."""
        return self.explain or f"{self.what} cannot say here which function's cache key changed"

    def problem(self) -> str | None:
        """What is wrong with this declaration, or None."""
        if not isinstance(self.what, str) or not self.what:
            return "has no 'what' (the cache, in words)"
        for part in ("environ", "warm", "cold"):
            found = getattr(self, part)
            if not isinstance(found, Mapping) or not all(isinstance(k, str) and _VARIABLE.fullmatch(k)
                                                         and isinstance(v, str) for k, v in found.items()):
                return f"'{part}' must map environment variable names to strings, got {found!r}"
        if not (self.warm or self.environ):
            return "sets no variable when warm: nothing would point the framework at the populated folder"
        for part in ("misses", "hits"):
            if getattr(self, part) is not None and not isinstance(getattr(self, part), str):
                return f"'{part}' must name a counter (str) or be None"
        if not isinstance(self.explain, str):
            return f"'explain' must be a sentence (str), got {self.explain!r}"
        return None


@dataclass(frozen=True)
class Cost:
    """One cold process of a model's default size with a backend, as measured: spawn to first gradient, and the first
    gradient's part of it (the part that grows with the model's size). The shard partition's estimate
    (``measure/shard.py``) reads them where no measurement of the team's own is given."""

    process_s: float
    first_grad_s: float

    def problem(self) -> str | None:
        numbers = (self.process_s, self.first_grad_s)
        if not all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0 for v in numbers):
            return f"must be positive seconds, got {self.process_s!r} and {self.first_grad_s!r}"
        if self.first_grad_s > self.process_s:
            return f"has a first gradient ({self.first_grad_s:g} s) longer than its process ({self.process_s:g} s)"
        return None


@dataclass(frozen=True)
class Facts:
    """What is known about one backend: its declarations, or nothing (``known`` false) for one that cannot load here."""

    name: str
    known: bool = False
    framework: str | None = None
    #: The modules it imports (``Backend.modules``).
    modules: tuple[str, ...] = ()
    #: The phases its first gradient reports (``Backend.phases``); empty when unknown.
    phases: tuple[str, ...] = ()
    #: The work an instruction count of its probe misses, or None (``Backend.uncounted``).
    uncounted: str | None = None
    #: The persistent compile caches a warm start reads (``Backend.persistent_caches``); empty: measured cold.
    caches: tuple[PersistentCache, ...] = ()
    #: Model name -> the measured cost of one cold process (``Backend.costs``).
    costs: Mapping[str, Cost] = field(default_factory=dict)
    #: Its colour in every figure and table (``Backend.color``), or None: a spare one.
    color: str | None = None

    @classmethod
    def of(cls, backend: type) -> "Facts":
        """The facts a backend class declares. Its costs and colour are its own (a subclass is another backend, measured
        and drawn apart: a plugin on ttfg's autograd engine is not autograd's colour); what it runs, it inherits."""
        own = vars(backend)
        return cls(backend.name, True, backend.framework, tuple(backend.modules), tuple(backend.phases),
                   backend.uncounted, tuple(backend.persistent_caches), dict(own.get("costs", {})), own.get("color"))

    @property
    def runs_on(self) -> frozenset[str]:
        """What its processes run on: its framework and the modules it imports (a Flax backend runs on jaxlib's XLA
        as jax.jit does). Empty for a backend that cannot load: nothing is known about it."""
        return frozenset({self.framework, *self.modules}) if self.known else frozenset()


def problem(backend: type) -> str | None:
    """Why the facts a backend class declares cannot be used (None when they can), for ``engines.contract_problem``."""
    caches = getattr(backend, "persistent_caches", None)
    if not isinstance(caches, (tuple, list)) or not all(isinstance(c, PersistentCache) for c in caches):
        return f"'persistent_caches' must be a tuple of ttfg.engines.declared.PersistentCache, got {caches!r}"
    for cache in caches:
        found = cache.problem()
        if found:
            return f"persistent cache {cache.what!r} {found}"
    costs = getattr(backend, "costs", None)
    if not isinstance(costs, Mapping) or not all(isinstance(k, str) and isinstance(v, Cost) for k, v in costs.items()):
        return f"'costs' must map model names to ttfg.engines.declared.Cost, got {costs!r}"
    for model, cost in costs.items():
        found = cost.problem()
        if found:
            return f"costs[{model!r}] {found}"
    color = getattr(backend, "color", None)
    if color is not None and not (isinstance(color, str) and _COLOR.fullmatch(color)):
        return f"'color' must be None or a colour like '#1f5fa8', got {color!r}"
    uncounted = getattr(backend, "uncounted", None)
    if uncounted is not None and not isinstance(uncounted, str):
        return f"'uncounted' must be None or a sentence (str), got {uncounted!r}"
    return None


__all__ = ["Cost", "Facts", "PersistentCache", "problem"]
