"""What does the probe add over a minimal script computing the same first gradient?

Runs ``pairs`` pairs, interleaved (probe, minimal, minimal, probe, ...), in one run, same
environment (threads, hash seed, fresh caches), and reports the paired ratio of
process TTFG (spawn to first gradient ready) probe / minimal, with a 95 % interval.

    python benchmarks/probe_overhead.py --pairs 10
"""

from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ttfg.measure.cases import select
from ttfg.measure.runner import RunSettings, probe_env, run_sample

HERE = Path(__file__).resolve().parent


def minimal_ttfg(settings: RunSettings) -> float:
    with tempfile.TemporaryDirectory(prefix="ttfg-minimal-") as tmp:
        spawned = time.monotonic()
        out = subprocess.run([settings.target.python, str(HERE / "minimal_jax_resnet15.py")], capture_output=True, text=True,
                             env=probe_env(settings, Path(tmp), "cold"), check=True)
    return float(out.stdout.strip().splitlines()[-1]) - spawned


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=10)
    args = parser.parse_args()
    settings = RunSettings()
    (case,), _ = select(["resnet15"], ["jax.jit"], None)
    ratios, probe_t, minimal_t = [], [], []
    for i in range(args.pairs):
        order = ("probe", "minimal") if i % 2 == 0 else ("minimal", "probe")
        got = {}
        for which in order:
            if which == "probe":
                sample = run_sample(case, "timing", "cold", i, settings)
                if not sample.ok:
                    raise SystemExit(f"probe failed: {sample.error}")
                got[which] = sample.process_ttfg_s
            else:
                got[which] = minimal_ttfg(settings)
        probe_t.append(got["probe"])
        minimal_t.append(got["minimal"])
        ratios.append(math.log(got["probe"] / got["minimal"]))
        print(f"pair {i + 1}: probe {got['probe']:.3f} s, minimal {got['minimal']:.3f} s", flush=True)
    mean = statistics.fmean(ratios)
    half = 1.96 * statistics.stdev(ratios) / math.sqrt(len(ratios)) if len(ratios) > 1 else float("nan")
    print(f"process TTFG, jax.jit resnet15, {args.pairs} interleaved pairs: probe median {statistics.median(probe_t):.3f} s, "
          f"minimal median {statistics.median(minimal_t):.3f} s; probe/minimal = {math.exp(mean):.3f} "
          f"(95% CI {math.exp(mean - half):.3f}-{math.exp(mean + half):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
