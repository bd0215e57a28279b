"""Measured costs for the shard partition (``--costs FILE``): seconds per cold process, per case.

Why measured: the built-in estimates (``ttfg.measure.shard.estimate_s``) come from one
2-core VM; a team's own runners, models and variants are better described by their own
numbers. Three sources are read, whichever ``--costs`` names:

* a ttfg results file (``ttfg run``, a gate's ``head.json``): per case, the median
  ``process_wall_s`` of its timing processes, spawn to exit, the time a runner spends;
* an asv result file (``results/<machine>/<commit>-<env>.json``) or
* an asv results folder (the history): per case, the median of
  ``track_process_ttfg_seconds`` over every commit stored.

A case the source does not know keeps the built-in estimate; the partition says which.
A cost beyond :data:`MAX_COST_S` is no measurement (a results file may hold 1e308 s, which
is valid JSON; summed, it made ``ttfg shards --format json`` print ``Infinity``): the
file is refused, naming the case.
"""

from __future__ import annotations

import os
import statistics
from pathlib import Path

from ..errors import UsageError

__all__ = ["load_costs"]

#: The asv benchmark whose values are the cost of one process.
ASV_BENCHMARK = "ttfg.track_process_ttfg_seconds"
#: The longest a process may be said to cost: a week, the longest ``--timeout`` a sample may have.
MAX_COST_S = 7 * 24 * 3600.0


def _from_results(path: Path) -> dict[str, float]:
    from ..results.record import load

    results = load(path)
    out = {}
    for case in results.cases:
        values = [s.process_wall_s for s in case.samples if s.kind == "timing" and s.process_wall_s]
        if not values:
            values = case.values("process_ttfg_s", cache=None)
        if values:
            out[case.id] = float(statistics.median(values))
    return out


def _from_asv(frame) -> dict[str, float]:
    rows = frame[frame.benchmark == ASV_BENCHMARK].dropna(subset=["value"])
    if rows.empty or not {"model", "backend", "variant"} <= set(rows.columns):
        return {}
    medians = rows.groupby(["model", "backend", "variant"])["value"].median()
    return {f"{m}/{b}/{v}": float(value) for (m, b, v), value in medians.items()}


def load_costs(path: str | os.PathLike | None) -> dict[str, float]:
    """Seconds per cold process by case id from ``path`` (see the module docstring); ``{}`` for None.

    Raises
    ------
    UsageError
        A path that does not exist, is none of the three sources, or holds no cost.
    """
    if path is None:
        return {}
    from . import asv_results

    p = Path(path)
    if p.is_dir():
        costs = _from_asv(asv_results.load(p, dropna=True))
    elif p.is_file():
        from ..results import jsonfile

        try:
            head = jsonfile.read(p, UsageError, constants=[])  # asv writes NaN for n/a
        except UsageError as exc:
            raise UsageError(f"--costs {exc}") from None
        if isinstance(head, dict) and head.get("format") == "ttfg-results":
            costs = _from_results(p)
        elif isinstance(head, dict) and "result_columns" in head:
            costs = _from_asv(asv_results.load_file(p, dropna=True))
        else:
            raise UsageError(f"--costs {p}: neither a ttfg results file nor an asv result file or folder")
    else:
        raise UsageError(f"--costs {p}: no such file or folder")
    if not costs:
        raise UsageError(f"--costs {p}: holds no measured process time for any case")
    for case, seconds in costs.items():
        if not 0 < seconds <= MAX_COST_S:
            raise UsageError(f"--costs {p}: {case} costs {seconds:g} s per process, not a time a process takes "
                             f"(at most {MAX_COST_S:g} s)")
    return costs
