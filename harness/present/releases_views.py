"""A release sweep (``app/releases.py``'s document) as a terminal table, Markdown and an HTML page.

One row per adjacent pair of releases and case: the wall-time verdict that decided
(ratio and interval), the CPU time of the same processes (ratio and interval), the
instruction count (ratio against the count tier's margin) and the phase that moved most.
They are kept apart on purpose: newer XLA does more work in parallel threads, so on a
2-core machine instructions, CPU and wall time can move in different directions.
The page draws the same numbers with the releases on the x axis.
"""

from __future__ import annotations

import math

from .. import fmt
from .untrusted import plain

PHASES = ("trace", "lower", "compile", "execute")


def _ratio(verdict: dict | None) -> str:
    if not verdict or verdict.get("ratio") is None:
        return fmt.MISSING
    text = fmt.factor(verdict["ratio"])
    interval = fmt.interval(verdict.get("ci_low"), verdict.get("ci_high"))
    return f"{text} {interval}" if interval != fmt.MISSING else text


def _instructions(pair: dict) -> str:
    counts = (pair.get("instructions") or {}).get("instructions")
    if not counts:
        return fmt.MISSING
    source = counts.get("margin_source")  # sweeps before per-case margins stored none
    where = "" if not source else " default" if source.startswith("default") else f" {source}"
    return f"{fmt.factor(counts['ratio'])} ({counts['verdict']}, margin ±{fmt.percent(counts['margin'])}{where})"


def moved_phase(pair: dict) -> str:
    """The phase whose paired median moved most in seconds, with its ratio (``compile 3.84 s → 863 ms (0.231×)``).

    In seconds, not by ratio: the phase that explains the first gradient's change is the one
    that moved it most (a 42 ms execute 15 % faster does not explain a 100 ms slower gradient).
    """
    phases = pair.get("phases") or {}
    moved = [(abs(v["head"] - v["base"]), p, v) for p, v in phases.items()
             if v.get("ratio") and v["ratio"] > 0 and v.get("base") is not None and v.get("head") is not None]
    if not moved:
        return fmt.MISSING
    _, name, v = max(moved)
    return f"{name} {fmt.seconds(v['base'])} → {fmt.seconds(v['head'])} ({fmt.factor(v['ratio'])})"


def verdict_text(pair: dict) -> str:
    """The verdict with what decided it: ``regressed (instructions)``, ``inconclusive (wall time)``."""
    tier = {"instructions": "instructions", "time": "wall time"}.get(pair.get("tier"), pair.get("tier"))
    return f"{pair.get('verdict', '?')} ({tier})" if tier else pair.get("verdict", "?")


def pair_rows(doc: dict) -> list[dict]:
    """Each pair as the strings every output shows."""
    rows = []
    for pair in doc.get("pairs", []):
        wall = pair.get("wall") or {}
        rows.append({"releases": plain(f"{pair['base']} → {pair['head']}"), "case": plain(pair["case"]),
                     "verdict": verdict_text(pair), "wall": _ratio(wall), "cpu": _ratio(pair.get("cpu")),
                     "instructions": _instructions(pair), "phase": moved_phase(pair),
                     "pairs": str(pair.get("pairs", 0))})
    return rows


def release_rows(doc: dict) -> list[dict]:
    """Each release and case: its medians, or why it has none."""
    rows = []
    for entry in doc.get("releases", []):
        versions = ((entry.get("env") or {}).get("versions") or {})
        companions = ", ".join(f"{k} {v}" for k, v in versions.items()
                               if v and k not in (doc.get("package"), "numpy", "scipy", "ml-dtypes"))
        if entry.get("error"):
            rows.append({"release": plain(entry["name"]), "case": "",
                         "status": plain(f"failed: {entry['error'].splitlines()[0]}"),
                         "first_grad": "", "cpu": "", "instructions": "", "with": plain(companions)})
            continue
        for case, cell in (entry.get("cells") or {}).items():
            counted = (cell.get("instructions") or {}).get("instructions")
            rows.append({"release": plain(entry["name"]), "case": plain(case),
                         "status": plain(f"failed: {cell['error']}") if cell.get("error") else f"{cell.get('samples', 0)} runs",
                         "first_grad": fmt.seconds(cell.get("first_grad_s")), "cpu": fmt.seconds(cell.get("first_grad_cpu_s")),
                         "instructions": fmt.count(counted) if counted else fmt.MISSING, "with": plain(companions)})
    return rows


