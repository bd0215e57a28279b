"""Markdown tables for README.md from the results files of ``measure_readme.sh``.

    python benchmarks/readme_tables.py runs/

Prints every table the README quotes, so its figures are copied from measured files,
never typed by hand.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from harness.results import record


def fmt(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v * 1000:.1f} ms" if v < 0.1 else f"{v:.2f} s"


def ttfg_table(res: record.Results) -> str:
    lines = ["| case | n | first gradient (median) | min-max | CV | process TTFG | compile share | second gradient |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for case in res.cases:
        if case.skipped:
            continue
        first = case.values("first_grad_s")
        if not first:
            lines.append(f"| {case.id} | 0 | failed | | | | | |")
            continue
        cv = statistics.stdev(first) / statistics.fmean(first) if len(first) > 1 else None
        share = case.values("compile_share")
        lines.append(
            f"| `{case.backend}` | {len(first)} | {fmt(statistics.median(first))} | {fmt(min(first))}-{fmt(max(first))} | "
            f"{'-' if cv is None else f'{100 * cv:.0f} %'} | {fmt(statistics.median(case.values('process_ttfg_s')))} | "
            f"{'-' if not share else f'{100 * statistics.median(share):.0f} %'} | "
            f"{fmt(statistics.median(case.values('second_grad_s')))} |")
    return "\n".join(lines)


def allocation_table(res: record.Results) -> str:
    lines = ["| case | allocation counts (3 processes) | spread | bytes allocated | cold / warm first gradient |",
             "| --- | --- | --- | --- | --- |"]
    for case in res.cases:
        counts = case.values("alloc_count", kind="allocations", cache=None)
        if not counts:
            continue
        spread = (max(counts) - min(counts)) / statistics.median(counts)
        cold, warm = case.values("first_grad_s", cache="cold"), case.values("first_grad_s", cache="warm")
        cw = f"{fmt(statistics.median(cold))} / {fmt(statistics.median(warm))}" if cold and warm else "-"
        lines.append(f"| `{case.backend}` | {', '.join(f'{int(c):,}' for c in counts)} | {100 * spread:.2f} % | "
                     f"{fmt_bytes(statistics.median(case.values('alloc_bytes', kind='allocations', cache=None)))} | {cw} |")
    return "\n".join(lines)


def fmt_bytes(v: float) -> str:
    return f"{v / 1e6:.1f} MB"


def study_table(res: record.Results) -> str:
    study = res.study.to_json() if res.study else {}
    if study.get("study") == "depth":
        lines = ["| backend | phase | k (95 % interval) | growth | median at depth 1 / 60 |", "| --- | --- | --- | --- | --- |"]
        for row in study["depth"]:
            fit, pts = row["fit"], row["points"]
            k = "-" if not fit else f"{fit['k']:.2f} [{fit['k_ci_low']:.2f}, {fit['k_ci_high']:.2f}]"
            ends = f"{fmt(pts[0][1])} / {fmt(pts[-1][1])}" if pts else "-"
            lines.append(f"| `{row['backend']}` | {row['metric']} | {k} | {row['growth']} | {ends} |")
        return "\n".join(lines)
    lines = [f"| backend | metric | {study.get('study')}: treatment / control (95 % interval) | pairs | p |",
             "| --- | --- | --- | --- | --- |"]
    for row in study.get("effects", []):
        e = row["effect"]
        text = "-" if not e else f"{e['ratio']:.2f}x [{e['ci_low']:.2f}, {e['ci_high']:.2f}]"
        lines.append(f"| `{row['backend']}` | {row['metric']} | {row['treatment']} / {row['control']}: {text} | "
                     f"{e['n'] if e else '-'} | {'-' if not e else format(e['p_value'], '.2g')} |")
    return "\n".join(lines)


def main() -> int:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "runs")
    for name in ("resnet15", "convnext_tiny"):
        path = folder / f"{name}.json"
        if path.exists():
            print(f"### {name}\n\n{ttfg_table(record.load(path))}\n")
    if (folder / "allocations.json").exists():
        print(f"### allocations\n\n{allocation_table(record.load(folder / 'allocations.json'))}\n")
    for study in ("chain", "params", "depth"):
        path = folder / f"study-{study}.json"
        if path.exists():
            print(f"### study {study}\n\n{study_table(record.load(path))}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
