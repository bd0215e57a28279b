"""What the asv suites in ``suites/`` call: measure once per environment, answer every metric.

asv keys a benchmark's history by a hash of its source code (the ``track_*`` function,
its ``setup`` and its ``setup_cache``), so those functions are one-line calls into this
module and every decision lives here: which cases run, how many cold processes, how a
metric is read and aggregated. Editing this module keeps asv history; editing a suite
function starts that benchmark's history afresh.

Params are the full matrix, not the selection. ``asv publish`` draws graphs only for the
params listed in the latest ``benchmarks.json``; params that followed the selection would
hide every other case's history after one narrow run. So the params are every registered
model x backend x variant label (plus any sized model named in ``TTFG_ASV_MODELS``), and a
combination that was not selected, is not supported by its backend, or had no good sample
returns NaN, which asv shows as n/a. To keep asv from forking a process for each of those
NaN combinations, pass ``asv run -b`` patterns (``bench_patterns()``); that also keeps the
values of unselected cases already stored for the same commit.

Samples: a timing (a metric the registry does not call deterministic) is returned to asv
as ``{"samples": [...], "number": 1}``, the shape of asv's own timing results. asv then
stores the median as the value, its quartiles and 99 % interval as ``stats``, and, with
``asv run --record-samples`` (``ttfg asv record`` passes it), every cold process's value
as ``samples``: what the trend report tests a step against. Deterministic metrics
(counters, allocations) stay one number. The suite functions do not change, so neither
does asv's history key.

Selection, from environment variables (read both when asv imports the suite and in
``setup_cache``):

``TTFG_ASV_MODELS``      comma-separated models, sized ones allowed (default ``resnet15``)
``TTFG_ASV_BACKENDS``    comma-separated backends or ``all`` (default ``all``)
``TTFG_ASV_VARIANTS``    ``;``-separated variant selections: ``default``, ``all`` or
                         ``axis=value[,axis=value]`` (default ``default``)
``TTFG_ASV_REPEAT``      cold timing processes per case; metrics are their medians (default 3)
``TTFG_ASV_ALLOCATIONS`` ``1``/``0``: one extra memray process per case (default 1)
``TTFG_ASV_TIMEOUT``     seconds per cold process (default 600)
``TTFG_ASV_SETUP_TIMEOUT`` seconds asv allows ``setup_cache`` (default 14400)
``TTFG_ASV_SHARD``       ``I/N``: only shard I of N of the selection (``ttfg asv record --shard``)
``TTFG_ASV_COSTS``       the ``--costs`` file the shards were cut with (default: built-in estimates)
"""

from __future__ import annotations

import math
import os
import re
import statistics
import sys
from dataclasses import dataclass

from ttfg import models

from .. import engines, metrics

from ..engines import variants
from ..errors import UsageError
from ..results.format import is_number

ENV_PREFIX = "TTFG_ASV_"
PARAM_NAMES = ["model", "backend", "variant"]

#: The metrics asv records: the registry's entries with a ``track_*`` function.
METRICS = metrics.names(lambda m: m.asv_benchmark is not None)
#: The ones stored with every sample: timings, whose history is judged against their spread.
SAMPLED = metrics.names(lambda m: m.asv_benchmark is not None and not m.deterministic)


def _env(name: str, default: str) -> str:
    value = os.environ.get(ENV_PREFIX + name, "").strip()
    return value or default


def _env_number(name: str, default: float, kind=int):
    text = _env(name, str(default))
    try:
        value = kind(text)
    except ValueError:
        raise UsageError(f"{ENV_PREFIX}{name}={text!r} is not a number") from None
    if value <= 0:
        raise UsageError(f"{ENV_PREFIX}{name} must be positive, got {text!r}")
    return value


def _flag(name: str, default: bool) -> bool:
    text = _env(name, "1" if default else "0").lower()
    if text not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
        raise UsageError(f"{ENV_PREFIX}{name}={text!r}: use 1 or 0")
    return text in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class Selection:
    """What ``setup_cache`` measures; from ``TTFG_ASV_*`` (see the module docstring)."""

    models: tuple[str, ...] = ("resnet15",)
    backends: tuple[str, ...] = ("all",)
    variants: tuple[str, ...] = ("default",)
    repeat: int = 3
    allocations: bool = True
    timeout_s: float = 600.0
    #: ``"I/N"``: measure only that shard of the selection (``ttfg.measure.shard``).
    shard: str | None = None
    costs: str | None = None

    @classmethod
    def from_env(cls) -> "Selection":
        split = lambda text, sep: tuple(p.strip() for p in text.split(sep) if p.strip())  # noqa: E731
        return cls(
            models=split(_env("MODELS", "resnet15"), ","),
            backends=split(_env("BACKENDS", "all"), ","),
            variants=split(_env("VARIANTS", "default"), ";"),
            repeat=_env_number("REPEAT", 3),
            allocations=_flag("ALLOCATIONS", True),
            timeout_s=_env_number("TIMEOUT", 600.0, float),
            shard=_env("SHARD", "") or None,
            costs=_env("COSTS", "") or None,
        )

    def cases(self):
        """``(cases, skipped)`` as ``ttfg.measure.cases.select`` gives them; raises UsageError on bad names."""
        from ..measure.cases import select

        cases, skipped = select(list(self.models), list(self.backends), list(self.variants))
        if self.shard is None:
            return cases, skipped
        from ..measure.shard import parse_spec, select_shard
        from .shard_costs import load_costs

        universe, _ = select(list(self.models), list(self.backends), list(self.variants), check_availability=False)
        mine, mine_skipped, _ = select_shard([c.id for c in universe], cases, skipped, parse_spec(self.shard),
                                             load_costs(self.costs))
        return mine, mine_skipped


