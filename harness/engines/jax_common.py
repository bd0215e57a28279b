"""Shared JAX pieces: array primitives, the loss, weight conversion, compile events.

Imported only by the JAX backends, after the framework import phase.

Every jax release from 0.4.30 to 0.10.2 runs these backends unchanged (checked with
``ttfg check`` and ``ttfg run`` in one environment per release; ``tests/test_jax_releases.py``).
What differs between releases is handled here by feature tests, never by version strings:

- ``jit(f).trace()`` (the trace/lower split of the jax.jit backend) exists from 0.4.29;
  a release without it is refused with :class:`~ttfg.errors.Unsupported`
  (:func:`require_trace_stage`), not timed with a different split.
- The ``jax.monitoring`` events below keep their names over the whole range, but up to
  jax 0.9.2 they nest: a jitted function traced while another is traced records its own
  trace event inside the caller's, and lowering a ``lax.scan`` traces inside the
  lowering event. Summing durations billed that time twice: jax.eager resnet15
  ``chain=scan`` on jax 0.4.37 has 7 of its 10 trace events inside lowerings, whose
  durations sum to 190 ms for 148 ms of lowering (0.5.0: 88 for 68 ms); jax 0.10 nests
  none. :func:`exclusive_seconds` bills every instant once, to the innermost event.

Not adapted, on purpose: jaxlib 0.5.3 to 0.8.1 compute a wrong gradient for
``params=closure,chain=unrolled`` on CPU (resnet15: up to 59 % off in 56 of 60 tensors;
XLA's constant folding of the captured weights, since
``XLA_FLAGS=--xla_disable_hlo_passes=constant_folding`` gives the right one). That is the
release's own result, and ``ttfg check`` reports it as a mismatch rather than this module
hiding it.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from typing import Any, Iterable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..errors import Unsupported
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
    # Recorded at every lookup (a miss records ``cache_misses`` only when it writes an entry); read by the probe's
    # ``measure/cache_watch.py``, never a backend's counter.
    "/jax/compilation_cache/compile_requests_use_cache": "persistent_cache_lookups",
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
        if x.ndim == 2:
            y = x @ w.T
        elif x.ndim == 3:
            y = jnp.einsum("nct,oc->not", x, w)
        else:
            y = jnp.einsum("nchw,oc->nohw", x, w)
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

    @staticmethod
    def attention(q, k, v, heads, causal):
        n, c, t = q.shape
        d = c // heads
        q, k, v = (a.reshape(n, heads, d, t) for a in (q, k, v))
        scores = jnp.einsum("nhdi,nhdj->nhij", q, k) / math.sqrt(d)
        if causal:
            scores = jnp.where(np.tril(np.ones((t, t), bool)), scores, -jnp.inf)
        weights = jax.nn.softmax(scores, axis=-1)
        return jnp.einsum("nhij,nhdj->nhdi", weights, v).reshape(n, c, t)

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
    """Collects jax.monitoring compile events; one listener per process.

    Each duration event is kept as a span ``(phase, start, end)`` on ``time.perf_counter``
    (its end is when jax reports it, its start that minus the duration), so a window's
    phase seconds can count nested events once (:func:`exclusive_seconds`).
    """

    _instance: "CompileEvents | None" = None

    def __init__(self) -> None:
        self.spans: list[tuple[str, float, float]] = []
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
            end = time.perf_counter()
            self.spans.append((phase, end - duration, end))
            self.counts[phase] += 1

    def _on_event(self, event: str, **kwargs: Any) -> None:
        if event in CACHE_EVENTS:
            self.counts[CACHE_EVENTS[event]] += 1

    def mark(self) -> tuple[int, dict[str, int]]:
        """Where the events stand now; give it to :meth:`since` after a window."""
        return len(self.spans), dict(self.counts)

    def since(self, mark: tuple[int, dict[str, int]]) -> tuple[dict[str, float], dict[str, int]]:
        """Exclusive seconds per phase, and the counters, of the events after ``mark``."""
        start, counts_before = mark
        return exclusive_seconds(self.spans[start:]), first_gradient_counts(counts_before, dict(self.counts))


def exclusive_seconds(spans: Iterable[tuple[str, float, float]]) -> dict[str, float]:
    """Seconds per phase with every instant billed once, to the innermost span running then.

    ``spans`` are ``(phase, start, end)``. Spans of one thread nest (a trace inside a
    trace, or inside a lowering) and are reported as they end, inner ones first; a span
    that clock jitter lets end after the span it started in is cut at that span's end.
    One pass over the spans sorted by start: 49 spans (jax.eager resnet15's first
    gradient) take about 0.1 ms, inside the timed window.
    """
    out: dict[str, float] = defaultdict(float)
    stack: list[tuple[str, float]] = []  # open spans, innermost last: (phase, end)
    cursor = float("-inf")  # up to where time has been billed

    def close_until(t: float) -> None:
        nonlocal cursor
        while stack and stack[-1][1] <= t:
            phase, end = stack.pop()
            out[phase] += max(end - cursor, 0.0)
            cursor = max(cursor, end)

    # Outer spans first; of two with the same bounds the one reported first ended first: inner.
    ordered = sorted(enumerate(spans), key=lambda i_s: (i_s[1][1], -i_s[1][2], -i_s[0]))
    for phase, start, end in (s for _, s in ordered):
        if end <= start:
            continue
        close_until(start)
        if stack:
            out[stack[-1][0]] += max(start - cursor, 0.0)
            end = min(end, stack[-1][1])
        cursor = max(cursor, start)
        stack.append((phase, end))
    close_until(float("inf"))
    return {phase: seconds for phase, seconds in out.items() if seconds > 0}


def first_gradient_counts(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """Compile-event counters of one window: backend compiles and persistent-cache hits."""
    return {
        "backend_compiles": after.get("compile", 0) - before.get("compile", 0),
        "persistent_cache_hits": after.get("persistent_cache_hits", 0) - before.get("persistent_cache_hits", 0),
    }


def require_trace_stage(jitted) -> None:
    """Refuse a jax whose jitted functions cannot ``trace()``: the jax.jit backend splits at it.

    ``jit(f).trace()`` came with jax 0.4.29; before it ``lower()`` traced and lowered in
    one call, so the split this backend reports (trace, lower, compile, execute) cannot
    be measured there, and a different split under the same names would be a wrong number.
    """
    if not callable(getattr(jitted, "trace", None)):
        raise Unsupported(f"jax {jax.__version__} has no jit(f).trace() (added in jax 0.4.29), which the jax.jit "
                          "backend needs to time trace and lower apart")


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
    """Operations in a StableHLO module's text (one ``stablehlo.``/``chlo.`` op per line).

    A line count, not every operation: a reduction prints as one line
    (``stablehlo.reduce ... applies stablehlo.add``) over three operations in its region.
    It is comparable across releases because the printer is: on every jax release from
    0.4.30 to 0.10.2, walking the module's operations (``lowered.compiler_ir()``) finds
    exactly 64 more than this for resnet15 ``chain=unrolled`` and 8 more for ``chain=scan``,
    so every change this count shows between releases is a change of the module.
    """
    count = 0
    for line in module_text.splitlines():
        stripped = line.strip()
        if "stablehlo." in stripped or "chlo." in stripped:
            count += 1
    return count




__all__ = [
    "CompileEvents", "JaxOps", "device_weights", "exclusive_seconds", "hlo_ops", "jaxpr_equations",
    "make_loss", "require_trace_stage", "to_numpy",
]
