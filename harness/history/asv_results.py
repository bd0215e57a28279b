"""asv's result history as pandas tables, for reports and notebooks.

asv keeps one JSON file per machine x commit x environment under ``results/`` and the
benchmark metadata (units, param names) in ``results/benchmarks.json``. Reading them
through asv's own ``asv.results`` keeps this module independent of asv's on-disk column
layout; asv is pinned in constraints.txt.

:func:`load` gives one row per benchmark x parameter combination x result file (commit,
machine, environment). asv stores a parameter value as its ``repr`` (``"'resnet15'"``);
the tables show the value itself. ``value`` is NaN where asv has no number: a
combination that was not measured (asv's n/a) or a benchmark that failed.

A file that cannot be read is an error naming the file (:class:`HistoryError`, exit 2
at the command line), never a quiet gap: asv's own ``iter_results`` logs a warning and
drops it, which made a truncated file look like "fewer commits, fewer regressions".
``skip_bad=True`` is the explicit way past that; the files left out are listed in
``frame.attrs["skipped_files"]`` for the caller to show.
"""

from __future__ import annotations

import ast
import functools
import itertools
import json
import math
import os
from pathlib import Path

from ..errors import TtfgError
from ..results.format import is_number

COLUMNS = ["commit", "date", "machine", "environment", "benchmark", "params", "value", "unit"]


@functools.lru_cache(maxsize=4096)
def _param_text(value_repr: str) -> str:
    """``"'resnet15'"`` -> ``"resnet15"``; anything that is not a literal stays as asv wrote it."""
    try:
        value = ast.literal_eval(value_repr)
    except (ValueError, SyntaxError):
        return value_repr
    return value if isinstance(value, str) else repr(value)


class HistoryError(TtfgError):
    """An asv results folder with a file that cannot be read; the message names the file."""


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise HistoryError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise HistoryError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except OSError as exc:
        raise HistoryError(f"{path}: cannot be read ({exc.strerror})") from None


def _benchmarks_file(results_dir: Path) -> dict:
    path = results_dir / "benchmarks.json"
    if not path.exists():
        return {}
    data = _read_json(path)
    if not isinstance(data, dict):
        raise HistoryError(f"{path}: expected a JSON object of benchmarks, got {type(data).__name__}")
    return {k: v for k, v in data.items() if isinstance(v, dict)}


def _result_files(results_dir: Path):
    """``(path, machine)`` for every result file, like asv's ``iter_results_paths`` but
    raising on a bad ``machine.json`` instead of skipping its folder."""
    for root, dirs, files in os.walk(results_dir):
        dirs.sort()
        names = sorted(f for f in files if f.endswith(".json") and f not in ("machine.json", "benchmarks.json"))
        if not names:
            continue
        machine_json = Path(root) / "machine.json"
        if not machine_json.exists():
            raise HistoryError(f"{machine_json}: missing, so the results beside it ({names[0]}, ...) "
                               "have no machine")
        data = _read_json(machine_json)
        machine = data.get("machine") if isinstance(data, dict) else None
        if not isinstance(machine, str):
            raise HistoryError(f"{machine_json}: no 'machine' name in it")
        for name in names:
            yield Path(root) / name, machine


def _load_result(path: Path, machine: str):
    """One asv result file, fully read (values included), or :class:`HistoryError` naming it."""
    from asv.results import Results

    _read_json(path)  # a precise message for truncated or non-UTF-8 files
    try:
        res = Results.load(str(path), machine_name=machine)
        for name in res.get_all_result_keys():  # wrong shapes surface here, not later
            res.get_result_value(name, res.get_result_params(name) or [])
    except HistoryError:
        raise
    except Exception as exc:  # asv raises UserError, KeyError, TypeError... for wrong shapes
        raise HistoryError(f"{path}: not an asv result file this asv can read ({type(exc).__name__}: {exc})") \
            from None
    return res


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


@functools.lru_cache(maxsize=256)
def _combinations(stored_params: tuple[tuple[str, ...], ...], names: tuple[str, ...]) -> list[tuple[str, dict]]:
    """Per parameter combination, in asv's value order: the ``params`` text and the per-name values.

    Every result file repeats the same grid, so this is worked out once per grid, not
    once per value (``ast.literal_eval`` per value made loading 1000 commits take minutes).
    """
    out = []
    for combo in (itertools.product(*stored_params) if stored_params else [()]):
        shown = [_param_text(v) for v in combo]
        out.append((", ".join(f"{n}={v}" for n, v in zip(names, shown)), dict(zip(names, shown))))
    return out


def _number(value) -> float:
    return float(value) if is_number(value) else math.nan


def _text(value, path: Path, what: str) -> str:
    if not isinstance(value, str):
        raise HistoryError(f"{path}: {what} should be text, got {type(value).__name__} {value!r:.40}")
    return value


