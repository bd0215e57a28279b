"""``gradient()``: the public face of the gradient-engine contract, and its input checks.

Validates the weights against the spec before any framework is touched, so a wrong
key or shape is reported by name rather than as a framework's shape error deep in a
traceback.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from .. import engines
from ..errors import UsageError


def check_weights(spec, weights: Mapping[str, np.ndarray]) -> None:
    """Raise :class:`UsageError` naming missing, unexpected or misshapen tensors."""
    expected = spec.param_specs()
    missing = [k for k in expected if k not in weights]
    extra = [k for k in weights if k not in expected]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing {_some(missing)}")
        if extra:
            parts.append(f"unexpected {_some(extra)}")
        raise UsageError(f"weights do not match model {spec.describe()}: {'; '.join(parts)}")
    for name, ps in expected.items():
        shape = tuple(np.shape(weights[name]))
        if shape != ps.shape:
            raise UsageError(f"weight {name!r} has shape {shape}, model {spec.describe()} expects {ps.shape}")


def check_input(spec, x: np.ndarray) -> None:
    if tuple(np.shape(x)) != tuple(spec.input_shape):
        raise UsageError(f"input has shape {tuple(np.shape(x))}, model {spec.describe()} expects {spec.input_shape}")


def _some(names: list[str], limit: int = 4) -> str:
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def gradient(backend: str, spec, weights: Mapping[str, np.ndarray], x: np.ndarray, **variant: str):
    """``(loss, grads)`` of ``sum(model(x))`` with one backend.

    ``grads`` is keyed and shaped exactly like ``weights``. Variant axes (``params``,
    ``chain``) default to the backend's own choice; an unsupported one raises
    :class:`ttfg.errors.Unsupported` with the reason.
    """
    cls = engines.get(backend)
    resolved = cls.resolve_variant(variant)
    check_weights(spec, weights)
    check_input(spec, x)
    impl = cls()
    impl.check_available()
    impl.import_framework()
    engine = impl.build(spec, weights, np.asarray(x, np.float32), resolved)
    result, _ = engine.first_gradient()
    return engine.to_numpy(result)
