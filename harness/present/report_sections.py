"""The report page's sections drawn from results files: the run's phases and cache effect, a gate's
attribution, the studies and the noise floor.

Why apart from ``report.py``: the page assembles sections from two sources, the history's
trends and the results files; these are the second kind, one function per section, each
returning the dict the template draws.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import fmt
from . import noise_views, plots, run_section, run_views, study_plots, study_views
from .terminal import case_cells, case_layout
from ..history.points import metric
from ..results.attribution_record import Attribution
from ..results.model import EffectEntry
from .. import metrics


def _the_run_if(runs: list, need):
    """The page's run (``run_section.the_run``) when it has what a section needs, else the newest that has."""
    res = run_section.the_run(runs)
    return res if res is not None and need(res) else run_views.latest(runs, need=need)


def phase_section(runs: list) -> dict:
    res = _the_run_if(runs, lambda r: any(c.good("timing", "cold") for c in r.cases))
    if res is None:
        return {"figures": [], "note": "needs a results file with cold timing samples (ttfg run --out FILE)"}
    bars = run_views.phase_bars(res)
    names = dict(run_views.segments())
    backends = sorted({b.backend for b in bars})
    figures, table = [], []
    for model in sorted({b.model for b in bars}):
        mine = sorted((b for b in bars if b.model == model), key=lambda b: (b.backend, b.variant))
        drawn = [plots.Bar(f"{b.backend}\n{b.variant}" if b.variant else b.backend,
                           plots.backend_color(b.backend, backends),
                           b.segments, b.total) for b in mine]
        # A phone's labels: the backend, and the variant's values only where they differ between bars.
        varying, _ = case_layout([b.case for b in mine])
        short = [plots.Bar("\n".join(filter(None, case_cells(b.case, tuple(c for c in varying if c != "model")))),
                           d.color, d.segments, d.total) for b, d in zip(mine, drawn)]
        title = f"{model} — one cold process, phase by phase"
        figures.append({"model": model, "uri": plots.phase_plot(drawn, names, title),
                        "narrow": plots.phase_plot(short, names, f"{model}: phase by phase", plots.NARROW_IN)})
        keys = [k for k, _ in run_views.segments()]
        columns = {k: fmt.column([b.segments.get(k) for b in mine], "s") for k in keys}
        totals = fmt.column([b.total for b in mine], "s")
        for i, b in enumerate(mine):
            table.append({"case": b.case, "color": plots.backend_color(b.backend, backends),
                          "samples": fmt.count(b.samples), "cells": [columns[k][i] for k in keys], "total": totals[i]})
    return {"figures": figures, "run": run_section.run_title(res), "columns": [n for _, n in run_views.segments()],
            "table": table, "note": None}


def cache_section(runs: list) -> dict:
    res = _the_run_if(runs, lambda r: bool(run_views.cache_pairs(r)))
    if res is None:
        return {"uri": None, "note": "no run measured both caches (ttfg run --cache both)"}
    pairs = sorted(run_views.cache_pairs(res), key=lambda p: (p.model, p.backend, p.variant))
    backends = sorted({p.backend for p in pairs})
    label = lambda p: f"{p.model} · {p.backend}" + (f"\n{p.variant}" if p.variant else "")  # noqa: E731
    first = [plots.CacheBar(label(p), plots.backend_color(p.backend, backends), p.cold_first, p.warm_first) for p in pairs]
    proc = [plots.CacheBar(label(p), plots.backend_color(p.backend, backends), p.cold_process, p.warm_process)
            for p in pairs]
    panels = [(metrics.get("first_grad_s").brief, first), (metrics.get("process_ttfg_s").brief, proc)]
    uri = plots.cache_plot(panels, "cold versus warm compile cache")
    # A phone's labels: only the case parts that differ between the bars.
    varying, _ = case_layout([p.case for p in pairs])
    short = {p.case: "\n".join(filter(None, case_cells(p.case, varying))) for p in pairs}
    phone = [(name, [plots.CacheBar(short[p.case], bar.color, bar.cold, bar.warm) for p, bar in zip(pairs, bars)])
             for name, bars in panels]
    narrow = plots.cache_plot(phone, "cold versus warm cache", plots.NARROW_IN)
    cells = {k: fmt.column([getattr(p, k) for p in pairs], "s")
             for k in ("cold_first", "warm_first", "cold_process", "warm_process")}
    speedups = fmt.column([p.speedup for p in pairs], "factor")
    rows = [{"case": p.case, "color": plots.backend_color(p.backend, backends),
             **{k: cells[k][i] for k in cells}, "speedup": speedups[i]} for i, p in enumerate(pairs)]
    return {"uri": uri, "narrow": narrow, "rows": rows, "run": run_section.run_title(res), "note": None,
            "first": metrics.get("first_grad_s").brief, "process": metrics.get("process_ttfg_s").brief}


