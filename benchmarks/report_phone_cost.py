"""What the phone renditions of the trend plots cost: the report built with and without them, interleaved.

Not a test: a measurement to run by hand and quote (docs/measurements.md, "Report scale"). It writes a
synthetic asv history (``ttfg.history.synthetic``), loads it once, then builds the report N times in
each mode, alternating, and prints each build's wall and CPU time and the page's size. "without"
replaces the phone's canvas by one that draws nothing, so the difference is the phone renditions.

    .venv/bin/python benchmarks/report_phone_cost.py COMMITS CASES ROUNDS    # e.g. 1000 50 3
"""
import sys
import tempfile
import time
from pathlib import Path
from ttfg.history.synthetic import cases, write_history
from ttfg.history import asv_results
from ttfg.app.report import build_report
from ttfg.present import report, plots

folder = Path(tempfile.mkdtemp()) / "results"
write_history(folder, int(sys.argv[1]), seed=1, case_list=cases(int(sys.argv[2])))
df = asv_results.load(folder, dropna=True)
Real = plots.TrendCanvas

class NoPhone:
    def __init__(self, ticks, n, width_in=plots.WIDTH_IN):
        self.real = Real(ticks, n, width_in) if width_in >= 6 else None
    def plot(self, *a, **k):
        if self.real is not None:
            return self.real.plot(*a, **k)
        return "", 1, {"size": [1, 1], "box": [0, 0, 1, 1], "y": [0, 1]}

out = {"with": [], "without": []}
for i in range(int(sys.argv[3])):
    for mode in ("with", "without"):
        report.plots.TrendCanvas = Real if mode == "with" else NoPhone
        c0, w0 = time.process_time(), time.perf_counter()
        build_report(df, [], out=folder.parent / f"{mode}.html")
        out[mode].append((time.perf_counter() - w0, time.process_time() - c0))
        print(mode, f"wall {out[mode][-1][0]:.2f} s, CPU {out[mode][-1][1]:.2f} s",
              f"{(folder.parent / f'{mode}.html').stat().st_size / 2**20:.2f} MiB", flush=True)
