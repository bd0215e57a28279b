"""How long ``ttfg report`` takes, and how big its file gets, on a long history.

Not a test: a measurement to run by hand and quote (README, "Reports"). It builds a
synthetic asv history in the loader's schema (``harness.history.synthetic``), then times
``build_report`` on it, with wall and CPU time (CPU time is the steadier figure on a
shared machine), and prints the file size.

    PYTHONPATH=. python benchmarks/report_scale.py                 # 1000 commits x 50 cases
    PYTHONPATH=. python benchmarks/report_scale.py --commits 200 --cases 20 --repeat 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--cases", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3, help="builds to time (default: 3; the median is reported)")
    parser.add_argument("--out", help="keep the last report here (default: a temporary folder)")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    from harness.present.report import build_report
    from harness.history.synthetic import synthetic_history

    imports = time.perf_counter() - started
    history = synthetic_history(args.commits, args.cases, seed=1)
    print(f"history: {args.commits} commits x {args.cases} cases = {len(history):,} rows "
          f"({history['benchmark'].nunique()} benchmarks); imports took {imports:.2f} s")
    walls, cpus = [], []
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out) if args.out else Path(tmp) / "index.html"
        for i in range(args.repeat):
            wall, cpu = time.perf_counter(), time.process_time()
            build_report(history, [], out)
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
            print(f"  build {i + 1}: {walls[-1]:.2f} s wall, {cpus[-1]:.2f} s CPU")
        size = out.stat().st_size
        html = out.read_text()
    print(f"build_report: median {statistics.median(walls):.2f} s wall, {statistics.median(cpus):.2f} s CPU; "
          f"file {size / 2**20:.2f} MiB; {html.count('<img')} images")
    return 0


if __name__ == "__main__":
    sys.exit(main())
