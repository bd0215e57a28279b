"""Results files built from chosen numbers, for fast tests of compare and expectations."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ttfg.results.record import ColdEvidence, Results, Sample
from ttfg.results import io

CASE = "resnet15/jax.jit/params=args,chain=unrolled"
OTHER = "resnet15/torch.eager/params=closure,chain=unrolled"


def timing_sample(index: int, first_grad_s: float, counters: dict | None = None, ok: bool = True, **fields) -> dict:
    """A good (or failed) timing sample whose other phases are plausible fractions of the first gradient."""
    if not ok:
        return {"kind": "timing", "ok": False, "index": index, "cache": "cold", "error": "RuntimeError: boom (in phase build)",
                "stderr_tail": "Traceback ...\nRuntimeError: boom", "started_at": "2026-12-02T00:00:00+00:00",
                "process_wall_s": 1.0}
    sample = {
        "kind": "timing", "ok": True, "index": index, "cache": "cold", "error": None, "stderr_tail": None,
        "started_at": "2026-12-02T00:00:00+00:00", "process_wall_s": first_grad_s + 2.5,
        "import_s": 1.5, "build_s": 0.1, "first_grad_s": first_grad_s, "second_grad_s": 0.002,
        "trace_s": 0.05 * first_grad_s, "lower_s": 0.02 * first_grad_s, "compile_s": 0.9 * first_grad_s,
        "execute_s": 0.03 * first_grad_s, "process_ttfg_s": first_grad_s + 2.0, "cpu_s": first_grad_s + 2.2,
        "peak_rss_bytes": 300_000_000, "compile_share": 0.97, "loss": 1.0,
        "counters": dict(counters or {"jaxpr_eqns": 304, "hlo_ops": 371}), "cold_evidence": ColdEvidence("cold", 0),
    }
    sample.update(fields)
    return sample


def alloc_sample(index: int, count: int, size: int = 10_000_000) -> dict:
    return {"kind": "allocations", "ok": True, "index": index, "cache": "cold", "error": None, "stderr_tail": None,
            "started_at": "2026-12-02T00:00:00+00:00", "process_wall_s": 5.0, "alloc_count": count,
            "alloc_bytes": size, "alloc_peak_bytes": size // 2, "alloc_tool": "memray", "python_allocators": False}


def lognormal(median: float, n: int, sd: float, seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    return [float(median * math.exp(e)) for e in rng.normal(0.0, sd, n)]


def results(cases: dict[str, list[dict]], environment: dict | None = None) -> Results:
    """A complete Results with ``{case id: samples}``; model/backend come from the id."""
    res = Results(environment or {"hostname": "ci", "python": "3.11.7", "packages": {"jax": "0.10.2"}},
                  {"repeat": 1}, complete=True)
    from ttfg.results.record import CaseResult

    for case_id, samples in cases.items():
        model, backend, variant = case_id.split("/")
        res.cases.append(CaseResult(case_id, model, backend, dict(kv.split("=") for kv in variant.split(",")),
                                    samples=[s if isinstance(s, Sample) else Sample(**s) for s in samples]))
    return res


def timing_run(times: list[float], counters: dict | None = None, allocs: list[int] | None = None,
               case: str = CASE) -> list[dict]:
    samples = [timing_sample(i, t, counters) for i, t in enumerate(times)]
    samples += [alloc_sample(i, c) for i, c in enumerate(allocs or [])]
    return samples


def save(res: Results, path: Path) -> Path:
    return io.save(res, path)
