"""The layer vocabulary: a network described as data, with no framework in sight.

Every backend interprets these same nodes (see ``ttfg.engines.interpret``), so a model is
written once and every AD framework differentiates exactly the same function with
exactly the same weights. Conventions shared by all nodes:

* activations are NCHW (4-D), NC (2-D) or, for sequences, NCT (3-D: batch, channels,
  tokens) float arrays; "channels" is always axis 1, so ``Dense`` and ``LayerNorm`` act
  token-wise on a sequence exactly as they act pixel-wise on an image;
* parameter names are dotted paths: a ``Chain``'s child names and a ``Repeat``'s
  indices join the path, ``Skip`` adds nothing, a leaf adds its own parameter names
  (``weight``, ``bias``, ``gamma``);
* weight layouts follow PyTorch: conv ``(out, in // groups, kh, kw)``, dense ``(out, in)``.

Initialisation is deterministic and per tensor: each tensor's values depend only on
the seed and its own dotted name, so a deeper variant of a model shares the weights
of its first blocks with the shallower one, and the order in which tensors are
created never matters.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np


@dataclass(frozen=True)
class ParamSpec:
    """Shape and initialiser of one weight tensor."""

    shape: tuple[int, ...]
    init: str  # "uniform" (bound 1/sqrt(fan_in)), "ones", "zeros", "const"
    fan_in: int = 1
    value: float = 0.0  # for init="const"


class Layer:
    """Base of every node. Leaves declare their parameters; containers hold children."""

    def params(self) -> dict[str, ParamSpec]:
        return {}

    def children(self) -> Iterator[tuple[str, "Layer"]]:
        return iter(())


@dataclass(frozen=True)
class Conv(Layer):
    """2-D convolution, NCHW, zero padding, optional bias and channel groups."""

    in_channels: int
    out_channels: int
    kernel: int
    stride: int = 1
    padding: int = 0
    groups: int = 1
    bias: bool = True

    def __post_init__(self) -> None:
        if self.in_channels % self.groups or self.out_channels % self.groups:
            raise ValueError(
                f"Conv: channels ({self.in_channels} -> {self.out_channels}) "
                f"must be divisible by groups={self.groups}"
            )

    def params(self) -> dict[str, ParamSpec]:
        fan_in = (self.in_channels // self.groups) * self.kernel * self.kernel
        shape = (self.out_channels, self.in_channels // self.groups, self.kernel, self.kernel)
        out = {"weight": ParamSpec(shape, "uniform", fan_in)}
        if self.bias:
            out["bias"] = ParamSpec((self.out_channels,), "uniform", fan_in)
        return out


@dataclass(frozen=True)
class Dense(Layer):
    """Affine map over the channel axis (axis 1), for NC, NCT and NCHW inputs alike.

    Parameters: ``out * in`` weights, plus ``out`` biases when ``bias``.
    """

    in_features: int
    out_features: int
    bias: bool = True

    def params(self) -> dict[str, ParamSpec]:
        out = {"weight": ParamSpec((self.out_features, self.in_features), "uniform", self.in_features)}
        if self.bias:
            out["bias"] = ParamSpec((self.out_features,), "uniform", self.in_features)
        return out


@dataclass(frozen=True)
class LayerNorm(Layer):
    """Normalise over the channel axis (axis 1) at every position, then scale and shift."""

    channels: int
    eps: float = 1e-5

    def params(self) -> dict[str, ParamSpec]:
        return {
            "weight": ParamSpec((self.channels,), "ones"),
            "bias": ParamSpec((self.channels,), "zeros"),
        }


@dataclass(frozen=True)
class GELU(Layer):
    """Exact GELU, x * Phi(x) with the error function (not the tanh approximation)."""


@dataclass(frozen=True)
class LayerScale(Layer):
    """Per-channel learnable scale (ConvNeXt's gamma), initialised to a small constant."""

    channels: int
    init_value: float = 1e-6

    def params(self) -> dict[str, ParamSpec]:
        return {"gamma": ParamSpec((self.channels,), "const", value=self.init_value)}


@dataclass(frozen=True)
class Position(Layer):
    """A learned positional term added to an NCT sequence: ``x + weight`` (broadcast over the batch).

    Parameters: ``channels * length`` (one ``weight`` of shape ``(channels, length)``,
    uniform with bound ``1/sqrt(channels)``).
    """

    channels: int
    length: int

    def params(self) -> dict[str, ParamSpec]:
        return {"weight": ParamSpec((self.channels, self.length), "uniform", self.channels)}


@dataclass(frozen=True)
class SelfAttention(Layer):
    """Multi-head (causal) self-attention over an NCT sequence, scaled dot products.

    ``q``, ``k``, ``v`` and ``o`` are token-wise ``Dense(channels, channels)`` children (so
    their weights are named ``q.weight`` ... ``o.bias``); ``k`` has no bias, because a key
    bias adds the same ``q_i . b`` to every score of query ``i``, which the softmax cancels:
    its gradient is exactly zero, and a float64 reference of zero cannot check anything. Head ``h`` takes channels
    ``h*d .. (h+1)*d - 1`` with ``d = channels // heads``; its scores
    ``q_i . k_j / sqrt(d)`` are masked to ``j <= i`` when ``causal``, turned into weights by a
    softmax over ``j``, and mix the values; ``o`` maps the joined heads back.

    Parameters: ``4 * channels * channels + 3 * channels``.
    """

    channels: int
    heads: int
    causal: bool = True

    def __post_init__(self) -> None:
        if self.heads < 1 or self.channels % self.heads:
            raise ValueError(f"SelfAttention: channels ({self.channels}) must be divisible by heads={self.heads}")

    def children(self) -> Iterator[tuple[str, Layer]]:
        for name in ("q", "k", "v", "o"):
            yield name, Dense(self.channels, self.channels, bias=name != "k")


@dataclass(frozen=True)
class MeanPool(Layer):
    """Global mean over the spatial axes: (N, C, H, W) -> (N, C)."""


@dataclass(frozen=True)
class Flatten(Layer):
    """(N, ...) -> (N, prod(...))."""


@dataclass(frozen=True)
class Chain(Layer):
    """Named children applied in order."""

    layers: tuple[tuple[str, Layer], ...]

    def children(self) -> Iterator[tuple[str, Layer]]:
        return iter(self.layers)


@dataclass(frozen=True)
class Skip(Layer):
    """Residual connection: ``x + inner(x)``. Adds no component to parameter names."""

    inner: Layer

    def children(self) -> Iterator[tuple[str, Layer]]:
        yield "", self.inner


@dataclass(frozen=True)
class Repeat(Layer):
    """``count`` structurally identical copies of ``block`` applied in order.

    Each copy has its own weights, named ``{index}.{...}``. Because the copies share a
    structure, a backend may apply them as one block over stacked weights
    (``chain="scan"``) instead of unrolling them (``chain="unrolled"``).
    """

    block: Layer
    count: int

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError(f"Repeat: count must be >= 1, got {self.count}")

    def children(self) -> Iterator[tuple[str, Layer]]:
        for i in range(self.count):
            yield str(i), self.block


def join(prefix: str, name: str) -> str:
    """Join dotted-name components, skipping empty ones."""
    return f"{prefix}.{name}" if prefix and name else (prefix or name)


def param_specs(layer: Layer, prefix: str = "") -> dict[str, ParamSpec]:
    """Every parameter of ``layer`` by dotted name, in application order."""
    out: dict[str, ParamSpec] = {}
    for name, spec in layer.params().items():
        out[join(prefix, name)] = spec
    for name, child in layer.children():
        out.update(param_specs(child, join(prefix, name)))
    return out


def _tensor_rng(seed: int, name: str) -> np.random.Generator:
    # crc32 is stable across processes and machines (unlike hash()).
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, zlib.crc32(name.encode())])))


