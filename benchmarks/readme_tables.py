"""Markdown tables for docs/measurements.md from the results files of ``measure_readme.sh``.

    python benchmarks/readme_tables.py runs/

Prints every table docs/measurements.md quotes, so its figures are copied from measured files,
never typed by hand, and formatted by ``ttfg.fmt`` like every other table.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from ttfg import fmt
from ttfg.results import record


def _median(values):
    return statistics.median(values) if values else None


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
            f"| `{case.backend}` | {len(first)} | {fmt.seconds(statistics.median(first))} | "
            f"{fmt.seconds(min(first))} – {fmt.seconds(max(first))} | {fmt.percent(cv)} | "
            f"{fmt.seconds(_median(case.values('process_ttfg_s')))} | {fmt.percent(_median(share))} | "
            f"{fmt.seconds(_median(case.values('second_grad_s')))} |")
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
        cw = f"{fmt.seconds(_median(cold))} / {fmt.seconds(_median(warm))}" if cold and warm else fmt.MISSING
        lines.append(f"| `{case.backend}` | {', '.join(fmt.count(c) for c in counts)} | {fmt.percent(spread)} | "
                     f"{fmt.bytes_(_median(case.values('alloc_bytes', kind='allocations', cache=None)))} | {cw} |")
    return "\n".join(lines)


def study_table(res: record.Results) -> str:
    study = res.study.to_json() if res.study else {}
    if study.get("study") == "depth":
        lines = ["| backend | phase | k (95 % interval) | growth | median at depth 1 / 60 |", "| --- | --- | --- | --- | --- |"]
        for row in study["depth"]:
            fit, pts = row["fit"], row["points"]
            k = fmt.MISSING if not fit else fmt.exponent(fit["k"], fit["k_ci_low"], fit["k_ci_high"]).removeprefix("k = ")
            ends = f"{fmt.seconds(pts[0][1])} / {fmt.seconds(pts[-1][1])}" if pts else fmt.MISSING
            lines.append(f"| `{row['backend']}` | {row['metric']} | {k} | {row['growth']} | {ends} |")
        return "\n".join(lines)
    lines = [f"| backend | metric | {study.get('study')}: treatment / control (95 % interval) | pairs | p |",
             "| --- | --- | --- | --- | --- |"]
    for row in study.get("effects", []):
        e = row["effect"]
        text = fmt.MISSING if not e else f"{fmt.factor(e['ratio'])} {fmt.interval(e['ci_low'], e['ci_high'])}"
        lines.append(f"| `{row['backend']}` | {row['metric']} | {row['treatment']} / {row['control']}: {text} | "
                     f"{e['n'] if e else fmt.MISSING} | {fmt.MISSING if not e else fmt.p_value(e['p_value'])} |")
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
