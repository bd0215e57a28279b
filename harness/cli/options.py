"""Argument types for every number, duration and list a user can type, checked before any work starts.

Why one module: a number that slips through (``--timeout nan`` disabled the timeout,
``--threshold nan`` hid every regression, ``--threads -2`` became
``OMP_NUM_THREADS=-2``, ``--repeat 1e8`` built a plan that could not be stopped)
turns into a wrong verdict far from where it was typed. argparse reports an
``ArgumentTypeError`` as ``ttfg CMD: error: argument --X: MESSAGE`` and exits 2, which
is the contract for bad input; the messages here say what a valid value looks like.
"""

from __future__ import annotations

import argparse
import math

from ..errors import UsageError
from ..fmt import Duration
from ..results.model import MAX_SHARDS

#: Upper bounds that keep a typo from becoming hours of work or a plan that fills memory.
MAX_REPEAT = 10_000
MAX_THREADS = 1024
MAX_SECONDS = 7 * 24 * 3600.0


def _number(text: str, kind):
    try:
        value = kind(text)
    except (TypeError, ValueError):
        what = "a whole number" if kind is int else "a number"
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
    if kind is float and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def count(low: int = 1, high: int = MAX_REPEAT, what: str = "a count"):
    """A whole number in ``[low, high]`` (``1e8`` and ``2.5`` are refused: not whole numbers)."""

    def parse(text: str) -> int:
        value = _number(text, int)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{what} must be between {low} and {high:,}, got {value}")
        return value

    parse.__name__ = "count"  # argparse names the type in some messages
    return parse


def seconds(low: float = 0.0, high: float = MAX_SECONDS, what: str = "a time in seconds"):
    """A finite number of seconds, above ``low`` (exclusive) and at most ``high``."""

    def parse(text: str) -> float:
        value = _number(text, float)
        if not low < value <= high:
            raise argparse.ArgumentTypeError(f"{what} must be above {low:g} s and at most {high:g} s, got {text}")
        return value

    parse.__name__ = "seconds"
    return parse


def fraction(low: float = 0.0, high: float = 1.0, *, low_open: bool = False, high_open: bool = False,
             what: str = "a fraction"):
    """A finite number in an interval; ``5%`` is read as 0.05."""

    def parse(text: str) -> float:
        raw = text.strip()
        value = _number(raw[:-1], float) / 100 if raw.endswith("%") else _number(raw, float)
        too_low = value <= low if low_open else value < low
        too_high = value >= high if high_open else value > high
        if too_low or too_high:
            lo = "(" if low_open else "["
            hi = ")" if high_open else "]"
            raise argparse.ArgumentTypeError(f"{what} must lie in {lo}{low:g}, {high:g}{hi}, got {text}")
        return value

    parse.__name__ = "fraction"
    return parse


def duration(what: str):
    """A positive, finite duration (``600``, ``90s``, ``10m``, ``1h``, ``1m30s``) as a :class:`~ttfg.fmt.Duration`:
    what follows reads its seconds and never parses the text again. ``what`` is the flag, named in the message."""
    def parse(text: str) -> Duration:
        try:
            return Duration.parse(text, what)
        except UsageError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = "duration"
    return parse


def guard(text: str) -> tuple[str, ...]:
    """``--guard``: timings, comma-separated, refused by argparse (exit 2) when ``GateSettings`` would refuse them
    (``gate_settings.checked_guard``, the one check), so that a typo costs no work."""
    from ..app.gate import checked_guard

    names = tuple(t.strip() for t in text.split(",") if t.strip())
    if not names:
        raise argparse.ArgumentTypeError("expected timings such as first_grad_s,build_s")
    try:
        return checked_guard(names)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--guard ")) from None


def strict_counters(text: str) -> tuple[str, ...]:
    """``--strict-counters``: refused by argparse (exit 2) when ``GateSettings`` would refuse it."""
    from ..app.gate import strict_counters as checked

    try:
        return checked(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--strict-counters ")) from None


def tiers(text: str) -> tuple[str, ...]:
    """``--tiers``: a comma-separated list of tiers, refused by argparse (exit 2) when ``GateSettings`` would refuse it
    (``gate_settings.checked_tiers``, the one check)."""
    from ..app.gate import checked_tiers

    try:
        return checked_tiers(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--tiers ")) from None


#: The units ``size`` reads: SI (kB = 1,000 bytes) and binary (KiB = 1,024 bytes), case aside; bare: bytes.
_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12, "k": 2**10, "kib": 2**10,
          "m": 2**20, "mib": 2**20, "g": 2**30, "gib": 2**30, "tib": 2**40}


def size(text: str) -> int:
    """A size in bytes, above zero: ``100MiB``, ``250 MB``, ``1.5GiB``, ``5000000``."""
    raw = text.strip().replace(" ", "").replace("_", "")
    number = raw.rstrip("kKmMgGtTiIbB")
    unit = _UNITS.get(raw[len(number):].lower())
    if unit is None or not number:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size: a number and a unit, e.g. 100MiB, 250MB or 2GiB")
    value = _number(number, float) * unit
    if not 0 < value < 2**63:
        raise argparse.ArgumentTypeError(f"a size must be above 0 bytes, got {text}")
    return int(value)


def shard(text: str):
    """``--shard I/N``: the I-th of N shards (``ttfg.measure.shard.ShardSpec``); N >= 1, 1 <= I <= N."""
    from ..app.selection import parse_shard

    try:
        return parse_shard(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


#: The ones every command shares.
repeat = count(1, MAX_REPEAT, "the number of processes")
threads = count(1, MAX_THREADS, "the number of threads")
timeout = seconds(0.0, MAX_SECONDS, "the timeout")
alpha = fraction(0.0, 0.5, low_open=True, high_open=True, what="alpha (the significance level)")
min_effect = fraction(0.0, 10.0, low_open=True, what="the minimum effect")
threshold = fraction(0.0, 10.0, what="the threshold")
tolerance = fraction(0.0, 1.0, what="the tolerance")

#: ``ttfg shards N``: how many shards; the bound is ``--shard I/N``'s and a file's (``results.model.MAX_SHARDS``).
shard_count = count(1, MAX_SHARDS, "the number of shards")

__all__ = ["alpha", "count", "duration", "fraction", "guard", "min_effect", "repeat", "seconds", "shard", "shard_count",
           "size", "strict_counters", "threads", "threshold", "tiers", "timeout", "tolerance"]
