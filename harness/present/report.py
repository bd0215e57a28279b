"""``ttfg report``: one static HTML file: the run just measured first, then the history's trends.

Inputs: ttfg results files and, optionally, an asv history frame (``ttfg.history.asv_results.load``'s
schema). The page leads with the run (a gate's head, else the newest results file:
``run_section``) or, for a gate's folder, the gate's verdict; history across commits, which is
often another machine's (the shipped ``results/``), follows in a part of its own that names the
machine that recorded it. Without asv history, results files that span two or more commits are
the history. Output: a single self-contained file (figures embedded as PNG data URIs, each with a
narrow rendition a phone picks, one small inline script for pointer and tap answers, nothing
fetched), written atomically (by ``app/report.py``) so a failed build never leaves half a
report behind.

The page only shows: the use case ``app/report.py`` loads the inputs, finds the steps and
applies the confirmations, and hands the result over as :class:`Prepared`. The pieces,
one job each: ``history.points`` (inputs -> points), ``history.steps`` (change
detection), ``history.trends`` (series, steps table, summary), ``run_section`` (the run's table, the
gate's verdict, the host), ``run_views`` (one run's phases and cache effect), ``study_views``
(``ttfg study`` files' stored analyses), ``plots`` (figures), ``fmt`` (numbers), and the Jinja
template ``templates/report.html.j2`` (autoescaped: case names are user input).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from .. import fmt
from . import pages, plots, run_section, run_views
from .report_sections import (GateAttributions, attribution_section, cache_section, noise_section, phase_section,
                              studies_section)
from .. import metrics

from ..history.points import TREND_METRICS, History, metric, run_commit, short_commit
from ..history.steps import DEFAULT_MIN_CHANGE
from ..history.trends import Trends, step_key, summary
from ..results.gate_document import GateDocument

TEMPLATE = "report.html.j2"
#: Step rows in the HTML (all are in ``ttfg regressions``), oldest to newest: the newest ``MAX_STEP_ROWS``;
#: the newest ``OPEN_STEP_ROWS`` shown open, the earlier ones in a folded <details> (a history is read
#: from its newest end: that is where a pull request lands).
MAX_STEP_ROWS = 200
OPEN_STEP_ROWS = 20
GROUPS = (
    ("time", "Time trends", "Seconds per case across commits, one line per backend and variant."),
    ("memory", "Allocation and memory trends",
     "Allocations counted by memray in the first-gradient window, and peak RSS of the whole process."),
    ("counters", "Structural counter trends",
     "Deterministic counts that explain a timing change without timing noise (jaxpr equations, "
     "HLO ops, graphs, autograd nodes)."),
)


@dataclass
class Prepared:
    """Everything the report and ``ttfg regressions`` derive from the inputs."""

    points: pd.DataFrame
    trends: Trends
    history: History | None
    runs: list                   # ordinary results files: trends, phases, cold/warm
    notes: list[str] = field(default_factory=list)
    source: str = "results files"
    studies: list = field(default_factory=list)  # results files of `ttfg study`: the Studies section
    gate: GateDocument | None = None  # a gate's gate.json, when the results files are a gate's folder: verdict first


# ---------------------------------------------------------------------------- sections


def _ticks(commits: pd.DataFrame, max_ticks: int = 8) -> list[tuple[int, str]]:
    n = len(commits)
    if not n:
        return []
    where = sorted({int(round(v)) for v in np.linspace(0, n - 1, min(n, max_ticks))})
    out = []
    for p in where:
        row = commits.iloc[p]
        date = row["date"]
        text = str(row["label"])
        if isinstance(date, (pd.Timestamp, datetime)) and not pd.isna(date):
            text += "\n" + date.strftime("%Y-%m-%d")
        out.append((p, text))
    return out


def _slug(n: int) -> str:
    return f"fig-{n}"


def variant_styles(trends: Trends) -> dict[str, str]:
    """One line style per variant for the whole report (most common variant: solid)."""
    counts: dict[str, int] = {}
    for s in trends.series.values():
        counts[s.variant] = counts.get(s.variant, 0) + 1
    ordered = sorted(counts, key=lambda v: (-counts[v], v))
    return {v: plots.LINE_STYLES[i % len(plots.LINE_STYLES)] for i, v in enumerate(ordered)}


def line_legend(trends: Trends) -> dict:
    """The HTML legend shared by every trend plot: colour = backend, line style = variant."""
    backends = sorted({s.backend for s in trends.series.values()})
    return {"backends": [{"name": b, "color": plots.backend_color(b, backends)} for b in backends],
            "variants": [{"name": v or "(no variant)", "dash": DASHES[style]}
                         for v, style in variant_styles(trends).items()]}


#: SVG stroke-dasharray for each matplotlib line style, for the HTML legend.
DASHES = {"-": "", "--": "7 4", ":": "2 3", "-.": "7 3 2 3"}


def _step_info(trends: Trends) -> dict[str, str]:
    """Per step key, the pointer's text over its marker: kind, change and status."""
    if not len(trends.steps):
        return {}
    return {k: f"{kind} {fmt.change(c)}: {status}" for k, kind, c, status in
            zip(trends.steps["key"], trends.steps["kind"], trends.steps["change"], trends.steps["status"])}


