"""The gradient-engine contract every backend implements.

A :class:`Backend` turns (spec, weights, input, variant) into an :class:`Engine` in two
timed stages, so the probe can attribute cold-start cost: ``import_framework`` (the
``import`` phase) and ``build`` (spec to framework objects and weights). The engine's
``first_gradient`` is the measured first gradient; it returns the result and whatever
sub-phases the backend can tell apart (``trace``, ``lower``, ``compile``,
``execute``). ``gradient`` is a warm call. ``to_numpy`` turns a result into
``(loss, grads)`` keyed and shaped exactly like the weights.
"""

from __future__ import annotations

import importlib.util
from typing import Any, Callable, ClassVar, Mapping

import numpy as np

from . import variants as _variants
from .declared import Cost, PersistentCache
from ..errors import Unavailable, Unsupported

#: Phases of a first gradient, in order: the keys ``Engine.first_gradient`` may return (each is a
#: ``{phase}_s`` metric of ``ttfg.metrics``). A first gradient a backend cannot divide is all ``execute``.
GRADIENT_PHASES = ("trace", "lower", "compile", "execute")


class Engine:
    """A built model, ready to differentiate. Subclasses override the methods below.

    ``on_phase_end``, when the probe sets it, is called with a phase's name as each
    sub-phase of the first gradient ends (after its clock read, so it is never billed
    to the phase); an instruction sample dumps its counts there. A backend that splits
    its first gradient calls ``self.phase_end(name)`` for every phase but the last.
    """

    on_phase_end: Callable[[str], None] | None = None

    def phase_end(self, name: str) -> None:
        if self.on_phase_end is not None:
            self.on_phase_end(name)

    def first_gradient(self) -> tuple[Any, dict[str, float]]:
        """The first gradient and its sub-phases in seconds (empty when indivisible)."""
        return self.gradient(), {}

    def gradient(self) -> Any:
        raise NotImplementedError

    def to_numpy(self, result: Any) -> tuple[float, dict[str, np.ndarray]]:
        raise NotImplementedError

    def counters(self) -> dict[str, Any]:
        """Structural counters (graph sizes, compile events), measured after the timed calls."""
        return {}

    def source_lines(self) -> list[dict[str, Any]]:
        """The compiled code per model source line (``engines/source_lines.py``: jaxpr equations, FX nodes, graph
        breaks), read after the first gradient; none for a backend that compiles nothing."""
        return []


class Backend:
    """One way to get a gradient. Class attributes describe it without importing anything.

    Its facts (what the harness needs to know before running it: its phases, its persistent
    caches, what its instruction count misses, its cost, its colour) are class attributes with
    defaults a plugin overrides by declaring them; ``engines.contract_problem`` checks them and
    every stage reads them through ``engines.facts(name)`` (``declared.py``).
    """

    name: ClassVar[str]
    framework: ClassVar[str]
    #: Top-level modules that must be importable; checked with find_spec, not imported.
    modules: ClassVar[tuple[str, ...]]
    #: Supported values per variant axis; the first is this backend's default.
    supports: ClassVar[dict[str, tuple[str, ...]]]
    description: ClassVar[str] = ""
    #: Why an axis value is missing, for ``ttfg list`` and skip records.
    why_not: ClassVar[dict[str, str]] = {}
    #: Work of the first gradient that an instruction count of the probe misses (child
    #: processes), or None; the gate's count tier then lets wall time decide "unchanged".
    uncounted: ClassVar[str | None] = None
    #: Requirement lines of an environment that runs this backend on release ``{version}`` of
    #: its framework (``ttfg releases`` builds one per release from them): the framework and
    #: what must come beside it that the framework's own metadata does not bring, such as
    #: jax's matching jaxlib or scipy for autograd. Empty: just ``{framework}=={version}``.
    release_requirements: ClassVar[tuple[str, ...]] = ()
    #: The phases of :data:`GRADIENT_PHASES` its first gradient reports (the keys ``first_gradient``
    #: returns). Declared, so that a guard or a metric of a phase the backend never splits (autograd's
    #: compile) is refused before any process runs, not found missing after minutes of pairs. The
    #: default, ``execute`` alone, is a first gradient the backend cannot divide.
    phases: ClassVar[tuple[str, ...]] = ("execute",)
    #: The persistent compile caches its processes read (``caches.JAX``, ``caches.INDUCTOR``, or one of its own):
    #: a warm gate (``--cache warm``) populates them per side and compares their misses. Empty, the default: it
    #: has none, and a warm gate measures it cold and says so.
    persistent_caches: ClassVar[tuple[PersistentCache, ...]] = ()
    #: Model name -> one cold process's measured cost, for the shard partition's estimate; a model it does not
    #: list costs the median of the built-in backends'. Its own: a subclass does not inherit it.
    costs: ClassVar[Mapping[str, Cost]] = {}
    #: Its colour in every figure and table (``#rrggbb``). Families share a hue (JAX blues, torch warm tones,
    #: HIPS autograd teal); red and green are kept for regressions and improvements. None: a spare colour. Its
    #: own: a subclass does not inherit it (two backends are never drawn alike).
    color: ClassVar[str | None] = None

    @classmethod
    def missing_modules(cls) -> list[str]:
        return [m for m in cls.modules if importlib.util.find_spec(m) is None]

    @classmethod
    def availability(cls) -> str | None:
        """``None`` when usable here, else why not (without importing the framework)."""
        missing = cls.missing_modules()
        if missing:
            return f"{', '.join(missing)} not installed (pip install 'ttfg[{cls.framework}]')"
        return None

    @classmethod
    def requirements_for(cls, version: str) -> tuple[str, ...]:
        """The requirement lines of an environment with release ``version`` of this backend's framework."""
        lines = cls.release_requirements or (f"{cls.framework}=={{version}}",)
        return tuple(line.format(version=version) for line in lines)

    @classmethod
    def default_variant(cls) -> dict[str, str]:
        return {axis: values[0] for axis, values in cls.supports.items()}

    @classmethod
    def resolve_variant(cls, variant: Mapping[str, str]) -> dict[str, str]:
        """Fill unspecified axes with defaults; raise ``Unsupported`` with the reason."""
        chosen = {**cls.default_variant(), **_variants.validate(variant)}
        for axis, value in chosen.items():
            if value not in cls.supports[axis]:
                reason = cls.why_not.get(f"{axis}={value}", "not implemented for this backend")
                raise Unsupported(f"{cls.name} does not support {axis}={value}: {reason}")
        unsupported = cls.unsupported_combination(chosen)
        if unsupported:
            raise Unsupported(f"{cls.name} does not support {_variants.label(chosen)}: {unsupported}")
        return chosen

    @classmethod
    def unsupported_combination(cls, variant: Mapping[str, str]) -> str | None:
        return None

    @classmethod
    def supported_variants(cls) -> list[dict[str, str]]:
        """Every supported combination of axis values, the default first."""
        combos: list[dict[str, str]] = [{}]
        for axis, values in cls.supports.items():
            combos = [{**c, axis: v} for c in combos for v in values]
        return [c for c in combos if cls.unsupported_combination(c) is None]

    def check_available(self) -> None:
        reason = self.availability()
        if reason:
            raise Unavailable(f"{self.name}: {reason}")

    def import_framework(self) -> None:
        """Import the framework (the ``import`` phase)."""
        raise NotImplementedError

    def build(self, spec, weights: Mapping[str, np.ndarray], x: np.ndarray, variant: Mapping[str, str]) -> Engine:
        """Turn the spec and NumPy weights into framework objects (the ``build`` phase)."""
        raise NotImplementedError
