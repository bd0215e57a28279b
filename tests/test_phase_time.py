"""A backend's phases never sum to more than its first gradient (harness/engines/phase_time.py).

torch.compile's compile phase adds ``call_user_compiler`` and ``bw_compiler``, which can nest;
``make test`` on a fresh clone at load 3.4 saw phases of 37.5 s inside a 23.3 s first gradient.
In-process: synthetic nested intervals. Then a real torch.compile probe beside two busy
processes (CPU contention), whose phases must fit in its first gradient.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from ttfg.engines import phase_time
from ttfg.measure.cases import select
from ttfg.measure.runner import RunSettings, run_sample

TRACE, BACKEND, BW = "_compile.compile_inner", "OutputGraph.call_user_compiler", "compile_fx.<locals>.bw_compiler"


def test_nested_and_overlapping_intervals_count_once():
    assert phase_time.covered([(0, 10), (2, 5), (4, 12), (20, 21)]) == pytest.approx(13)
    assert phase_time.covered([(0, 10)], window=(5, 30)) == pytest.approx(5)
    assert phase_time.covered([]) == 0


def test_a_backward_compiled_inside_the_forwards_backend_call_is_counted_once():
    """Trace 0-10 s holds the backend call 2-9 s, which holds the backward's compile 3-8 s: summed as totals that was
    trace 3 + compile 12 = 15 s in a 10 s window; from intervals, compile 7, trace 3, execute 2 in a 12 s window."""
    timers = {TRACE: [(0.0, 10.0)], BACKEND: [(2.0, 9.0)], BW: [(3.0, 8.0)]}
    got = phase_time.phases_from_intervals(timers, (0.0, 12.0), (TRACE,), (BACKEND, BW))
    assert got == {"trace": pytest.approx(3.0), "compile": pytest.approx(7.0), "execute": pytest.approx(2.0)}
    assert sum(got.values()) == pytest.approx(12.0)


def test_a_lazy_backward_compile_outside_the_trace_adds_and_a_timer_beyond_the_window_is_cut():
    timers = {TRACE: [(0.0, 4.0)], BACKEND: [(1.0, 3.0)], BW: [(6.0, 9.0), (8.0, 14.0)]}
    got = phase_time.phases_from_intervals(timers, (0.0, 10.0), (TRACE,), (BACKEND, BW))
    assert got == {"trace": pytest.approx(2.0), "compile": pytest.approx(6.0), "execute": pytest.approx(2.0)}


def test_totals_that_overflow_the_first_gradient_are_fitted_into_it():
    """The fallback for a torch whose timers cannot be followed: 37.5 s of timers in a 23.3 s first gradient."""
    got = phase_time.capped({"trace": 7.5, "compile": 30.0}, 23.3)
    assert got["compile"] == pytest.approx(23.3) and got["trace"] == 0 and got["execute"] == 0
    assert sum(got.values()) <= 23.3 + 1e-9


BUSY = "import time\nend = time.monotonic() + 600\nwhile time.monotonic() < end:\n    pass\n"


@pytest.mark.slow
@pytest.mark.full  # a real gate/run of tens of seconds: make test-all and CI run it
def test_torch_compiles_phases_add_up_under_cpu_contention():
    """Two busy processes beside a real torch.compile probe (the machine has about two CPUs): its phases, counted once
    each, fit in its first gradient."""
    (case,), _ = select(["resnet15:blocks=1"], ["torch.compile"], ["default"])
    busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(2)]
    try:
        sample = run_sample(case, "timing", "cold", 0, RunSettings(timeout_s=600))
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()
    assert sample.ok, sample.error
    parts = [sample.trace_s, sample.compile_s, sample.execute_s]
    assert all(p is not None and p >= 0 for p in parts) and sample.compile_s > 0
    assert sum(parts) <= sample.first_grad_s * (1 + 1e-6), (parts, sample.first_grad_s)
