"""A plugin backend on jax that declares no persistent cache and counts nothing: a library's own backend as its
author might write it, before ``ttfg init``'s starter counted jax's compile events.

It differentiates ttfg's own jax loss (``ttfg.engines.jax_common.make_loss``) under ``jax.jit``, so a
revision that changes that loss changes this backend's traced function too (``tests/test_gate_warm.py``
bakes ``os.getpid()`` into it). Whether its process used jax's persistent cache, and its compiles and
hits, are read by the probe (``ttfg.measure.cache_watch``), never by this backend. jax is imported in
``import_framework`` and ``build`` only: loading the entry point must not import it.
"""

from __future__ import annotations

from ttfg.engines.base import Backend, Engine


class PlainJaxEngine(Engine):
    def __init__(self, spec, weights, x):
        import jax

        from ttfg.engines import jax_common

        self.spec = spec
        self.params, self.x = jax_common.device_weights(spec, weights, x, scan=False)
        self.fn = jax.jit(jax.value_and_grad(jax_common.make_loss(spec, scan=False)))

    def gradient(self):
        import jax

        return jax.block_until_ready(self.fn(self.params, self.x))

    def to_numpy(self, result):
        from ttfg.engines import jax_common

        return jax_common.to_numpy(self.spec, result, scan=False)


class PlainJaxBackend(Backend):
    """jax.jit through a plugin: no ``persistent_caches``, no ``counters``."""

    name = "test.jax"
    framework = "jax"
    modules = ("jax",)
    supports = {"params": ("args",), "chain": ("unrolled",)}
    description = "jax.jit of ttfg's jax loss, registered by the ttfg-test-backends plugin; declares no cache"

    def import_framework(self) -> None:
        import jax
        import jax.numpy  # noqa: F401

    def build(self, spec, weights, x, variant) -> Engine:
        return PlainJaxEngine(spec, weights, x)
