"""asv's result history as pandas tables, for reports and notebooks.

asv keeps one JSON file per machine x commit x environment under ``results/`` and the
benchmark metadata (units, param names) in ``results/benchmarks.json``. Reading them
through asv's own ``asv.results`` keeps this module independent of asv's on-disk column
layout; asv is pinned in constraints.txt.

:func:`load` gives one row per benchmark x parameter combination x result file (commit,
machine, environment). asv stores a parameter value as its ``repr`` (``"'resnet15'"``);
the tables show the value itself. ``value`` is NaN where asv has no number: a
combination that was not measured (asv's n/a) or a benchmark that failed.

Reading: asv 0.6.6's result files (format version 2) are self-describing JSON
(``result_columns`` name each benchmark row's fields), and this module reads them
directly, column by column: going through ``asv.results.Results`` per file cost most
of a 1000-commit report's time. A file in another format version is handed to asv's
own reader.

A file that cannot be read is an error naming the file (:class:`HistoryError`, exit 2
at the command line), never a quiet gap: asv's own ``iter_results`` logs a warning and
drops it, which made a truncated file look like "fewer commits, fewer regressions".
``skip_bad=True`` is the explicit way past that; the files left out are listed in
``frame.attrs["skipped_files"]`` for the caller to show.

Impossible values make a file unreadable in the same way (:func:`_impossible`): a
value or sample that is negative, infinite, zero where the metric cannot be (a first
gradient of 0 s), or beyond any measurement (1e308 s), and a date outside 1970 to
2286. One such number used to break the whole report and ``regressions`` with an
internal error naming no file, whether or not ``--skip-bad-history`` was given. So
does a second file claiming a commit that another file of the same machine and
environment holds (a copy or a renamed file): the later one is left out, both named,
since the two cannot both be that commit's measurement.
"""

from __future__ import annotations

import ast
import functools
import gc
import itertools
import math
import os
from pathlib import Path

import numpy as np

from ..errors import TtfgError
from ..results.format import is_number
from . import git_order

COLUMNS = ["commit", "date", "machine", "environment", "benchmark", "params", "value", "unit", "samples"]
#: Beside the history, not an asv result file (``ttfg regressions --confirm`` writes it); skipped here.
NOT_RESULTS = frozenset({"machine.json", "benchmarks.json", "confirmations.json"})


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
    """A history file parsed by the one bounded parser (``results.jsonfile``); asv's NaN is n/a, accepted."""
    from ..results import jsonfile

    return jsonfile.read(path, HistoryError, constants=[])


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
        names = sorted(f for f in files if f.endswith(".json") and f not in NOT_RESULTS)
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
    """One asv result file read by asv itself (values included), or :class:`HistoryError` naming it.

    The slow path: used for files in another format version than the one asv 0.6.6 writes,
    which :func:`_read_v2` reads directly.
    """
    from asv.results import Results

    try:
        res = Results.load(str(path), machine_name=machine)
        for name in res.get_all_result_keys():  # wrong shapes surface here, not later
            res.get_result_value(name, res.get_result_params(name) or [])
    except Exception as exc:  # asv raises UserError, KeyError, TypeError... for wrong shapes
        _read_json(path)  # a precise message for truncated or non-UTF-8 files (parsed only on failure)
        raise HistoryError(f"{path}: not an asv result file this asv can read ({type(exc).__name__}: {exc})") \
            from None
    return res


#: The result file format asv 0.6.6 writes (``asv.results.Results.api_version``): one JSON
#: object with ``result_columns`` naming the fields of every benchmark's row.
ASV_FORMAT = 2


def _as_v2(path: Path, res) -> dict:
    """A result file asv had to read itself, in the shape :func:`_read_v2` reads."""
    results = {}
    for name in res.get_all_result_keys():
        stored = res.get_result_params(name) or []
        results[name] = [res.get_result_value(name, stored), stored] + [None] * 9 + [
            res.get_result_samples(name, stored)]
    return {"commit_hash": res.commit_hash, "date": res.date, "params": res.params, "env_name": res.env_name,
            "result_columns": ["result", "params"] + [f"_{i}" for i in range(9)] + ["samples"], "results": results,
            "version": ASV_FORMAT}
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


