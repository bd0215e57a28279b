"""Shards' asv result files of one commit and machine into one history entry.

Why: asv cannot merge results from sharded runs (upstream request asv#1362). Each
shard's ``ttfg asv record --shard I/N`` writes ``results/<machine>/<commit>-<env>.json``
holding numbers for its own cases and NaN (asv: n/a) for every other parameter
combination. This joins them position by position: for every benchmark and
combination, the one shard that has a number gives it (with its statistics and
samples). Two shards with *different* numbers for the same benchmark and combination
is a conflict: reported with both files, nothing written (exit 2). Files of another
commit, machine, environment or benchmark version are refused the same way.

The file layout is asv 0.6's (pinned): ``result_columns`` names the columns of each
benchmark's row; the per-combination columns are lists as long as the parameter grid.
The merged file is read back through asv's own loader in the tests.

Every input is checked before it is used (:func:`_read`): strict JSON bounded like
any side file (asv's own NaN aside), the fields and types this merge reads, and each
benchmark's value list as long as its parameter grid. The grid's size comes from the
benchmark's ``params``, never from a shard's ``result``: asv writes ``"result": null``
when every combination of a benchmark failed, and taking the size from it (0) dropped
the other shards' numbers of that benchmark, depending on the order of the files.
With ``--results-dir`` the machine name from the files becomes a folder name, so it
must be one plain path component (``../../escaped`` or an absolute path wrote outside
the folder).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from ..errors import TtfgError
from ..files import atomic_write_text
from .asv_results import MAX_DATE_MS

__all__ = ["AsvMergeError", "merge_asv_files", "merge_asv"]

#: Top-level fields every shard's file must share.
SAME = ("commit_hash", "env_name", "params", "python", "requirements", "env_vars", "result_columns", "version")
#: Columns that hold one entry per parameter combination (the rest describe the benchmark).
PER_COMBINATION = ("result", "stats_ci_99_a", "stats_ci_99_b", "stats_q_25", "stats_q_75", "stats_number",
                   "stats_repeat", "samples")


class AsvMergeError(TtfgError):
    """asv result files that cannot be merged; the message names the files (exit 2)."""


#: An asv result file of one commit: far below this (the repository's are about 60 KB).
MAX_BYTES = 64 * 1024 * 1024


def _read(path: Path) -> dict:
    """An asv result file, parsed and checked (see the module docstring); AsvMergeError names file and field."""
    from ..results import jsonfile

    data = jsonfile.read(path, AsvMergeError, MAX_BYTES, constants=[])  # asv writes NaN for n/a
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict) or "result_columns" not in data:
        raise AsvMergeError(f"{path}: not an asv result file (no results and result_columns)")
    _check(path, data)
    return data


def _bad(path: Path, where: str, expected: str, value) -> AsvMergeError:
    from ..results.format import describe

    return AsvMergeError(f"{path}: {where}: expected {expected}, got {describe(value)}")


def _check(path: Path, data: dict) -> None:
    """The fields :func:`merge_asv` reads, with their types; each row's lists as long as its grid."""
    columns = data["result_columns"]
    if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns) or "result" not in columns:
        raise _bad(path, "result_columns", "a list of column names with 'result'", columns)
    for key in ("commit_hash", "env_name"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise _bad(path, key, "text", data.get(key))
    if not isinstance(data.get("params"), dict):
        raise _bad(path, "params", "an object", data.get("params"))
    if not isinstance(data.get("durations", {}), (dict, type(None))):
        raise _bad(path, "durations", "an object", data.get("durations"))
    date = data.get("date")
    if date is not None and not (_number(date) and 0 <= date <= MAX_DATE_MS):
        raise _bad(path, "date", "milliseconds since 1970 (up to the year 2286)", date)
    for name, row in data["results"].items():
        where = f"results.{name}"
        if not isinstance(row, list):
            raise _bad(path, where, "a list (one entry per result column)", row)
        values = {col: (row[i] if i < len(row) else None) for i, col in enumerate(columns)}
        params = values.get("params")
        if params is not None and not (isinstance(params, list) and all(
                isinstance(axis, list) and all(isinstance(v, str) for v in axis) for axis in params)):
            raise _bad(path, f"{where}.params", "a list of lists of parameter values", params)
        size = grid_size(params)
        for col in PER_COMBINATION:
            column = values.get(col)
            if column is None:
                continue
            if not isinstance(column, list):
                raise _bad(path, f"{where}.{col}", "a list or null", column)
            if len(column) != size:
                raise AsvMergeError(f"{path}: {where}.{col}: {len(column)} value(s) for a parameter grid of {size}")
            if col == "result":
                bad = next((v for v in column if not (v is None or _number(v) or isinstance(v, float))), None)
                if bad is not None:
                    raise _bad(path, f"{where}.result", "numbers, NaN or null", bad)
                _plausible(path, name, [math.nan if v is None else v for v in column], "value")
            if col == "samples":
                flat = []
                for each in column:
                    if each is not None and not (isinstance(each, list) and all(_number(v) or isinstance(v, float)
                                                                               for v in each)):
                        raise _bad(path, f"{where}.samples", "a list of numbers per combination", each)
                    flat += each or []
                _plausible(path, name, flat, "a sample")
        for col in ("started_at", "duration"):
            if values.get(col) is not None and not _number(values[col]):
                raise _bad(path, f"{where}.{col}", "a number or null", values[col])


def _plausible(path: Path, name: str, values: list, what: str) -> None:
    """The history's rule for impossible values (``asv_results.check_values``), as a merge error."""
    from .asv_results import HistoryError, check_values

    try:
        check_values(values, path, name, None, what)
    except HistoryError as exc:
        raise AsvMergeError(str(exc)) from None


def grid_size(params) -> int:
    """How many parameter combinations a benchmark's ``params`` (a list of axes) spans; 1 without params."""
    size = 1
    for axis in params or []:
        size *= len(axis)
    return size


def safe_machine_name(name, where: str) -> str:
    """``name`` as one plain path component (the folder asv keeps a machine's results in), or AsvMergeError."""
    if (not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\\" in name
            or "\0" in name or name != name.strip() or len(name) > 255):
        raise AsvMergeError(f"{where}: the machine name {name!r} is not one plain folder name, so it cannot name a "
                            "folder under --results-dir (give --out FILE instead)")
    return name


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _row(data: dict, name: str) -> dict:
    columns = data["result_columns"]
    row = data["results"][name]
    return {col: (row[i] if i < len(row) else None) for i, col in enumerate(columns)}


def merge_asv(docs: list[tuple[str, dict]]) -> tuple[dict, list[str]]:
    """Merge parsed asv result documents ``(name, data)``; returns the merged document and notes.

    Raises
    ------
    AsvMergeError
        Different commit, machine or environment; a benchmark whose params or version
        differ; conflicting values (every conflict listed, files named).
    """
    if not docs:
        raise AsvMergeError("nothing to merge: no asv result files given")
    first_name, first = docs[0]
    for name, data in docs[1:]:
        for key in SAME:
            if data.get(key) != first.get(key):
                raise AsvMergeError(f"{first_name} and {name} differ in {key} ({first.get(key)!r:.80} vs "
                                    f"{data.get(key)!r:.80}): only one commit's results on one machine and "
                                    "environment are merged")
    columns = first["result_columns"]
    merged_rows: dict[str, list] = {}
    conflicts: list[str] = []
    notes: list[str] = []
    names = sorted({n for _, d in docs for n in d["results"]})
    for bench in names:
        holders = [(n, _row(d, bench)) for n, d in docs if bench in d["results"]]
        base_name, out = holders[0][0], dict(holders[0][1])
        for name, row in holders[1:]:
            for col in ("params", "version"):
                if row.get(col) != out.get(col):
                    raise AsvMergeError(f"{bench}: {col} differs between {base_name} and {name}: the shards ran "
                                        "different benchmark code")
        size = grid_size(out.get("params"))  # the grid, never a shard's result list: it may be null
        source = [None] * size
        values = [None] * size
        for name, row in holders:
            result = row.get("result") if isinstance(row.get("result"), list) else []
            for i, v in enumerate(result[:size]):
                if not _number(v):
                    continue
                if source[i] is None:
                    source[i], values[i] = (name, row), v
                elif values[i] != v:
                    conflicts.append(f"{bench} {_combination(out.get('params'), i)}: {v!r} in {name} but "
                                     f"{values[i]!r} in {source[i][0]}")
        for col in PER_COMBINATION:
            # A shard whose values of this benchmark are all n/a stores no stats or samples at all,
            # so any holder's list counts (the samples of a timing must survive the merge).
            if col not in columns or not any(isinstance(r.get(col), list) for _, r in holders):
                continue
            merged = []
            for i in range(size):
                row = source[i][1] if source[i] is not None else out
                column = row.get(col) if isinstance(row.get(col), list) else None
                merged.append(column[i] if column and i < len(column) else None)
                if source[i] is None and col == "result":
                    merged[-1] = math.nan
            out[col] = merged
        started = [r.get("started_at") for _, r in holders if _number(r.get("started_at"))]
        durations = [r.get("duration") for _, r in holders if _number(r.get("duration"))]
        out["started_at"] = min(started) if started else out.get("started_at")
        out["duration"] = sum(durations) if durations else out.get("duration")
        row = [out.get(col) for col in columns]
        while row and row[-1] is None:
            row.pop()
        merged_rows[bench] = row
    if conflicts:
        shown = conflicts[:10] + ([f"and {len(conflicts) - 10} more"] if len(conflicts) > 10 else [])
        raise AsvMergeError("conflicting values from different shards (a case measured twice?): " + "; ".join(shown))
    merged = dict(first)
    merged["results"] = merged_rows
    durations: dict[str, float] = {}
    for _, d in docs:
        for key, value in (d.get("durations") or {}).items():
            if _number(value):
                durations[key] = max(durations.get(key, 0.0), value)
    merged["durations"] = durations
    notes.append(f"merged {len(docs)} file(s) of commit {first['commit_hash'][:8]} on machine "
                 f"{(first.get('params') or {}).get('machine')}: {len(merged_rows)} benchmark(s)")
    return merged, notes


def _combination(params, index: int) -> str:
    """The ``index``-th combination of asv's parameter grid, as ``('resnet15', 'jax.jit', ...)``."""
    import itertools

    if not isinstance(params, list) or not params:
        return f"#{index}"
    combos = list(itertools.product(*params))
    return "(" + ", ".join(combos[index]) + ")" if index < len(combos) else f"#{index}"


def merge_asv_files(paths: list[str | os.PathLike], out: Path | None = None,
                    results_dir: Path | None = None) -> tuple[Path, list[str]]:
    """Merge asv result files and write the result to ``out`` or ``results_dir/<machine>/<name>``.

    With ``results_dir``, the shards' ``machine.json`` is copied there when it lacks one,
    and their ``benchmarks.json`` (two folders up) replaces the folder's, as every ``asv run``
    does: it is the benchmark discovery of the commit just measured.
    Everything is checked before anything is written.
    """
    docs = [(str(p), _read(Path(p))) for p in paths]
    merged, notes = merge_asv(docs)
    machine = (merged.get("params") or {}).get("machine")
    extra: list[tuple[Path, Path]] = []
    if out is None:
        if results_dir is None or not isinstance(machine, str):
            raise AsvMergeError("give --out FILE or --results-dir DIR (the files name no machine)")
        out = results_dir / safe_machine_name(machine, f"{paths[0]}: params.machine") / Path(paths[0]).name
        for given in paths:
            if out.exists() and os.path.samefile(out, given):
                raise AsvMergeError(f"--results-dir {results_dir}: the merged file {out} would replace the input "
                                    f"{given}: choose another folder")
        src = Path(paths[0])
        if (src.parent / "machine.json").is_file() and not (out.parent / "machine.json").exists():
            extra.append((src.parent / "machine.json", out.parent / "machine.json"))
        if (src.parent.parent / "benchmarks.json").is_file():
            extra.append((src.parent.parent / "benchmarks.json", results_dir / "benchmarks.json"))
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, json.dumps(merged, indent=None) + "\n")
    for have, want in extra:
        atomic_write_text(want, have.read_text(encoding="utf-8"))
        notes.append(f"copied {have} to {want}")
    return out, notes
