"""Confirm a history's timing steps by re-measuring the two commits around each, paired.

Why: a step in a history is two stretches of commits recorded at different times, so
machine drift between the recordings looks exactly like a code change, however many
samples each commit kept. The gate (``ttfg.decide.gate_loop``) answers the question that
matters: with both commits checked out side by side and run interleaved on this
machine (A B, B A, ...), is the later one slower? A step is then

* ``confirmed``: the gate found the change in the step's direction;
* ``not reproduced``: the gate found no such change (unchanged, or the other way);
* ``unconfirmed``: not re-measured (no budget left, a commit missing from this
  repository, a case this installation cannot run) or re-measured without a verdict
  (inconclusive); the reason says which.

Steps between the same two commits share one gate run: one sequential test per case,
on the metric of the group's largest step; the case's other stepped metrics are read
from the same paired processes (every sample holds every timing) and tested with the
paired t-test at the pairs the run took, alpha split evenly over them (Bonferroni). A
step whose re-run ended inconclusive is not re-run by the next ``--confirm`` (only by
``--reconfirm``). The budget is split evenly over the runs still
to do.
Confirmations are kept beside the history, in ``<results>/confirmations.json``
(written atomically), keyed by ``trends.step_key``, so the report and later runs show
them; asv skips the file (it is not in a machine folder), and so does
``asv_results.load``. The file is saved after every gate run, not once at the end
(``confirm``'s ``on_done``): a Ctrl-C during the second re-run lost the first one's
outcome. Its one writer is ``ttfg regressions --confirm`` holding its lock
(``cli/report.py``): two concurrent runs both said "saved" and only one survived.

Reading it back (:func:`load`) checks it like a results file: its version, and each
entry's fields and types, with the entry's key the ``step_key`` of its own case,
metric and commits. An entry of only ``{"status": "confirmed"}`` turned a timing
candidate into a counted regression; a confirmed or not-reproduced outcome must carry
the verdict and the pairs it rests on.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import pandas as pd

from ..errors import TtfgError, UsageError
from ..files import atomic_write_text
from ..results.format import strict_json
from .asv_results import HistoryError
from .points import metric as metric_info
from .trends import CONFIRMED, DETERMINISTIC, NOT_REPRODUCED, UNCONFIRMED, Trends, by_size, sort_steps

if TYPE_CHECKING:
    from ..measure.sides import SideOpener

FILE_NAME = "confirmations.json"
FORMAT = "ttfg-confirmations"
VERSION = 1
#: A gate run given less than this is not started: it could not finish its minimum pairs.
MIN_RUN_S = 20.0


@dataclass
class Confirmation:
    """What re-measuring one step found."""

    key: str
    case: str
    metric: str
    commit_before: str
    commit_after: str
    kind: str                    # the history's reading: "regression" or "improvement"
    status: str                  # CONFIRMED, NOT_REPRODUCED or UNCONFIRMED
    reason: str
    verdict: dict | None = None  # the gate's Verdict as JSON (ratio, interval, p, pairs)
    pairs: int = 0
    wall_s: float = 0.0
    measured_at: str = ""
    host: str = ""
    files: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return asdict(self)


def path_for(results_dir: str | os.PathLike) -> Path:
    return Path(results_dir) / FILE_NAME


#: A confirmations file holds a few kilobytes per step; anything near this is no such file.
MAX_BYTES = 64 * 1024 * 1024
STATUSES = (CONFIRMED, NOT_REPRODUCED, UNCONFIRMED)
KINDS = ("regression", "improvement")


def load(path: str | os.PathLike) -> dict[str, dict]:
    """The stored confirmations by step key; ``{}`` when the file does not exist.

    Raises
    ------
    HistoryError
        Naming the file and the field, when it exists but is not a valid confirmations
        file (see the module docstring).
    """
    from ..results import jsonfile
    from ..results.format import ResultsError

    path = Path(path)
    if not path.exists():
        return {}
    data = jsonfile.read(path, HistoryError, MAX_BYTES)
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("steps"), dict):
        raise HistoryError(f"{path}: not a ttfg confirmations file (expected format {FORMAT!r} with a 'steps' object)")
    version = data.get("version")
    if isinstance(version, bool) or version != VERSION:
        raise HistoryError(f"{path}: version: unsupported version {version!r}; this ttfg reads version {VERSION}")
    try:
        for key, entry in data["steps"].items():
            _check_entry(path, key, entry)
    except ResultsError as exc:
        raise HistoryError(str(exc)) from None
    return data["steps"]


def _check_entry(path: Path, key: str, entry) -> None:
    """One stored outcome: every field of :class:`Confirmation`, typed, and a key that is its own step's."""
    from ..results.gate_outcome import VERDICTS
    from ..results.validate import _Reader
    from .trends import step_key

    r, where = _Reader(path), f"steps.{key}"
    entry = r.obj(entry, where)
    get = lambda k: r.key(entry, k, f"{where}.")  # noqa: E731
    texts = {k: r.text(get(k), f"{where}.{k}") for k in ("key", "case", "metric", "commit_before",
                                                          "commit_after", "kind", "status", "reason")}
    for k in ("measured_at", "host"):
        r.text(entry.get(k, ""), f"{where}.{k}")
    if texts["status"] not in STATUSES:
        raise r.expect(f"{where}.status", "one of " + ", ".join(map(repr, STATUSES)), texts["status"])
    if texts["kind"] not in KINDS:
        raise r.expect(f"{where}.kind", "one of " + ", ".join(map(repr, KINDS)), texts["kind"])
    own = step_key(texts["case"], texts["metric"], texts["commit_before"], texts["commit_after"])
    if texts["key"] != key or own != key:
        raise r.fail(f"{where}.key", f"the entry is keyed {key!r}, but its case, metric and commits make "
                                     f"{own!r}: it belongs to another step")
    pairs = r.value(get("pairs"), f"{where}.pairs", "count", optional=False)
    r.value(entry.get("wall_s", 0), f"{where}.wall_s", "nonneg", optional=False)
    verdict = entry.get("verdict")
    if verdict is not None:
        verdict = r.obj(verdict, f"{where}.verdict")
        if verdict.get("verdict") not in VERDICTS:
            raise r.expect(f"{where}.verdict.verdict", "one of " + ", ".join(VERDICTS), verdict.get("verdict"))
        for k in ("ratio", "ci_low", "ci_high", "p_value"):
            r.value(verdict.get(k), f"{where}.verdict.{k}", "number")
    if texts["status"] != UNCONFIRMED and (verdict is None or pairs < 1):
        raise r.fail(where, f"a {texts['status']!r} outcome without the verdict and the pairs it rests on "
                            "(a re-run's outcome has both)")
    for k, v in r.obj(entry.get("files", {}), f"{where}.files").items():
        r.text(v, f"{where}.files.{k}")


