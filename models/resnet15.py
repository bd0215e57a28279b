"""The seed model: a residual stack of linear conv blocks.

``y = mean_hw(x + B_n(...B_1(x)))`` with ``B_k(h) = h + conv2(conv1(h))``; every conv is
3x3, stride 1, zero padding 1, with bias, no activation, 4 -> 4 channels. Input is
(1, 4, 2, 2) NCHW; the loss is the sum of the output.

Weight names (public contract), for k = 0 .. blocks - 1::

    blocks.{k}.conv1.weight  (4, 4, 3, 3)    blocks.{k}.conv1.bias  (4,)
    blocks.{k}.conv2.weight  (4, 4, 3, 3)    blocks.{k}.conv2.bias  (4,)
"""

from __future__ import annotations

from .spec import Chain, Conv, MeanPool, ModelSpec, Repeat, Skip

CHANNELS = 4


def build(blocks: int = 15, channels: int = CHANNELS, size: int = 2) -> ModelSpec:
    """``blocks`` residual blocks (default 15, the seed); depth studies vary it."""
    if blocks < 1:
        raise ValueError(f"resnet15: blocks must be >= 1, got {blocks}")
    block = Skip(Chain((
        ("conv1", Conv(channels, channels, 3, padding=1)),
        ("conv2", Conv(channels, channels, 3, padding=1)),
    )))
    network = Chain((
        ("blocks", Skip(Repeat(block, blocks))),
        ("pool", MeanPool()),
    ))
    return ModelSpec("resnet15", network, (1, channels, size, size), {"blocks": blocks})
