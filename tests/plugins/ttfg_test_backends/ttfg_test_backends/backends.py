"""Backends from a plugin: one that works, and ones that fail on purpose to prove failures are captured.

Each is HIPS autograd underneath (the cheapest backend), with one behaviour changed.
"""

from __future__ import annotations

import os
import sys
import time

from ttfg.engines.autograd_numpy import AutogradBackend, AutogradEngine


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