def trend_sections(trends: Trends, hover: dict | None = None) -> tuple[list[dict], dict[tuple[str, str], str]]:
    """One figure per model x metric: sections by group (time / memory / counters), then
    a heading per metric with one plot per model, so a metric is compared across models
    without scrolling past the others. ``hover``, when given, receives each figure's
    pointer data by figure id (``plots.TrendCanvas.hover``)."""
    canvas = plots.TrendCanvas(_ticks(trends.commits), trends.n_commits)
    phone = plots.TrendCanvas(_ticks(trends.commits), trends.n_commits, plots.NARROW_IN)
    shas = trends.commits["commit"].astype(str).to_numpy() if trends.n_commits else []
    info_of = _step_info(trends)
    backends = sorted({s.backend for s in trends.series.values()})
    styles = variant_styles(trends)
    by_metric: dict[str, dict[str, list]] = {}
    for s in trends.series.values():
        by_metric.setdefault(s.metric, {}).setdefault(s.model, []).append(s)
    anchors: dict[tuple[str, str], str] = {}
    sections = []
    for group, title, blurb in GROUPS:
        names = [m for m in by_metric if metric(m).group == group]
        names = sorted(names) if group == "counters" else [m for m in TREND_METRICS if m in names]
        blocks, aggregated = [], 1
        for name in names:
            info = metric(name)
            figures = []
            for model in sorted(by_metric[name]):
                series = sorted(by_metric[name][model], key=lambda s: (s.backend, s.variant))
                lines = []
                for s in series:
                    keys = [step_key(s.case, s.metric, shas[int(s.pos[st.index - 1])], shas[int(s.pos[st.index])])
                            for st in s.steps]
                    lines.append(plots.Line(f"{s.backend} · {s.variant}" if s.variant else s.backend,
                                            plots.backend_color(s.backend, backends), styles[s.variant],
                                            s.pos.astype(float), s.values,
                                            [(int(s.pos[st.index]), st.after, st.regression) for st in s.steps],
                                            n=s.n, lo=s.lo, hi=s.hi,
                                            step_info=[(f"step-{k}", info_of.get(k, "")) for k in keys]))
                slug = _slug(len(anchors) + 1)
                anchors[(model, name)] = slug
                uri, agg, where = canvas.plot(lines, f"{model} — {info.label}", info.unit, fmt.AXIS_UNITS[info.unit])
                narrow, _, small = phone.plot(lines, f"{model} — {info.label}", info.unit, fmt.AXIS_UNITS[info.unit])
                if hover is not None:
                    hover[slug] = where
                    hover[f"{slug}~narrow"] = small
                aggregated = max(aggregated, agg)
                figures.append({"id": slug, "model": model, "metric": name, "label": info.label, "uri": uri,
                                "narrow": narrow,
                                "lines": len(lines), "steps": sum(len(s.steps) for s in series)})
            blocks.append({"metric": name, "label": info.label, "heading": info.heading, "figures": figures})
        if blocks:
            axis = f"x axis: {trends.n_commits} commit(s) in order, oldest left, labelled with short hash and date"
            if aggregated > 1:
                axis += f"; each plotted point averages up to {aggregated} consecutive commits, the band shows their min to max"
            sections.append({"id": f"trends-{group}", "group": group, "title": title, "blurb": blurb,
                             "axis": axis + ".", "blocks": blocks})
    return sections, anchors


