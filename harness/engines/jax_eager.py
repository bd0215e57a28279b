"""``jax.eager``: ``value_and_grad`` without ``jit``, dispatching op by op.

Each primitive is compiled on first use, so the first gradient is a storm of small
XLA compiles; the compile events (``jax.monitoring``) split it into trace, lower and
compile, and ``execute`` is the remainder. ``chain=scan`` still applies ``lax.scan``,
whose body is compiled once.
"""

from __future__ import annotations

import time
from typing import Any, Mapping

from . import caches
from .base import Backend, Engine
from .declared import Cost
from .jax_jit import JAX_RELEASE


class JaxEagerEngine(Engine):
    def __init__(self, spec, weights, x, variant):
        import jax

        from . import jax_common

        self.jc = jax_common
        self.spec = spec
        self.scan = variant["chain"] == "scan"
        self.events = jax_common.CompileEvents.get()
        self.params, self.x = jax_common.device_weights(spec, weights, x, self.scan)
        self.loss = jax_common.make_loss(spec, self.scan)
        self.fn = jax.value_and_grad(self.loss)

    def first_gradient(self):
        mark = self.events.mark()
        start = time.perf_counter()
        result = self.gradient()
        total = time.perf_counter() - start
        seconds, self.first_counts = self.events.since(mark)
        phases = {p: seconds.get(p, 0.0) for p in ("trace", "lower", "compile")}
        phases["execute"] = max(total - sum(phases.values()), 0.0)
        return result, phases

    def gradient(self):
        import jax

        return jax.block_until_ready(self.fn(self.params, self.x))

    def to_numpy(self, result):
        return self.jc.to_numpy(self.spec, result, self.scan)

    def counters(self) -> dict[str, Any]:
        import jax

        return {
            "jaxpr_eqns": self.jc.jaxpr_equations(jax.make_jaxpr(self.fn)(self.params, self.x)),
            **getattr(self, "first_counts", {}),
        }


class JaxEagerBackend(Backend):
    name = "jax.eager"
    framework = "jax"
    modules = ("jax", "jaxlib")
    release_requirements = JAX_RELEASE
    phases = ("trace", "lower", "compile", "execute")  # the compile events' seconds; execute is the rest
    supports = {"params": ("args",), "chain": ("unrolled", "scan")}
    description = "jax.value_and_grad without jit: op-by-op dispatch, one small compile per new primitive"
    persistent_caches = (caches.JAX,)  # each primitive's compile
    #: One cold process per model (docs/measurements.md, "Time to first gradient" and "transformer_tiny"; 2-core VM,
    #: torch 2.13.0+cpu, jax 0.10.2): seconds from spawn to first gradient, and of the first gradient.
    costs = {"resnet15": Cost(3.27, 1.3), "convnext_tiny": Cost(24.54, 21.75),
             "transformer_tiny": Cost(6.88, 5.33)}
    color = "#6fa8dc"
    why_not = {"params=closure": "without jit there is no trace to capture constants in; closure equals args"}

    def import_framework(self) -> None:
        import jax
        import jax.numpy  # noqa: F401

        from . import jax_common  # noqa: F401

    def build(self, spec, weights: Mapping, x, variant) -> Engine:
        return JaxEagerEngine(spec, weights, x, variant)
