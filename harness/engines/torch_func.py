"""``torch.func``: ``grad_and_value`` over ``functional_call``, explicit parameters."""

from __future__ import annotations

from typing import Mapping

from .base import Backend, Engine
from .declared import Cost


class TorchFuncEngine(Engine):
    def __init__(self, spec, weights, x):
        import torch
        from torch.func import functional_call, grad_and_value

        from . import torch_common

        self.tc = torch_common
        model = torch_common.SpecModule(spec, weights)
        self.params = {k: v.detach() for k, v in model.named_parameters()}
        self.x = torch.from_numpy(x.copy())

        def loss(params, x_):
            return functional_call(model, params, (x_,)).sum()

        self.fn = grad_and_value(loss)

    def gradient(self):
        grads, loss = self.fn(self.params, self.x)
        return loss, grads

    def to_numpy(self, result):
        return self.tc.to_numpy(*result)


class TorchFuncBackend(Backend):
    name = "torch.func"
    framework = "torch"
    modules = ("torch",)
    supports = {"params": ("args",), "chain": ("unrolled",)}
    description = "torch.func.grad_and_value over functional_call: explicit parameters, functorch transforms"
    #: One cold process per model (docs/measurements.md, "Time to first gradient" and "transformer_tiny"; 2-core VM,
    #: torch 2.13.0+cpu, jax 0.10.2): seconds from spawn to first gradient, and of the first gradient.
    costs = {"resnet15": Cost(3.57, 1.69), "convnext_tiny": Cost(4.98, 2.44),
             "transformer_tiny": Cost(2.68, 1.37)}
    color = "#8c564b"
    why_not = {
        "params=closure": "torch.func.grad differentiates its arguments only; closure is the torch.eager backend",
        "chain=scan": "torch.func runs eagerly; there is no compiled block to reuse",
    }

    def import_framework(self) -> None:
        import torch
        import torch.func  # noqa: F401

        from . import torch_common  # noqa: F401

    def build(self, spec, weights: Mapping, x, variant) -> Engine:
        return TorchFuncEngine(spec, weights, x)
