"""The report's first screen: the run just measured, or the gate just decided.

Why a module of its own: after ``make bench`` a person wants to see *their* numbers
first (the run's table, where its processes spent their time, what went wrong), and after
``ttfg gate`` the verdict. History across commits, often recorded on another machine
(the shipped ``results/ttfg-dev-2core/``), comes later, in a part of its own
(``report.history_part``). The run's table is built from the very cells ``ttfg run``
prints in the terminal (``run_views.run_rows``), so the two agree to the character.
"""

from __future__ import annotations

from pathlib import Path

from .. import fmt, metrics
from ..history import points
from ..results.gate_document import GateDocument
from . import run_views
from .terminal import case_cells, case_layout

#: Columns of the run table, in order (besides the case's parts); empty ones are left out. Import,
#: build and the phases are the phase breakdown's, right below (its figure and its numbers).
RUN_COLUMNS = (run_views.OK, run_views.FIRST, run_views.RANGE, run_views.CV, run_views.PROCESS, run_views.SECOND,
               run_views.ALLOCS)
#: The gate's decision by its exit code, for the page's header.
GATE_DECISION = {0: "passed: no regression shown", 1: "failed: regression", 2: "could not compare"}


def the_run(runs: list):
    """The run this page is about: a gate's head, else the newest results file; None without one."""
    heads = [r for r in runs if r.gate is not None and r.gate.role == "head"]
    return run_views.latest(heads) if heads else run_views.latest(runs)


def when(created: str) -> str:
    """``2026-12-03T22:08:23+00:00`` -> ``2026-12-03 22:08 UTC`` (as written when it is not a timestamp)."""
    from datetime import datetime, timezone

    try:
        moment = datetime.fromisoformat(str(created))
    except ValueError:
        return str(created)
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M") + (" UTC" if moment.tzinfo is not None else "")


def run_title(res) -> str:
    """``bench.json, commit 3223193 (dirty), 2026-12-03 22:08 UTC``."""
    git = res.environment.get("git") or {}
    commit = points.short_commit(git.get("commit")) + (" (dirty)" if git.get("dirty") else "")
    name = Path(res.path).name if res.path else "results"
    return f"{name}, commit {commit}, {when(res.created)}"


def host_name(res) -> str:
    """``vm (AMD EPYC, 2 CPUs)``: the machine a results file was measured on."""
    env = res.environment
    return f"{env.get('hostname', '?')} ({env.get('cpu', '?')}, {env.get('cpu_count', '?')} CPUs)"


def run_section(res) -> dict:
    """The run's table: per case and cache, samples, the first gradient with its spread, the phases."""
    if res is None:
        return {"shown": False}
    rows = run_views.run_rows(res)
    varying, fixed = case_layout([r["case"] for r in rows])
    caches = ("cache",) if len({r["cache"] for r in rows}) > 1 else ()
    columns = [c for c in RUN_COLUMNS if any(r[c] not in ("", fmt.MISSING) for r in rows)]
    body = [{"case": r["case"], "parts": case_cells(r["case"], varying), "caches": [r[c] for c in caches],
             "cells": [r[c] for c in columns], "short": r["short"]} for r in rows]
    failed = [c for c in res.cases if not c.skipped and not c.good("timing")]
    samples = sum(len(c.samples) for c in res.cases)
    bad = sum(1 for c in res.cases for s in c.samples if not s.ok)
    name = Path(res.path).name if res.path else "results"
    return {"shown": True, "title": run_title(res), "name": name, "host": host_name(res), "fixed": fixed, "parts": list(varying), "caches": list(caches),
            "columns": columns, "rows": body, "skipped": [f"{c.id}: {c.skipped}" for c in res.cases if c.skipped],
            "failed": [c.id for c in failed], "failed_samples": bad,
            "glance": [fmt.plural(sum(1 for c in res.cases if not c.skipped), "case"),
                       fmt.plural(samples, "process", "processes"),
                       fmt.plural(bad, "failed sample") if bad else "no failed sample"]}


def host_rows(res) -> list[tuple[str, str]]:
    """Where the run was measured: this machine, not the asv history's."""
    if res is None:
        return []
    env = res.environment
    git = env.get("git") or {}
    rows = [("host", f"{env.get('hostname', '?')} — {env.get('cpu', '?')}, {env.get('cpu_count', '?')} CPUs"),
            ("platform", str(env.get("platform", "?"))), ("python", str(env.get("python", "?"))),
            ("run", run_title(res) + (f", branch {git['branch']}" if git.get("branch") else ""))]
    threads = env.get("probe_env") or {}
    if threads:
        rows.append(("probe environment", ", ".join(f"{k}={v}" for k, v in sorted(threads.items()))))
    return rows


def gate_rows(doc: GateDocument) -> list[dict]:
    """Per case of a ``gate.json``: the verdict, the tier and metric that decided, and that metric's own numbers,
    built by the same row builder as the terminal and ``summary.md`` (``gate_views.verdict_rows``)."""
    from .gate_views import verdict_rows

    cases = doc.outcome.cases
    return [{"case": r.case, "verdict": r.word, "label": r.label, "tier": r.decided_by, "base": r.base,
             "head": r.head, "ratio": r.ratio, "interval": r.interval, "pairs": str(c.pairs),
             "context": r.context} for r, c in zip(verdict_rows(cases), cases)]


def gate_section(doc: GateDocument | None) -> dict:
    """The gate's decision for the page's header and first section, from its ``gate.json``."""
    if not doc:
        return {"shown": False}
    from .verdicts import accepted_decision

    code, outcome = doc.exit_code, doc.outcome
    rows = gate_rows(doc)
    regressed = [r["case"] for r in rows if r["verdict"] == "regressed"]
    decision = GATE_DECISION.get(code, GATE_DECISION[2])
    if code == 1 and regressed:
        decision += f" in {fmt.plural(len(regressed), 'case')} of {len(rows)}"
    elif code == 1:
        decision = "failed: a violated expectation"
    elif code == 0 and outcome.accepted():
        decision = f"{accepted_decision(len(outcome.accepted()))} ({fmt.plural(len(rows), 'case')})"
    elif code == 0:
        decision += f" ({fmt.plural(len(rows), 'case')})"
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    metric = outcome.settings.metric
    return {"shown": True, "code": code, "decision": f"ttfg gate {decision}", "rows": rows,
            "base": f"{outcome.base.name} ({outcome.base.short})",
            "head": f"{outcome.head.name} ({outcome.head.short})",
            "metric": metrics.get(metric).label if metric in metrics.METRICS else metric,
            "skipped": [f"{s.id}: {s.reason}" for s in outcome.skipped],
            "glance": [f"{n} {word}" for word, n in sorted(counts.items())]}


__all__ = ["GATE_DECISION", "RUN_COLUMNS", "gate_rows", "gate_section", "host_name", "host_rows", "run_section",
           "run_title", "the_run", "when"]
