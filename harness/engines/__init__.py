"""Gradient engines: the backend registry: one place that maps a name to the class implementing it.

Entries are import paths, so listing backends imports no framework; a backend class
is loaded only when asked for, and its framework only when the case runs.
"""

from __future__ import annotations

import importlib

from ..errors import UsageError
from .base import Backend, Engine

_REGISTRY: dict[str, str] = {
    "jax.jit": "harness.engines.jax_jit:JaxJitBackend",
    "jax.eager": "harness.engines.jax_eager:JaxEagerBackend",
    "torch.eager": "harness.engines.torch_eager:TorchEagerBackend",
    "torch.func": "harness.engines.torch_func:TorchFuncBackend",
    "torch.compile": "harness.engines.torch_compile:TorchCompileBackend",
    "torch.compile.aot_eager": "harness.engines.torch_compile:TorchCompileAotEagerBackend",
    "autograd": "harness.engines.autograd_numpy:AutogradBackend",
}


def names() -> list[str]:
    """Every registered backend name, in a stable order."""
    return list(_REGISTRY)


def register(name: str, target: str) -> None:
    """Add a backend (``"module:Class"``); tests use it for deliberately broken backends."""
    _REGISTRY[name] = target


def unregister(name: str) -> None:
    _REGISTRY.pop(name, None)


def get(name: str) -> type[Backend]:
    """The backend class for ``name``; the module holding it imports no framework."""
    try:
        target = _REGISTRY[name]
    except KeyError:
        raise UsageError(f"unknown backend {name!r}; known backends: {', '.join(_REGISTRY)}") from None
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


__all__ = ["Backend", "Engine", "get", "names", "register", "unregister"]