#: Dates asv stores are milliseconds since 1970; beyond 10**13 (the year 2286) no commit was made.
MAX_DATE_MS = 10 ** 13
#: The largest value a history may hold, by unit: a week per process in seconds (the longest
#: ``--timeout``), 2**63 for counts and bytes, and 1e18 for a benchmark of unknown unit.
MAX_VALUE = {"seconds": 7 * 24 * 3600.0, "count": 2.0 ** 63, "bytes": 2.0 ** 63}
MAX_OTHER = 1e18


def _impossible(values: np.ndarray, name: str, unit: str | None) -> float | None:
    """The first value no measurement of ``name`` can have (NaN is n/a and allowed), or None."""
    finite = values[~np.isnan(values)]
    if not len(finite):
        return None
    from .. import metrics

    info = metrics.by_benchmark(name)
    if unit is None and info is not None:  # no benchmarks.json at hand: the registry knows the unit
        unit = {"s": "seconds", "bytes": "bytes", "count": "count"}.get(info.unit)
    zero_ok = unit != "seconds" or info is None or info.name in metrics.ZERO_ALLOWED or not info.stored
    top = MAX_VALUE.get(unit, MAX_OTHER)
    bad = (finite < 0) | (finite > top) | ~np.isfinite(finite) | ((finite == 0) & (not zero_ok))
    return float(finite[np.argmax(bad)]) if bad.any() else None


def check_values(values, path: Path, name: str, unit: str | None, what: str) -> None:
    """Raise :class:`HistoryError` naming ``path`` when ``values`` (NaN for n/a) hold an impossible one."""
    bad = _impossible(np.asarray(values, dtype=float), name, unit)
    if bad is not None:
        raise HistoryError(f"{path}: {name}: {what} {bad!r} is not a measurement of this benchmark"
                           + (f" (unit {unit})" if unit else ""))


def _text(value, path: Path, what: str) -> str:
    if not isinstance(value, str):
        raise HistoryError(f"{path}: {what} should be text, got {type(value).__name__} {value!r:.40}")
    return value


class _Columns:
    """The frame being built, column by column: a long history has 500,000 values, so
    nothing here touches a value in Python more than once."""

    def __init__(self):
        self.scalars: list[tuple] = []     # per chunk: commit, date, machine, environment, benchmark, unit
        self.sizes: list[int] = []
        self.total = 0
        self.values: list[np.ndarray] = []
        self.params: list = []
        self.per_name: dict[str, list] = {}
        self.samples: list = []

    def frame(self, param_columns: list[str]):
        import pandas as pd

        n = sum(self.sizes)
        sizes = np.asarray(self.sizes, dtype=np.int64)
        cols = {}
        for i, name in enumerate(("commit", "date", "machine", "environment", "benchmark")):
            cols[name] = np.repeat(np.asarray([c[i] for c in self.scalars], dtype=object), sizes) if n else []
        cols["date"] = pd.to_datetime(pd.Series(cols["date"], dtype="float64"), unit="ms", utc=True) \
            if n else pd.Series([], dtype="datetime64[ns, UTC]")
        cols["params"] = self.params
        cols["value"] = np.concatenate(self.values) if self.values else np.array([], dtype=float)
        cols["unit"] = np.repeat(np.asarray([c[5] for c in self.scalars], dtype=object), sizes) if n else []
        cols["samples"] = self.samples
        for name in param_columns:
            cols[name] = self.per_name.get(name, [None] * n)
        return pd.DataFrame(cols, columns=COLUMNS + param_columns)