def summary_section(trends: Trends, back: int, threshold: float) -> dict:
    rows = summary(trends, back)
    backends = sorted({r.backend for r in rows})
    out = []
    for r in rows:
        color = plots.backend_color(r.backend, backends)
        info = metric(r.metric) if r.metric else None

        def cls(v):
            if v is None or not math.isfinite(v):
                return "none"
            return "worse" if v > threshold else "better" if v < -threshold else "same"

        out.append({
            "case": r.case, "model": r.model, "backend": r.backend, "variant": r.variant, "color": color,
            "metric": info.brief if info else "–",
            "latest": fmt.value(r.latest, info.unit) if info else "–", "latest_label": r.latest_label or "",
            "vs_previous": fmt.change(r.vs_previous), "vs_previous_class": cls(r.vs_previous),
            "vs_back": fmt.change(r.vs_back), "vs_back_class": cls(r.vs_back), "back_label": r.back_label or "",
            "spark": plots.sparkline_svg(r.history, color) if r.history is not None and len(r.history) > 1 else "",
            "process": fmt.seconds(r.process), "allocations": fmt.count(r.allocations),
            "regressions": r.regressions,
        })
    return {"rows": out, "back": back, "threshold": fmt.ratio(threshold),
            "headings": {"process": metrics.get("process_ttfg_s").brief, "allocations": metrics.get("alloc_count").brief}}


def _step_rows(steps: pd.DataFrame, anchors: dict[tuple[str, str], str], backends: list[str],
               commit_url: str | None) -> list[dict]:
    rows = []
    for r in steps.itertuples(index=False):
        info = metric(r.metric)
        date = r.date_after
        conf = r.confirmation if isinstance(r.confirmation, dict) else None
        verdict = (conf or {}).get("verdict") or {}
        rows.append({
            "key": r.key, "kind": r.kind, "case": r.case, "model": r.model, "backend": r.backend, "variant": r.variant,
            "color": plots.backend_color(r.backend, backends), "metric": info.brief,
            "anchor": anchors.get((r.model, r.metric)),
            "before_label": r.label_before, "after_label": r.label_after,
            "before_url": commit_link(commit_url, r.commit_before), "after_url": commit_link(commit_url, r.commit_after),
            "date": date.strftime("%Y-%m-%d") if isinstance(date, (pd.Timestamp, datetime)) and not pd.isna(date) else "",
            "before": fmt.value(r.before, info.unit), "after": fmt.value(r.after, info.unit),
            "change": fmt.change(r.change), "status": r.status, "deterministic": bool(r.deterministic),
            "evidence": r.evidence,
            "samples": f"{r.commits_before} commit(s), {r.n_before} sample(s) → {r.commits_after} commit(s), "
                       f"{r.n_after} sample(s)",
            "p": fmt.p_value(r.p_value) if r.p_value == r.p_value else "",
            "confirmation": None if conf is None else {
                "reason": conf.get("reason", ""), "measured_at": conf.get("measured_at", ""),
                "host": conf.get("host", ""), "pairs": conf.get("pairs", 0),
                "ratio": fmt.factor(verdict.get("ratio")) if verdict.get("ratio") else fmt.MISSING,
                "interval": fmt.interval(verdict.get("ci_low"), verdict.get("ci_high")) if verdict.get("ratio") else "",
            },
        })
    return rows


def steps_section(trends: Trends, anchors: dict[tuple[str, str], str], commit_url: str | None = None) -> dict:
    """Findings (deterministic steps and confirmed timing steps) apart from timing candidates."""
    steps = trends.steps
    backends = sorted(steps["backend"].unique()) if len(steps) else []
    counted, candidates = trends.counted(), trends.candidates()
    rows = _step_rows(counted.tail(MAX_STEP_ROWS), anchors, backends, commit_url)
    cand = _step_rows(candidates.tail(MAX_STEP_ROWS), anchors, backends, commit_url)
    longest = max((len(s.pos) for s in trends.series.values()), default=0)
    if longest < 4:
        why = f"a step needs at least two commits on each side; the longest history here has {longest}"
    else:
        why = "no series changed level by more than the threshold"
    n_reg = trends.n_regressions()
    status = candidates["status"].value_counts().to_dict() if len(candidates) else {}
    return {"rows": rows[-OPEN_STEP_ROWS:], "why_none": why, "folded": rows[:-OPEN_STEP_ROWS], "regressions": n_reg,
            "improvements": trends.n_improvements(), "hidden": max(len(counted) - MAX_STEP_ROWS, 0),
            "candidates": cand[-OPEN_STEP_ROWS:], "candidates_folded": cand[:-OPEN_STEP_ROWS],
            "candidates_hidden": max(len(candidates) - MAX_STEP_ROWS, 0), "n_candidates": len(candidates),
            "candidate_counts": ", ".join(f"{n} {s}" for s, n in sorted(status.items())),
            "dismissed": trends.dismissed}


