"""Turn the report's two inputs into one shape: a long table of points.

The report reads asv history (``ttfg.history.asv_results.load``: one row per benchmark x
params x commit) and ttfg results files (one sample per row). Plotting, step detection
and the summary should not care which one a number came from, so both become
*points*: one row per ``(commit, case, metric)`` with the columns in ``POINT_COLUMNS``,
where ``pos`` is the commit's place in the history (0 = oldest: git's first-parent order of
the branch for asv history, ``ttfg.history.git_order``; date order, said in the notes, when git
cannot give it) and ``samples`` holds every
sample behind ``value`` (a float array; None when the source kept only the median, as
asv history recorded without ``--record-samples`` does), ``n`` their count (0: none kept)
and ``lo``/``hi`` their min and max (NaN without samples). Results files stand in
for commits when there is no asv history: a file's git commit (``+dirty`` when the
tree was dirty) or, without git, its creation time.

Metric names are the results file's field names (``first_grad_s``, ``alloc_count``,
``counters.jaxpr_eqns``), whichever source they came from; the registry
(``ttfg.metrics``) says how to label and group them.
"""

from __future__ import annotations

import itertools
import math
import operator
import statistics
from dataclasses import dataclass, replace
from typing import Iterable

import numpy as np
import pandas as pd

from .. import metrics
from ..errors import TtfgError
from . import git_order

POINT_COLUMNS = ("commit", "label", "date", "pos", "case", "model", "backend", "variant", "metric", "value",
                 "samples", "n", "lo", "hi")
HISTORY_COLUMNS = ("commit", "date", "machine", "environment", "benchmark", "params", "value", "unit")


class ReportInputError(TtfgError):
    """History or results that the report cannot use; the message names what is wrong."""


#: The registry's entry type; ``metric(name)`` is ``ttfg.metrics.get`` for any name.
Metric = metrics.Metric
#: Metrics that get trend plots, in display order (the phases have their own chart).
TREND_METRICS = metrics.names(lambda m: m.trend)
#: The headline metric of the summary, first one present wins.
PRIMARY = metrics.HEADLINE
#: Metrics read from results files: every metric with a better direction (a share has none).
RUN_METRICS = metrics.names(lambda m: m.direction is not None and not metrics.is_counter(m.name))


def metric(name: str) -> Metric:
    """The metric's registry entry; unknown names (from asv history) are structural counters (unit: count)."""
    if name in metrics.METRICS or metrics.is_counter(name):
        return metrics.get(name)
    return replace(metrics.get(metrics.COUNTER_PREFIX + name), name=name)


def case_id(model: str, backend: str, variant: str | None) -> str:
    """The results file's case id (``model/backend/axis=v,...``), so both sources agree."""
    return f"{model}/{backend}/{variant}" if variant else f"{model}/{backend}"


def short_commit(commit: str | None) -> str:
    if not commit:
        return "?"
    head, _, tail = str(commit).partition("+")
    head = head[:8] if all(c in "0123456789abcdef" for c in head.lower()) else head
    return f"{head}+{tail}" if tail else head


# ---------------------------------------------------------------------------- history


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def parse_params(params) -> dict[str, str]:
    """``model=resnet15, backend=jax.jit, variant=params=args,chain=unrolled`` -> dict.

    Parameters are separated by ``", "``; a value may itself contain ``=`` and ``,``
    (the variant), and asv may quote values (``model='resnet15'``).
    """
    if isinstance(params, dict):
        return {str(k): _unquote(str(v)) for k, v in params.items()}
    if params is None or (isinstance(params, float) and math.isnan(params)):
        return {}
    out = {}
    for part in str(params).split(", "):
        key, sep, value = part.partition("=")
        if sep:
            out[key.strip()] = _unquote(value)
    return out


def metric_from_benchmark(benchmark: str, params: dict[str, str]) -> str:
    """``ttfg.track_first_grad_seconds`` -> ``first_grad_s``; counters -> ``counters.NAME``.

    The registry's ``asv_benchmark`` names decide; other names fall back to the
    function name without ``track_``.
    """
    known = metrics.by_benchmark(benchmark)
    if known is not None:
        return known.name
    name = str(benchmark).rsplit(".", 1)[-1]
    name = name[len("track_"):] if name.startswith("track_") else name
    if name in ("counters", "counter"):
        counter = params.get("counter") or params.get("counters") or params.get("name")
        return f"counters.{counter}" if counter else "counters"
    for prefix in ("counters.", "counters_", "counter_"):
        if name.startswith(prefix):
            return "counters." + name[len(prefix):]
    return name