def init_tensor(name: str, spec: ParamSpec, seed: int) -> np.ndarray:
    """Deterministic float32 values for one tensor, from the seed and its name only."""
    if spec.init == "ones":
        return np.ones(spec.shape, np.float32)
    if spec.init == "zeros":
        return np.zeros(spec.shape, np.float32)
    if spec.init == "const":
        return np.full(spec.shape, spec.value, np.float32)
    if spec.init == "uniform":
        bound = 1.0 / np.sqrt(spec.fan_in)
        u = _tensor_rng(seed, name).random(spec.shape)  # float64 in [0, 1)
        return ((2.0 * u - 1.0) * bound).astype(np.float32)
    raise ValueError(f"unknown initialiser {spec.init!r} for {name}")


@dataclass(frozen=True)
class ModelSpec:
    """A complete reference model: the network, its input shape and its options."""

    name: str
    network: Layer
    input_shape: tuple[int, ...]
    options: dict = field(default_factory=dict, compare=False)

    def param_specs(self) -> dict[str, ParamSpec]:
        return param_specs(self.network)

    def init(self, seed: int = 0) -> dict[str, np.ndarray]:
        """Weights by dotted name: float32, identical on every machine for a seed."""
        return {name: init_tensor(name, spec, seed) for name, spec in self.param_specs().items()}

    def example_input(self, seed: int = 0) -> np.ndarray:
        """A standard-normal float32 input of ``input_shape``."""
        rng = _tensor_rng(seed, "input")
        return rng.standard_normal(self.input_shape).astype(np.float32)

    def parameter_count(self) -> int:
        return int(sum(np.prod(s.shape) for s in self.param_specs().values()))

    def describe(self) -> str:
        opts = ",".join(f"{k}={v}" for k, v in sorted(self.options.items()))
        return f"{self.name}({opts})" if opts else self.name
