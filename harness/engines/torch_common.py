"""Shared PyTorch pieces: array primitives, the spec as an ``nn.Module``, conversions.

Imported only by the torch backends, after the framework import phase.
"""

from __future__ import annotations

import math
from functools import reduce
from typing import Any, Mapping

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .interpret import block_params, forward, unrolled_repeat


class TorchOps:
    def __init__(self, repeat=None):
        self.repeat = repeat or unrolled_repeat(self)

    @staticmethod
    def conv2d(x, w, b, stride, padding, groups):
        return F.conv2d(x, w, b, stride=stride, padding=padding, groups=groups)

    @staticmethod
    def _channel(v, ndim):
        return v.reshape((1, -1) + (1,) * (ndim - 2))

    def dense(self, x, w, b):
        if x.ndim == 2:
            return F.linear(x, w, b)
        if x.ndim == 3:
            y = torch.einsum("nct,oc->not", x, w)
            return y if b is None else y + self._channel(b, y.ndim)
        y = torch.einsum("nchw,oc->nohw", x, w)
        return y if b is None else y + self._channel(b, y.ndim)

    def layer_norm(self, x, w, b, eps):
        mu = x.mean(dim=1, keepdim=True)
        var = ((x - mu) ** 2).mean(dim=1, keepdim=True)
        return (x - mu) / torch.sqrt(var + eps) * self._channel(w, x.ndim) + self._channel(b, x.ndim)

    @staticmethod
    def gelu(x):
        return F.gelu(x)  # exact (erf) by default

    def layer_scale(self, x, g):
        return x * self._channel(g, x.ndim)

    @staticmethod
    def mean_pool(x):
        return x.mean(dim=(2, 3))

    @staticmethod
    def flatten(x):
        return x.flatten(1)

    @staticmethod
    def attention(q, k, v, heads, causal):
        n, c, t = q.shape
        d = c // heads
        q, k, v = (a.reshape(n, heads, d, t) for a in (q, k, v))
        scores = torch.einsum("nhdi,nhdj->nhij", q, k) / math.sqrt(d)
        if causal:
            mask = torch.ones(t, t, dtype=torch.bool, device=q.device).tril()
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = F.softmax(scores, dim=-1)
        return torch.einsum("nhij,nhdj->nhdi", weights, v).reshape(n, c, t)


class SpecModule(nn.Module):
    """The spec as an ``nn.Module`` whose parameter names are the spec's dotted names.

    Parameters live in nested plain modules (``blocks`` -> ``0`` -> ``conv1`` ->
    ``weight``), so ``named_parameters()`` and ``torch.func.functional_call`` speak the
    same names as the weights dict. ``forward`` runs the shared interpreter.
    """

    def __init__(self, spec, weights: Mapping[str, np.ndarray], ops: TorchOps | None = None):
        super().__init__()
        self.spec = spec
        self.ops = ops or TorchOps()
        self.param_names = list(weights)
        for name, value in weights.items():
            *path, leaf = name.split(".")
            module = self
            for part in path:
                if not hasattr(module, part):
                    module.add_module(part, nn.Module())
                module = getattr(module, part)
            module.register_parameter(leaf, nn.Parameter(torch.from_numpy(np.array(value, np.float32))))

    def forward(self, x):
        params = {name: reduce(getattr, name.split("."), self) for name in self.param_names}
        return forward(self.spec.network, params, x, self.ops)


def leaf_tensors(weights: Mapping[str, np.ndarray]) -> dict[str, torch.Tensor]:
    """Explicit parameters: one leaf tensor per weight, requiring grad."""
    return {k: torch.from_numpy(np.array(v, np.float32)).requires_grad_(True) for k, v in weights.items()}


def to_numpy(loss, grads: Mapping[str, Any]) -> tuple[float, dict[str, np.ndarray]]:
    return float(loss.detach()), {k: g.detach().numpy().copy() for k, g in grads.items()}


def autograd_nodes(output: torch.Tensor) -> int:
    """Distinct nodes of the autograd graph behind ``output`` (before backward frees it)."""
    seen, stack = set(), [output.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        stack.extend(next_fn for next_fn, _ in node.next_functions)
    return len(seen)


__all__ = ["SpecModule", "TorchOps", "autograd_nodes", "block_params", "leaf_tensors", "to_numpy"]
