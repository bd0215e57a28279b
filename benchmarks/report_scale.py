"""How long ``ttfg report`` takes, and how big its file gets, on a long history.

Not a test: a measurement to run by hand and quote (docs/measurements.md, "Report scale"). It writes a
synthetic history as real asv result files (``ttfg.history.synthetic``: one file per
commit, the suite's real benchmark names and parameter grid), then times the path a
real history takes: ``ttfg.history.asv_results.load`` on the folder, then
``build_report`` (points, trends, steps, plots, HTML), with wall and CPU time (CPU time is
the steadier figure on a shared machine), and prints the file size.

    .venv/bin/python benchmarks/report_scale.py                 # 1000 commits x 50 cases
    .venv/bin/python benchmarks/report_scale.py --commits 200 --cases 20 --repeat 3
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
    from ttfg.history import asv_results
    from ttfg.app.report import build_report
    from ttfg.history.synthetic import write_history

    imports = time.perf_counter() - started
    loads, builds, cpus, load_cpus = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "results"
        wall = time.perf_counter()
        written = write_history(folder, args.commits, args.cases, seed=1)
        files = sum(1 for _ in (folder / written.machine).glob("*.json")) - 1  # less machine.json
        disk = sum(p.stat().st_size for p in folder.rglob("*.json"))
        print(f"history: {args.commits} commits x {args.cases} cases: {files} asv result files, "
              f"{disk / 2**20:.1f} MiB, written in {time.perf_counter() - wall:.1f} s; imports took {imports:.2f} s")
        out = Path(args.out) if args.out else Path(tmp) / "index.html"
        for i in range(args.repeat):
            wall, cpu = time.perf_counter(), time.process_time()
            history = asv_results.load(folder, dropna=True)  # as `ttfg report` loads it
            loaded, load_cpu = time.perf_counter(), time.process_time() - cpu
            build_report(history, [], out)
            loads.append(loaded - wall)
            builds.append(time.perf_counter() - loaded)
            cpus.append(time.process_time() - cpu)
            load_cpus.append(load_cpu)
            print(f"  {i + 1}: load {loads[-1]:.2f} s ({load_cpu:.2f} s CPU, {len(history):,} values), "
                  f"build_report {builds[-1]:.2f} s ({cpus[-1] - load_cpu:.2f} s CPU); "
                  f"together {loads[-1] + builds[-1]:.2f} s wall, {cpus[-1]:.2f} s CPU")
        size = out.stat().st_size
        html = out.read_text()
    totals = [a + b for a, b in zip(loads, builds)]
    print(f"median: load {statistics.median(loads):.2f} s ({statistics.median(load_cpus):.2f} s CPU) + "
          f"build_report {statistics.median(builds):.2f} s = "
          f"{statistics.median(totals):.2f} s wall, {statistics.median(cpus):.2f} s CPU; "
          f"file {size / 2**20:.2f} MiB; {html.count('<img')} images")
    return 0


if __name__ == "__main__":
    sys.exit(main())
