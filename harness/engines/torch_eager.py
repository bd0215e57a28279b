"""``torch.eager``: an ``nn.Module``, ``loss.backward()``, gradients read from ``.grad``.

Implicit parameters, as most PyTorch code is written: the module owns the weights and
the loss closes over them (``params=closure``).
"""

from __future__ import annotations

from typing import Any, Mapping

from .base import Backend, Engine


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
    why_not = {
        "params=args": "torch.eager differentiates the module's own parameters; explicit parameters are the torch.func backend",
        "chain=scan": "eager execution compiles nothing, so there is nothing to share between blocks",
    }

    def import_framework(self) -> None:
        import torch  # noqa: F401

        from . import torch_common  # noqa: F401

    def build(self, spec, weights: Mapping, x, variant) -> Engine:
        return TorchEagerEngine(spec, weights, x)