@dataclass
class GateAttributions:
    """What the page's "where the change went" shows: a gate's base and head, and where each case's change went
    (``app/report.gate_attributions`` makes it: the gate's own attributions, as its ``gate.json`` holds them, and
    for its other cases, attributions made from the two results files), or why there are none (``note``)."""

    base: str
    head: str
    attributions: list[Attribution] = field(default_factory=list)
    note: str | None = None


def attribution_section(found: GateAttributions | None) -> dict:
    """Where a gate's change went, when the results files include a gate's base and head."""
    from .attribution_views import attribution_context

    if found is None:
        return {"blocks": []}
    if found.note is not None:
        return {"blocks": [], "note": found.note}
    return {"blocks": [attribution_context(a) for a in found.attributions], "base": found.base, "head": found.head,
            "paired": any(a.paired for a in found.attributions)}


def effect_reading(row: EffectEntry) -> str:
    """What the interval says, in words: faster, slower, or no clear difference."""
    if row.ratio is None or row.ci_low is None or row.ci_high is None:
        return ""
    if row.ci_high < 1:
        return f"{row.treatment} {fmt.factor(1 / row.ratio)} faster"
    if row.ci_low > 1:
        return f"{row.treatment} {fmt.factor(row.ratio)} slower"
    return "no clear difference"


def _effect_block(study: study_views.Study, backends: list[str]) -> dict:
    control, treatment = study.control, study.treatment
    order = {m: i for i, m in enumerate(dict.fromkeys(r.metric for r in study.effects))}
    rows = sorted(study.effects, key=lambda r: (order[r.metric], r.backend))
    bars, table = [], []
    for r in rows:
        color = plots.backend_color(r.backend, backends)
        label = metric(r.metric).brief
        reading = effect_reading(r)
        control_median, treatment_median = study.medians.get((r.backend, r.metric), (None, None))
        if r.ratio is not None and r.ratio > 0:
            text = f"{fmt.factor(r.ratio)} {fmt.interval(r.ci_low, r.ci_high)}"
            text += f" — {reading}" if reading else ""
            bars.append(study_plots.EffectBar(f"{r.backend} · {label}", color, r.ratio, r.ci_low, r.ci_high, text))
        table.append({
            "key": f"{r.backend}/{r.metric}", "backend": r.backend, "color": color, "metric": label,
            "control": r.control, "treatment": r.treatment,
            "control_value": fmt.metric_value(r.metric, control_median),
            "treatment_value": fmt.metric_value(r.metric, treatment_median),
            "ratio": fmt.factor(r.ratio), "ci": fmt.interval(r.ci_low, r.ci_high) if r.ratio is not None else "",
            "reading": reading, "n": "–" if r.n is None else str(r.n),
            "p": fmt.p_value(r.p_value), "note": r.note,
        })
    uri = None
    if bars:
        uri = study_plots.effect_plot(
            bars, f"{study.kind} study on {study.model}: time with {treatment} / time with {control}",
            f"ratio {treatment} / {control}, geometric mean over paired cold processes, 95 % interval (log scale)",
            f"{treatment} faster", f"{treatment} slower")
    return {"uri": uri, "rows": table, "control": control, "treatment": treatment, "charted": len(bars)}


