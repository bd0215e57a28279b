"""Numbers as people read them, one rule per unit, shared by HTML tables, plot axes and the terminal.

Why one module: a value printed as "2.54 s" in the summary must look the same on the
plot's axis and in ``ttfg regressions``; units come from ``report_data.Metric.unit``.
"""

from __future__ import annotations

import math


def seconds(v: float | None) -> str:
    if v is None or not math.isfinite(v):
        return "–"
    a = abs(v)
    if a == 0:
        return "0 s"
    if a < 1e-3:
        return f"{v * 1e6:.0f} µs"
    if a < 1:
        return f"{v * 1e3:.3g} ms"
    if a < 100:
        return f"{v:.3g} s"
    return f"{v:.0f} s"


def bytes_(v: float | None) -> str:
    if v is None or not math.isfinite(v):
        return "–"
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(v) >= size:
            return f"{v / size:.3g} {unit}"
    return f"{v:.0f} B"


def count(v: float | None) -> str:
    if v is None or not math.isfinite(v):
        return "–"
    a = abs(v)
    if a >= 1e9:
        return f"{v / 1e9:.3g} G"
    if a >= 1e6:
        return f"{v / 1e6:.3g} M"
    if a >= 1e4:
        return f"{v / 1e3:.3g} k"
    return f"{v:,.0f}" if float(v).is_integer() else f"{v:.3g}"


def ratio(v: float | None) -> str:
    if v is None or not math.isfinite(v):
        return "–"
    return f"{100 * v:.0f} %"


def value(v: float | None, unit: str) -> str:
    """Format ``v`` for its unit (``s``, ``bytes``, ``count``, ``ratio``)."""
    return {"s": seconds, "bytes": bytes_, "ratio": ratio}.get(unit, count)(v)


def change(v: float | None) -> str:
    """A relative change, signed: ``+12.3 %``, ``-4 %``, ``±0 %``."""
    if v is None or not math.isfinite(v):
        return "–"
    pct = 100 * v
    if abs(pct) < 0.05:
        return "±0 %"
    return f"{pct:+.1f} %" if abs(pct) < 100 else f"{pct:+.0f} %"


AXIS_UNITS = {"s": "seconds", "bytes": "bytes", "count": "count", "ratio": "share"}

__all__ = ["AXIS_UNITS", "bytes_", "change", "count", "ratio", "seconds", "value"]