def save(path: str | os.PathLike, entries: dict[str, dict]) -> Path:
    """Write every confirmation (atomically: readers see the old file or the new one)."""
    doc = {"format": FORMAT, "version": VERSION, "steps": dict(sorted(entries.items()))}
    return atomic_write_text(path, json.dumps(doc, indent=1, allow_nan=False) + "\n")


def apply(trends: Trends, confirmations: dict[str, dict]) -> Trends:
    """Mark each timing step with its stored confirmation (``status`` and ``confirmation``)."""
    steps = trends.steps
    if not len(steps) or not confirmations:
        return trends
    steps = steps.copy()
    status = steps["status"].to_numpy(dtype=object, copy=True)
    found = steps["confirmation"].to_numpy(dtype=object, copy=True)
    for i, (key, det) in enumerate(zip(steps["key"], steps["deterministic"])):
        entry = confirmations.get(key)
        if entry is None or det:
            continue
        status[i] = entry["status"]
        found[i] = entry
    steps["status"], steps["confirmation"] = status, found
    trends.steps = sort_steps(steps)
    return trends


@dataclass
class Plan:
    """One gate run: the steps between two commits; the gate decides on ``metric`` (the largest step's)."""

    commit_before: str
    commit_after: str
    metric: str
    steps: pd.DataFrame


