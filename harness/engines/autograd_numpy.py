"""``autograd``: HIPS autograd tracing NumPy code, weights passed as a dict argument."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from .interpret import forward
from .base import Backend, Engine
from .declared import Cost


def numpy_loss(spec, dtype):
    """``loss(params, x)`` over autograd.numpy, and the ops it uses."""
    import autograd.numpy as anp
    from autograd.scipy.special import erf

    from .numpy_ops import NumpyOps

    ops = NumpyOps(anp, erf)

    def loss(params, x):
        return anp.sum(forward(spec.network, params, x, ops))

    return loss


class AutogradEngine(Engine):
    def __init__(self, spec, weights, x, dtype=np.float32):
        import autograd

        self.params = {k: np.asarray(v, dtype) for k, v in weights.items()}
        self.x = np.asarray(x, dtype)
        self.loss = numpy_loss(spec, dtype)
        self.fn = autograd.value_and_grad(self.loss)

    def gradient(self):
        return self.fn(self.params, self.x)

    def to_numpy(self, result):
        loss, grads = result
        return float(loss), {k: np.asarray(v) for k, v in grads.items()}

    def counters(self) -> dict[str, Any]:
        return {"autograd_primitives": count_primitives(self.loss, self.params, self.x)}


def count_primitives(loss, params, x) -> int:
    """Primitive applications autograd records on its tape for one forward pass."""
    from autograd.tracer import Node, trace

    class CountingNode(Node):
        count = 0

        def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
            CountingNode.count += 1

        def initialize_root(self, *args, **kwargs):
            pass

    trace(CountingNode.new_root(), lambda p: loss(p, x), params)
    return CountingNode.count


class AutogradBackend(Backend):
    name = "autograd"
    framework = "autograd"
    modules = ("autograd",)
    release_requirements = ("autograd=={version}", "scipy")  # the backend imports autograd.scipy.special
    supports = {"params": ("args",), "chain": ("unrolled",)}
    description = "HIPS autograd on NumPy: tape-based reverse mode, no compilation"
    #: One cold process per model (docs/measurements.md, "Time to first gradient" and "transformer_tiny"; 2-core VM,
    #: torch 2.13.0+cpu, jax 0.10.2): seconds from spawn to first gradient, and of the first gradient.
    costs = {"resnet15": Cost(1.56, 0.0694), "convnext_tiny": Cost(3.51, 1.62),
             "transformer_tiny": Cost(0.615, 0.0255)}
    color = "#1a9e9e"
    why_not = {
        "params=closure": "autograd records a tape at run time; capturing the weights is the same computation as passing them",
        "chain=scan": "autograd has no scan primitive and nothing to compile once",
    }

    def import_framework(self) -> None:
        import autograd  # noqa: F401
        import autograd.numpy  # noqa: F401
        import autograd.scipy.special  # noqa: F401

    def build(self, spec, weights: Mapping[str, np.ndarray], x, variant) -> Engine:
        return AutogradEngine(spec, weights, x)
