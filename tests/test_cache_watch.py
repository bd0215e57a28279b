"""The probe's own reading of the frameworks' compile caches (``measure/cache_watch.py``), whatever the backend.

In process: jax's real events for a function compiled here (no compile cache is configured in this
process, so its lookups are whatever jax says), Inductor's counters from a stand-in for
``torch._dynamo.utils`` (importing torch would cost seconds and prove nothing more: the probe only
reads the dict). The real processes are ``tests/test_gate_warm.py``'s.
"""

from __future__ import annotations

import sys
from collections import Counter
from types import SimpleNamespace

import pytest

from ttfg.decide import warm_evidence
from ttfg.measure.cache_watch import CacheWatch
from ttfg.results.model import ColdEvidence, Sample

jax = pytest.importorskip("jax")


def test_jaxs_counters_are_added_for_a_backend_that_reported_none_and_never_replace_its_own():
    import jax.numpy as jnp

    watch = CacheWatch()
    watch.listen()
    watch.start()
    jax.jit(lambda x: x * 3.0 - 1.0)(jnp.arange(5.0)).block_until_ready()  # a new function: one backend compile
    added = watch.window({"autograd_nodes": 4})
    assert added["autograd_nodes"] == 4 and added["backend_compiles"] >= 1 and added["persistent_cache_hits"] == 0
    own = watch.window({"backend_compiles": 99, "persistent_cache_hits": 7})  # jax.jit's own: kept, not counted twice
    # Inductor's counters join only where Dynamo compiled in this process (another test's, in a whole-suite worker).
    inductor = {k: v for k, v in own.items() if k.startswith("fxgraph_")}
    assert not inductor or "torch._dynamo.utils" in sys.modules
    assert {k: v for k, v in own.items() if k not in inductor} == {"backend_compiles": 99, "persistent_cache_hits": 7}
    lookups = watch.lookups()
    assert {"jax_lookups", "jax_hits"} <= set(lookups) and lookups["jax_hits"] <= lookups["jax_lookups"]
    assert not any(k.startswith("inductor") for k in lookups) or "torch._dynamo.utils" in sys.modules


def test_inductors_counters_are_read_only_when_it_compiled_and_jax_loaded_late_is_said(monkeypatch):
    counters = {"inductor": Counter()}
    monkeypatch.setitem(sys.modules, "torch._dynamo.utils", SimpleNamespace(counters=counters))
    monkeypatch.delitem(sys.modules, "jax")  # not loaded when the first gradient starts
    watch = CacheWatch()
    watch.listen()
    watch.start()
    assert watch.window({"autograd_nodes": 3}) == {"autograd_nodes": 3}  # Dynamo loaded, nothing compiled
    counters["inductor"].update(fxgraph_cache_miss=2, fxgraph_cache_hit=1)
    assert watch.window({"graphs": 1}) == {"graphs": 1, "fxgraph_cache_hits": 1, "fxgraph_cache_misses": 2}
    assert watch.window({"fxgraph_cache_misses": 5}) == {"fxgraph_cache_misses": 5, "fxgraph_cache_hits": 1}
    monkeypatch.setitem(sys.modules, "jax", jax)  # loaded inside the first gradient: its lookups were not seen
    lookups = watch.lookups()
    assert lookups == {"jax_unobserved": 1, "inductor_lookups": 3, "inductor_hits": 1}
    sample = Sample(kind="timing", ok=True, counters={}, cold_evidence=ColdEvidence("warm", 0, lookups=lookups))
    assert warm_evidence.seen(sample).used is True  # Inductor's lookups decide
    lookups.update(inductor_lookups=0, inductor_hits=0)
    unsure = warm_evidence.seen(sample)
    assert unsure.used is None and "jax was loaded inside the first gradient" in unsure.words  # never "no cache"