def _depth_block(study: study_views.Study, backends: list[str]) -> dict:
    panels = []
    for name in study.depth_metrics():
        lines = []
        for s in sorted((s for s in study.depth if s.metric == name and s.points), key=lambda s: s.backend):
            xs, ys = [d for d, _ in s.points], [t for _, t in s.points]
            fit_x = list(np.geomspace(xs[0], xs[-1], 60)) if s.fit is not None and len(xs) > 1 else []
            label = s.backend + (f": {fmt.exponent(s.fit.k, s.fit.k_low, s.fit.k_high)}, {s.growth}"
                                 if s.fit else ": no fit")
            lines.append(study_plots.DepthLine(label, plots.backend_color(s.backend, backends), xs, ys, fit_x,
                                         s.fit.curve(fit_x) if fit_x else []))
        panels.append(study_plots.DepthPanel(metric(name).label, lines))
    uri = None
    if panels:
        uri = study_plots.depth_plot(panels, f"depth study on {study.model}: median seconds by depth (log-log); "
                                       "dashed: fitted a + b·depthᵏ", "depth (blocks), log scale")
    order = {m: i for i, m in enumerate(study_views.DEPTH_METRICS)}
    rows = []
    for s in sorted(study.depth, key=lambda s: (s.backend, order.get(s.metric, len(order)), s.metric)):
        fit = s.fit
        rows.append({
            "key": f"{s.backend}/{s.metric}", "backend": s.backend, "color": plots.backend_color(s.backend, backends),
            "metric": metric(s.metric).label, "k": f"{fit.k:.2f}" if fit else "–",
            "k_ci": fit.interval if fit else "",
            "growth": s.growth, "a": fmt.seconds(fit.a) if fit else "–", "b": fmt.seconds(fit.b) if fit else "–",
            "span": (f"{fmt.seconds(s.points[0][1])} at {s.points[0][0]:g} → {fmt.seconds(s.points[-1][1])} at "
                     f"{s.points[-1][0]:g}") if s.points else "–",
            "depths": len(s.points), "note": s.note,
        })
    return {"uri": uri, "panels": len(panels), "rows": rows}


def studies_section(studies: list) -> dict:
    """One block per ``ttfg study`` results file: a figure and a table from its stored analysis."""
    views = study_views.read_studies(studies)
    backends = sorted({r.backend for v in views for r in (*v.effects, *v.depth)})
    blocks = []
    for i, v in enumerate(views, 1):
        block = {"id": f"study-{i}", "kind": v.kind, "model": v.model, "file": Path(v.file).name,
                 "created": v.created, "notes": v.notes}
        block.update(_depth_block(v, backends) if v.kind == "depth" else _effect_block(v, backends))
        block["has_notes"] = any(r["note"] for r in block["rows"])
        blocks.append(block)
    return {"blocks": blocks, "shown": bool(studies)}


def noise_section(runs: list) -> dict:
    """The newest run's noise floor: a sentence ("a 10-minute gate sees >= 6 %") and one row per case."""
    res = run_views.latest(runs, need=lambda r: r.noise is not None)
    if res is None:
        return {"shown": False, "headline": "", "rows": [], "budgets": [], "file": ""}
    budgets = sorted({b for e in res.noise.entries for b, _, _ in e.gates})
    return {"shown": True, "headline": noise_views.headline(res.noise), "rows": noise_views.report_rows(res.noise),
            "budgets": [f"{b / 60:g}-min gate" for b in budgets], "note": res.noise.note,
            "file": str(res.path.name) if res.path else "(in memory)"}


# ---------------------------------------------------------------------------- render + write


__all__ = ["GateAttributions", "attribution_section", "cache_section", "effect_reading", "noise_section", "phase_section",
           "studies_section"]
