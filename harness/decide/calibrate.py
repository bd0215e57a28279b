"""A quick noise calibration: what can a gate detect on this machine?

Why: the gate pairs base and head cold processes and tests ``log(head / base)``; what
it can detect depends on the SD of that log ratio on *this* machine, and on how many
pairs its budget buys. Both are measured here in about a minute: A/A pairs (the same
code on both sides) of a cheap case (autograd resnet15, else torch.eager) and of
jax.jit resnet15, each pair two cold processes spawned by the runner exactly as the
gate spawns them (``runner.run_sample``, fresh caches, one thread), in the gate's
order A B, B A, A B, ... and round-robin over the cases.

From the SD and the measured seconds per pair, :func:`stats.min_detectable_effect`
gives the smallest true change a gate of 5 and of 10 minutes on that case alone
detects at alpha 0.01 with 95 % power. Pairs are capped at the gate's default
``--max-pairs``. With a minute's pairs the SD itself is uncertain; its 95 % interval
is reported beside it. Design facts to compare with (2-core VM): paired A/A SD
0.13-0.15 by default, 0.087 for jax.jit resnet15 single-threaded.

Ctrl-C ends the calibration early and keeps every finished pair.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable

from . import stats
from .gate_settings import GateSettings
from .. import metrics
from ..errors import UsageError
from ..measure.cases import Case, select
from ..measure.run_settings import RunSettings
from ..measure.runner import run_sample

DEFAULT_BUDGET_S = 60.0
#: The cheap case's backend: the first available of these. autograd first: its whole process
#: (1.6 s on the 2-core VM, docs/measurements.md) is cheaper than torch.eager's (2.5 s, mostly importing torch),
#: so a minute buys more pairs.
CHEAP_BACKENDS = ("autograd", "torch.eager")
MODEL = "resnet15"
REFERENCE_BACKEND = "jax.jit"
METRICS = metrics.HEADLINE  # first gradient and whole process
#: Gate budgets the detectable effect is stated for (seconds).
GATE_BUDGETS_S = (300.0, 600.0)
ALPHA, POWER = 0.01, 0.95
#: Consecutive failed pairs before a case stops.
MAX_FAILED_PAIRS = 2

#: ``sample(case, index) -> sample dict`` as ``runner.run_sample`` returns it.
Sampler = Callable[[Case, int], dict]


def calibration_cases() -> tuple[list[Case], list[str]]:
    """The cheap case and jax.jit resnet15, each if available; notes say what is missing and why."""
    cases, notes = [], []
    cheap_skips = []
    for backend in CHEAP_BACKENDS:
        found, skipped = select([MODEL], [backend])
        if found:
            cases.append(found[0])
            break
        cheap_skips += [s.reason for s in skipped]
    else:
        notes.append(f"no cheap case: {'; '.join(cheap_skips)}")
    found, skipped = select([MODEL], [REFERENCE_BACKEND])
    if found:
        cases.append(found[0])
    else:
        notes.append(f"no {REFERENCE_BACKEND} case: {'; '.join(s.reason for s in skipped)}")
    return cases, notes


def cold_sampler(settings: RunSettings | None = None) -> Sampler:
    """One cold timing process per call, spawned by the runner as the gate spawns them."""
    settings = settings or RunSettings(repeat=1)

    def sample(case: Case, index: int) -> dict:
        return run_sample(case, "timing", "cold", index, settings)

    return sample


@dataclass
class MetricNoise:
    """What the pairs of one case say about one metric."""

    metric: str
    pairs: int
    sd: float | None
    sd_low: float | None
    sd_high: float | None
    mean_log_ratio: float | None
    #: Per gate budget (seconds): the pairs it buys and the smallest effect it detects.
    gates: dict[float, tuple[int, float | None]] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"metric": self.metric, "pairs": self.pairs, "log_ratio_sd": self.sd,
                "log_ratio_sd_ci95": [self.sd_low, self.sd_high], "mean_log_ratio": self.mean_log_ratio,
                "gates": [{"budget_s": b, "pairs": p, "min_detectable_effect": e} for b, (p, e) in self.gates.items()]}


@dataclass
class CaseNoise:
    """The A/A pairs of one case: per metric ``(a, b)`` values, and each pair's wall time."""

    case: Case
    values: dict[str, list[tuple[float, float]]] = field(default_factory=lambda: {m: [] for m in METRICS})
    pair_wall_s: list[float] = field(default_factory=list)
    failed_pairs: int = 0
    streak: int = 0
    first_error: str | None = None
    stop: str | None = None

    @property
    def attempted(self) -> int:
        return len(self.pair_wall_s)

    @property
    def seconds_per_pair(self) -> float | None:
        return statistics.median(self.pair_wall_s) if self.pair_wall_s else None

    def fits(self, elapsed: float, budget: float) -> bool:
        """Whether one more pair is expected to end within the budget (the gate's rule)."""
        recent = sorted(self.pair_wall_s[-5:])
        estimate = recent[len(recent) // 2] if recent else 0.0
        return elapsed < budget and elapsed + estimate <= budget

    def add(self, a: dict, b: dict, wall_s: float) -> None:
        self.pair_wall_s.append(wall_s)
        if not (a.get("ok") and b.get("ok")):
            self.failed_pairs += 1
            self.streak += 1
            bad = a if not a.get("ok") else b
            self.first_error = self.first_error or bad.get("error") or "unknown error"
            if self.streak >= MAX_FAILED_PAIRS:
                self.stop = f"{self.streak} failed pairs in a row: {self.first_error}"
            return
        self.streak = 0
        for metric, pairs in self.values.items():
            va, vb = a.get(metric), b.get(metric)
            if all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0
                   for v in (va, vb)):
                pairs.append((float(va), float(vb)))

    def noise(self, metric: str, budgets=GATE_BUDGETS_S, max_pairs: int | None = None) -> MetricNoise:
        pairs = self.values[metric]
        logs = [math.log(b / a) for a, b in pairs]
        max_pairs = max_pairs or GateSettings.max_pairs
        per_pair = self.seconds_per_pair
        sd = statistics.stdev(logs) if len(logs) >= 2 else None
        gates = {}
        for budget in budgets:
            bought = min(int(budget // per_pair), max_pairs) if per_pair else 0
            effect = stats.min_detectable_effect(sd, bought, ALPHA, POWER) if sd is not None and bought >= 2 else None
            gates[budget] = (bought, effect)
        low, high = stats.sd_interval(sd, len(logs)) if sd is not None else (None, None)
        return MetricNoise(metric, len(logs), sd, low, high, statistics.fmean(logs) if logs else None, gates)


@dataclass
class Calibration:
    budget_s: float
    cases: list[CaseNoise]
    notes: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    interrupted: bool = False

    def rows(self) -> list[tuple[CaseNoise, MetricNoise]]:
        return [(c, c.noise(m)) for c in self.cases for m in METRICS]

    def to_json(self) -> dict:
        return {"budget_s": self.budget_s, "elapsed_s": self.elapsed_s, "interrupted": self.interrupted,
                "alpha": ALPHA, "power": POWER, "notes": self.notes,
                "cases": [{"case": c.case.id, "pairs_attempted": c.attempted, "failed_pairs": c.failed_pairs,
                           "seconds_per_pair": c.seconds_per_pair, "stop": c.stop,
                           "metrics": [c.noise(m).to_json() for m in METRICS]} for c in self.cases]}


def calibrate(cases: list[Case], budget_s: float, sample: Sampler | None = None,
              clock: Callable[[], float] = time.monotonic,
              on_pair: Callable[[CaseNoise, dict, dict], None] | None = None) -> Calibration:
    """Measure A/A pairs round-robin over ``cases`` until the budget is spent or Ctrl-C.

    Parameters
    ----------
    cases : list of Case
        What to calibrate on (see :func:`calibration_cases`).
    budget_s : float
        Wall-clock seconds; a pair starts only when it is expected to end within them.
    sample : callable or None
        ``sample(case, index) -> sample dict``; default: cold processes (:func:`cold_sampler`).
    clock : callable
        Seconds; tests pass a fake one.
    on_pair : callable or None
        Called with the case's state and the pair's A and B samples after every pair.

    Returns
    -------
    Calibration
        With ``interrupted`` set when Ctrl-C ended it; every finished pair is kept.
    """
    if not (math.isfinite(budget_s) and budget_s > 0):
        raise UsageError(f"calibration budget must be a positive number of seconds, got {budget_s!r}")
    sample = sample or cold_sampler()
    result = Calibration(budget_s, [CaseNoise(c) for c in cases])
    start = clock()
    try:
        while True:
            active = [st for st in result.cases if st.stop is None]
            if not active:
                break
            for st in active:
                if not st.fits(clock() - start, budget_s):
                    st.stop = "budget"
                    continue
                i = st.attempted
                began = clock()
                first = sample(st.case, 2 * i)
                second = sample(st.case, 2 * i + 1)
                a, b = (first, second) if i % 2 == 0 else (second, first)  # A B, then B A
                st.add(a, b, clock() - began)
                if on_pair:
                    on_pair(st, a, b)
    except KeyboardInterrupt:
        result.interrupted = True
    result.elapsed_s = clock() - start
    return result


__all__ = ["Calibration", "CaseNoise", "DEFAULT_BUDGET_S", "GATE_BUDGETS_S", "MetricNoise", "calibrate",
           "calibration_cases", "cold_sampler"]
