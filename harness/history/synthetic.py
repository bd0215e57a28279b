"""Synthetic asv history, written as the real asv result files, with known steps.

Why: the report must be tested on long histories (and timed on 1000 commits x 50
cases, ``benchmarks/report_scale.py``) long before a real one exists, and a test can
only check step detection against steps it planted. So :func:`write_history` writes
what ``asv run`` writes into a results folder, through asv's own writer
(``asv.results.Results.save``, asv 0.6.6): ``machine.json``, one result file per
commit (``<machine>/<hash8>-<env>.json``: ``result_columns``, per benchmark the values
over the whole parameter grid, its params, version, start time and duration, NaN
where a case was not measured) and ``benchmarks.json`` with the suite's real
benchmark names (``ttfg.track_first_grad_seconds``, ...; the registry's ``asv_benchmark``),
units and the ``model`` x ``backend`` x ``variant`` grid. Readers then go the way real
history goes: ``ttfg.history.asv_results.load`` -> points -> trends -> report. The
planted steps come back in the return value, never in the folder (asv would try to
read any other JSON file there as a result).

Levels follow the medians in docs/measurements.md's "Time to first gradient" tables (resnet15
and convnext_tiny, every backend: first gradient, compile share, second gradient,
process TTFG about 2 s more than the first gradient); the sized models are scaled from
those by hand (x2 for 30 blocks, x0.4 for depths 1x1x3x1), and memory levels are
proportional to the first gradient. Noise is lognormal: about 10 % on timings, 1 % on
peak RSS, 0.3 % on allocations and none on structural counters, which is how those
signals behave here. Timings are written the way ``ttfg asv record`` stores them:
``samples`` per commit (asv's ``--record-samples``; ``samples`` cold processes each),
their median as the value; a timing's noise is split into a drift shared by one
commit's samples (the machine's state while it was recorded) and a per-sample part.
Nothing here is a measurement.
"""

from __future__ import annotations

import datetime
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import engines, metrics
from ..engines import variants
from . import asv_suite

#: backend -> (first gradient s on resnet15, on convnext_tiny, compile share, second gradient s on resnet15,
#: structural counters it reports); docs/measurements.md, "Time to first gradient".
BACKENDS = {
    "jax.jit": (1.78, 8.87, 0.98, 0.0012, ("jaxpr_eqns", "hlo_ops", "backend_compiles")),
    "jax.eager": (1.30, 21.75, 0.80, 0.16, ("jaxpr_eqns", "backend_compiles")),
    "torch.eager": (0.0051, 0.33, 0.0, 0.0026, ("autograd_nodes",)),
    "torch.func": (1.69, 2.44, 0.0, 0.0072, ()),
    "torch.compile": (19.11, 101.34, 1.0, 0.0043, ("graphs", "graph_breaks", "recompiles", "fx_nodes")),
    "torch.compile.aot_eager": (2.65, 16.00, 0.98, 0.0035, ("graphs", "graph_breaks", "recompiles", "fx_nodes")),
    "autograd": (0.069, 1.62, 0.0, 0.063, ("autograd_primitives",)),
}
#: model -> (which measured column it scales, factor). The sized ones are what TTFG_ASV_MODELS adds to the grid.
MODELS = {
    "resnet15": (0, 1.0),
    "convnext_tiny": (1, 1.0),
    "resnet15:blocks=30": (0, 2.0),
    "convnext_tiny:depths=1x1x3x1": (1, 0.4),
}
REGISTERED_MODELS = ("resnet15", "convnext_tiny")
IMPORT_S = {"jax": 1.3, "torch": 1.6, "autograd": 0.25}
#: Counters that are zero in a healthy run: no level to step.
ZERO_COUNTERS = ("graph_breaks", "recompiles")
SETUP_CACHE_KEY = "ttfg:12"
PYTHON = "/usr/bin/python3"
ENV_NAME = "existing-py_usr_bin_python3"


@dataclass
class SyntheticHistory:
    """What :func:`write_history` wrote, and the steps it planted."""

    folder: Path
    machine: str
    commits: list[str]
    cases: list[tuple[str, str, str]]
    #: ``(case id, metric, position of the first commit after the step, factor)``
    steps: list[tuple[str, str, int, float]] = field(default_factory=list)


def suite_benchmarks() -> list[tuple[str, str, str]]:
    """``(asv benchmark name, metric, unit)`` of every ``track_*`` in ``suites/ttfg.py``, in discovery order."""
    return sorted((f"ttfg.{m.asv_benchmark}", m.name, m.asv_unit) for m in metrics.entries() if m.asv_benchmark)


