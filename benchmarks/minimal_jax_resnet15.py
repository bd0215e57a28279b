"""The smallest honest script for resnet15's first gradient with jax.jit: no harness.

Used by ``probe_overhead.py`` as the baseline the probe is compared with. It prints one
line: ``time.monotonic()`` when the first gradient was ready.
"""

import time

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

rng = np.random.default_rng(0)
weights = {f"{k}.{c}.{p}": rng.uniform(-1 / 6, 1 / 6, (4, 4, 3, 3) if p == "weight" else (4,)).astype(np.float32)
           for k in range(15) for c in ("conv1", "conv2") for p in ("weight", "bias")}
x = jnp.asarray(rng.standard_normal((1, 4, 2, 2)).astype(np.float32))
params = {k: jnp.asarray(v) for k, v in weights.items()}


def conv(h, w, b):
    y = lax.conv_general_dilated(h, w, (1, 1), [(1, 1), (1, 1)], dimension_numbers=("NCHW", "OIHW", "NCHW"))
    return y + b.reshape(1, -1, 1, 1)


def loss(p, x):
    h = x
    for k in range(15):
        h = h + conv(conv(h, p[f"{k}.conv1.weight"], p[f"{k}.conv1.bias"]), p[f"{k}.conv2.weight"], p[f"{k}.conv2.bias"])
    return jnp.sum(jnp.mean(x + h, axis=(2, 3)))


jax.block_until_ready(jax.jit(jax.value_and_grad(loss))(params, x))
print(time.monotonic(), flush=True)
