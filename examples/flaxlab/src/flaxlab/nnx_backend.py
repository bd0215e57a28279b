"""A ttfg backend whose model is written in Flax NNX: the resnet15 spec as ``nnx.Conv`` modules.

Flax is the front end: the spec (``ttfg.models.spec``) becomes a tree of ``nnx.Module``
objects (``nnx.Conv`` for each convolution, NHWC as Flax has it), the weights are loaded
into their ``nnx.Param`` variables, and the gradient is NNX's functional pattern,
``nnx.split`` into a graph definition and a state, then ``jax.jit(jax.value_and_grad)``
over a function that ``nnx.merge``-s them back. The first gradient goes through jit's AOT
stages, so ttfg sees trace, lower, compile and execute apart: the engine subclasses ttfg's
own jax.jit engine, which times them and counts jaxpr equations and HLO ops.

The gradients come back keyed and shaped like the spec's weights (OIHW kernels, dotted
names), so ``ttfg check`` compares them with the float64 reference as for every backend.
It declares jax's persistent compilation cache as ttfg's jax.jit does, so a warm gate
(``ttfg gate --cache warm``) runs it warm.
"""

from __future__ import annotations

from typing import Any, Mapping

from ttfg.engines import Backend, Engine, caches
from ttfg.engines.jax_jit import JaxJitEngine
from ttfg.errors import Unsupported

from .layers import conv_forward


def _convs(layer, prefix: str = ""):
    """``(dotted prefix, Conv spec)`` of every convolution, in application order."""
    from ttfg.models.spec import Conv, join

    if isinstance(layer, Conv):
        yield prefix, layer
    for name, child in layer.children():
        yield from _convs(child, join(prefix, name))


class SpecNetwork:
    """Builds the NNX module tree of a spec; kept out of the module class so nnx sees plain data."""

    @staticmethod
    def build(spec, weights: Mapping[str, Any]):
        import jax.numpy as jnp
        from flax import nnx

        from ttfg.models.spec import Chain, Conv, MeanPool, Repeat, Skip

        names = [prefix for prefix, _ in _convs(spec.network)]

        def check(layer):
            if not isinstance(layer, (Chain, Conv, MeanPool, Repeat, Skip)):
                raise Unsupported(f"flaxlab.nnx builds Conv, Chain, Skip, Repeat and MeanPool; "
                                  f"{type(layer).__name__} is not one of them")
            if isinstance(layer, Conv) and (layer.groups != 1 or not layer.bias):
                raise Unsupported("flaxlab.nnx builds convolutions with bias and one group")
            for _, child in layer.children():
                check(child)

        check(spec.network)

        class Network(nnx.Module):
            def __init__(self):
                convs = []
                for prefix, conv in _convs(spec.network):
                    w = weights[f"{prefix}.weight"].transpose(2, 3, 1, 0)  # OIHW -> HWIO, Flax's layout
                    b = weights[f"{prefix}.bias"]
                    layer = nnx.Conv(conv.in_channels, conv.out_channels, (conv.kernel, conv.kernel),
                                     strides=conv.stride, padding=[(conv.padding, conv.padding)] * 2,
                                     kernel_init=lambda *_, w=w: jnp.asarray(w),
                                     bias_init=lambda *_, b=b: jnp.asarray(b), rngs=nnx.Rngs(0))
                    convs.append(layer)
                self.convs = nnx.List(convs)

            def __call__(self, x):
                index = {name: i for i, name in enumerate(names)}
                return _apply(spec.network, x, self.convs, index, "")

        return Network(), names


def _apply(layer, x, convs, index, prefix):
    import jax.numpy as jnp

    from ttfg.models.spec import Chain, Conv, MeanPool, Repeat, Skip, join

    if isinstance(layer, Conv):
        return conv_forward(convs[index[prefix]], x)
    if isinstance(layer, Skip):
        return x + _apply(layer.inner, x, convs, index, prefix)
    if isinstance(layer, (Chain, Repeat)):
        for name, child in layer.children():
            x = _apply(child, x, convs, index, join(prefix, name))
        return x
    if isinstance(layer, MeanPool):
        return jnp.mean(x, axis=(1, 2))  # NHWC
    raise Unsupported(f"flaxlab.nnx: no rule for {type(layer).__name__}")


class NnxEngine(JaxJitEngine):
    """The NNX model's gradient, timed as ttfg's own jax.jit times its (the AOT stages, the counters):
    only how the function and its arguments are made, and how the gradients come back, differ."""

    def __init__(self, spec, weights, x):
        import jax
        import jax.numpy as jnp
        from flax import nnx

        from ttfg.engines import jax_common

        self.jc = jax_common
        self.spec = spec
        self.events = jax_common.CompileEvents.get()
        model, self.names = SpecNetwork.build(spec, weights)
        graphdef, state = nnx.split(model)
        xj = jnp.asarray(x.transpose(0, 2, 3, 1))  # NCHW -> NHWC

        def loss(state, x):
            return jnp.sum(nnx.merge(graphdef, state)(x))

        self.fn, self.args = jax.jit(jax.value_and_grad(loss)), (state, xj)
        jax.block_until_ready(self.args)
        self.compiled = self.traced = self.lowered = None

    def to_numpy(self, result):
        import numpy as np

        loss, grads = result
        out = {}
        for i, name in enumerate(self.names):
            conv = grads["convs"][i]
            out[f"{name}.weight"] = np.asarray(conv["kernel"][...]).transpose(3, 2, 0, 1)  # HWIO -> OIHW
            out[f"{name}.bias"] = np.asarray(conv["bias"][...])
        return float(loss), out


class NnxBackend(Backend):
    name = "flaxlab.nnx"
    framework = "flax"
    modules = ("flax", "jax", "jaxlib")
    supports = {"params": ("args",), "chain": ("unrolled",)}
    why_not = {"params=closure": "the NNX state is always an argument of the jitted function",
               "chain=scan": "flaxlab builds one nnx.Conv per convolution"}
    description = "Flax NNX modules (nnx.Conv), nnx.split/merge, jax.jit(value_and_grad) through its AOT stages"
    #: jax's persistent compilation cache, as ttfg's jax backends declare it: ``ttfg gate --cache warm`` populates it
    #: per side and compares its misses (the engine counts backend compiles and cache hits as jax.jit's does).
    persistent_caches = (caches.JAX,)

    @classmethod
    def availability(cls):
        missing = cls.missing_modules()
        return f"{', '.join(missing)} not installed (pip install flaxlab)" if missing else None

    def import_framework(self) -> None:
        import jax  # noqa: F401
        import jax.numpy  # noqa: F401
        from flax import nnx  # noqa: F401

        from ttfg.engines import jax_common  # noqa: F401  (registers the compile-event listener)

    def build(self, spec, weights, x, variant) -> Engine:
        return NnxEngine(spec, weights, x)
