"""Backends from a plugin: one that works, one with a persistent cache of its own, and ones that fail on purpose
to prove failures are captured.

Each is HIPS autograd underneath (the cheapest backend), with one behaviour changed.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from ttfg.engines.autograd_numpy import AutogradBackend, AutogradEngine
from ttfg.engines.declared import PersistentCache


class PluginAutogradBackend(AutogradBackend):
    name = "test.autograd"
    description = "HIPS autograd, registered by the ttfg-test-backends plugin"


class CrashBackend(AutogradBackend):
    name = "test.crash"

    def build(self, spec, weights, x, variant):
        print("about to fail in build", file=sys.stderr)
        raise RuntimeError("deliberate failure in build")


class HangingEngine(AutogradEngine):
    def first_gradient(self):
        print("hanging in the first gradient", file=sys.stderr, flush=True)
        time.sleep(3600)


class HangBackend(AutogradBackend):
    name = "test.hang"

    def build(self, spec, weights, x, variant):
        return HangingEngine(spec, weights, x)


class NanEngine(AutogradEngine):
    def to_numpy(self, result):
        loss, grads = super().to_numpy(result)
        return float("nan"), grads


class GarbageBackend(AutogradBackend):
    name = "test.garbage"

    def build(self, spec, weights, x, variant):
        return NanEngine(spec, weights, x)


class DyingEngine(AutogradEngine):
    def first_gradient(self):
        print("dying without a report", file=sys.stderr, flush=True)
        os._exit(3)


class DieBackend(AutogradBackend):
    name = "test.die"

    def build(self, spec, weights, x, variant):
        return DyingEngine(spec, weights, x)


class SlowEngine(AutogradEngine):
    """Sleeps a known time inside the first gradient: phase accounting has a known answer."""

    def first_gradient(self):
        time.sleep(0.3)
        return super().first_gradient()


class SlowBackend(AutogradBackend):
    name = "test.slow"

    def build(self, spec, weights, x, variant):
        return SlowEngine(spec, weights, x)


#: A persistent cache of this plugin's own, declared as a framework's is: a folder its variable names (fresh and empty
#: for every cold sample, the side's populated one in a warm gate), and the counters of its lookups.
GRADIENT_CACHE = PersistentCache("the test plugin's gradient cache", environ={"TTFG_TEST_CACHE_DIR": "{dir}/test"},
                                 misses="test_cache_misses", hits="test_cache_hits")


class CachingEngine(AutogradEngine):
    """Looks its "compiled" gradient up in the cache folder: found, a hit; else written there, a miss."""

    def first_gradient(self):
        entry = Path(os.environ["TTFG_TEST_CACHE_DIR"]) / "gradient"
        hit = entry.is_file()
        if not hit:
            entry.parent.mkdir(parents=True, exist_ok=True)
            entry.write_text("compiled")
        self.lookups = {"test_cache_misses": int(not hit), "test_cache_hits": int(hit)}
        return super().first_gradient()

    def counters(self):
        return {**super().counters(), **self.lookups}


class WarmBackend(AutogradBackend):
    """A plugin backend with a warm (persistent) cache: it declares the cache, and nothing else in ttfg changes."""

    name = "test.warm"
    persistent_caches = (GRADIENT_CACHE,)

    def build(self, spec, weights, x, variant):
        return CachingEngine(spec, weights, x)
