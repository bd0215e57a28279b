"""The jax backends' adaptations to older jax releases, tested with fakes (no environment is built).

What differs between jax releases is handled by feature tests in ``engines/jax_common.py``;
these tests drive each with a stand-in for the feature so they run under the one jax that
``make install`` brings. ``tests/test_jax_releases.py`` (``full``) runs the real releases.
"""

from __future__ import annotations

import collections

import pytest
from hypothesis import given, settings, strategies as st

from ttfg import engines
from ttfg.errors import Unsupported

jax_common = pytest.importorskip("ttfg.engines.jax_common")


# ------------------------------------------------------------------ nested compile events


def billed_innermost(spans):
    """The definition, instant by instant: each elementary interval goes to the innermost span."""
    points = sorted({t for _, start, end in spans for t in (start, end)})
    out = collections.defaultdict(float)
    for left, right in zip(points, points[1:]):
        running = [(i, s) for i, s in enumerate(spans) if s[1] <= left and s[2] >= right]
        if running:  # latest start, then earliest end, then reported first (jax reports inner spans first)
            out[max(running, key=lambda i_s: (i_s[1][1], -i_s[1][2], -i_s[0]))[1][0]] += right - left
    return {k: v for k, v in out.items() if v > 0}


def test_a_trace_nested_in_a_trace_is_billed_once():
    # jax.nn.gelu is jitted: tracing it inside the caller's trace records a second, inner event.
    spans = [("trace", 1.0, 1.5), ("trace", 0.0, 2.0)]  # reported in the order they end
    assert jax_common.exclusive_seconds(spans) == {"trace": 2.0}
    assert sum(d for _, s, e in spans for d in [e - s]) == 2.5  # what summing durations billed


def test_a_trace_inside_a_lowering_leaves_the_lowering_its_own_time_only():
    spans = [("trace", 1.0, 1.25), ("lower", 0.0, 2.0), ("compile", 2.0, 5.0)]
    assert jax_common.exclusive_seconds(spans) == {"trace": 0.25, "lower": 1.75, "compile": 3.0}


def test_clock_jitter_never_bills_more_than_the_outer_span():
    # The inner event's own clock says it ended a hair after the event it ran in.
    spans = [("trace", 0.5, 1.0000001), ("lower", 0.0, 1.0)]
    seconds = jax_common.exclusive_seconds(spans)
    assert seconds["trace"] == pytest.approx(0.5) and seconds["lower"] == pytest.approx(0.5)
    assert sum(seconds.values()) == pytest.approx(1.0)
    assert jax_common.exclusive_seconds([("trace", 1.0, 1.0)]) == {}  # an empty span bills nothing


@st.composite
def nested_spans(draw, start=0.0, end=100.0, depth=0):
    """Spans as one thread makes them: disjoint siblings, children inside their parent."""
    spans, cursor = [], start
    for _ in range(draw(st.integers(0, 3 if depth < 3 else 0))):
        a = draw(st.floats(cursor, end))
        b = draw(st.floats(a, end))
        spans.append((draw(st.sampled_from(["trace", "lower", "compile"])), a, b))
        spans += draw(nested_spans(a, b, depth + 1))
        cursor = b
    return spans


@settings(max_examples=100, deadline=None)
@given(nested_spans())
def test_exclusive_seconds_bill_every_instant_to_the_innermost_span(spans):
    fast = jax_common.exclusive_seconds(spans)
    slow = billed_innermost(spans)
    assert fast.keys() == slow.keys()
    assert all(fast[k] == pytest.approx(slow[k], abs=1e-9) for k in fast)
    covered = billed_innermost([("any", s, e) for _, s, e in spans]).get("any", 0.0)
    assert sum(fast.values()) == pytest.approx(covered, abs=1e-9)  # the wall time the spans cover, once


def test_compile_events_split_a_window_from_reported_durations(monkeypatch):
    events = jax_common.CompileEvents.get()
    clock = iter([10.0, 10.5, 11.0])
    monkeypatch.setattr(jax_common.time, "perf_counter", lambda: next(clock))
    mark = events.mark()
    events._on_duration("/jax/core/compile/jaxpr_trace_duration", 0.2)            # 9.8 - 10.0
    events._on_duration("/jax/core/compile/jaxpr_trace_duration", 0.5)            # 10.0 - 10.5, holds the first
    events._on_duration("/jax/core/compile/backend_compile_duration", 0.5)         # 10.5 - 11.0
    events._on_duration("/jax/some/other_duration", 9.0)                           # not a compile phase
    events._on_event("/jax/compilation_cache/cache_hits")
    seconds, counts = events.since(mark)
    assert seconds == pytest.approx({"trace": 0.7, "compile": 0.5})
    assert counts == {"backend_compiles": 1, "persistent_cache_hits": 1}


# ------------------------------------------------------------------ the AOT stages


class JittedWithoutTrace:
    """What ``jax.jit`` returned before jax 0.4.29: ``lower()`` but no ``trace()``."""

    def lower(self, *args):
        raise AssertionError("not reached")


def test_a_jax_without_the_trace_stage_is_refused_with_the_reason():
    with pytest.raises(Unsupported, match=r"no jit\(f\)\.trace\(\) \(added in jax 0\.4\.29\)"):
        jax_common.require_trace_stage(JittedWithoutTrace())
    import jax

    jax_common.require_trace_stage(jax.jit(lambda x: x))  # today's jax has it: nothing raised


def test_the_jit_engine_refuses_before_timing_anything(monkeypatch):
    import jax
    import numpy as np

    from ttfg.measure.cases import load_model

    spec = load_model("resnet15:blocks=1")
    monkeypatch.setattr(jax, "jit", lambda fn: JittedWithoutTrace())
    with pytest.raises(Unsupported, match="needs to time trace and lower apart"):
        engines.get("jax.jit")().build(spec, spec.init(0), np.asarray(spec.example_input(0)), {"params": "args", "chain": "unrolled"})


# ------------------------------------------------------------------ release environments


@pytest.mark.parametrize("backend, lines", [
    ("jax.jit", ("jax[cpu]==0.4.37",)),      # the cpu extra pins jaxlib 0.4.36: there is no jaxlib 0.4.37
    ("jax.eager", ("jax[cpu]==0.4.37",)),
    ("autograd", ("autograd==0.4.37", "scipy")),  # the backend imports autograd.scipy.special
    ("torch.eager", ("torch==0.4.37",)),      # nothing declared: the framework alone
])
def test_each_backend_names_what_an_environment_with_a_release_holds(backend, lines):
    assert engines.get(backend).requirements_for("0.4.37") == lines
