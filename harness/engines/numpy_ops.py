"""Array primitives over a NumPy-like namespace (``autograd.numpy`` here).

Convolution is written as a sum of shifted, strided slices (im2col without the copy
into a matrix) so that it needs nothing beyond slicing, ``pad`` and ``einsum``, which
HIPS autograd differentiates; attention is einsums, a mask (``where``) and an explicit
softmax. Used by the ``autograd`` backend in float32 and by the
float64 reference.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .interpret import unrolled_repeat


class NumpyOps:
    def __init__(self, xp: Any, erf: Any):
        self.xp = xp
        self.erf = erf
        self.repeat = unrolled_repeat(self)

    def conv2d(self, x, w, b, stride, padding, groups):
        xp = self.xp
        n, c, h, wd = x.shape
        out, cg, kh, kw = w.shape
        if padding:
            # autograd's pad needs an explicit mode.
            x = xp.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)), mode="constant")
        ho = (h + 2 * padding - kh) // stride + 1
        wo = (wd + 2 * padding - kw) // stride + 1
        span_h, span_w = stride * (ho - 1) + 1, stride * (wo - 1) + 1
        cols = xp.stack(
            [x[:, :, i:i + span_h:stride, j:j + span_w:stride] for i in range(kh) for j in range(kw)],
            axis=2,
        )  # (n, c, kh*kw, ho, wo)
        cols = xp.reshape(cols, (n, groups, c // groups, kh * kw, ho, wo))
        wg = xp.reshape(w, (groups, out // groups, cg, kh * kw))
        y = xp.reshape(xp.einsum("ngckhw,gock->ngohw", cols, wg), (n, out, ho, wo))
        if b is not None:
            y = y + xp.reshape(b, (1, out, 1, 1))
        return y

    def _channel(self, v, ndim):
        return self.xp.reshape(v, (1, -1) + (1,) * (ndim - 2))

    def dense(self, x, w, b):
        xp = self.xp
        if x.ndim == 2:
            y = xp.dot(x, xp.transpose(w))
        elif x.ndim == 3:
            y = xp.einsum("nct,oc->not", x, w)
        else:
            y = xp.einsum("nchw,oc->nohw", x, w)
        return y if b is None else y + self._channel(b, y.ndim)

    def layer_norm(self, x, w, b, eps):
        xp = self.xp
        mu = xp.mean(x, axis=1, keepdims=True)
        var = xp.mean((x - mu) ** 2, axis=1, keepdims=True)
        y = (x - mu) / xp.sqrt(var + eps)
        return y * self._channel(w, x.ndim) + self._channel(b, x.ndim)

    def gelu(self, x):
        return 0.5 * x * (1.0 + self.erf(x / 1.4142135623730951))

    def layer_scale(self, x, g):
        return x * self._channel(g, x.ndim)

    def mean_pool(self, x):
        return self.xp.mean(x, axis=(2, 3))

    def flatten(self, x):
        return self.xp.reshape(x, (x.shape[0], -1))

    def attention(self, q, k, v, heads, causal):
        xp = self.xp
        n, c, t = q.shape
        d = c // heads
        q, k, v = (xp.reshape(a, (n, heads, d, t)) for a in (q, k, v))
        scores = xp.einsum("nhdi,nhdj->nhij", q, k) / math.sqrt(d)  # a Python float keeps float32
        if causal:
            scores = xp.where(np.tril(np.ones((t, t), bool)), scores, -np.inf)
        # Stable softmax over the keys; the shift cancels in the gradient.
        e = xp.exp(scores - xp.max(scores, axis=-1, keepdims=True))
        weights = e / xp.sum(e, axis=-1, keepdims=True)
        return xp.reshape(xp.einsum("nhij,nhdj->nhdi", weights, v), (n, c, t))
