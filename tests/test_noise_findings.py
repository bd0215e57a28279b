"""Noise is not shown as a finding (issue 39.4): a timed phase change from fewer than 3 pairs is not "where it went",
and a runtime's thread-pool or the interpreter's dispatch functions are never the headline function.

The comment-only pull request of a Haiku library printed "build 181 ms -> 79.3 ms (0.439×)" from one pair, and listed
XLA thread-pool and CPython frames as what grew. In-process, on a hand-made attribution.
"""

from __future__ import annotations

from ttfg.present.attribution_views import headline
from ttfg.present.gate_views import where_it_went
from ttfg.results.attribution_record import Attribution, FunctionDelta, PhaseDelta, not_a_cause


def phase(name: str, base: float, head: float, n: int, **kw) -> PhaseDelta:
    return PhaseDelta(name, f"{name}_s" if name != "first_grad_s" else name, base, head, head - base, head / base,
                      n=n, paired=True, **kw)


def function(fn: str, file: str, grew: float) -> FunctionDelta:
    return FunctionDelta(fn, file, 10, 1e6, 1e6 + grew, 1e5, 1e5 + grew, grew, grew)


def attribution(n: int) -> Attribution:
    return Attribution("m/jax.jit/default", "first_grad_s", True, phase("first_grad_s", 1.0, 0.511, n),
                       [phase("build", 0.181, 0.0793, n), phase("execute", 0.9, 0.45, n)],
                       functions=[function("Eigen::ThreadPoolTempl<tsl::thread::EigenEnvironment>::WorkerLoop",
                                           "libjax_common.so", 5e8),
                                  function("_PyEval_EvalFrameDefault", "???", 4e8),
                                  function("haikulib.layers.apply", "haikulib/layers.py", 1e6)])


def test_a_phase_change_from_one_pair_is_not_where_it_went():
    one = where_it_went(attribution(1))
    assert "build" not in one and "execute" not in one and "no phase change from 3 or more pairs" in one
    assert "largest phase change" not in headline(attribution(1))
    assert "execute" in where_it_went(attribution(3))  # from 3 pairs it is a finding


def test_thread_pool_and_interpreter_dispatch_frames_are_never_the_headline():
    a = attribution(3)
    assert a.top_function().fn == "haikulib.layers.apply"
    line = where_it_went(a)
    assert "WorkerLoop" not in line and "_PyEval_EvalFrameDefault" not in line
    assert not_a_cause("tsl::thread::EigenEnvironment::CreateThread") and not not_a_cause("jax._src.core.bind")