def commit_link(template: str | None, sha: str) -> str | None:
    """The commit's page from a URL template (``{sha}`` replaced; without it, the hash is appended,
    as asv's ``show_commit_url`` does); None without a template or for a non-hash "commit"."""
    if not template or not sha or not all(c in "0123456789abcdef" for c in sha.lower()):
        return None
    return template.replace("{sha}", sha) if "{sha}" in template else template + sha


def environment_section(prepared: Prepared) -> dict:
    """Where the run was measured (this host), apart from where the history was recorded (an asv machine)."""
    res = run_section.the_run(prepared.runs) or run_views.latest(prepared.studies)
    packages = []
    if res is not None:
        packages = [f"{k} {v}" for k, v in sorted((res.environment.get("packages") or {}).items()) if v]
    files = [{"name": str(r.path) if r.path else "(in memory)", "created": r.created,
              "commit": short_commit(run_commit(r)),
              "cases": sum(1 for c in r.cases if not c.skipped),
              "study": r.study.study if r.study else ""}
             for r in sorted([*prepared.runs, *prepared.studies], key=lambda r: r.created)]
    return {"rows": run_section.host_rows(res), "packages": packages, "files": files,
            "noise": noise_section(prepared.runs)}


def history_section(prepared: Prepared, run) -> dict:
    """The history part's heading and facts: what it was recorded on, and whether that is this run's machine.

    Shown when asv history was given, or when the results files span two or more commits;
    one results file is the run itself, not a history.
    """
    trends = prepared.trends
    rows: list[tuple[str, str]] = []
    asv = prepared.history is not None and len(prepared.history.points)
    if asv:
        rows.append(("asv machine", prepared.history.machine or "–"))
        rows.append(("asv environment", prepared.history.environment or "–"))
    if trends.n_commits:
        first, last = trends.commits.iloc[0], trends.commits.iloc[-1]

        def when(row):
            d = row["date"]
            return f"{row['label']} ({d.strftime('%Y-%m-%d %H:%M')})" if isinstance(d, (pd.Timestamp, datetime)) and not pd.isna(d) else str(row["label"])

        rows.append(("commits", f"{trends.n_commits}: {when(first)} … {when(last)}"))
    rows.append(("cases", str(len(trends.cases()))))
    # A gate's base and head are two "commits" of results files, but the gate compares them itself, paired.
    shown = asv or (trends.n_commits >= 2 and not prepared.gate) or (run is None and trends.n_commits >= 1)
    commits = fmt.plural(trends.n_commits, "commit")
    if asv:
        title = f"History: {commits} recorded on asv machine {prepared.history.machine or '?'}"
    else:
        title = f"History: {commits} across the results files"
    apart = ""
    if asv and run is not None:
        host = run.environment.get("hostname", "?")
        apart = (f"Recorded by asv on machine {prepared.history.machine or '?'}, not by the run above (host {host}): "
                 "compare its trends with each other, not with this run's numbers.")
    return {"shown": shown, "title": title, "rows": rows, "apart": apart, "asv": asv}


