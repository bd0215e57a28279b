"""flaxlab: an example library that guards its Flax NNX code with ttfg (see README.md)."""
