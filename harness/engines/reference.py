"""The float64 reference gradient every backend is checked against.

Computed with HIPS autograd over the NumPy primitives in float64, so its rounding
error is far below float32's and any backend that disagrees by more than the
tolerance computes a different function.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from .autograd_numpy import AutogradEngine


def reference_gradient(spec, weights: Mapping[str, np.ndarray], x: np.ndarray) -> tuple[float, dict[str, np.ndarray]]:
    engine = AutogradEngine(spec, weights, x, dtype=np.float64)
    return engine.to_numpy(engine.gradient())


def relative_error(value: np.ndarray, reference: np.ndarray) -> float:
    """``max|value - reference| / max|reference|``: the error relative to the tensor's scale.

    Element-wise relative error is meaningless where the reference is near zero; this
    norm-wise form is the one a float32 computation can be held to.
    """
    reference = np.asarray(reference, np.float64)
    if not reference.size:
        return 0.0
    scale = float(np.max(np.abs(reference)))
    diff = float(np.max(np.abs(np.asarray(value, np.float64) - reference)))
    if scale == 0.0:
        return diff
    return diff / scale


def worst_error(grads: Mapping[str, np.ndarray], reference: Mapping[str, np.ndarray]) -> tuple[float, str]:
    """The largest per-tensor relative error and the tensor it occurs in."""
    worst, where = 0.0, ""
    for name, ref in reference.items():
        err = relative_error(grads[name], ref)
        if err > worst or not where:
            worst, where = err, name
    return worst, where
