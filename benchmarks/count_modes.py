"""Which functions switch when a case's instruction count falls into another mode?

Why: jax.jit resnet15's compile phase counts about 8,268 M or 8,235 M instructions between
processes of the same code, a discrete switch, and a count margin is only honest when the
switch's source is known. This script reads instruction samples of one case (results files
written by ``ttfg run --instructions`` or ``benchmarks/instruction_cost.py``), splits them
into two modes at the largest gap of one phase's count, and diffs the per-function counts
each sample keeps (``instructions_top``: callgrind's inclusive and self counts, parsed by
``ttfg.measure.instructions``). A function *separates* the modes when every sample of one
mode counts more than every sample of the other; those are listed by the difference of the
modes' medians, with the share of the phase's switch they explain.

    .venv/bin/python benchmarks/count_modes.py runs/instruction-cost/jax.jit.json --phase compile

Exit codes: 0 done (modes found or not: it says which), 2 unreadable input.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from ttfg import fmt  # noqa: E402
from ttfg.decide.count_margins import mode_split  # noqa: E402
from ttfg.present.markdown_table import table  # noqa: E402


def samples_of(paths: list[Path], case: str | None) -> list[dict]:
    found = []
    for path in paths:
        doc = json.loads(path.read_text())
        for entry in doc.get("cases", []):
            if case and entry.get("id") != case:
                continue
            found += [s for s in entry.get("samples", []) if s.get("ok") and s.get("instructions")]
    return found


def phase_count(sample: dict, phase: str) -> float:
    if phase == "total":
        return float(sample["instructions"])
    return float((sample.get("instructions_phases") or {}).get(phase) or 0)


def functions(sample: dict, which: str) -> dict[tuple[str, str], int]:
    return {(f["fn"], f["file"]): int(f[which]) for f in sample.get("instructions_top") or []}


def variance_shares(samples: list[dict], values: list[float], top: int) -> None:
    """Without modes: each function's share of the phase's variance, ``cov(function, phase) / var(phase)`` over the
    samples, on inclusive counts (a subtree's share; nested subtrees overlap, so shares do not add up)."""
    mean = statistics.fmean(values)
    var = statistics.fmean((v - mean) ** 2 for v in values)
    if var == 0:
        print("every sample counted the same")
        return
    per = [functions(s, "incl") for s in samples]
    rows = []
    # Only functions every sample kept: one that fell out of a sample's top list reads as 0 there, not as a change.
    for key in set.intersection(*(set(f) for f in per)):
        xs = [f[key] for f in per]
        mx = statistics.fmean(xs)
        cov = statistics.fmean((x - mx) * (v - mean) for x, v in zip(xs, values))
        rows.append((cov / var, key, min(xs), max(xs)))
    rows.sort(key=lambda r: -r[0])
    print(f"\nfunctions by their share of the phase's variance (inclusive counts; SD of the phase "
          f"{fmt.count(round(var ** 0.5))} instructions):\n")
    print("\n".join(table(["function", "file", "min", "max", "range", "share of the variance"],
                          [[f"`{key[0][:90]}`", key[1].rsplit("/", 1)[-1][:40], fmt.count(lo), fmt.count(hi),
                            fmt.count(hi - lo), fmt.percent(share)] for share, key, lo, hi in rows[:top]])))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", type=Path)
    parser.add_argument("--case", help="case id (default: every case's samples, for files of one case)")
    parser.add_argument("--phase", default="compile", help="the phase whose count splits the modes (or total)")
    parser.add_argument("--top", type=int, default=15, help="functions listed (default: 15)")
    args = parser.parse_args()
    try:
        samples = samples_of(args.results, args.case)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"count_modes: cannot read the results: {exc}", file=sys.stderr)
        return 2
    if len(samples) < 4:
        print(f"count_modes: {len(samples)} counted sample(s); at least 4 are needed to see two modes", file=sys.stderr)
        return 2
    values = [phase_count(s, args.phase) for s in samples]
    print(f"{len(samples)} samples; {args.phase}: " + ", ".join(fmt.count(round(v)) for v in sorted(values))
          + f"; spread {fmt.percent((max(values) - min(values)) / min(values))}")
    threshold = mode_split(values)  # the rule that marks a calibrated case bimodal
    if threshold is None:
        print("no two modes: the largest gap is not apart from the spread within either side")
        variance_shares(samples, values, args.top)
        return 0
    low = [s for s, v in zip(samples, values) if v < threshold]
    high = [s for s, v in zip(samples, values) if v >= threshold]
    switch = statistics.median(phase_count(s, args.phase) for s in high) - statistics.median(
        phase_count(s, args.phase) for s in low)
    print(f"two modes: {len(low)} low, {len(high)} high; the switch is {fmt.count(round(switch))} instructions "
          f"({fmt.percent(switch / statistics.median(values))})")
    for which in ("self", "incl"):
        rows = []
        lows, highs = [functions(s, which) for s in low], [functions(s, which) for s in high]
        keys = set.intersection(*(set(f) for f in lows + highs))  # kept by every sample (see variance_shares)
        for key in keys:
            a = [f[key] for f in lows]
            b = [f[key] for f in highs]
            if min(b) > max(a) or max(b) < min(a):
                diff = statistics.median(b) - statistics.median(a)
                rows.append((abs(diff), key, diff, a, b))
        rows.sort(reverse=True)
        print(f"\nfunctions whose {which} count separates the modes ({len(rows)} of {len(keys)} kept):\n")
        print("\n".join(table(["function", "file", "low mode (median)", "high mode (median)", "difference", "of the switch"],
                    [[f"`{key[0][:90]}`", key[1].rsplit("/", 1)[-1][:40], fmt.count(round(statistics.median(a))),
                      fmt.count(round(statistics.median(b))), f"{diff:+,.0f}", fmt.percent(diff / switch)]
                     for _, key, diff, a, b in rows[:args.top]])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
