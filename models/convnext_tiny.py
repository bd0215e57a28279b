"""ConvNeXt-T (depths 3, 3, 9, 3; widths 96, 192, 384, 768), 1 input channel, 1 class.

Stem: 4x4 stride-4 conv + channel LayerNorm. Block: 7x7 depthwise conv (padding 3) ->
channel LayerNorm -> Dense 4x -> exact GELU -> Dense back -> layer scale (1e-6) ->
residual add. Before stages 1..3: channel LayerNorm + 2x2 stride-2 conv. Head: global
mean pool -> LayerNorm -> Dense. LayerNorm eps 1e-6; input (1, 1, 32, 32).

Weight names, for stage s, block b::

    stem.conv.{weight,bias}               stem.norm.{weight,bias}
    stages.{s}.downsample.norm.{weight,bias}   (s >= 1)
    stages.{s}.downsample.conv.{weight,bias}   (s >= 1)
    stages.{s}.blocks.{b}.dwconv.{weight,bias}     (dim, 1, 7, 7)
    stages.{s}.blocks.{b}.norm.{weight,bias}
    stages.{s}.blocks.{b}.pwconv1.{weight,bias}    (4 dim, dim)
    stages.{s}.blocks.{b}.pwconv2.{weight,bias}    (dim, 4 dim)
    stages.{s}.blocks.{b}.scale.gamma              (dim,)
    head.norm.{weight,bias}               head.fc.{weight,bias}  (classes, 768)
"""

from __future__ import annotations

from .spec import GELU, Chain, Conv, Dense, Layer, LayerNorm, LayerScale, MeanPool, ModelSpec, Repeat, Skip

DEPTHS = (3, 3, 9, 3)
WIDTHS = (96, 192, 384, 768)
EPS = 1e-6


def block(dim: int) -> Layer:
    return Skip(Chain((
        ("dwconv", Conv(dim, dim, 7, padding=3, groups=dim)),
        ("norm", LayerNorm(dim, EPS)),
        ("pwconv1", Dense(dim, 4 * dim)),
        ("act", GELU()),
        ("pwconv2", Dense(4 * dim, dim)),
        ("scale", LayerScale(dim, 1e-6)),
    )))


def build(
    depths: tuple[int, ...] | list[int] = DEPTHS,
    widths: tuple[int, ...] | list[int] = WIDTHS,
    in_channels: int = 1,
    classes: int = 1,
    size: int = 32,
) -> ModelSpec:
    """``depths`` blocks per stage (the depth knob for studies), ``widths`` channels."""
    depths, widths = tuple(int(d) for d in depths), tuple(int(w) for w in widths)
    if len(depths) != len(widths) or not depths:
        raise ValueError(f"convnext_tiny: depths {depths} and widths {widths} must be non-empty and equally long")
    if any(d < 1 for d in depths):
        raise ValueError(f"convnext_tiny: every stage depth must be >= 1, got {depths}")
    stages: list[tuple[str, Layer]] = []
    for s, (depth, dim) in enumerate(zip(depths, widths)):
        parts: list[tuple[str, Layer]] = []
        if s > 0:
            parts.append(("downsample", Chain((
                ("norm", LayerNorm(widths[s - 1], EPS)),
                ("conv", Conv(widths[s - 1], dim, 2, stride=2)),
            ))))
        parts.append(("blocks", Repeat(block(dim), depth)))
        stages.append((str(s), Chain(tuple(parts))))
    network = Chain((
        ("stem", Chain((
            ("conv", Conv(in_channels, widths[0], 4, stride=4)),
            ("norm", LayerNorm(widths[0], EPS)),
        ))),
        ("stages", Chain(tuple(stages))),
        ("head", Chain((
            ("pool", MeanPool()),
            ("norm", LayerNorm(widths[-1], EPS)),
            ("fc", Dense(widths[-1], classes)),
        ))),
    ))
    return ModelSpec(
        "convnext_tiny", network, (1, in_channels, size, size),
        {"depths": "x".join(map(str, depths))} if depths != DEPTHS else {},
    )
