"""Reference models, defined once and backend-neutral.

``models.load(name, **options)`` returns a :class:`ttfg.models.spec.ModelSpec`; nothing in
this package imports a framework. Other packages add models through the ``ttfg.models``
entry-point group (``ttfg.models.plugins``): the target is a builder, a callable taking the
model's size options as keywords and returning a ``ModelSpec``, like ``resnet15.build``.
"""

from __future__ import annotations

import functools
from typing import Callable

from . import plugins
from .plugins import BUILT_IN, PluginError
from .spec import ModelSpec

GROUP = "ttfg.models"
_BUILTIN: dict[str, str] = {
    "resnet15": "ttfg.models.resnet15:build",
    "convnext_tiny": "ttfg.models.convnext_tiny:build",
    "transformer_tiny": "ttfg.models.transformer_tiny:build",
}

#: One-line descriptions of the built-in models, for ``ttfg list`` (a plugin's is its builder's docstring).
DESCRIPTIONS = {
    "resnet15": "15 residual blocks of two linear 3x3 convs, 4 channels, input 1x4x2x2 (option: blocks=N)",
    "convnext_tiny": "ConvNeXt-T, depths 3-3-9-3, widths 96..768, input 1x1x32x32 (options: depths=3x3x9x3, widths=96x192x384x768)",
    "transformer_tiny": "GPT-style pre-norm causal transformer, 4 blocks, width 64, 4 heads, input 1x16x32 "
                        "(options: blocks=N, width=D, heads=H, seq=T)",
}


_REGISTRY = plugins.Registry(GROUP, _BUILTIN, "model")
names = _REGISTRY.names
entry = _REGISTRY.entry
shadowed = _REGISTRY.shadowed


def refresh() -> None:
    """Read the installed entry points again (after ``sys.path`` changed, in tests)."""
    _REGISTRY.refresh()
    builder.cache_clear()


@functools.cache
def builder(name: str) -> Callable[..., ModelSpec]:
    """The model's builder; :class:`PluginError` when a plugin's cannot be loaded or is not callable."""
    found = entry(name)
    obj = plugins.load(found)
    if not callable(obj):
        raise PluginError(f"{found.describe()}: {found.target} is a {type(obj).__name__}, not a model builder")
    return obj


def description(name: str) -> str:
    """The one-line description shown by ``ttfg list``."""
    if name in DESCRIPTIONS:
        return DESCRIPTIONS[name]
    doc = (builder(name).__doc__ or "").strip()
    return doc.splitlines()[0] if doc else ""


def load(name: str, **options) -> ModelSpec:
    """Build the spec of model ``name``; options are the model's size knobs.

    Raises ``KeyError`` naming the known models for an unknown name, ``ValueError``
    for options the model does not take, and :class:`PluginError` for a plugin model
    that cannot be loaded or does not return a ``ModelSpec``.
    """
    build = builder(name)
    try:
        spec = build(**options)
    except TypeError as exc:
        raise ValueError(f"model {name!r} does not take options {sorted(options)}: {exc}") from None
    if not isinstance(spec, ModelSpec):
        raise PluginError(f"{entry(name).describe()}: the builder returned a {type(spec).__name__}, "
                          f"not a ttfg.models.spec.ModelSpec")
    return spec


def defaults(name: str) -> dict:
    """The size options a model takes, with their default values (from its builder's signature)."""
    import inspect

    return {k: p.default for k, p in inspect.signature(builder(name)).parameters.items()
            if p.default is not inspect.Parameter.empty}


__all__ = ["BUILT_IN", "DESCRIPTIONS", "ModelSpec", "PluginError", "builder", "defaults", "description", "entry",
           "load", "names", "refresh", "shadowed"]
