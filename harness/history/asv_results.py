"""asv's result history as pandas tables, for reports and notebooks.

asv keeps one JSON file per machine x commit x environment under ``results/`` and the
benchmark metadata (units, param names) in ``results/benchmarks.json``. Reading them
through asv's own ``asv.results`` keeps this module independent of asv's on-disk column
layout; asv is pinned in constraints.txt.

:func:`load` gives one row per benchmark x parameter combination x result file (commit,
machine, environment). asv stores a parameter value as its ``repr`` (``"'resnet15'"``);
the tables show the value itself. ``value`` is NaN where asv has no number: a
combination that was not measured (asv's n/a) or a benchmark that failed.
"""

from __future__ import annotations

import ast
import itertools
import json
import math
import os
from pathlib import Path

from ..results.format import is_number

COLUMNS = ["commit", "date", "machine", "environment", "benchmark", "params", "value", "unit"]


def _param_text(value_repr: str) -> str:
    """``"'resnet15'"`` -> ``"resnet15"``; anything that is not a literal stays as asv wrote it."""
    try:
        value = ast.literal_eval(value_repr)
    except (ValueError, SyntaxError):
        return value_repr
    return value if isinstance(value, str) else repr(value)


def _benchmarks_file(results_dir: Path) -> dict:
    path = results_dir / "benchmarks.json"
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    return {k: v for k, v in data.items() if isinstance(v, dict)}


def benchmarks(results_dir: str | os.PathLike = "results"):
    """Benchmark metadata from the latest discovery: name, type, unit, param names, params, code version."""
    import pandas as pd

    rows = []
    for name, meta in sorted(_benchmarks_file(Path(results_dir)).items()):
        rows.append({
            "benchmark": name, "type": meta.get("type"), "unit": meta.get("unit"),
            "param_names": list(meta.get("param_names") or []),
            "params": [[_param_text(v) for v in axis] for axis in meta.get("params") or []],
            "version": meta.get("version"),
        })
    return pd.DataFrame(rows, columns=["benchmark", "type", "unit", "param_names", "params", "version"])


def _number(value) -> float:
    return float(value) if is_number(value) else math.nan


def load(results_dir: str | os.PathLike = "results", dropna: bool = False):
    """Every stored asv value as a DataFrame.

    Columns: ``commit`` (full hash), ``date`` (the commit's date, a UTC pandas Timestamp),
    ``machine``, ``environment`` (asv's environment name), ``benchmark`` (``module.function``),
    ``params`` (``"model=resnet15, backend=jax.jit, variant=params=args,chain=unrolled"``;
    ``""`` for an unparameterized benchmark), ``value`` (float, NaN when asv has none),
    ``unit`` (from benchmarks.json; None for a benchmark no longer discovered), then one
    column per param name (``model``, ``backend``, ``variant``). ``dropna=True`` leaves
    out the rows without a number.
    """
    import pandas as pd
    from asv.results import iter_results

    results_dir = Path(results_dir)
    meta = _benchmarks_file(results_dir)
    rows = []
    param_columns: list[str] = []
    if results_dir.is_dir():
        results = iter_results(str(results_dir))
    else:
        results = []
    for res in results:
        common = {
            "commit": res.commit_hash,
            "date": pd.Timestamp(res.date, unit="ms", tz="UTC") if res.date is not None else pd.NaT,
            "machine": res.params.get("machine"),
            "environment": res.env_name,
        }
        for name in sorted(res.get_all_result_keys()):
            stored_params = res.get_result_params(name) or []
            values = res.get_result_value(name, stored_params)
            names = list(meta.get(name, {}).get("param_names") or [])
            if len(names) != len(stored_params):
                names = [f"param{i + 1}" for i in range(len(stored_params))]
            for col in names:
                if col not in param_columns:
                    param_columns.append(col)
            combos = itertools.product(*stored_params) if stored_params else [()]
            for combo, value in zip(combos, values):
                shown = [_param_text(v) for v in combo]
                rows.append({
                    **common, "benchmark": name,
                    "params": ", ".join(f"{n}={v}" for n, v in zip(names, shown)),
                    "value": _number(value), "unit": meta.get(name, {}).get("unit"),
                    **dict(zip(names, shown)),
                })
    frame = pd.DataFrame(rows, columns=COLUMNS + param_columns)
    frame["value"] = frame["value"].astype(float)
    if dropna:
        frame = frame.dropna(subset=["value"]).reset_index(drop=True)
    return frame.sort_values(["date", "commit", "machine", "environment", "benchmark", "params"],
                             kind="stable", ignore_index=True)


__all__ = ["COLUMNS", "benchmarks", "load"]
