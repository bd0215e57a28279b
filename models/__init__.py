"""Reference models, defined once and backend-neutral.

``models.load(name, **options)`` returns a :class:`models.spec.ModelSpec`; nothing in
this package imports a framework.
"""

from __future__ import annotations

from typing import Callable

from . import convnext_tiny, resnet15
from .spec import ModelSpec

_BUILDERS: dict[str, Callable[..., ModelSpec]] = {
    "resnet15": resnet15.build,
    "convnext_tiny": convnext_tiny.build,
}

#: One-line descriptions, for ``ttfg list``.
DESCRIPTIONS = {
    "resnet15": "15 residual blocks of two linear 3x3 convs, 4 channels, input 1x4x2x2 (option: blocks=N)",
    "convnext_tiny": "ConvNeXt-T, depths 3-3-9-3, widths 96..768, input 1x1x32x32 (options: depths=3x3x9x3, widths=96x192x384x768)",
}


def names() -> list[str]:
    """The registered model names."""
    return list(_BUILDERS)


def load(name: str, **options) -> ModelSpec:
    """Build the spec of model ``name``; options are the model's size knobs.

    Raises ``KeyError`` naming the known models for an unknown name and ``ValueError``
    for options the model does not take.
    """
    try:
        builder = _BUILDERS[name]
    except KeyError:
        raise KeyError(f"unknown model {name!r}; known models: {', '.join(_BUILDERS)}") from None
    try:
        return builder(**options)
    except TypeError as exc:
        raise ValueError(f"model {name!r} does not take options {sorted(options)}: {exc}") from None


def defaults(name: str) -> dict:
    """The size options a model takes, with their default values (from its builder's signature)."""
    import inspect

    if name not in _BUILDERS:
        raise KeyError(f"unknown model {name!r}; known models: {', '.join(_BUILDERS)}")
    return {k: p.default for k, p in inspect.signature(_BUILDERS[name]).parameters.items()
            if p.default is not inspect.Parameter.empty}


__all__ = ["DESCRIPTIONS", "ModelSpec", "defaults", "load", "names"]
