"""A small GPT-style transformer: the reference model for attention and LayerNorm-heavy graphs.

The input is a float sequence, NCT ``(1, features, seq)`` (channels on axis 1, as every
model in ``ttfg.models.spec``), so no integer embedding lookup is needed. A token-wise
dense embedding maps ``features`` to ``width``, a learned positional term is added, then
``blocks`` pre-norm blocks::

    x = x + O(attention(LayerNorm(x)))        # heads, causal, softmax over masked scores
    x = x + fc2(GELU(fc1(LayerNorm(x))))      # hidden width 4 * width, exact GELU

and a final LayerNorm and a token-wise dense head to one output per token; the loss is
the sum of the output, as for every model. LayerNorm eps 1e-5.

Weight names, for block b::

    embed.{weight,bias}                  (width, features)
    position.weight                      (width, seq)
    blocks.{b}.attn.norm.{weight,bias}
    blocks.{b}.attn.heads.{q,k,v,o}.weight   (width, width)
    blocks.{b}.attn.heads.{q,v,o}.bias       (width,)  (no key bias: the softmax cancels it)
    blocks.{b}.mlp.norm.{weight,bias}
    blocks.{b}.mlp.fc1.{weight,bias}     (4 width, width)
    blocks.{b}.mlp.fc2.{weight,bias}     (width, 4 width)
    norm.{weight,bias}                   head.{weight,bias}  (outputs, width)
"""

from __future__ import annotations

from .spec import GELU, Chain, Dense, Layer, LayerNorm, ModelSpec, Position, Repeat, SelfAttention, Skip

BLOCKS, WIDTH, HEADS, SEQ, FEATURES = 4, 64, 4, 32, 16


def block(width: int, heads: int) -> Layer:
    """One pre-norm transformer block: attention and MLP, each inside a residual."""
    return Chain((
        ("attn", Skip(Chain((
            ("norm", LayerNorm(width)),
            ("heads", SelfAttention(width, heads, causal=True)),
        )))),
        ("mlp", Skip(Chain((
            ("norm", LayerNorm(width)),
            ("fc1", Dense(width, 4 * width)),
            ("act", GELU()),
            ("fc2", Dense(4 * width, width)),
        )))),
    ))


def build(blocks: int = BLOCKS, width: int = WIDTH, heads: int = HEADS, seq: int = SEQ,
          features: int = FEATURES, outputs: int = 1) -> ModelSpec:
    """``blocks`` pre-norm blocks of ``width`` channels and ``heads`` heads over ``seq`` tokens."""
    for name, value in (("blocks", blocks), ("width", width), ("heads", heads), ("seq", seq),
                        ("features", features), ("outputs", outputs)):
        if value < 1:
            raise ValueError(f"transformer_tiny: {name} must be >= 1, got {value}")
    if width % heads:
        raise ValueError(f"transformer_tiny: width ({width}) must be divisible by heads ({heads})")
    network = Chain((
        ("embed", Dense(features, width)),
        ("position", Position(width, seq)),
        ("blocks", Repeat(block(width, heads), blocks)),
        ("norm", LayerNorm(width)),
        ("head", Dense(width, outputs)),
    ))
    given = {"blocks": blocks, "width": width, "heads": heads, "seq": seq, "features": features, "outputs": outputs}
    defaults = {"blocks": BLOCKS, "width": WIDTH, "heads": HEADS, "seq": SEQ, "features": FEATURES, "outputs": 1}
    return ModelSpec("transformer_tiny", network, (1, features, seq),
                     {k: v for k, v in given.items() if v != defaults[k]})