def cases(n: int) -> list[tuple[str, str, str]]:
    """``n`` (model, backend, variant) cases that the real matrix supports.

    Each backend's default variant on every model first, then the next variant each
    backend supports, and so on: a short list spreads over backends and models.
    """
    per_backend = {b: [v for v in engines.get(b).supported_variants()] for b in BACKENDS}
    out = []
    for rank in range(max(len(v) for v in per_backend.values())):
        for model in MODELS:
            for backend, supported in per_backend.items():
                if rank < len(supported):
                    out.append((model, backend, variants.label(supported[rank])))
    if n > len(out):
        raise ValueError(f"at most {len(out)} synthetic cases, asked for {n}")
    return out[:n]


def _levels(model: str, backend: str, variant: str) -> dict[str, float]:
    """The metric levels of one case, keyed like ``asv_suite.METRICS``; absent where the backend has none."""
    resnet, convnext, share, second, counters = BACKENDS[backend]
    column, factor = MODELS.get(model, (0, 1.0))
    scale = factor * (0.35 if "chain=scan" in variant else 1.0) * (1.1 if "params=closure" in variant else 1.0)
    first = (resnet, convnext)[column] * scale
    levels = {
        "first_grad_s": first,
        "first_grad_cpu_s": first * 0.95,
        "process_ttfg_s": first + IMPORT_S[backend.split(".")[0]] + 0.4,
        "import_s": IMPORT_S[backend.split(".")[0]],
        "second_grad_s": second * scale,
        "peak_rss_bytes": 2.4e8 + first * 6.0e7,
        "alloc_count": 4000 + first * 1.3e6,
        "alloc_bytes": 5.0e5 + first * 4.6e8,
    }
    if share:
        levels["first_grad_compile_s"] = first * share
    for name in counters:
        levels[f"counters.{name}"] = 0.0 if name in ZERO_COUNTERS else float(round(100 + 200 * scale))
    return levels


#: Of a timing's 10 % noise: the part one commit's samples share (drift), and each sample's own.
DRIFT_SD, SAMPLE_SD = 0.06, 0.08


def _noise(metric: str) -> float:
    if metric.startswith("counters."):
        return 0.0
    if metric in ("alloc_count", "alloc_bytes"):
        return 0.003
    return 0.01 if metric == "peak_rss_bytes" else 0.10


def _grid_axis(values) -> list[str]:
    return list(dict.fromkeys(values))  # in order, without repeats