def _rows(path: Path, res, meta: dict, param_columns: list[str], dropna: bool = False) -> list[dict]:
    """One row per benchmark x parameter combination of one result file; every field's
    type is checked here, so a wrong shape names this file instead of failing later."""
    import pandas as pd

    date = res.date
    if date is not None and (isinstance(date, bool) or not isinstance(date, (int, float)) or not math.isfinite(date)):
        raise HistoryError(f"{path}: date should be milliseconds since 1970, got {date!r:.40}")
    params = res.params if isinstance(res.params, dict) else {}
    common = {
        "commit": _text(res.commit_hash, path, "commit_hash"),
        "date": pd.Timestamp(date, unit="ms", tz="UTC") if date is not None else pd.NaT,
        "machine": _text(params.get("machine"), path, "params.machine"),
        "environment": _text(res.env_name, path, "env_name"),
    }
    rows = []
    for name in sorted(res.get_all_result_keys()):
        _text(name, path, "a benchmark name")
        stored_params = res.get_result_params(name) or []
        if not isinstance(stored_params, list) or not all(isinstance(a, list) for a in stored_params):
            raise HistoryError(f"{path}: {name}: params should be a list of lists")
        values = res.get_result_value(name, stored_params)
        if not isinstance(values, list):
            raise HistoryError(f"{path}: {name}: results should be a list")
        names = list(meta.get(name, {}).get("param_names") or [])
        if len(names) != len(stored_params) or not all(isinstance(n, str) for n in names):
            names = [f"param{i + 1}" for i in range(len(stored_params))]
        for col in names:
            if col not in param_columns:
                param_columns.append(col)
        for axis in stored_params:
            for v in axis:
                _text(v, path, f"{name}: a parameter value")
        unit = meta.get(name, {}).get("unit")
        unit = unit if isinstance(unit, str) else None
        combos = _combinations(tuple(tuple(axis) for axis in stored_params), tuple(names))
        for (params, per_name), value in zip(combos, values):
            number = _number(value)
            if dropna and number != number:
                continue  # NaN: not measured; left out here rather than built and dropped
            rows.append({**common, "benchmark": name, "params": params, "value": number, "unit": unit, **per_name})
    return rows


def load(results_dir: str | os.PathLike = "results", dropna: bool = False, skip_bad: bool = False):
    """Every stored asv value as a DataFrame.

    Columns: ``commit`` (full hash), ``date`` (the commit's date, a UTC pandas Timestamp),
    ``machine``, ``environment`` (asv's environment name), ``benchmark`` (``module.function``),
    ``params`` (``"model=resnet15, backend=jax.jit, variant=params=args,chain=unrolled"``;
    ``""`` for an unparameterized benchmark), ``value`` (float, NaN when asv has none),
    ``unit`` (from benchmarks.json; None for a benchmark no longer discovered), then one
    column per param name (``model``, ``backend``, ``variant``). ``dropna=True`` leaves
    out the rows without a number.

    Raises
    ------
    HistoryError
        When a file cannot be read (named in the message), unless ``skip_bad``: then it
        is left out and listed in ``frame.attrs["skipped_files"]`` as ``"path: reason"``.
    """
    import pandas as pd

    results_dir = Path(results_dir)
    meta = _benchmarks_file(results_dir)
    rows = []
    param_columns: list[str] = []
    skipped: list[str] = []
    if results_dir.is_dir():
        for path, machine in _result_files(results_dir):
            try:
                res = _load_result(path, machine)
                try:
                    rows += _rows(path, res, meta, param_columns, dropna)
                except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
                    raise HistoryError(f"{path}: not an asv result file this asv can read "
                                       f"({type(exc).__name__}: {exc})") from None
            except HistoryError as exc:
                if not skip_bad:
                    raise
                skipped.append(str(exc))
    frame = pd.DataFrame(rows, columns=COLUMNS + param_columns)
    frame["value"] = frame["value"].astype(float)
    if dropna:
        frame = frame.dropna(subset=["value"]).reset_index(drop=True)
    frame = frame.sort_values(["date", "commit", "machine", "environment", "benchmark", "params"],
                              kind="stable", ignore_index=True)
    frame.attrs["skipped_files"] = skipped
    return frame


def load_file(path: str | os.PathLike, dropna: bool = False):
    """One asv result file (``results/<machine>/<commit>-<env>.json``) as :func:`load` shows a folder.

    The machine comes from the file itself; units and param names from the
    ``benchmarks.json`` two folders up, when there is one.

    Raises
    ------
    HistoryError
        Naming the file, when it cannot be read as an asv result file.
    """
    import pandas as pd

    path = Path(path)
    data = _read_json(path)
    params = data.get("params") if isinstance(data, dict) else None
    machine = params.get("machine") if isinstance(params, dict) else None
    if not isinstance(machine, str):
        raise HistoryError(f"{path}: not an asv result file (no params.machine)")
    res = _load_result(path, machine)
    param_columns: list[str] = []
    try:
        rows = _rows(path, res, _benchmarks_file(path.parent.parent), param_columns, dropna)
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
        raise HistoryError(f"{path}: not an asv result file this asv can read ({type(exc).__name__}: {exc})") from None
    frame = pd.DataFrame(rows, columns=COLUMNS + param_columns)
    frame["value"] = frame["value"].astype(float)
    return frame


__all__ = ["COLUMNS", "HistoryError", "benchmarks", "load", "load_file"]
