"""flaxlab's model for ttfg: a residual stack like resnet15, built from ttfg's spec vocabulary."""

from __future__ import annotations

from ttfg.models.spec import Chain, Conv, MeanPool, ModelSpec, Repeat, Skip


def build(blocks: int = 6, channels: int = 8) -> ModelSpec:
    """flaxlab's residual net: BLOCKS blocks of two 3x3 convolutions, CHANNELS wide, input 1xCx4x4 (options: blocks=N, channels=N)."""
    if blocks < 1 or channels < 1:
        raise ValueError(f"flaxlab_resnet: blocks and channels must be >= 1, got {blocks} and {channels}")
    block = Skip(Chain((("conv1", Conv(channels, channels, 3, padding=1)),
                        ("conv2", Conv(channels, channels, 3, padding=1)))))
    network = Chain((("blocks", Skip(Repeat(block, blocks))), ("pool", MeanPool())))
    return ModelSpec("flaxlab_resnet", network, (1, channels, 4, 4), {"blocks": blocks, "channels": channels})
