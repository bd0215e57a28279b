"""Numbers as people read them: one rule per unit, for every table, summary, page and plot axis.

Why one module: a value printed as "2.54 s" in ``ttfg compare`` must read "2.54 s" in
the Markdown summary, the HTML report and on a plot's axis. Units come from the metric
registry (``ttfg.metrics``: ``s``, ``bytes``, ``count``, ``ratio``). The rules:

* seconds: 3 significant digits, ``2.54 s``; below a second ``254 ms``, below a
  millisecond ``42 µs``; from 100 s on, whole seconds (``153 s``);
* bytes: binary units, ``812 MiB``, ``1.21 GiB``, ``3.5 KiB``, ``512 B`` (1 MiB = 2^20 bytes);
* counts: exact, with thousands separators, ``4,027`` (a median between two counts
  keeps one decimal, ``4,027.5``);
* shares and margins (``ratio`` unit, CV): ``97 %``, ``1.5 %``;
* relative changes: signed, ``+5.2 %``, ``-12 %``, ``±0 %``;
* factors (head / base, treatment / control): three decimals from 0.1 to 10, ``1.052×``,
  ``0.270×``, else three significant digits, ``12.5×``; intervals ``[0.950×, 1.100×]``;
* a missing value: ``–``.

It sits beside the registry, below every stage, so that the verdict sentences that
``decide/`` writes print their numbers by the same rules as the tables of ``present/``.
"""

from __future__ import annotations

import math

from . import metrics

MISSING = "–"


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def seconds(v: float | None) -> str:
    if not _finite(v):
        return MISSING
    a = abs(v)
    if a == 0:
        return "0 s"
    if a < 1e-3:
        return f"{v * 1e6:.3g} µs"
    if a < 1:
        return f"{v * 1e3:.3g} ms"
    if a < 100:
        return f"{v:.3g} s"
    return f"{v:.0f} s"


def bytes_(v: float | None) -> str:
    if not _finite(v):
        return MISSING
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(v) >= size:
            return f"{v / size:.3g} {unit}"
    return f"{v:.0f} B"


def count(v: float | None) -> str:
    if not _finite(v):
        return MISSING
    return f"{v:,.0f}" if float(v).is_integer() else f"{v:,.1f}"


def percent(v: float | None) -> str:
    """A share or a margin (0.015 -> ``1.5 %``)."""
    if not _finite(v):
        return MISSING
    return f"{100 * v:.3g} %"


#: The ``ratio`` unit of the registry is a share of a whole.
ratio = percent


def value(v: float | None, unit: str) -> str:
    """Format ``v`` for its unit (``s``, ``bytes``, ``count``, ``ratio``)."""
    return {"s": seconds, "bytes": bytes_, "ratio": percent}.get(unit, count)(v)


def metric_value(name: str, v: float | None) -> str:
    """Format ``v`` with the unit the registry gives metric ``name``.

    A row that is not a metric (``ok_samples``: a case one side could not run) counts things.
    """
    known = name in metrics.METRICS or metrics.is_counter(name)
    return value(v, metrics.get(name).unit if known else "count")


def change(v: float | None) -> str:
    """A relative change, signed: ``+12.3 %``, ``-4.0 %``, ``±0 %``."""
    if not _finite(v):
        return MISSING
    pct = 100 * v
    if abs(pct) < 0.05:
        return "±0 %"
    return f"{pct:+.1f} %" if abs(pct) < 100 else f"{pct:+.0f} %"


def factor(v: float | None) -> str:
    """A ratio of two values of one metric: three decimals from 0.1 to 10 (``1.052×``,
    ``0.270×``, ``3.704×``: a 1 % threshold must be readable), else three significant
    digits (``12.5×``, ``120×``, ``0.0512×``)."""
    if not _finite(v):
        return "∞×" if isinstance(v, float) and math.isinf(v) and v > 0 else MISSING
    if 0.1 <= abs(v) < 10:
        return f"{v:.3f}×"
    return f"{v:.3g}×"


def interval(low: float | None, high: float | None, each=factor) -> str:
    """``[low, high]`` with each bound formatted by ``each``; ``–`` when either is missing."""
    if low is None or high is None or low != low or high != high:
        return MISSING
    return f"[{each(low)}, {each(high)}]"


def p_value(p: float | None) -> str:
    if not _finite(p):
        return MISSING
    return f"{p:.2g}"


def exponent(k: float | None, low: float | None = None, high: float | None = None) -> str:
    """A fitted exponent with its interval: ``k = 1.23 [1.10, 1.35]``."""
    if not _finite(k):
        return MISSING
    text = f"k = {k:.2f}"
    if _finite(low) and _finite(high):
        text += f" [{low:.2f}, {high:.2f}]"
    return text


AXIS_UNITS = {"s": "seconds", "bytes": "bytes (binary: KiB, MiB, GiB)", "count": "count", "ratio": "share"}

__all__ = ["AXIS_UNITS", "MISSING", "bytes_", "change", "count", "exponent", "factor", "interval", "metric_value",
           "p_value", "percent", "ratio", "seconds", "value"]