def render(prepared: Prepared, *, asv_link: str | None = None, back: int = 10,
           threshold: float = DEFAULT_MIN_CHANGE, commit_url: str | None = None,
           attribution: GateAttributions | None = None) -> str:
    """The report's HTML text. ``commit_url``: a commit page's URL template (``{sha}``), or None.
    ``attribution``: where a gate's change went, when the results files are a gate's (made by the use case)."""
    from markupsafe import Markup

    run = run_section.the_run(prepared.runs)
    history = history_section(prepared, run)
    hover: dict[str, dict] = {}
    trend, anchors = trend_sections(prepared.trends, hover) if history["shown"] else ([], {})
    summ = summary_section(prepared.trends, back, threshold)
    for row in summ["rows"]:
        row["spark"] = Markup(row["spark"])  # built from numbers and a checked colour only
    steps = steps_section(prepared.trends, anchors, commit_url)
    history["glance"] = [fmt.plural(prepared.trends.n_commits, "commit"), fmt.plural(len(summ["rows"]), "case"),
                         fmt.plural(steps["regressions"], "regression"),
                         fmt.plural(steps["improvements"], "improvement"),
                         fmt.plural(steps["n_candidates"], "unconfirmed candidate")]
    studies = studies_section(prepared.studies)
    gate = run_section.gate_section(prepared.gate)
    this_run = run_section.run_section(run)
    if gate["shown"]:
        headline, glance, source = gate["decision"], gate["glance"], "a gate's results files"
    elif this_run["shown"]:
        headline, glance = f"Your run: {this_run['name']}", this_run["glance"]
        source = f"{run.path if run.path else 'a results file'}, measured on {this_run['host']}"
    else:
        headline, glance, source = "ttfg report — time to first gradient", history["glance"], prepared.source
    if studies["blocks"]:
        glance = [*glance, fmt.plural(len(studies["blocks"]), "study", "studies")]
    context = {
        "title": headline,
        "glance": glance,
        "generated": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "source": source,
        "notes": prepared.notes,
        "gate": gate,
        "run": this_run,
        "environment": environment_section(prepared),
        "history": history,
        "summary": summ,
        "steps": steps,
        "trend_sections": trend,
        "phases": phase_section(prepared.runs),
        "cache": cache_section(prepared.runs),
        "attribution": attribution_section(attribution),
        "studies": studies,
        "asv_link": asv_link,
        "line_legend": line_legend(prepared.trends),
        "hover_data": hover_data(prepared.trends, hover, commit_url) if hover else None,
    }
    return pages.render(TEMPLATE, **context)


def hover_data(trends: Trends, figures: dict[str, dict], commit_url: str | None) -> str:
    """The data the page's pointer script reads, gzip-compressed and base64-encoded.

    Commits (label, date, link or "") and each figure's axes and points: on a
    1000-commit history that is several MB of JSON, a fifth of it compressed; the
    browser's own ``DecompressionStream`` unpacks it, offline. Base64 text cannot close
    the ``<script>`` element it sits in, whatever a case is called.
    """
    import base64
    import gzip
    import json

    table = trends.commits
    dates = [d.strftime("%Y-%m-%d %H:%M") if isinstance(d, (pd.Timestamp, datetime)) and not pd.isna(d) else ""
             for d in table["date"]] if len(table) else []
    data = {"commits": [[str(l), d, commit_link(commit_url, str(c)) or ""]
                        for c, l, d in zip(table["commit"], table["label"], dates)],
            "figures": figures}
    text = json.dumps(data, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    return base64.b64encode(gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0)).decode("ascii")


def asv_link_for(out: Path, asv_html: str | os.PathLike | None) -> str | None:
    """Relative link from the report to the asv site's index.html, when that exists.

    ``asv_html`` may name the site folder or its ``index.html``; by default the
    report looks for ``asv/index.html`` beside itself (``reports/asv`` in asv.conf.json).
    """
    candidate = Path(asv_html) if asv_html is not None else out.parent / "asv"
    if candidate.is_dir():
        candidate = candidate / "index.html"
    if not candidate.is_file():
        return None
    return relative_href(Path(os.path.relpath(candidate.resolve(), out.parent.resolve())))


def relative_href(path: Path) -> str:
    """A link to a local file that can only be a relative path, never a URL scheme.

    A folder named ``javascript:alert(1)`` would otherwise become a link whose first
    segment the browser reads as a scheme; percent-encoding keeps ``:`` out of the first
    segment, and ``./`` pins it as a path.
    """
    from urllib.parse import quote

    text = quote(path.as_posix(), safe="/")
    return text if text.startswith(("../", "./")) else f"./{text}"


__all__ = ["Prepared", "asv_link_for", "render"]