def _dates(column: pd.Series) -> pd.Series:
    """Naive UTC datetimes. asv stores commit dates as ms since the epoch; a loader may convert them.

    Naive (not tz-aware) because numpy holds those natively; tz-aware ones turn into
    Python objects in every ``to_numpy`` and cost seconds on a long history.
    """
    if pd.api.types.is_datetime64_any_dtype(column):
        out = column
    elif pd.api.types.is_numeric_dtype(column):
        out = pd.to_datetime(column, unit="ms", errors="coerce", utc=True)
    else:
        out = pd.to_datetime(column, errors="coerce", utc=True)
    if getattr(out.dt, "tz", None) is not None:
        out = out.dt.tz_convert("UTC").dt.tz_localize(None)
    return out


@dataclass
class History:
    """Points from asv history, plus what was left out and why (shown in the report)."""

    points: pd.DataFrame
    machine: str | None
    environment: str | None
    notes: list[str]


def from_history(df: pd.DataFrame, machine: str | None = None, environment: str | None = None,
                 order: git_order.CommitOrder | None = None) -> History:
    """Normalise the asv loader's frame. One machine and environment per report.

    Numbers from different machines or environments are not comparable, so when the
    history holds several, the report shows the one with the newest commit (or
    ``machine`` and ``environment``, asv's environment name) and says which were left out.

    Commits are placed in git's order (``ttfg.history.git_order``): ``order``, else the one
    ``asv_results.load`` found for the frame (``df.attrs["commit_order"]``). A frame without
    one (built by hand) is in date order, and, like every date-order fallback, the notes say so.
    """
    if order is None:
        order = df.attrs.get("commit_order") or git_order.by_date(
            "the history came without its git repository (not read by ttfg.history.asv_results.load)")
    missing = [c for c in ("commit", "date", "benchmark", "params", "value") if c not in df.columns]
    if missing:
        raise ReportInputError(f"history: missing column(s) {', '.join(missing)}; "
                               f"expected {', '.join(HISTORY_COLUMNS)}")
    notes: list[str] = [order.note] if order.note else []
    # A fresh index: the frame may be a concatenation with repeated labels.
    df = df[pd.to_numeric(df["value"], errors="coerce").notna()].reset_index(drop=True)
    df["value"] = pd.to_numeric(df["value"])
    df["date"] = _dates(df["date"])
    for col in ("machine", "environment"):
        if col not in df.columns:
            df[col] = None
    chosen_machine = chosen_env = None
    if len(df):
        df["machine"] = df["machine"].astype(str)
        df["environment"] = df["environment"].astype(str)
        if machine is not None:
            if machine not in set(df["machine"]):
                raise ReportInputError(f"history: no results for machine {machine!r}; "
                                       f"machines: {', '.join(sorted(set(df['machine'])))}")
            df = df[df["machine"] == machine]
        if environment is not None:
            if environment not in set(df["environment"]):
                raise ReportInputError(f"history: no results for environment {environment!r}"
                                       + (f" on machine {machine!r}" if machine else "") + "; environments: "
                                       + ", ".join(sorted(set(df["environment"]))))
            df = df[df["environment"] == environment]
        if order.by_git:
            newest = int(np.argmax(df["commit"].astype(str).map(order.rank).fillna(-1).to_numpy()))
            newest = df.index[newest]
        else:
            newest = df["date"].idxmax() if df["date"].notna().any() else df.index[-1]
        chosen_machine, chosen_env = df.at[newest, "machine"], df.at[newest, "environment"]
        keep = (df["machine"] == chosen_machine) & (df["environment"] == chosen_env)
        others = sorted({f"{m} / {e}" for m, e in zip(df.loc[~keep, "machine"], df.loc[~keep, "environment"])})
        if others:
            notes.append("history from other machines/environments not shown: " + "; ".join(others))
        df = df[keep]
        chosen_machine, chosen_env = (None if v in ("None", "nan") else v for v in (chosen_machine, chosen_env))

    # Work per series (benchmark x params: ~500 in a 1000-commit history), never per row.
    if not len(df):
        return History(_finish(pd.DataFrame(columns=["commit", "date", "sid", "value"]), _series_table([])),
                       chosen_machine, chosen_env, notes)
    b_codes, b_uniq = pd.factorize(df["benchmark"].astype(str))
    p_codes, p_uniq = pd.factorize(df["params"].astype(str))
    sid_raw = b_codes.astype("int64") * len(p_uniq) + p_codes
    sid, sid_uniq = pd.factorize(sid_raw)
    per_col = {c: df[c] for c in ("model", "backend", "variant") if c in df.columns}
    keys = []
    for raw in sid_uniq:
        first = int(np.argmax(sid_raw == raw)) if per_col else None
        params = parse_params(p_uniq[raw % len(p_uniq)])
        for col, values in per_col.items():  # explicit per-param columns win when present
            value = values.iloc[first]
            if isinstance(value, str) or (value is not None and value == value):
                params[col] = str(value)
        keys.append((params.get("model", "?"), params.get("backend", "?"), params.get("variant", ""),
                     metric_from_benchmark(b_uniq[raw // len(p_uniq)], params)))
    rows = pd.DataFrame({"commit": df["commit"].astype(str).to_numpy(), "date": df["date"].to_numpy(),
                         "sid": sid, "value": df["value"].to_numpy(dtype=float),
                         "samples": _sample_column(df)})
    return History(_finish(rows, _series_table(keys), order.rank if order.by_git else None),
                   chosen_machine, chosen_env, notes)


# ---------------------------------------------------------------------------- results files


def run_commit(results) -> str:
    """The "commit" a results file stands for: git commit (+dirty), else its creation time."""
    git = results.environment.get("git") or {}
    if git.get("commit"):
        return git["commit"] + ("+dirty" if git.get("dirty") else "")
    return f"run {results.created}"


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def from_runs(runs: Iterable) -> pd.DataFrame:
    """Points from results files: per case, medians of good cold samples.

    Warm-cache samples are left out of the trends (they answer a different question)
    and shown in the cold-versus-warm section instead. Several files of one commit are
    pooled by the median of their medians.
    """
    rows, keys, index = [], [], {}

    def add(res_commit, created, case, name):
        values = metrics.case_values(case, name, "cold")
        if not values:
            return
        variant = ",".join(f"{k}={v}" for k, v in case.variant.items())
        env = case.id.split("/", 3)[3] if case.id.count("/") >= 3 else ""
        # A case run in a named environment (``ttfg run --env``) is its own series: its id's fourth part.
        key = (case.model, case.backend, f"{variant}/{env}" if env else variant, name)
        if key not in index:
            index[key] = len(keys)
            keys.append(key)
        rows.append((res_commit, created, index[key], _median(values), np.asarray(values, dtype=float)))

    for res in runs:
        commit = run_commit(res)
        for case in res.cases:
            if case.skipped:
                continue
            for name in RUN_METRICS:
                add(commit, res.created, case, name)
            counters = sorted({k for s in case.good("timing", "cold") for k in (s.counters or {})})
            for name in counters:
                add(commit, res.created, case, f"counters.{name}")
    df = pd.DataFrame(rows, columns=["commit", "date", "sid", "value", "samples"])
    df["date"] = _dates(df["date"]) if len(df) else pd.Series(dtype="datetime64[ns]")
    return _finish(df, _series_table(keys))


# ---------------------------------------------------------------------------- shared


def _series_table(keys: list[tuple[str, str, str, str]]) -> pd.DataFrame:
    """One row per series id: ``case, model, backend, variant, metric``."""
    table = pd.DataFrame(keys, columns=["model", "backend", "variant", "metric"])
    table.insert(0, "case", [case_id(m, b, v) for m, b, v, _ in keys])
    return table


def _finish(rows: pd.DataFrame, series: pd.DataFrame, rank: dict[str, int] | None = None) -> pd.DataFrame:
    """Points from ``rows`` (``commit, date, sid, value``, optionally ``samples``) and the series table.

    Duplicates of one commit and series are pooled by the median (their samples
    together); commits are ordered by ``rank`` (commit -> place: git's order,
    ``ttfg.history.git_order``) when given, else by date, then by first appearance;
    ``pos`` numbers them from 0. Text columns come back as categoricals: the report
    groups by them many times.
    """
    if rows.empty:
        out = pd.DataFrame({c: pd.Series(dtype=object) for c in POINT_COLUMNS})
        return out.astype({"pos": int, "value": float, "n": int, "lo": float, "hi": float})
    c_codes, c_uniq = pd.factorize(rows["commit"])
    dates = pd.Series(rows["date"].to_numpy()).groupby(c_codes).min()
    order = pd.DataFrame({"date": dates.to_numpy(), "seen": np.arange(len(c_uniq))})
    if rank is not None:
        order["rank"] = pd.Index(c_uniq).astype(str).map(rank).to_numpy(dtype=float)
        order = order.sort_values(["rank", "seen"], na_position="last", kind="stable")
    else:
        order = order.sort_values(["date", "seen"], na_position="last", kind="stable")
    pos_of_code = np.empty(len(c_uniq), dtype=int)
    pos_of_code[order.index.to_numpy()] = np.arange(len(c_uniq))
    groups = pd.DataFrame({"pos": pos_of_code[c_codes], "sid": rows["sid"].to_numpy(),
                           "value": rows["value"].to_numpy(dtype=float)}).groupby(["sid", "pos"], sort=True)
    grouped = groups["value"].median().reset_index()
    pooled = _pooled_samples(groups.ngroup().to_numpy(), len(grouped),
                             rows["samples"].to_numpy(dtype=object) if "samples" in rows.columns else None)
    sid, pos = grouped["sid"].to_numpy(), grouped["pos"].to_numpy()
    code_at_pos = order.index.to_numpy()
    commit_names = pd.Index(c_uniq[code_at_pos].astype(str))
    out = pd.DataFrame({
        "commit": pd.Categorical.from_codes(pos, categories=commit_names),
        "label": pd.Categorical.from_codes(pos, categories=_unique_labels(commit_names)),
        "date": order["date"].to_numpy()[pos],
        "pos": pos,
    })
    for col in ("case", "model", "backend", "variant", "metric"):
        codes, cats = pd.factorize(series[col])
        out[col] = pd.Categorical.from_codes(codes[sid], categories=cats)
    out["value"] = grouped["value"].to_numpy(dtype=float)
    out["samples"] = pooled
    out["n"], out["lo"], out["hi"] = _spread(pooled)
    out = out[list(POINT_COLUMNS)]
    return out.sort_values(["case", "metric", "pos"], kind="stable").reset_index(drop=True)


def _sample_column(df: pd.DataFrame) -> np.ndarray:
    """The frame's ``samples`` as an object array: a sequence, or None (also for NaN or an absent column)."""
    if "samples" not in df.columns:
        return np.full(len(df), None, dtype=object)
    out = df["samples"].to_numpy(dtype=object, copy=True)
    out[pd.isna(df["samples"]).to_numpy()] = None
    return out


def _spread(samples: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per entry: sample count, min and max, in a few array passes (a long history has 500,000 entries)."""
    n = np.zeros(len(samples), dtype=np.int64)
    lo = np.full(len(samples), np.nan)
    hi = np.full(len(samples), np.nan)
    has = np.flatnonzero(np.fromiter(map(operator.is_not, samples, itertools.repeat(None)), bool, len(samples)))
    if len(has):
        kept = samples[has]
        n[has] = np.fromiter(map(len, kept), dtype=np.int64, count=len(has))
        flat = np.fromiter(itertools.chain.from_iterable(kept), dtype=float, count=int(n[has].sum()))
        starts = np.r_[0, np.cumsum(n[has])[:-1]]
        lo[has] = np.minimum.reduceat(flat, starts)
        hi[has] = np.maximum.reduceat(flat, starts)
    return n, lo, hi


def _is_missing(v) -> bool:
    return v is None or (isinstance(v, float) and v != v)


def _pooled_samples(group: np.ndarray, n_groups: int, samples: np.ndarray | None) -> np.ndarray:
    """Per group (one commit of one series), every sample of its rows together; None where none was kept.

    Samples stay as the loader gave them (lists, tuples or arrays); only a group of
    several rows (one commit measured twice) is joined into one array.
    """
    out = np.full(n_groups, None, dtype=object)
    if samples is None or not len(samples):
        return out
    counts = np.bincount(group, minlength=n_groups)
    single = counts[group] == 1
    out[group[single]] = samples[single]  # the loaders give None or a non-empty sequence
    for i in np.flatnonzero(~single):
        if _is_missing(samples[i]):
            continue
        g = group[i]
        out[g] = list(samples[i]) if out[g] is None else [*out[g], *samples[i]]
    return out


def _unique_labels(commit_names) -> list[str]:
    """Short labels, made unique (two dirty runs of one commit must stay two points)."""
    seen: dict[str, int] = {}
    out = []
    for name in commit_names:
        label = short_commit(name)
        n = seen.get(label, 0)
        seen[label] = n + 1
        out.append(label if n == 0 else f"{label}#{n + 1}")
    return out


def commits(points: pd.DataFrame) -> pd.DataFrame:
    """One row per commit in order: ``pos, commit, label, date``."""
    if points.empty:
        return pd.DataFrame(columns=["pos", "commit", "label", "date"])
    return (points[["pos", "commit", "label", "date"]].drop_duplicates("pos").sort_values("pos")
            .reset_index(drop=True))


def keep_last(points: pd.DataFrame, n: int | None) -> pd.DataFrame:
    """Only the newest ``n`` commits, renumbered from 0."""
    if not n or points.empty:
        return points
    top = points["pos"].max()
    out = points[points["pos"] > top - n].copy()
    out["pos"] -= out["pos"].min()
    return out.reset_index(drop=True)


__all__ = ["HISTORY_COLUMNS", "Metric", "POINT_COLUMNS", "ReportInputError", "TREND_METRICS",
           "case_id", "commits", "from_history", "from_runs", "keep_last", "metric", "parse_params",
           "run_commit", "short_commit"]