def _read_v2(path: Path, data: dict, machine: str, meta: dict, param_columns: list[str], dropna: bool,
             out: _Columns) -> None:
    """Add one result file's values to ``out``; every field's type is checked, so a wrong
    shape names this file instead of failing later."""
    date = data.get("date")
    if date is not None and (isinstance(date, bool) or not isinstance(date, (int, float)) or not math.isfinite(date)
                             or not 0 <= date <= MAX_DATE_MS):
        raise HistoryError(f"{path}: date should be milliseconds since 1970 (up to the year 2286), got {date!r:.40}")
    params = data.get("params", {})
    if not isinstance(params, dict):
        raise HistoryError(f"{path}: params should be an object (the machine's description), got {params!r:.40}")
    commit = _text(data.get("commit_hash"), path, "commit_hash")
    machine = _text(params.get("machine", machine), path, "params.machine")
    env = _text(data.get("env_name"), path, "env_name")
    columns = data.get("result_columns")
    results = data.get("results")
    if not isinstance(columns, list) or not isinstance(results, dict):
        raise HistoryError(f"{path}: not an asv result file (no result_columns / results)")
    where = {c: i for i, c in enumerate(columns)}
    if "result" not in where or "params" not in where:
        raise HistoryError(f"{path}: result_columns lack 'result' or 'params'")
    at_result, at_params, at_samples = where["result"], where["params"], where.get("samples")
    for name in sorted(results):
        row = results[name]
        _text(name, path, "a benchmark name")
        if not isinstance(row, list):
            raise HistoryError(f"{path}: {name}: expected a list of {len(columns)} columns")
        field = lambda i: row[i] if i is not None and i < len(row) else None  # noqa: E731  asv drops trailing Nones
        stored_params = field(at_params) or []
        if not isinstance(stored_params, list) or not all(isinstance(a, list) for a in stored_params):
            raise HistoryError(f"{path}: {name}: params should be a list of lists")
        for axis in stored_params:
            for v in axis:
                _text(v, path, f"{name}: a parameter value")
        values = field(at_result)
        size = math.prod(len(a) for a in stored_params) if stored_params else 1
        if values is None:
            values = [None] * size
        if not isinstance(values, list):
            if stored_params:
                raise HistoryError(f"{path}: {name}: results should be a list")
            values = [values]
        if len(values) != size:
            raise HistoryError(f"{path}: {name}: {len(values)} results for {size} parameter combinations")
        bad = next((v for v in values if v is not None and not is_number(v) and not (isinstance(v, float) and v != v)
                    and not (isinstance(v, float) and math.isinf(v))), None)
        if bad is not None:  # asv writes a number, NaN or null; never text, a list or true/false
            raise HistoryError(f"{path}: {name}: a result should be a number, got {bad!r:.40}")
        numbers = np.array(values, dtype=float)
        samples = field(at_samples)
        if samples is not None and (not isinstance(samples, list) or len(samples) != size):
            raise HistoryError(f"{path}: {name}: samples should be a list per parameter combination")
        names = list(meta.get(name, {}).get("param_names") or [])
        if len(names) != len(stored_params) or not all(isinstance(n, str) for n in names):
            names = [f"param{i + 1}" for i in range(len(stored_params))]
        for col in names:
            if col not in param_columns:
                param_columns.append(col)
        unit = meta.get(name, {}).get("unit")
        unit = unit if isinstance(unit, str) else None
        check_values(numbers, path, name, unit, "value")
        combos = _combinations(tuple(tuple(axis) for axis in stored_params), tuple(names))
        keep = np.flatnonzero(np.isfinite(numbers)) if dropna else np.arange(size)
        if not len(keep):
            continue
        before = out.total
        out.total += len(keep)
        out.scalars.append((commit, date, machine, env, name, unit))
        out.sizes.append(len(keep))
        out.values.append(numbers[keep])
        picked = [combos[j] for j in keep]
        out.params.extend(c[0] for c in picked)
        for col in set(names) | set(out.per_name):
            if col not in out.per_name:
                out.per_name[col] = [None] * before
            out.per_name[col].extend([c[1].get(col) for c in picked])
        if samples is None:
            out.samples.extend([None] * len(keep))
        else:
            kept = [samples[j] or None for j in keep]
            present = [s for s in kept if s is not None]
            if not all(type(s) is list for s in present) or not (
                    set(map(type, itertools.chain.from_iterable(present))) <= {float, int}):
                bad = next(s for s in present if not (isinstance(s, list) and all(is_number(v) for v in s)))
                raise HistoryError(f"{path}: {name}: samples should be lists of numbers, got {bad!r:.60}")
            if present:
                check_values(list(itertools.chain.from_iterable(present)), path, name, unit, "a sample")
            out.samples.extend(kept)


