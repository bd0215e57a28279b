"""``torch.compile`` (Inductor) and ``torch.compile.aot_eager``.

Dynamo captures the forward, AOTAutograd derives the backward, and the chosen
compiler builds both; the backward is compiled lazily inside ``backward()``, so the
first gradient holds the whole compile. Dynamo's own timers
(``torch._dynamo.utils.compile_times``) split it: ``trace`` is Dynamo's frame
compile less the backend compiler, ``compile`` is the backend compiler (forward and
backward), ``execute`` the remainder.

Variants: ``params=args`` compiles a function of explicit leaf tensors;
``params=closure`` compiles the ``nn.Module`` that owns them. ``chain=scan`` is
regional compilation: each repeated block is compiled once (static shapes) and the
compiled block is reused for every copy.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any, Mapping

from . import caches, phase_time
from .base import Backend, Engine
from .declared import Cost

TRACE_TIMER = "_compile.compile_inner"
BACKEND_TIMER = "OutputGraph.call_user_compiler"
BACKWARD_TIMERS = ("compile_fx.<locals>.bw_compiler",)


def timer_totals() -> dict[str, float]:
    """Dynamo's cumulative compile timers in seconds, by name."""
    from torch._dynamo.utils import compile_times

    headers, values = compile_times(repr="csv", aggregate=True)
    names = headers.split(", ") if isinstance(headers, str) else list(headers)
    vals = values.split(", ") if isinstance(values, str) else list(values)
    out = {}
    for name, value in zip(names, vals):
        try:
            out[name] = float(value)
        except ValueError:
            continue
    return out


class TimerIntervals:
    """Dynamo's timed calls as intervals (seconds since the epoch) by timer name, while in the ``with`` block.

    ``dynamo_timed`` tells its chromium event logger each timed call's start and end; the logger's two methods are
    wrapped on its one instance and put back on leaving. A timer renamed by a ``phase_name`` (call_user_compiler is
    ``backend_compile``) is filed under its key, which the start's metadata names. Empty where this torch has no such
    logger (the caller then reads the timers' totals)."""

    def __init__(self) -> None:
        self.intervals: dict[str, list[tuple[float, float]]] = {}
        self._logger = None

    def __enter__(self) -> "TimerIntervals":
        try:
            from torch._dynamo.utils import get_chromium_event_logger

            logger = get_chromium_event_logger()
            start, end = logger.log_event_start, logger.log_event_end
        except (ImportError, AttributeError):
            return self
        keys: dict[tuple[str, int], str] = {}

        def log_start(event_name, time_ns, metadata, *args, **kwargs):
            keys[event_name, time_ns] = (metadata or {}).get("fn_name") or event_name
            return start(event_name, time_ns, metadata, *args, **kwargs)

        def log_end(event_name, time_ns, metadata, start_time_ns, *args, **kwargs):
            key = keys.pop((event_name, start_time_ns), event_name)
            self.intervals.setdefault(key, []).append((start_time_ns / 1e9, time_ns / 1e9))
            return end(event_name, time_ns, metadata, start_time_ns, *args, **kwargs)

        logger.log_event_start, logger.log_event_end = log_start, log_end
        self._logger = logger
        return self

    def __exit__(self, *exc) -> None:
        if self._logger is not None:
            del self._logger.log_event_start, self._logger.log_event_end  # the class's methods again


class CompileStats:
    """What the counting compiler saw: graphs handed to the backend and their FX nodes."""

    def __init__(self) -> None:
        self.graphs = 0
        self.fx_nodes = 0
        #: The graphs themselves, read after the first gradient for their nodes' source lines and graph breaks.
        self.modules: list = []

    def compiler(self, backend_name: str):
        from torch._dynamo.backends.registry import lookup_backend

        inner = lookup_backend(backend_name)

        def counting_backend(gm, example_inputs):
            self.graphs += 1
            self.fx_nodes += len(gm.graph.nodes)
            self.modules.append(gm)
            return inner(gm, example_inputs)

        return counting_backend


