"""Gradient engines: the backend registry: one place that maps a name to the class implementing it.

Entries are import paths (``"module:Class"``), so listing backends imports no framework;
a backend class is loaded only when asked for, and its framework only when the case runs.
Other packages add backends through the ``ttfg.backends`` entry-point group
(``ttfg.models.plugins``): the entry's name is the backend name and its target a
:class:`Backend` subclass. A plugin whose class cannot be loaded or breaks the
contract (:func:`contract_problem`) raises :class:`~ttfg.errors.BrokenPlugin`,
which callers turn into a skipped case with the reason.

A backend's facts (its phases, persistent caches, cost, colour) are read through :func:`facts`,
the one place: declared on its class today, overridden there by measured ones when a process
reports them.
"""

from __future__ import annotations

import functools

from ttfg.models import plugins
from ttfg.models.plugins import Entry, PluginError

from ..errors import BrokenPlugin, UsageError
from . import declared
from . import variants
from .base import GRADIENT_PHASES, Backend, Engine
from .declared import Facts, PersistentCache

GROUP = "ttfg.backends"
_BUILTIN: dict[str, str] = {
    "jax.jit": "ttfg.engines.jax_jit:JaxJitBackend",
    "jax.eager": "ttfg.engines.jax_eager:JaxEagerBackend",
    "torch.eager": "ttfg.engines.torch_eager:TorchEagerBackend",
    "torch.func": "ttfg.engines.torch_func:TorchFuncBackend",
    "torch.compile": "ttfg.engines.torch_compile:TorchCompileBackend",
    "torch.compile.aot_eager": "ttfg.engines.torch_compile:TorchCompileAotEagerBackend",
    "autograd": "ttfg.engines.autograd_numpy:AutogradBackend",
}


#: The built-in backends' names, in registry order.
BUILTIN = tuple(_BUILTIN)
_REGISTRY = plugins.Registry(GROUP, _BUILTIN, "backend")
names = _REGISTRY.names
shadowed = _REGISTRY.shadowed


def refresh() -> None:
    """Read the installed entry points again (after ``sys.path`` changed, in tests)."""
    _REGISTRY.refresh()
    get.cache_clear()
    facts.cache_clear()


def entry(name: str) -> Entry:
    """Where backend ``name`` comes from; :class:`UsageError` naming the known ones for an unknown name."""
    try:
        return _REGISTRY.entry(name)
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None


def contract_problem(cls, name: str) -> str | None:
    """Why ``cls`` cannot serve as backend ``name`` (``None`` when it can), read from its class attributes."""
    if not isinstance(cls, type):
        return f"is a {type(cls).__name__}, not a class"
    if not issubclass(cls, Backend):
        return "is not a subclass of ttfg.engines.Backend"
    if getattr(cls, "name", None) != name:
        return f"declares name {getattr(cls, 'name', None)!r} but is registered as {name!r}"
    if not isinstance(getattr(cls, "framework", None), str):
        return "has no 'framework' (str)"
    modules = getattr(cls, "modules", None)
    if not isinstance(modules, (tuple, list)) or not all(isinstance(m, str) for m in modules):
        return "has no 'modules' (a tuple of importable module names)"
    supports = getattr(cls, "supports", None)
    if not isinstance(supports, dict):
        return "has no 'supports' (axis -> supported values)"
    for axis, allowed in variants.AXES.items():
        values = supports.get(axis)
        if not values or any(v not in allowed for v in values):
            return f"supports[{axis!r}] must list some of {', '.join(allowed)}, got {values!r}"
    phases = getattr(cls, "phases", None)
    if not isinstance(phases, (tuple, list)) or not phases or any(p not in GRADIENT_PHASES for p in phases):
        return f"'phases' must list some of {', '.join(GRADIENT_PHASES)} (those its first gradient reports), got {phases!r}"
    for method in ("import_framework", "build"):
        if getattr(cls, method) is getattr(Backend, method):
            return f"does not implement {method}()"
    return declared.problem(cls)


@functools.cache
def get(name: str) -> type[Backend]:
    """The backend class for ``name``; the module holding it imports no framework.

    Raises :class:`UsageError` for an unknown name and :class:`BrokenPlugin` for a
    plugin that cannot be loaded or does not implement the contract.
    """
    if name == "function":  # every function case's backend (``engines/function.py``): not a listed backend
        from .function import FunctionBackend

        return FunctionBackend
    found = entry(name)
    try:
        cls = plugins.load(found)
    except PluginError as exc:
        raise BrokenPlugin(str(exc)) from None
    problem = contract_problem(cls, name)
    if problem:
        raise BrokenPlugin(f"{found.describe()}: {found.target} {problem}")
    return cls


@functools.cache
def facts(name: str) -> Facts:
    """What is known about backend ``name`` before running it (:class:`~ttfg.engines.declared.Facts`): what its class
    declares, or nothing (``known`` false) for a name that is not registered or a plugin that cannot load."""
    try:
        cls = get(name)
    except Exception:  # unknown, or a plugin that cannot load: nothing is known about it
        return Facts(name)
    return Facts.of(cls)


def runs_on(name: str) -> frozenset[str]:
    """What a backend's processes run on (``Facts.runs_on``): its framework and the modules it imports."""
    return facts(name).runs_on


def probe_caches(name: str | None = None) -> tuple[PersistentCache, ...]:
    """Every persistent cache a probe's environment pins: the built-in backends', then backend ``name``'s own.

    All of them, not only the case's: a process of one backend may load another's framework (a
    Flax backend runs on jax), and a cold sample must find every cache it could read off or empty.
    """
    found: list[PersistentCache] = []
    for backend in (*BUILTIN, *([name] if name else [])):
        found += [c for c in facts(backend).caches if c not in found]
    return tuple(found)


__all__ = ["BUILTIN", "Backend", "Engine", "Facts", "PersistentCache", "contract_problem", "entry", "facts", "get",
           "names", "probe_caches", "refresh", "runs_on", "shadowed"]