def _remeasured(confirmation) -> bool:
    """Whether a stored outcome came from a re-run (pairs measured), not from a step left aside."""
    return isinstance(confirmation, dict) and (confirmation.get("pairs") or 0) > 0


def plan(trends: Trends, redo: bool = False, max_steps: int | None = None) -> list[Plan]:
    """Timing steps to re-measure, grouped by commit pair, biggest regressions first.

    Unless ``redo``, only steps never re-measured: confirmed and not reproduced steps are
    skipped, and so are unconfirmed ones whose re-run ended inconclusive. Why: a CI job
    confirms on every push, and re-running an inconclusive step each time until one run
    says "regressed" is testing until the answer comes (in the trend benchmark, an A/A step
    re-run in 22 analyses was confirmed once). Steps left unconfirmed for want of budget, a
    missing commit or an unrunnable case are tried again.
    """
    steps = trends.steps
    if not len(steps):
        return []
    # Only timings: the paired re-run measures cold-process timings. A count that is not repeatable
    # between processes (``trends.unsteady``) stays a candidate: the gate's count tier never settles on it.
    timing = ~steps["metric"].astype(str).map(lambda m: metric_info(m).deterministic).astype(bool)
    todo = by_size(steps[(steps["status"] != DETERMINISTIC) & timing])
    if not redo:
        todo = todo[(todo["status"] == UNCONFIRMED) & ~todo["confirmation"].map(_remeasured)]
    if max_steps is not None:
        todo = todo.head(max_steps)
    plans: dict[tuple[str, str], list[int]] = {}
    for i, r in zip(todo.index, todo.itertuples(index=False)):
        plans.setdefault((r.commit_before, r.commit_after), []).append(i)
    return [Plan(b, a, str(todo.loc[rows[0], "metric"]), todo.loc[rows]) for (b, a), rows in plans.items()]


def _paired(files: dict, case_id: str, metric: str) -> tuple[list[float], list[float]]:
    """A case's ``metric`` over the complete pairs of a gate run's results files."""
    from .. import metrics
    from ..results import record

    sides = {}
    for role in ("base", "head"):
        res = record.load(files[role])
        case = next((c for c in res.cases if c.id == case_id), None)
        sides[role] = {s.pair: v for s in (case.good("timing", "cold") if case else [])
                       if s.pair is not None and (v := metrics.sample_value(s, metric)) is not None and v > 0}
    common = sorted(set(sides["base"]) & set(sides["head"]))
    return [sides["base"][i] for i in common], [sides["head"][i] for i in common]


def _status(kind: str, verdict: str) -> str:
    if verdict == "inconclusive":
        return UNCONFIRMED
    if (kind == "regression" and verdict == "regressed") or (kind == "improvement" and verdict == "improved"):
        return CONFIRMED
    return NOT_REPRODUCED


def _entry(r, status: str, reason: str, **extra) -> Confirmation:
    return Confirmation(r.key, r.case, r.metric, r.commit_before, r.commit_after, r.kind, status, reason,
                        measured_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                        host=socket.gethostname(), **extra)


def _lacking(cases, sides, base, head, split_cases) -> dict[str, str]:
    """The cases one of the step's commits does not provide, each with why (``measure.sides.split_cases``: a
    plugin's model from each commit's own install): a step needs the case on both sides, so a case only the later
    commit declares, or one it removed, is not re-measured; one neither provides is named as unknown."""
    from ..errors import UsageError

    out = {}
    for case in cases:
        try:
            _, new, removed = split_cases([case], sides["base"], sides["head"])
        except UsageError as exc:
            out[case.id] = str(exc)
            continue
        if new:
            out[case.id] = f"the earlier commit {base.short} does not provide {case.id} (only {head.short} does)"
        elif removed:
            out[case.id] = f"the later commit {head.short} no longer provides {case.id}"
    return out