def load(results_dir: str | os.PathLike = "results", dropna: bool = False, skip_bad: bool = False, *,
         repo: str | os.PathLike | None = None, branch: str | None = None):
    """Every stored asv value as a DataFrame.

    Columns: ``commit`` (full hash), ``date`` (the commit's date, a UTC pandas Timestamp),
    ``machine``, ``environment`` (asv's environment name), ``benchmark`` (``module.function``),
    ``params`` (``"model=resnet15, backend=jax.jit, variant=params=args,chain=unrolled"``;
    ``""`` for an unparameterized benchmark), ``value`` (float, NaN when asv has none),
    ``unit`` (from benchmarks.json; None for a benchmark no longer discovered), ``samples``
    (a tuple of every sample asv stored for the value, ``asv run --record-samples``; None
    when it kept none, as for deterministic metrics and older history), then one
    column per param name (``model``, ``backend``, ``variant``). ``dropna=True`` leaves
    out the rows without a number.

    Rows come in git's order of the commits (``ttfg.history.git_order``): the first-parent
    line of ``branch`` in ``repo`` (by default the ``repo`` and first of the ``branches`` of
    the asv.conf.json that names this folder), not asv's date order.
    ``frame.attrs["commit_order"]`` holds that order (a ``git_order.CommitOrder``); when git
    cannot order the commits it is the date order, and its ``note`` says why.

    Raises
    ------
    HistoryError
        When a file cannot be read (named in the message), unless ``skip_bad``: then it
        is left out and listed in ``frame.attrs["skipped_files"]`` as ``"path: reason"``.
    """
    results_dir = Path(results_dir)
    meta = _benchmarks_file(results_dir)
    param_columns: list[str] = []
    skipped: list[str] = []
    out = _Columns()
    # Hundreds of thousands of small lists (samples) are kept alive while loading; the cyclic
    # garbage collector would walk all of them again and again (most of a long history's
    # load time) though none can form a cycle. It is off while loading, as for any bulk build.
    collecting = gc.isenabled()
    gc.disable()
    try:
        _load_into(out, results_dir, meta, param_columns, skipped, dropna, skip_bad)
    finally:
        if collecting:
            gc.enable()
    frame = out.frame(param_columns)
    frame["value"] = frame["value"].astype(float)
    order = commit_order(frame, git_order.locate(results_dir, repo, branch))
    frame = _sorted(frame, order)
    frame.attrs["skipped_files"] = skipped
    frame.attrs["commit_order"] = order
    return frame


def commit_order(frame, source: "git_order.Source") -> "git_order.CommitOrder":
    """The order of ``frame``'s commits along ``source``'s branch (each commit's earliest date breaks ties)."""
    if not len(frame):
        return git_order.CommitOrder({}, "git")
    dates = frame.groupby(frame["commit"].astype(str), sort=False)["date"].min()
    return git_order.order(dates.to_dict(), source)


