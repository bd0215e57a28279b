"""Synthetic asv histories, in the asv loader's schema, with known steps.

Why: the report must be tested on long histories (and timed on 1000 commits x 50
cases) long before a real one exists, and a test can only check step detection
against steps it planted. The frame has exactly the columns of
``harness.history.asv_results.load``: ``commit, date, machine, environment, benchmark,
params, value, unit``; ``df.attrs["steps"]`` lists the planted steps as
``(case, metric, pos, factor)``.

Levels follow the first-gradient medians measured on a 2-core VM (DESIGN.md), with
lognormal noise of about 10 % on timings, 0.3 % on allocation counts and none on
structural counters, which is how those signals behave.
"""

from __future__ import annotations

import hashlib
from itertools import product

import numpy as np
import pandas as pd

#: (backend, first-gradient seconds on resnet15, compile share, counter name or None)
BACKENDS = (
    ("jax.jit", 0.74, 0.93, "jaxpr_eqns"),
    ("jax.eager", 0.72, 0.80, "backend_compiles"),
    ("torch.eager", 0.004, 0.0, "autograd_nodes"),
    ("torch.func", 1.07, 0.60, None),
    ("torch.compile", 11.8, 0.98, "graph_count"),
    ("torch.compile.aot_eager", 1.2, 0.90, "graph_count"),
    ("autograd", 0.02, 0.0, "autograd_primitives"),
)
MODELS = (("resnet15", 1.0), ("convnext_tiny", 4.5), ("resnet15:blocks=30", 2.0), ("convnext_tiny:depths=1x1x3x1", 1.8))
VARIANTS = ("params=args,chain=unrolled", "params=closure,chain=unrolled", "params=args,chain=scan")
IMPORT_S = {"jax": 1.3, "torch": 1.6, "autograd": 0.25}
BENCHMARK = "suites.benchmarks.track_{}"


def cases(n: int) -> list[tuple[str, str, str]]:
    """``n`` (model, backend, variant) triples: every backend on the first model first, then the next model."""
    combos = list(product(range(len(VARIANTS)), range(len(MODELS)), range(len(BACKENDS))))
    out = [(MODELS[m][0], BACKENDS[b][0], VARIANTS[v]) for v, m, b in combos]
    if n > len(out):
        raise ValueError(f"at most {len(out)} synthetic cases, asked for {n}")
    return out[:n]


def _hash(i: int) -> str:
    return hashlib.sha1(f"commit {i}".encode()).hexdigest()


def synthetic_history(n_commits: int = 100, n_cases: int = 12, seed: int = 0, steps_per_case: float = 0.5,
                      machine: str = "vm", environment: str = "existing-py3.11",
                      case_list: list[tuple[str, str, str]] | None = None) -> pd.DataFrame:
    """A history frame in the asv loader's schema; planted steps in ``attrs["steps"]``."""
    rng = np.random.default_rng(seed)
    chosen = case_list or cases(n_cases)
    hashes = [_hash(i) for i in range(n_commits)]
    start = pd.Timestamp("2026-01-05", tz="UTC").value // 10**6
    dates = start + np.cumsum(rng.integers(20, 60 * 60 * 18, n_commits)) * 1000  # ms since epoch, like asv
    backends = {b[0]: b for b in BACKENDS}
    models = dict(MODELS)
    frames, planted = [], []
    for model, backend, variant in chosen:
        _, base, share, counter = backends[backend]
        scale = models.get(model, 1.0) * (0.35 if "scan" in variant else 1.0) * (1.1 if "closure" in variant else 1.0)
        first = base * scale
        imp = IMPORT_S[backend.split(".")[0]]
        levels = {
            ("first_grad_s", "seconds", 0.10): first,
            ("compile_s", "seconds", 0.10): first * share if share else None,
            ("second_grad_s", "seconds", 0.10): first * (1 - share) * 0.5 + 0.001,
            ("import_s", "seconds", 0.08): imp,
            ("process_ttfg_s", "seconds", 0.08): first + imp + 0.25,
            ("alloc_count", "count", 0.003): 4000 + first * 3.0e6,
            ("alloc_bytes", "bytes", 0.003): 5.0e5 + first * 1.1e9,
            ("peak_rss_bytes", "bytes", 0.01): 2.4e8 + first * 6.0e7,
        }
        if counter:
            levels[(f"counters_{counter}", "count", 0.0)] = round(100 + 200 * scale)
        params = f"model={model}, backend={backend}, variant={variant}"
        case = f"{model}/{backend}/{variant}"
        for (name, unit, noise), level in levels.items():
            if level is None:
                continue
            factor = np.ones(n_commits)
            for _ in range(rng.poisson(steps_per_case) if name == "first_grad_s" or rng.random() < 0.15 else 0):
                pos = int(rng.integers(max(3, n_commits // 10), max(4, n_commits - 2)))
                jump = float(rng.choice([1.25, 1.4, 0.7, 2.0]))
                factor[pos:] *= jump
                metric = "counters." + name[9:] if name.startswith("counters_") else name
                planted.append((case, metric, pos, jump))
            values = level * factor * np.exp(noise * rng.standard_normal(n_commits))
            if unit == "count" and noise == 0.0:
                values = np.round(values)
            frames.append(pd.DataFrame({
                "commit": hashes, "date": dates, "machine": machine, "environment": environment,
                "benchmark": BENCHMARK.format(name), "params": params, "value": values, "unit": unit,
            }))
    df = pd.concat(frames, ignore_index=True)
    df.attrs["steps"] = planted
    return df


__all__ = ["cases", "synthetic_history"]
