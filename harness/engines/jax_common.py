"""Shared JAX pieces: array primitives, the loss, weight conversion, compile events.

Imported only by the JAX backends, after the framework import phase.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .interpret import forward, stack_repeats, stacked_name, unrolled_repeat, unstack_repeats
from ttfg.models.spec import param_specs

# jax.monitoring duration events of one compilation, by the phase they belong to.
COMPILE_EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration": "trace",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
    "/jax/core/compile/backend_compile_duration": "compile",
}

# jax.monitoring events of the persistent compilation cache, by counter name.
CACHE_EVENTS = {
    "/jax/compilation_cache/cache_hits": "persistent_cache_hits",
    "/jax/compilation_cache/cache_misses": "persistent_cache_misses",
}


class JaxOps:
    def __init__(self, scan: bool):
        self.repeat = self._scan_repeat if scan else unrolled_repeat(self)

    @staticmethod
    def conv2d(x, w, b, stride, padding, groups):
        y = lax.conv_general_dilated(
            x, w, (stride, stride), [(padding, padding)] * 2,
            dimension_numbers=("NCHW", "OIHW", "NCHW"), feature_group_count=groups,
        )
        return y if b is None else y + b.reshape(1, -1, 1, 1)

    @staticmethod
    def _channel(v, ndim):
        return v.reshape((1, -1) + (1,) * (ndim - 2))

    def dense(self, x, w, b):
        y = x @ w.T if x.ndim == 2 else jnp.einsum("nchw,oc->nohw", x, w)
        return y if b is None else y + self._channel(b, y.ndim)

    def layer_norm(self, x, w, b, eps):
        mu = jnp.mean(x, axis=1, keepdims=True)
        var = jnp.mean((x - mu) ** 2, axis=1, keepdims=True)
        return (x - mu) / jnp.sqrt(var + eps) * self._channel(w, x.ndim) + self._channel(b, x.ndim)

    @staticmethod
    def gelu(x):
        return jax.nn.gelu(x, approximate=False)  # JAX defaults to the tanh approximation

    def layer_scale(self, x, g):
        return x * self._channel(g, x.ndim)

    @staticmethod
    def mean_pool(x):
        return jnp.mean(x, axis=(2, 3))

    @staticmethod
    def flatten(x):
        return x.reshape(x.shape[0], -1)

    def _scan_repeat(self, layer, params, x, prefix):
        rels = param_specs(layer.block)
        stacked = {rel: params[stacked_name(prefix, rel)] for rel in rels}

        def body(h, p):
            return forward(layer.block, p, h, self), None

        y, _ = lax.scan(body, x, stacked)
        return y


def make_loss(spec, scan: bool):
    ops = JaxOps(scan)

    def loss(params, x):
        return jnp.sum(forward(spec.network, params, x, ops))

    return loss


def device_weights(spec, weights, x, scan: bool):
    """NumPy weights to device arrays (stacked per repeat for ``scan``), materialised."""
    host = stack_repeats(spec.network, weights, np.stack) if scan else dict(weights)
    params = {k: jnp.asarray(v) for k, v in host.items()}
    xj = jnp.asarray(x)
    jax.block_until_ready((params, xj))
    return params, xj


def to_numpy(spec, result, scan: bool):
    loss, grads = result
    out = {k: np.asarray(v) for k, v in grads.items()}
    if scan:
        out = unstack_repeats(spec.network, out)
        out = {name: out[name] for name in spec.param_specs()}  # the weights' order
    return float(loss), out


class CompileEvents:
    """Collects jax.monitoring compile durations; one listener per process."""

    _instance: "CompileEvents | None" = None

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.counts: dict[str, int] = defaultdict(int)
        jax.monitoring.register_event_duration_secs_listener(self._on_duration)
        jax.monitoring.register_event_listener(self._on_event)

    @classmethod
    def get(cls) -> "CompileEvents":
        if cls._instance is None:
            cls._instance = CompileEvents()
        return cls._instance

    def _on_duration(self, event: str, duration: float, **kwargs: Any) -> None:
        phase = COMPILE_EVENTS.get(event)
        if phase:
            self.seconds[phase] += duration
            self.counts[phase] += 1

    def _on_event(self, event: str, **kwargs: Any) -> None:
        if event in CACHE_EVENTS:
            self.counts[CACHE_EVENTS[event]] += 1

    def snapshot(self) -> tuple[dict[str, float], dict[str, int]]:
        return dict(self.seconds), dict(self.counts)


def first_gradient_counts(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """Compile-event counters of one window: backend compiles and persistent-cache hits."""
    return {
        "backend_compiles": after.get("compile", 0) - before.get("compile", 0),
        "persistent_cache_hits": after.get("persistent_cache_hits", 0) - before.get("persistent_cache_hits", 0),
    }


def jaxpr_equations(jaxpr) -> int:
    """Equations in a jaxpr, recursing into sub-jaxprs (scan bodies, custom rules, pjit)."""
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    total = 0
    for eqn in jaxpr.eqns:
        total += 1
        for value in eqn.params.values():
            for sub in value if isinstance(value, (tuple, list)) else (value,):
                if hasattr(sub, "eqns") or hasattr(getattr(sub, "jaxpr", None), "eqns"):
                    total += jaxpr_equations(sub)
    return total


def hlo_ops(module_text: str) -> int:
    """Operations in a StableHLO module's text (one ``stablehlo.``/``chlo.`` op per line)."""
    count = 0
    for line in module_text.splitlines():
        stripped = line.strip()
        if "stablehlo." in stripped or "chlo." in stripped:
            count += 1
    return count




__all__ = [
    "CompileEvents", "JaxOps", "device_weights", "hlo_ops", "jaxpr_equations",
    "make_loss", "to_numpy",
]
