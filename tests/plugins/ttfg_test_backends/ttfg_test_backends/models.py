"""A model from a plugin: built from ttfg's spec vocabulary, numpy only."""

from __future__ import annotations

from ttfg.models.spec import GELU, Chain, Dense, ModelSpec


def build(width: int = 8) -> ModelSpec:
    """Two dense layers with a GELU between them, input 1x4 (option: width=N), from the ttfg-test-backends plugin."""
    if width < 1:
        raise ValueError(f"test_mlp: width must be >= 1, got {width}")
    network = Chain((("fc1", Dense(4, width)), ("act", GELU()), ("fc2", Dense(width, 2))))
    return ModelSpec("test_mlp", network, (1, 4), {"width": width})