def write_history(folder: str | Path, n_commits: int = 100, n_cases: int = 12, seed: int = 0,
                  steps_per_case: float = 0.5, machine: str = "ttfg-synthetic",
                  case_list: list[tuple[str, str, str]] | None = None, samples: int = 3,
                  commits: list[str] | None = None, dates_ms: list[int] | None = None,
                  plant: list[tuple[str, str, int, float]] | None = None) -> SyntheticHistory:
    """Write ``n_commits`` asv result files of ``n_cases`` cases into ``folder`` (an asv ``results_dir``).

    ``samples``: cold processes per commit behind each timing (0: medians only, as asv
    history recorded without ``--record-samples``).

    ``commits`` and ``dates_ms``: the commits' hashes (in the history's true order, e.g. a real
    repository's) and the dates asv would store for them (ms since the epoch: equal ones for a
    rebase, decreasing ones for a cherry-pick); by default made-up hashes one to 18 hours apart.
    ``plant``: steps to put exactly there, ``(case id, metric, position, factor)``, besides
    the random ones ``steps_per_case`` draws (0: none but these).

    Several calls may share one folder (another ``machine``, say) as long as they use
    the same cases: ``benchmarks.json`` describes the last call's grid.
    """
    from asv.results import Results
    from asv.runner import BenchmarkResult
    from asv.util import write_json

    folder = Path(folder)
    rng = np.random.default_rng(seed)
    chosen = list(case_list or cases(n_cases))
    # asv's grid: the registered models plus the sized ones asked for (TTFG_ASV_MODELS), every backend, every variant.
    grid = [_grid_axis([*REGISTERED_MODELS, *(m for m, _, _ in chosen)]),
            _grid_axis([*BACKENDS, *(b for _, b, _ in chosen)]),
            _grid_axis([*asv_suite.variant_labels(), *(v for _, _, v in chosen)])]
    index = {(m, b, v): (i * len(grid[1]) + j) * len(grid[2]) + k
             for i, m in enumerate(grid[0]) for j, b in enumerate(grid[1]) for k, v in enumerate(grid[2])}
    size = len(index)
    benchmarks = suite_benchmarks()
    values = {name: np.full((n_commits, size), np.nan) for name, _, _ in benchmarks}
    kept = {name: np.full((n_commits, size, samples), np.nan) for name, metric, _ in benchmarks
            if samples and metric in asv_suite.SAMPLED}
    planted = []
    for model, backend, variant in chosen:
        case = f"{model}/{backend}/{variant}"
        for name, metric, _ in benchmarks:
            level = _levels(model, backend, variant).get(metric)
            if level is None:
                continue
            factor = np.ones(n_commits)
            for where in (p for p in plant or () if p[0] == case and p[1] == metric):
                factor[where[2]:] *= where[3]
                planted.append(tuple(where))
            wants = rng.poisson(steps_per_case) if metric == "first_grad_s" or rng.random() < 0.15 else 0
            for _ in range(wants if level > 0 else 0):
                pos = int(rng.integers(max(3, n_commits // 10), max(4, n_commits - 2)))
                jump = float(rng.choice([1.25, 1.4, 0.7, 2.0]))
                factor[pos:] *= jump
                planted.append((case, metric, pos, jump))
            col = index[(model, backend, variant)]
            if name in kept:
                drift = DRIFT_SD * rng.standard_normal((n_commits, 1))
                drawn = level * factor[:, None] * np.exp(drift + SAMPLE_SD * rng.standard_normal((n_commits, samples)))
                kept[name][:, col, :] = drawn
                values[name][:, col] = np.median(drawn, axis=1)
                continue
            series = level * factor * np.exp(_noise(metric) * rng.standard_normal(n_commits))
            if metric.startswith("counters.") or metric == "alloc_count":
                series = np.round(series)
            values[name][:, col] = series

    quoted = [[repr(v) for v in axis] for axis in grid]
    meta = {}
    for name, metric, unit in benchmarks:
        fn = name.split(".", 1)[1]
        code = (f"def {fn}(cache, model, backend, variant):\n"
                f"    return asv_bench.value(cache, {metric!r}, model, backend, variant)\n\n"
                f"def setup_cache():\n    return asv_bench.measure()")
        meta[name] = {"code": code, "name": name, "param_names": list(asv_suite.PARAM_NAMES), "params": quoted,
                      "setup_cache_key": SETUP_CACHE_KEY, "setup_cache_timeout": 14400.0, "type": "track",
                      "unit": unit, "version": hashlib.sha256(code.encode()).hexdigest()}
    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / "benchmarks.json", meta, api_version=2)
    write_json(folder / machine / "machine.json", {"machine": machine}, api_version=1)

    if commits is None:
        commits = [hashlib.sha1(f"synthetic commit {i}".encode()).hexdigest() for i in range(n_commits)]
    if len(commits) != n_commits:
        raise ValueError(f"{len(commits)} commits given for a history of {n_commits}")
    start = int(datetime.datetime(2026, 1, 5, tzinfo=datetime.timezone.utc).timestamp() * 1000)
    dates = start + np.cumsum(rng.integers(20, 60 * 60 * 18, n_commits)) * 1000  # ms since the epoch, like asv
    if dates_ms is not None:
        dates = np.asarray(dates_ms, dtype=np.int64)
    nothing = [None] * size
    for i, commit in enumerate(commits):
        result = Results({"machine": machine, "python": PYTHON}, {}, commit, int(dates[i]), PYTHON, ENV_NAME, {})
        started = datetime.datetime.fromtimestamp(int(dates[i]) / 1000 + 600, datetime.timezone.utc)
        result.set_build_duration(0.0001)
        result.set_setup_cache_duration(SETUP_CACHE_KEY, 60.0)
        for name, _, _ in benchmarks:
            row = values[name][i]
            sampled, number = nothing, nothing
            if name in kept:  # as asv_suite.value returns them: asv takes the median and its stats
                sampled = [None if v != v else kept[name][i, j].tolist() for j, v in enumerate(row)]
                number = [None if v != v else 1 for v in row]
            measured = BenchmarkResult(result=[True if n else v for v, n in zip(row.tolist(), number)],
                                       samples=sampled, number=number, errcode=0, stderr="", profile=None)
            result.add_result(meta[name], measured, started_at=started, duration=0.05,
                              record_samples=name in kept)
        result.save(str(folder))
    return SyntheticHistory(folder, machine, commits, chosen, planted)


__all__ = ["SyntheticHistory", "cases", "suite_benchmarks", "write_history"]
