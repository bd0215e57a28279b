"""``jax.jit``: ``jit(value_and_grad(loss))``, timed through the AOT stages.

The first gradient runs ``trace() -> lower() -> compile() -> call`` with a clock read
between stages, which is what a plain jitted call does internally; the warm gradient
reuses the compiled executable. ``params=closure`` captures the weights in the jitted
function, so they become compile-time constants; ``chain=scan`` applies each repeated
block with ``lax.scan`` over stacked weights.
"""

from __future__ import annotations

import time
from typing import Any, Mapping

from . import caches
from .base import Backend, Engine
from .declared import Cost

#: An environment with jax release ``{version}`` (both jax backends): the ``cpu`` extra pins the
#: jaxlib that release was made for. ``jaxlib=={version}`` would not do: jax 0.4.37 runs on
#: jaxlib 0.4.36 and jax 0.5.2 on jaxlib 0.5.1 (no jaxlib 0.4.37 or 0.5.2 was released).
JAX_RELEASE = ("jax[cpu]=={version}",)


class JaxJitEngine(Engine):
    def __init__(self, spec, weights, x, variant):
        import jax

        from . import jax_common

        self.jc = jax_common
        self.spec = spec
        self.scan = variant["chain"] == "scan"
        self.events = jax_common.CompileEvents.get()
        params, xj = jax_common.device_weights(spec, weights, x, self.scan)
        loss = jax_common.make_loss(spec, self.scan)
        if variant["params"] == "args":
            self.fn, self.args = jax.jit(jax.value_and_grad(loss)), (params, xj)
        else:
            self.fn, self.args = jax.jit(lambda x_: jax.value_and_grad(loss)(params, x_)), (xj,)
        jax_common.require_trace_stage(self.fn)
        self.compiled = None
        self.traced = self.lowered = None

    def first_gradient(self):
        import jax

        clock = time.perf_counter
        mark = self.events.mark()
        t0 = clock()
        self.traced = self.fn.trace(*self.args)
        t1 = clock()
        self.phase_end("trace")
        self.lowered = self.traced.lower()
        t2 = clock()
        self.phase_end("lower")
        self.compiled = self.lowered.compile()
        t3 = clock()
        self.phase_end("compile")
        result = jax.block_until_ready(self.compiled(*self.args))
        t4 = clock()
        _, self.first_counts = self.events.since(mark)
        return result, {"trace": t1 - t0, "lower": t2 - t1, "compile": t3 - t2, "execute": t4 - t3}

    def gradient(self):
        import jax

        if self.compiled is None:
            return jax.block_until_ready(self.fn(*self.args))
        return jax.block_until_ready(self.compiled(*self.args))

    def to_numpy(self, result):
        return self.jc.to_numpy(self.spec, result, self.scan)

    def counters(self) -> dict[str, Any]:
        traced = self.traced or self.fn.trace(*self.args)
        lowered = self.lowered or traced.lower()
        return {
            "jaxpr_eqns": self.jc.jaxpr_equations(traced.jaxpr),
            "hlo_ops": self.jc.hlo_ops(lowered.as_text()),
            **getattr(self, "first_counts", {}),
        }


    def source_lines(self) -> list[dict[str, Any]]:
        from .source_lines import jaxpr_lines

        return jaxpr_lines((self.traced or self.fn.trace(*self.args)).jaxpr)


class JaxJitBackend(Backend):
    name = "jax.jit"
    framework = "jax"
    modules = ("jax", "jaxlib")
    release_requirements = JAX_RELEASE
    phases = ("trace", "lower", "compile", "execute")
    supports = {"params": ("args", "closure"), "chain": ("unrolled", "scan")}
    description = "jax.jit(value_and_grad): trace, lower to StableHLO, XLA compile, run"
    persistent_caches = (caches.JAX,)
    #: One cold process per model (docs/measurements.md, "Time to first gradient" and "transformer_tiny"; 2-core VM,
    #: torch 2.13.0+cpu, jax 0.10.2): seconds from spawn to first gradient, and of the first gradient.
    costs = {"resnet15": Cost(3.81, 1.78), "convnext_tiny": Cost(12.28, 8.87),
             "transformer_tiny": Cost(4.71, 3.39)}
    color = "#1f5fa8"

    def import_framework(self) -> None:
        import jax
        import jax.numpy  # noqa: F401

        from . import jax_common  # noqa: F401  (registers the compile-event listener lazily)

    def build(self, spec, weights: Mapping, x, variant) -> Engine:
        return JaxJitEngine(spec, weights, x, variant)