def variant_labels() -> list[str]:
    """Every combination of the variant axes, as canonical labels."""
    labels = [{}]
    for axis, values in variants.AXES.items():
        labels = [{**partial, axis: v} for partial in labels for v in values]
    return [variants.label(v) for v in labels]


def model_params() -> list[str]:
    """Registered models, then sized models named in ``TTFG_ASV_MODELS`` (unparsable ones are left to setup_cache to report)."""
    from ..measure.cases import parse_model

    out = models.names()
    for text in _env("MODELS", "").split(","):
        text = text.strip()
        if not text or text in out or text == "all":
            continue
        try:
            parse_model(text)
        except UsageError:
            continue
        out.append(text)
    return out


def params() -> list[list[str]]:
    """asv ``params``: model x backend x variant, fixed at import time."""
    return [model_params(), engines.names(), variant_labels()]


def bench_patterns(selection: Selection | None = None) -> list[str]:
    """``asv run -b`` patterns matching exactly the selected cases' parameter combinations.

    asv matches ``-b`` against ``name('model', 'backend', 'variant')`` for parameterized
    benchmarks and runs nothing (NaN, or the value already stored) for the rest.
    """
    cases, _ = (selection or Selection.from_env()).cases()
    return [re.escape(f"({c.model!r}, {c.backend!r}, {variants.label(c.variant_dict)!r})") for c in cases]


def setup_timeout_s() -> float:
    return _env_number("SETUP_TIMEOUT", 14400.0, float)


def _median(values: list[float]) -> float:
    return float(statistics.median(values)) if values else math.nan


def aggregate(case_result, metric: str) -> float:
    """One number for asv: the median over the case's good cold samples, NaN when there is none.

    Derived metrics (the compile total) are computed per sample by the registry, then the median taken.
    """
    return _median(metrics.case_values(case_result, metric, "cold"))


def unit(benchmark: str) -> str:
    """The asv unit of a ``track_*`` function, from the registry."""
    info = metrics.by_benchmark(benchmark)
    if info is None:
        raise KeyError(f"{benchmark} tracks no metric of ttfg.metrics; add its asv_benchmark there")
    return info.asv_unit


def measure(selection: Selection | None = None, out=None) -> dict:
    """The body of ``setup_cache``: run the selection's cold processes once, keep the medians.

    Returns a small picklable dict (asv loads it in every benchmark process):
    ``{"values": {case_id: {metric: float}}, "samples": {case_id: {metric: [float, ...]}},
    "problems": {case_id: reason}, "selection": {...}}``; ``samples`` holds the timings'
    per-process values, in the order they were measured.
    Cases that are skipped or fail get no values (NaN later) and a line on stderr, which
    ``asv run --show-stderr`` prints; only a bad selection raises.
    """
    from ..measure.runner import RunSettings, Runner

    selection = selection or Selection.from_env()
    cases, skipped = selection.cases()
    settings = RunSettings(repeat=selection.repeat, timeout_s=selection.timeout_s,
                           allocations=selection.allocations)
    print(f"ttfg: measuring {len(cases)} case(s), {selection.repeat} cold process(es) each"
          + (" plus one allocation process" if selection.allocations else "")
          + f", {len(skipped)} skipped", file=sys.stderr)
    results = Runner(cases, skipped, settings, out).run()
    values: dict[str, dict[str, float]] = {}
    samples: dict[str, dict[str, list[float]]] = {}
    problems: dict[str, str] = {}
    for case in results.cases:
        if case.skipped:
            problems[case.id] = f"skipped: {case.skipped}"
            continue
        values[case.id] = {m: aggregate(case, m) for m in METRICS}
        samples[case.id] = {m: [float(v) for v in metrics.case_values(case, m, "cold")] for m in SAMPLED}
        bad = [s for s in case.samples if not s.ok]
        if bad:
            problems[case.id] = f"{len(bad)} failed sample(s); first: {bad[0]['error']}"
    for case_id, why in problems.items():
        print(f"ttfg: {case_id}: {why}", file=sys.stderr)
    return {"values": values, "samples": samples, "problems": problems,
            "selection": {**selection.__dict__, "python": sys.executable}}


def value(cache: dict, metric: str, model: str, backend: str, variant: str) -> float | dict:
    """The body of each ``track_*``: the stored median, or NaN (asv: n/a).

    A timing with samples comes back as ``{"samples": [...], "number": 1}`` (asv's timing
    shape, see the module docstring); asv computes the median from them.
    """
    if metric not in METRICS:
        raise KeyError(f"unknown metric {metric!r}; known: {', '.join(METRICS)}")
    case = f"{model}/{backend}/{variant}"
    got = cache.get("values", {}).get(case, {}).get(metric)
    if not is_number(got):
        return math.nan
    sampled = [float(v) for v in cache.get("samples", {}).get(case, {}).get(metric) or [] if is_number(v)]
    if metric in SAMPLED and sampled:
        return {"samples": sampled, "number": 1}
    return float(got)


__all__ = ["METRICS", "PARAM_NAMES", "SAMPLED", "Selection", "aggregate", "bench_patterns", "measure", "params",
           "setup_timeout_s", "unit", "value", "variant_labels"]
