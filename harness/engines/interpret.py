"""The one interpreter of ``ttfg.models.spec`` trees, shared by every backend.

A backend supplies ``ops``: an object with the array primitives below (same names in
every framework, in the manner of Keras' backend modules) and a ``repeat`` strategy
that applies a :class:`ttfg.models.spec.Repeat` either unrolled or as a scan. Everything
else (walking the tree, naming parameters, residual adds) is written once here, so
all backends differentiate exactly the same function.

Required ``ops`` members::

    conv2d(x, w, b, stride, padding, groups)   dense(x, w, b)       gelu(x)
    layer_norm(x, w, b, eps)                   layer_scale(x, g)    mean_pool(x)
    flatten(x)                                 repeat(layer, params, x, prefix)
    attention(q, k, v, heads, causal)

``attention`` takes the projected NCT queries, keys and values and returns the joined
heads (NCT) before the output projection; the projections themselves are ``dense``.
"""

from __future__ import annotations

from typing import Any, Mapping

from ttfg.models.spec import (
    GELU, Chain, Conv, Dense, Flatten, Layer, LayerNorm, LayerScale, MeanPool, Position, Repeat, SelfAttention, Skip,
    join,
)


def forward(layer: Layer, params: Mapping[str, Any], x: Any, ops: Any, prefix: str = "") -> Any:
    """Apply ``layer`` to ``x`` with weights looked up by dotted name in ``params``."""
    kind = type(layer)
    if kind is Chain:
        for name, child in layer.layers:
            x = forward(child, params, x, ops, join(prefix, name))
        return x
    if kind is Skip:
        return x + forward(layer.inner, params, x, ops, prefix)
    if kind is Repeat:
        return ops.repeat(layer, params, x, prefix)
    if kind is Conv:
        bias = params[join(prefix, "bias")] if layer.bias else None
        return ops.conv2d(x, params[join(prefix, "weight")], bias, layer.stride, layer.padding, layer.groups)
    if kind is Dense:
        bias = params[join(prefix, "bias")] if layer.bias else None
        return ops.dense(x, params[join(prefix, "weight")], bias)
    if kind is LayerNorm:
        return ops.layer_norm(x, params[join(prefix, "weight")], params[join(prefix, "bias")], layer.eps)
    if kind is LayerScale:
        return ops.layer_scale(x, params[join(prefix, "gamma")])
    if kind is GELU:
        return ops.gelu(x)
    if kind is MeanPool:
        return ops.mean_pool(x)
    if kind is Flatten:
        return ops.flatten(x)
    if kind is Position:
        return x + params[join(prefix, "weight")]  # (C, T) broadcasts over the batch of (N, C, T)
    if kind is SelfAttention:
        proj = dict(layer.children())
        q, k, v = (forward(proj[n], params, x, ops, join(prefix, n)) for n in ("q", "k", "v"))
        return forward(proj["o"], params, ops.attention(q, k, v, layer.heads, layer.causal), ops, join(prefix, "o"))
    raise TypeError(f"no interpreter rule for layer type {kind.__name__}")


def block_params(params: Mapping[str, Any], prefix: str, index: int | str) -> dict[str, Any]:
    """The weights of one copy of a repeated block, keyed relative to the block."""
    head = f"{join(prefix, str(index))}."
    return {k[len(head):]: v for k, v in params.items() if k.startswith(head)}


def unrolled_repeat(ops: Any):
    """A ``repeat`` strategy that applies every copy in a Python loop (``chain=unrolled``)."""

    def repeat(layer: Repeat, params: Mapping[str, Any], x: Any, prefix: str) -> Any:
        for i in range(layer.count):
            x = forward(layer.block, params, x, ops, join(prefix, str(i)))
        return x

    return repeat


STACK_MARK = "*"


def stacked_name(prefix: str, rel: str) -> str:
    """Key of the stacked weights of a repeated block: ``blocks.*.conv1.weight``."""
    return join(join(prefix, STACK_MARK), rel)


def repeats(layer: Layer, prefix: str = ""):
    """Every ``Repeat`` node in the tree with its dotted prefix."""
    if type(layer) is Repeat:
        yield prefix, layer
        return
    for name, child in layer.children():
        yield from repeats(child, join(prefix, name))


def stack_repeats(network: Layer, weights: Mapping[str, Any], stack) -> dict[str, Any]:
    """Weights with every repeated block's copies stacked along a new leading axis.

    ``stack`` is the framework's stack function. Names outside repeats are unchanged;
    ``blocks.{0..n-1}.conv1.weight`` becomes one ``blocks.*.conv1.weight``.
    """
    out = dict(weights)
    for prefix, layer in repeats(network):
        per_copy = [block_params(weights, prefix, i) for i in range(layer.count)]
        for rel in per_copy[0]:
            out[stacked_name(prefix, rel)] = stack([p[rel] for p in per_copy])
            for i in range(layer.count):
                del out[join(join(prefix, str(i)), rel)]
    return out


def unstack_repeats(network: Layer, grads: Mapping[str, Any]) -> dict[str, Any]:
    """Inverse of :func:`stack_repeats` on NumPy arrays (indexing the leading axis)."""
    out = dict(grads)
    for prefix, layer in repeats(network):
        head = f"{join(prefix, STACK_MARK)}."
        for key in [k for k in out if k.startswith(head)]:
            rel, stacked = key[len(head):], out.pop(key)
            for i in range(layer.count):
                out[join(join(prefix, str(i)), rel)] = stacked[i]
    return out