def confirm(trends: Trends, repo: str | os.PathLike, budget_s: float, out_dir: str | os.PathLike, *,
            redo: bool = False, max_steps: int | None = None, alpha: float = 0.01, max_pairs: int = 60,
            sampler=None, opener: "SideOpener | None" = None, clock: Callable[[], float] = time.monotonic,
            on_note: Callable[[str], None] | None = None, run_settings=None,
            on_done: Callable[[list[Confirmation]], None] | None = None,
            project_dir: str = "") -> list[Confirmation]:
    """Re-measure the unconfirmed timing steps of ``trends`` within ``budget_s`` seconds.

    Returns one :class:`Confirmation` per planned step, in plan order; steps that could
    not be re-measured are ``unconfirmed`` with the reason (a missing commit names it).
    ``sampler`` and ``opener`` default to real cold processes and the gate's sides
    (``measure.sides.SideOpener``: worktrees, installs, both in this interpreter); tests pass
    in-process ones. ``on_done`` is called with the new outcomes after each
    gate run (and each step left aside), before the next run starts: the caller saves
    them there, so an interruption loses only the run in progress.
    """
    from ..decide.gate_loop import run_gate
    from ..decide.gate_settings import GateSettings
    from .. import metrics
    from ..decide.stats import compare_paired
    from ..decide.unmeasured import side_of
    from ..measure.cases import select
    from ..measure.runner import RunSettings, run_sample
    from ..measure.sides import SideOpener, split_cases
    from ..provision.worktrees import GitError, resolve

    if budget_s <= 0:
        raise UsageError(f"--budget must be positive, got {budget_s:g} s")
    note = on_note or (lambda text: None)
    sampler = sampler or run_sample
    opener = opener or SideOpener()
    out_dir = Path(out_dir)
    plans = plan(trends, redo, max_steps)
    done: list[Confirmation] = []
    flushed = 0
    if plans:  # an earlier run killed outright left its worktrees in the user's repository (bisect's own rule)
        from ..provision.worktrees import pruned_note

        if (pruned := pruned_note(repo)) is not None:
            note(pruned)

    def flush() -> None:
        nonlocal flushed
        if on_done is not None and len(done) > flushed:
            on_done(done[flushed:])
        flushed = len(done)

    start = clock()
    for n, p in enumerate(plans):
        flush()
        rows = list(p.steps.itertuples(index=False))
        left = budget_s - (clock() - start)
        share = left / (len(plans) - n)
        if share < MIN_RUN_S:
            done += [_entry(r, UNCONFIRMED, f"not re-measured: the --budget was spent ({left:.0f} s left for "
                                            f"{len(plans) - n} gate run(s))") for r in rows]
            continue
        try:
            base = resolve(repo, p.commit_before, "the step's earlier")
            head = resolve(repo, p.commit_after, "the step's later")
        except GitError as exc:
            note(f"cannot confirm {len(rows)} step(s) between {p.commit_before[:10]} and {p.commit_after[:10]}: {exc}")
            done += [_entry(r, UNCONFIRMED, f"not re-measured: {exc}") for r in rows]
            continue
        cases, problems, gate_id = [], {}, {}
        for r in rows:
            try:
                # A model this interpreter does not know is kept for the commits' installs to resolve (split below).
                picked, skipped = select([r.model], [r.backend], [r.variant] if r.variant else ["default"],
                                         pending_models=True)
            except TtfgError as exc:
                problems[r.case] = str(exc)
                continue
            if picked:
                gate_id[r.case] = picked[0].id
                if picked[0].id not in {c.id for c in cases}:
                    cases.append(picked[0])
            else:
                problems[r.case] = skipped[0].reason if skipped else "no such case here"
        for r in rows:
            if r.case in problems:
                done.append(_entry(r, UNCONFIRMED, f"not re-measured: {problems[r.case]}"))
        if not cases:
            continue
        settings = GateSettings(metric=p.metric, alpha=alpha, max_pairs=max_pairs, budget_s=share,
                                profiles=0,  # a confirmation decides; the gate's sampled stacks would only cost time
                                run=run_settings or RunSettings(repeat=1))
        run_dir = out_dir / f"{p.commit_before[:10]}-{p.commit_after[:10]}"
        note(f"confirming {len(rows)} step(s) between {base.short} and {head.short}, deciding on {p.metric} "
             f"(budget {share:.0f} s) -> {run_dir}")
        with opener.open(repo, {"base": base, "head": head}, cases, settings.run, on_note=note,
                         prefix="ttfg-confirm-", project_dir=project_dir) as sides:
            lacking = _lacking(cases, sides, base, head, split_cases)
            measured = [c for c in cases if c.id not in lacking]
            outcome = (run_gate(measured, [], sides["base"], sides["head"], settings, run_dir, sampler=sampler)
                       if measured else None)
        by_case = {c.case: c for c in outcome.cases} if outcome is not None else {}
        for r in rows:
            if r.case in problems:
                continue
            if gate_id[r.case] in lacking:
                done.append(_entry(r, UNCONFIRMED, f"not re-measured: {lacking[gate_id[r.case]]}"))
                continue
            c = by_case.get(gate_id[r.case])
            if c is None:
                done.append(_entry(r, UNCONFIRMED, "not re-measured: the gate ran no such case"))
                continue
            side = side_of(c)
            if side is not None:  # no good sample on a side: neither confirmed nor "not reproduced"
                done.append(_entry(r, UNCONFIRMED, f"not re-measured: {c.verdict.reason}",
                                   files=dict(outcome.files)))
                continue
            verdict, how = c.verdict, f"paired re-run, {c.pairs} pair(s)"
            if r.metric != p.metric:  # the same processes, read for this step's metric
                base_values, head_values = _paired(outcome.files, gate_id[r.case], r.metric)
                # Each further metric of the case is one more test on the same processes: alpha is split.
                others = sum(1 for o in rows if o.case == r.case and o.metric != p.metric)
                how = (f"paired re-run (decided on {p.metric}), {len(base_values)} pair(s) read for {r.metric}, "
                       f"alpha {alpha:g}/{others}")
                if len(base_values) >= 2:
                    verdict = compare_paired(base_values, head_values, min_effect=metrics.get(r.metric).threshold,
                                             alpha=alpha / others)
                else:
                    done.append(_entry(r, UNCONFIRMED, f"{how}: too few to test", pairs=len(base_values),
                                       files=dict(outcome.files)))
                    continue
            status = _status(r.kind, verdict.verdict)
            done.append(_entry(r, status, f"{how}: {verdict.verdict}; {verdict.reason}",
                               verdict=strict_json(verdict.to_json()), pairs=verdict.n_base, wall_s=round(c.wall_s, 1),
                               files=dict(outcome.files)))
    flush()
    return done


def merge(stored: dict[str, dict], new: list[Confirmation]) -> dict[str, dict]:
    """Stored confirmations updated with new ones; a new "unconfirmed" never replaces a verdict."""
    out = dict(stored)
    for c in new:
        old = out.get(c.key)
        if c.status == UNCONFIRMED and old is not None and old.get("status") in (CONFIRMED, NOT_REPRODUCED):
            continue
        out[c.key] = strict_json(c.to_json())
    return out


__all__ = ["Confirmation", "FILE_NAME", "Plan", "apply", "confirm", "load", "merge", "path_for", "plan", "save"]
