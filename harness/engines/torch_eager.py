"""``torch.eager``: an ``nn.Module``, ``loss.backward()``, gradients read from ``.grad``.

Implicit parameters, as most PyTorch code is written: the module owns the weights and
the loss closes over them (``params=closure``).
"""

from __future__ import annotations

from typing import Any, Mapping

from .base import Backend, Engine
from .declared import Cost


class TorchEagerEngine(Engine):
    def __init__(self, spec, weights, x):
        import torch

        from . import torch_common

        self.tc = torch_common
        self.model = torch_common.SpecModule(spec, weights)
        self.x = torch.from_numpy(x.copy())

    def gradient(self):
        for p in self.model.parameters():
            p.grad = None
        loss = self.model(self.x).sum()
        loss.backward()
        return loss, {name: p.grad for name, p in self.model.named_parameters()}

    def to_numpy(self, result):
        return self.tc.to_numpy(*result)

    def counters(self) -> dict[str, Any]:
        return {"autograd_nodes": self.tc.autograd_nodes(self.model(self.x).sum())}


class TorchEagerBackend(Backend):
    name = "torch.eager"
    framework = "torch"
    modules = ("torch",)
    supports = {"params": ("closure",), "chain": ("unrolled",)}
    description = "nn.Module + loss.backward(): implicit parameters, eager autograd"
    #: One cold process per model (docs/measurements.md, "Time to first gradient" and "transformer_tiny"; 2-core VM,
    #: torch 2.13.0+cpu, jax 0.10.2): seconds from spawn to first gradient, and of the first gradient.
    costs = {"resnet15": Cost(2.45, 0.0051), "convnext_tiny": Cost(3.01, 0.33),
             "transformer_tiny": Cost(1.32, 0.0218)}
    color = "#e8871e"
    why_not = {
        "params=args": "torch.eager differentiates the module's own parameters; explicit parameters are the torch.func backend",
        "chain=scan": "eager execution compiles nothing, so there is nothing to share between blocks",
    }

    def import_framework(self) -> None:
        import torch  # noqa: F401

        from . import torch_common  # noqa: F401

    def build(self, spec, weights: Mapping, x, variant) -> Engine:
        return TorchEagerEngine(spec, weights, x)
