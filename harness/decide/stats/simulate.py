"""Simulation of the noise model and of the sequential gate: false-alarm rate and power."""

from __future__ import annotations

import math

import numpy as np

from .sequential import SequentialPairedTest
from .verdicts import VERDICTS


def _simulate_logs(trials, n_pairs, shift, sample_sd, drift_sd, rng):
    """Vectorised :func:`simulate_pairs` in log space: arrays of shape (trials, n_pairs)."""
    if n_pairs < 1:
        raise ValueError(f"n_pairs must be >= 1, got {n_pairs!r}")
    if not shift > -1:
        raise ValueError(f"shift must be > -1 (head = base * (1 + shift)), got {shift!r}")
    slots = 2 * n_pairs
    steps = rng.normal(0.0, drift_sd / math.sqrt(slots), size=(trials, slots))
    drift = np.cumsum(steps, axis=1)
    noise = rng.normal(0.0, sample_sd, size=(trials, slots))
    logt = drift + noise
    # A B B A A B B A ...: base takes the first slot of even pairs, the second of odd ones.
    idx = np.arange(n_pairs)
    base_slot = 2 * idx + (idx % 2)
    head_slot = 2 * idx + 1 - (idx % 2)
    return logt[:, base_slot], logt[:, head_slot] + math.log1p(shift)


def simulate_pairs(n_pairs, shift=0.0, sample_sd=0.10, drift_sd=0.3, rng=None):
    """Simulate interleaved cold-start timings with this CI machine's noise.

    Each sample is ``exp(drift(t) + e)`` seconds with ``e ~ N(0, sample_sd)`` (lognormal
    noise) and ``drift`` a random walk in log space over the ``2 * n_pairs`` sample
    slots whose total SD over the run is ``drift_sd`` (slow, multiplicative, shared
    by neighbouring samples). Samples are taken A B B A A B B A ...; head is
    multiplied by ``1 + shift``. The defaults give a paired log-ratio SD of about
    0.144 at 60 pairs (:func:`paired_log_sd`) and a single-sample spread over the run
    of about 15 %, as measured on the 2-core CI machine.

    Parameters
    ----------
    n_pairs : int
        Number of (base, head) pairs.
    shift : float
        True relative change of head (0.10 = 10 % slower).
    sample_sd : float
        SD of the independent per-sample noise in log space.
    drift_sd : float
        SD of the drift accumulated over the whole run, in log space.
    rng : numpy.random.Generator or int or None
        Random source or seed.

    Returns
    -------
    tuple of numpy.ndarray
        ``(base, head)`` times, each of length ``n_pairs``.
    """
    rng = np.random.default_rng(rng)
    lb, lh = _simulate_logs(1, int(n_pairs), shift, sample_sd, drift_sd, rng)
    return np.exp(lb[0]), np.exp(lh[0])


_SIM_KEYS = ("sample_sd", "drift_sd")
_TEST_KEYS = ("min_effect", "alpha", "min_pairs", "max_pairs", "look_every", "interim_share")


def simulate_gate(trials=1000, shift=0.0, seed=0, **kwargs) -> dict:
    """Run the sequential gate on ``trials`` simulated comparisons.

    Data for all trials is drawn at once (``max_pairs`` pairs each, so the drift
    spans the whole budget); each trial then feeds :class:`SequentialPairedTest`
    until it is done.

    Parameters
    ----------
    trials : int
        Number of simulated comparisons.
    shift : float
        True relative change of head.
    seed : int
        Seed of the random generator.
    **kwargs
        ``sample_sd``, ``drift_sd`` for :func:`simulate_pairs`; ``min_effect``,
        ``alpha``, ``min_pairs``, ``max_pairs``, ``look_every``, ``interim_share``
        for :class:`SequentialPairedTest`.

    Returns
    -------
    dict
        Fraction of each verdict (keys of :data:`VERDICTS`), ``mean_pairs`` (average
        pairs used) and ``trials``.
    """
    unknown = set(kwargs) - set(_SIM_KEYS) - set(_TEST_KEYS)
    if unknown:
        raise TypeError(f"unknown argument(s): {', '.join(sorted(unknown))}")
    sim = {k: kwargs[k] for k in _SIM_KEYS if k in kwargs}
    test_kw = {k: kwargs[k] for k in _TEST_KEYS if k in kwargs}
    max_pairs = SequentialPairedTest(**test_kw).max_pairs
    rng = np.random.default_rng(seed)
    lb, lh = _simulate_logs(int(trials), max_pairs, shift, sim.get("sample_sd", 0.10), sim.get("drift_sd", 0.3), rng)
    base, head = np.exp(lb), np.exp(lh)
    counts = dict.fromkeys(VERDICTS, 0)
    used = 0
    for t in range(int(trials)):
        test = SequentialPairedTest(**test_kw)
        for b, h in zip(base[t].tolist(), head[t].tolist()):
            test.add(b, h)
            if test.done():
                break
        counts[test.verdict().verdict] += 1
        used += test.n
    out = {k: v / trials for k, v in counts.items()}
    out["mean_pairs"] = used / trials
    out["trials"] = int(trials)
    return out


def false_alarm_rate(trials=1000, **kwargs) -> float:
    """Fraction of A/A comparisons (no true change) the sequential gate flags "regressed".

    Parameters
    ----------
    trials : int
        Simulated comparisons.
    **kwargs
        ``seed`` and the arguments of :func:`simulate_gate`.

    Returns
    -------
    float
        The false-alarm rate.
    """
    kwargs.pop("shift", None)
    return simulate_gate(trials, shift=0.0, **kwargs)["regressed"]


def power(shift=0.10, trials=1000, **kwargs) -> float:
    """Fraction of comparisons with a true ``shift`` the sequential gate flags "regressed".

    Parameters
    ----------
    shift : float
        True relative slowdown of head (0.10 = 10 %).
    trials : int
        Simulated comparisons.
    **kwargs
        ``seed`` and the arguments of :func:`simulate_gate`.

    Returns
    -------
    float
        The power.
    """
    return simulate_gate(trials, shift=shift, **kwargs)["regressed"]