def _load_into(out: _Columns, results_dir: Path, meta: dict, param_columns: list[str], skipped: list[str],
               dropna: bool, skip_bad: bool) -> None:
    if results_dir.is_dir():
        claimed: dict[tuple, Path] = {}  # (commit, machine, environment) -> the file that holds it
        for path, machine in _result_files(results_dir):
            try:
                data = _read_json(path)
                if not isinstance(data, dict) or data.get("version") != ASV_FORMAT:
                    data = _as_v2(path, _load_result(path, machine))  # another format version: asv reads it
                mark = (len(out.scalars), len(out.sizes), len(out.values), len(out.params), len(out.samples),
                        {k: len(v) for k, v in out.per_name.items()})
                try:
                    _read_v2(path, data, machine, meta, param_columns, dropna, out)
                    key = (data["commit_hash"], (data.get("params") or {}).get("machine", machine), data["env_name"])
                    if key in claimed:
                        raise HistoryError(f"{path}: claims commit {key[0][:12]} on machine {key[1]} (environment "
                                           f"{key[2]}), which {claimed[key]} holds: two files cannot both be its "
                                           "measurement")
                    claimed[key] = path
                except HistoryError:
                    _rewind(out, mark)
                    raise
                except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
                    _rewind(out, mark)
                    raise HistoryError(f"{path}: not an asv result file this asv can read "
                                       f"({type(exc).__name__}: {exc})") from None
            except HistoryError as exc:
                if not skip_bad:
                    raise
                skipped.append(str(exc))


def _rewind(out: _Columns, mark) -> None:
    """Forget what a bad file added (``skip_bad`` goes on with the next file)."""
    n_scalars, n_sizes, n_values, n_params, n_samples, per_name = mark
    del out.scalars[n_scalars:], out.sizes[n_sizes:], out.values[n_values:], out.params[n_params:]
    out.total = sum(out.sizes)
    del out.samples[n_samples:]
    for key in list(out.per_name):
        if key in per_name:
            del out.per_name[key][per_name[key]:]
        else:
            del out.per_name[key]


def _sorted(frame, order: "git_order.CommitOrder | None" = None):
    """Rows by commit (git's order when ``order`` has it, else date), commit, machine, environment,
    benchmark and params, sorted on integer codes."""
    import pandas as pd

    if not len(frame):
        return frame.reset_index(drop=True)
    keys = []
    for col in ("params", "benchmark", "environment", "machine", "commit"):
        codes, _ = pd.factorize(frame[col].astype(str), sort=True)
        keys.append(codes)
    if order is not None and order.by_git:
        keys.append(frame["commit"].astype(str).map(order.rank).to_numpy(dtype=np.int64))
    else:
        date = frame["date"]
        keys.append(np.where(date.isna(), np.iinfo(np.int64).max,
                             date.to_numpy(dtype="datetime64[ns]").view(np.int64)))
    order = np.lexsort(keys)  # the last key is the primary one
    return frame.iloc[order].reset_index(drop=True)


def load_file(path: str | os.PathLike, dropna: bool = False):
    """One asv result file (``results/<machine>/<commit>-<env>.json``) as :func:`load` shows a folder.

    The machine comes from the file itself; units and param names from the
    ``benchmarks.json`` two folders up, when there is one.

    Raises
    ------
    HistoryError
        Naming the file, when it cannot be read as an asv result file.
    """
    path = Path(path)
    data = _read_json(path)
    params = data.get("params") if isinstance(data, dict) else None
    machine = params.get("machine") if isinstance(params, dict) else None
    if not isinstance(machine, str):
        raise HistoryError(f"{path}: not an asv result file (no params.machine)")
    if data.get("version") != ASV_FORMAT:
        data = _as_v2(path, _load_result(path, machine))
    param_columns: list[str] = []
    out = _Columns()
    try:
        _read_v2(path, data, machine, _benchmarks_file(path.parent.parent), param_columns, dropna, out)
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
        raise HistoryError(f"{path}: not an asv result file this asv can read ({type(exc).__name__}: {exc})") from None
    frame = out.frame(param_columns)
    frame["value"] = frame["value"].astype(float)
    return frame


__all__ = ["COLUMNS", "HistoryError", "MAX_DATE_MS", "benchmarks", "check_values", "commit_order", "load", "load_file"]
