"""A tiny program with a two-phase window, for the parser's test data."""
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository
from ttfg.measure.instructions import Window

def work(n):
    return sorted(str(i * 7919 % 1009) for i in range(n))

w = Window()
w.start()
work(200)
w.phase_end("trace")
work(400)
w.stop("execute")
work(10000)  # after the window: not counted