def print_sweep(console, doc: dict) -> None:
    """The sweep's two tables (releases, then pairs) and its closing lines."""
    from .terminal import fitted

    table = fitted(f"{doc['package']} releases: first gradient (medians of every cold process)",
                   [("release", "left"), ("case", "left"), ("status", "left"), ("wall", "right"), ("CPU", "right"),
                    ("instructions", "right"), ("with", "left")], label=2)
    for r in release_rows(doc):
        table.add_row(r["release"], r["case"], r["status"], r["first_grad"], r["cpu"], r["instructions"], r["with"])
    console.print(table)
    table = fitted("adjacent releases, paired (ratio head/base [interval])",
                   [("releases", "left"), ("case", "left"), ("verdict", "left"), ("wall time", "right"),
                    ("CPU time", "right"), ("instructions", "right"), ("phase that moved most", "left"),
                    ("pairs", "right")], label=2)
    for r in pair_rows(doc):
        table.add_row(r["releases"], r["case"], r["verdict"], r["wall"], r["cpu"], r["instructions"], r["phase"],
                      r["pairs"])
    console.print(table)
    for note in doc.get("notes", []):
        console.print(f"note: {note}", highlight=False)
    budget = (doc.get("settings") or {}).get("budget_per_pair_s")
    load = doc.get("load") or {}
    console.print(f"{len(doc.get('pairs', []))} pair(s) gated, budget {fmt.seconds(budget)} per pair, "
                  f"{fmt.seconds(doc.get('wall_s'))} in all, load {_load(load)}", highlight=False)


def _load(load: dict) -> str:
    start, end = load.get("start"), load.get("end")
    if not start:
        return fmt.MISSING
    return f"{start[0]:.1f}" + (f" → {end[0]:.1f}" if end else "")


def sweep_markdown(doc: dict) -> str:
    """The pairs table as GitHub Markdown (for docs and PR comments)."""
    lines = [f"### {doc['package']} releases, adjacent pairs", "",
             *(["**Incomplete:** the sweep stopped before it gated every adjacent pair; a pair missing below is "
                "not known, not unchanged.", ""] if doc.get("complete") is False else []),
             "| releases | case | verdict | wall time | CPU time | instructions | phase that moved most |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in pair_rows(doc):
        lines.append(f"| {r['releases']} | {r['case']} | {r['verdict']} | {r['wall']} | {r['cpu']} | "
                     f"{r['instructions']} | {r['phase']} |")
    return "\n".join(lines) + "\n"


def _plot(doc: dict, case: str) -> str:
    """One figure for one case: wall and CPU medians, instructions, and the phases, releases on the x axis (SVG)."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names, wall, cpu, instr, phases = [], [], [], [], {p: [] for p in PHASES}
    for entry in doc.get("releases", []):
        cell = (entry.get("cells") or {}).get(case) or {}
        names.append(entry["version"])
        wall.append(cell.get("first_grad_s") or math.nan)
        cpu.append(cell.get("first_grad_cpu_s") or math.nan)
        instr.append(((cell.get("instructions") or {}).get("instructions") or math.nan) / 1e9)
        for p in PHASES:
            phases[p].append(((cell.get("phases") or {}).get(p)) or 0.0)
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6), constrained_layout=True)
    x = range(len(names))
    axes[0].plot(x, wall, "o-", label="wall")
    axes[0].plot(x, cpu, "s--", label="CPU")
    axes[0].set_ylabel("first gradient (s)")
    axes[0].legend()
    axes[1].plot(x, instr, "o-", color="tab:purple")
    axes[1].set_ylabel("instructions in the window (G)")
    bottom = [0.0] * len(names)
    for p in PHASES:
        axes[2].bar(x, phases[p], bottom=bottom, label=p)
        bottom = [b + v for b, v in zip(bottom, phases[p])]
    axes[2].set_ylabel("phases of the first gradient (s)")
    axes[2].legend(fontsize="small")
    for ax in axes:
        ax.set_xticks(list(x), names, rotation=45, ha="right")
        ax.set_xlabel(f"{doc['package']} release")
    for pair in doc.get("pairs", []):
        if pair["case"] == case and pair.get("verdict") in ("regressed", "improved") and pair["head"] in names:
            i = names.index(pair["head"])
            axes[0].annotate(fmt.factor((pair.get("wall") or {}).get("ratio")), (i, wall[i]), textcoords="offset points",
                             xytext=(0, 8), ha="center", fontsize="small",
                             color="tab:red" if pair["verdict"] == "regressed" else "tab:green")
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    plt.close(fig)
    svg = buf.getvalue()
    return svg[svg.index("<svg"):]


def sweep_page(doc: dict) -> str:
    """A self-contained HTML page: the tables and one figure per case (inline SVG, no scripts), through the
    template ``templates/releases.html.j2`` (``pages.render``: every value escaped)."""
    from markupsafe import Markup

    from .pages import render

    settings, machine = doc.get("settings") or {}, doc.get("machine") or {}
    return render("releases.html.j2", package=plain(doc["package"]), releases=len(doc.get("releases", [])),
                  pairs=len(doc.get("pairs", [])), budget=fmt.seconds(settings.get("budget_per_pair_s")),
                  created=plain(doc.get("created", "")), cpu=plain(machine.get("cpu_model", "?")),
                  load=_load(doc.get("load") or {}), incomplete=doc.get("complete") is False,
                  pair_rows=pair_rows(doc), release_rows=release_rows(doc),
                  # matplotlib writes the SVG and escapes the release names it draws: markup ttfg built
                  figures=[(plain(case), Markup(_plot(doc, case))) for case in doc.get("cases", [])])


__all__ = ["moved_phase", "pair_rows", "print_sweep", "release_rows", "sweep_markdown", "sweep_page"]