class TorchCompileEngine(Engine):
    def __init__(self, spec, weights, x, variant, compiler_name):
        import torch

        from .interpret import forward
        from . import torch_common as tc

        self.tc = tc
        self.stats = CompileStats()
        compiler = self.stats.compiler(compiler_name)
        self.x = torch.from_numpy(x.copy())
        if variant["params"] == "closure":
            self.model = tc.SpecModule(spec, weights)
            self.params = dict(self.model.named_parameters())
            compiled = torch.compile(self.model, backend=compiler, dynamic=False)
            self.loss_fn = lambda params, x_: compiled(x_).sum()
        else:
            self.params = tc.leaf_tensors(weights)
            if variant["chain"] == "scan":
                ops = tc.TorchOps(repeat=self._regional_repeat(torch, compiler, forward))
                self.loss_fn = lambda params, x_: forward(spec.network, params, x_, ops).sum()
            else:
                ops = tc.TorchOps()
                self.loss_fn = torch.compile(
                    lambda params, x_: forward(spec.network, params, x_, ops).sum(),
                    backend=compiler, dynamic=False,
                )

    def _regional_repeat(self, torch, compiler, forward):
        from .interpret import block_params

        compiled_blocks: dict[int, Any] = {}

        def repeat(layer, params, x, prefix):
            key = id(layer.block)
            if key not in compiled_blocks:
                ops = self.tc.TorchOps()
                compiled_blocks[key] = torch.compile(
                    lambda p, h: forward(layer.block, p, h, ops), backend=compiler, dynamic=False
                )
            block = compiled_blocks[key]
            for i in range(layer.count):
                x = block(block_params(params, prefix, i), x)
            return x

        return repeat

    def gradient(self):
        import torch

        loss = self.loss_fn(self.params, self.x)
        grads = torch.autograd.grad(loss, list(self.params.values()))
        return loss, dict(zip(self.params, grads))

    def first_gradient(self):
        before = timer_totals()
        with TimerIntervals() as timed:
            start_ns = time.time_ns()
            start = time.perf_counter()
            result = self.gradient()
            total = time.perf_counter() - start
            end_ns = time.time_ns()
        if timed.intervals:
            # Each second once: call_user_compiler, bw_compiler and compile_inner nest (phase_time.py).
            phases = phase_time.phases_from_intervals(timed.intervals, (start_ns / 1e9, end_ns / 1e9), (TRACE_TIMER,),
                                                      (BACKEND_TIMER, *BACKWARD_TIMERS))
            phases = phase_time.capped(phases, total)  # the two clocks differ by microseconds
        else:  # a torch whose timers cannot be followed: their totals, fitted into the first gradient
            after = timer_totals()

            def spent(name: str) -> float:
                return after.get(name, 0.0) - before.get(name, 0.0)

            backend = spent(BACKEND_TIMER)
            phases = phase_time.capped({"trace": max(spent(TRACE_TIMER) - backend, 0.0),
                                        "compile": backend + sum(spent(n) for n in BACKWARD_TIMERS)}, total)
        self.first_counters = self._dynamo_counters()
        return result, phases

    def _dynamo_counters(self) -> dict[str, Any]:
        from torch._dynamo.utils import counters, guard_failures

        inductor = counters.get("inductor", {})
        aot = counters.get("aot_autograd", {})
        return {
            "graphs": self.stats.graphs,
            "fx_nodes": self.stats.fx_nodes,
            "graph_breaks": int(sum(counters.get("graph_break", Counter()).values())),
            "recompiles": int(sum(len(v) for v in guard_failures.values())),
            "fxgraph_cache_hits": int(inductor.get("fxgraph_cache_hit", 0)),
            "fxgraph_cache_misses": int(inductor.get("fxgraph_cache_miss", 0)),
            "aot_cache_hits": int(aot.get("autograd_cache_hit", 0)),
        }

    def to_numpy(self, result):
        return self.tc.to_numpy(*result)

    def counters(self) -> dict[str, Any]:
        return getattr(self, "first_counters", None) or self._dynamo_counters()


    def source_lines(self) -> list[dict[str, Any]]:
        from .source_lines import fx_lines

        return fx_lines(self.stats.modules)


class TorchCompileBackend(Backend):
    name = "torch.compile"
    framework = "torch"
    modules = ("torch",)
    compiler_name = "inductor"
    phases = ("trace", "compile", "execute")  # Dynamo's capture, then AOTAutograd and the backend together
    supports = {"params": ("args", "closure"), "chain": ("unrolled", "scan")}
    description = "torch.compile, Inductor: Dynamo capture, AOTAutograd, C++ codegen and compile"
    uncounted = "Inductor compiles its generated C++ in child processes (the C++ compiler)"
    persistent_caches = (caches.INDUCTOR,)
    #: One cold process per model (docs/measurements.md, "Time to first gradient" and "transformer_tiny"; 2-core VM,
    #: torch 2.13.0+cpu, jax 0.10.2): seconds from spawn to first gradient, and of the first gradient.
    costs = {"resnet15": Cost(23.17, 19.11), "convnext_tiny": Cost(105.42, 101.34),
             "transformer_tiny": Cost(54.2, 50.6)}
    color = "#7b3fa0"

    @classmethod
    def unsupported_combination(cls, variant: Mapping[str, str]) -> str | None:
        if variant.get("params") == "closure" and variant.get("chain") == "scan":
            return "regional compilation is implemented over explicit block parameters (params=args)"
        return None

    def import_framework(self) -> None:
        import torch
        import torch._dynamo  # noqa: F401
        import torch._inductor.config  # noqa: F401

        from . import torch_common  # noqa: F401

    def build(self, spec, weights: Mapping, x, variant) -> Engine:
        return TorchCompileEngine(spec, weights, x, variant, self.compiler_name)


class TorchCompileAotEagerBackend(TorchCompileBackend):
    name = "torch.compile.aot_eager"
    compiler_name = "aot_eager"
    description = "torch.compile with aot_eager: Dynamo capture and AOTAutograd, no code generation"
    uncounted = None
    #: None: Inductor's FX graph and AOTAutograd caches hold what Inductor compiles, and aot_eager generates no code;
    #: a warm gate measures it cold.
    persistent_caches = ()
    #: One cold process per model (docs/measurements.md, "Time to first gradient" and "transformer_tiny"; 2-core VM,
    #: torch 2.13.0+cpu, jax 0.10.2): seconds from spawn to first gradient, and of the first gradient.
    costs = {"resnet15": Cost(7.56, 2.65), "convnext_tiny": Cost(20.88, 16.0),
             "transformer_tiny": Cost(8.38, 5.3)}
    color = "#d45fb0"
