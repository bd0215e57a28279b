"""What an instruction sample costs and how well it repeats, per backend.

Runs ``--repeat`` instruction samples (callgrind on the first-gradient window, the
probe's own path through ``run_sample``) of each backend on one model, ``--jobs`` at a
time, and prints a Markdown table: instructions (median), spread ((max - min) / min),
seconds per sample (wall, and CPU of the process tree), the window's wall time, the
per-phase counts where the backend splits them, and the load average before and after.
Each sample's JSON goes to ``--out`` (one results file per backend) for later reading.

    .venv/bin/python benchmarks/instruction_cost.py --model resnet15 --repeat 3 --jobs 2
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ttfg import engines
from ttfg.measure import instructions
from ttfg.measure.cases import select
from ttfg.measure.runner import RunSettings, new_results, run_sample
from ttfg import fmt
from ttfg.results.io import save


def spread(values: list[float]) -> float | None:
    return (max(values) - min(values)) / min(values) if len(values) > 1 and min(values) > 0 else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="resnet15")
    parser.add_argument("--backend", action="append", help="repeatable (default: every available backend)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2, help="samples at a time (load does not change the counts)")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--out", default="runs/instruction-cost", help="folder for the results files")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="extra environment for the counted probes, e.g. PYTHONMALLOC=malloc (repeatable; "
                             "XLA_FLAGS=... replaces the runner's whole XLA_FLAGS)")
    parser.add_argument("--prefix", default="", metavar="COMMAND",
                        help="a command put before valgrind, e.g. 'setarch x86_64 -R' (address-space randomisation off)")
    args = parser.parse_args()
    backends = args.backend or [n for n in engines.names() if engines.get(n).availability() is None]
    extra = dict(e.split("=", 1) for e in args.env)
    # The counted probe's environment and command are instructions.PROBE_ENV and instructions.command:
    # a setting tried here is the setting the gate would use if it were adopted there.
    instructions.PROBE_ENV.update(extra)
    if args.prefix:
        valgrind = instructions.command
        instructions.command = lambda out_dir, cpu=None: shlex.split(args.prefix) + valgrind(out_dir, cpu)
    settings = RunSettings(repeat=1, timeout_s=args.timeout)
    cases, skipped = select([args.model], backends, None)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    jobs = [(case, i) for i in range(args.repeat) for case in cases]
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        samples = list(pool.map(lambda job: (job[0], run_sample(job[0], "instructions", "cold", job[1], settings)),
                                jobs))
    load_after = os.getloadavg()
    print(f"load average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}; {os.cpu_count()} CPUs; "
          f"extra env {extra or '-'}; prefix {args.prefix or '-'}")
    print()
    print("| case | n | instructions (median) | spread | wall per sample | CPU per sample | window wall | phases |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for case in cases:
        mine = [s for c, s in samples if c is case]
        results = new_results([case], skipped, settings)
        results.cases[0].samples.extend(mine)
        save(results, out / f"{case.backend}.json")
        good = [s for s in mine if s.ok]
        if not good:
            print(f"| `{case.id}` | 0 | failed: {(mine[0].error or '')[:120]} | | | | | |")
            continue
        counts = [float(s.instructions) for s in good]
        phases = good[0].instructions_phases or {}
        phase_text = ", ".join(f"{k} {fmt.count(v)}" for k, v in phases.items()) or fmt.MISSING
        print(f"| `{case.id}` | {len(good)} | {fmt.count(round(statistics.median(counts)))} | {fmt.percent(spread(counts))} "
              f"| {fmt.seconds(statistics.median(s.process_wall_s for s in good))} "
              f"| {fmt.seconds(statistics.median(s.instructions_cpu_s for s in good))} "
              f"| {fmt.seconds(statistics.median(s.instructions_window_s for s in good))} | {phase_text} |")
        for s in mine:
            if s.ok:
                print(f"<!-- {case.id} sample {s.index}: {s.instructions} "
                      + " ".join(f"{k}={v}" for k, v in (s.instructions_phases or {}).items()) + " -->", file=sys.stderr)
            else:
                print(f"<!-- {case.id} sample {s.index} failed: {s.error} -->", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
