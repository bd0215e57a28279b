"""Numbers as people read them: one rule per unit, for every table, summary, page and plot axis.

Why one module: a value printed as "2.54 s" in ``ttfg compare`` must read "2.54 s" in
the Markdown summary, the HTML report and on a plot's axis. Units come from the metric
registry (``ttfg.metrics``: ``s``, ``bytes``, ``count``, ``ratio``). The rules:

* seconds: 3 significant digits in the unit that keeps the number below 1000:
  ``42.1 ns``, ``42 µs``, ``254 ms``, ``2.54 s``, ``153 s``, then ``16.7 min`` and ``27.8 h``
  (0.0009995 s is ``1 ms``, never ``1e+03 µs``);
* bytes: binary units, ``812 MiB``, ``1.21 GiB``, ``3.5 KiB``, ``512 B`` (1 MiB = 2^20 bytes),
  the same 1000 rule (1,000 KiB is ``0.977 MiB``);
* counts: exact, with thousands separators, ``4,027`` (a median between two counts
  keeps one decimal, ``4,027.5``);
* shares and margins (``ratio`` unit, CV): ``97 %``, ``1.5 %``, ``1,250 %``;
* relative changes: signed, ``+5.2 %``, ``-12.0 %``, ``+22,084 %``, ``±0 %``;
* factors (head / base, treatment / control): three decimals from 0.1 to 10, ``1.052×``,
  ``0.270×``, else three significant digits, ``12.5×``, ``1,235×``; intervals ``[0.950×, 1.100×]``;
* counts of things in words: ``1 sample``, ``2 samples`` (:func:`plural`);
* a missing value: ``–``.

Total, and checked so over the whole float range (``tests/test_fmt.py``, hypothesis): no
function prints an exponent (``1e+03``), every integer part groups its thousands, and a
unit ladder moves up before the mantissa reaches 1000. Where a ladder ends (hours,
yobibytes) the digits grow, grouped; below a ladder's floor the text says so (``< 0.001 ns``).
Quantities without units that span decades (a gradient's relative error, a loss) are written
``2.9 × 10⁻⁷`` (:func:`number`). A table column gets one precision for all its rows
(:func:`column`: three significant digits, zeros kept): ``1.40 s`` above ``1.47 s``, never ``1.4 s``.

It sits beside the registry, below every stage, so that the verdict sentences that
``decide/`` writes print their numbers by the same rules as the tables of ``present/``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal

from . import metrics
from .errors import UsageError

MISSING = "–"

#: The seconds ladder: below a second by thousands, above it minutes and hours.
_SECONDS = (("ns", 1e-9), ("µs", 1e-6), ("ms", 1e-3), ("s", 1.0), ("min", 60.0), ("h", 3600.0))
#: Up the ladder from here only when the number would reach 1000: ``153 s``, not ``2.55 min``.
_SUB_SECOND = 3
#: The bytes ladder (binary).
_BYTES = tuple((u, 2.0 ** (10 * i)) for i, u in enumerate(("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB")))
#: Smallest magnitudes printed as numbers; below them the text is a bound (``< 0.001 ns``).
_FLOOR = {"s": 1e-12, "bytes": 1e-3, "ratio": 1e-6, "factor": 1e-4, "p": 1e-4}
_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _decimals(x: float, sig: int) -> int:
    """Decimals that show ``x`` with ``sig`` significant digits (0 for a number that has them before the point)."""
    if x == 0 or abs(x) >= 1e17:  # a float's digits end before the point
        return 0
    rounded = float(f"{abs(x):.{sig - 1}e}")  # carries first: 9.996 -> 10.0
    return max(sig - 1 - math.floor(math.log10(rounded)), 0)


def _fixed(x: float, decimals: int, trim: bool = True) -> str:
    """Fixed point with thousands separators, never an exponent; ``trim`` drops trailing zeros."""
    text = f"{x:,.{decimals}f}"
    if trim and "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _sig(x: float, sig: int = 3) -> str:
    """``x`` with at least ``sig`` significant digits (the whole integer part, grouped), no exponent."""
    return _fixed(x, _decimals(x, sig))


def _percent_of(v: float):
    """``100 * v``, exactly enough even where the float product would overflow (a Decimal then)."""
    pct = 100 * v
    return pct if math.isfinite(pct) else Decimal(v) * 100


def _value_of(text: str) -> float:
    return float(text.replace(",", ""))


def _below_floor(v: float, floor: float, suffix: str) -> str:
    return f"< {_fixed(floor, 12)}{suffix}" if v > 0 else f"> -{_fixed(floor, 12)}{suffix}"


def _ladder(v: float, ladder, start: int) -> tuple[float, str, bool]:
    """``(mantissa, unit, top)``: the rung from ``start`` up where ``v``'s 3-digit mantissa stays below 1000.

    ``top``: the ladder ended; the mantissa may be larger (its digits grouped).
    """
    for i in range(start, len(ladder)):
        unit, size = ladder[i]
        m = v / size
        if i > start and abs(m) < 1 and math.isclose(ladder[i - 1][1] * 1000, size):
            # Climbed because the rung below rounded to 1000 (999.5 µs): that is 1 here, never 0.999.
            m = math.copysign(1.0, m)
        if abs(_value_of(_sig(m))) < 1000:
            return m, unit, False
    unit, size = ladder[-1]
    return v / size, unit, True


def _split(v: float, unit: str) -> tuple[float, str]:
    """A finite, non-zero value as ``(mantissa, suffix)`` in its unit's rung (seconds, bytes, percent)."""
    if unit == "s":
        a = abs(v)
        start = next((i for i in range(_SUB_SECOND, -1, -1) if a >= _SECONDS[i][1]), 0)
        m, u, _ = _ladder(v, _SECONDS, start)
        return m, f" {u}"
    if unit == "bytes":
        a = abs(v)
        start = next((i for i in range(len(_BYTES) - 1, -1, -1) if a >= _BYTES[i][1]), 0)
        if start == 0 and abs(round(v)) >= 1000:
            start = 1
        m, u, _ = _ladder(v, _BYTES, start)
        return m, f" {u}"
    if unit == "ratio":
        return _percent_of(v), " %"
    if unit == "factor":
        return v, "×"
    return v, ""


def _floor_of(v: float, unit: str) -> str | None:
    """The bound text for a value below its unit's floor (``< 0.001 ns``), else None."""
    floor = _FLOOR.get(unit)
    if floor is None or v == 0 or abs(v) >= floor:
        return None
    return _below_floor(v, *{"s": (1e-3, " ns"), "bytes": (1e-3, " B"), "ratio": (1e-4, " %"),
                             "factor": (1e-4, "×")}[unit])


def seconds(v: float | None) -> str:
    if not _finite(v):
        return MISSING
    if v == 0:
        return "0 s"
    if (bound := _floor_of(v, "s")) is not None:
        return bound
    m, suffix = _split(v, "s")
    return _sig(m) + suffix


def bytes_(v: float | None) -> str:
    if not _finite(v):
        return MISSING
    if v == 0:
        return "0 B"
    if (bound := _floor_of(v, "bytes")) is not None:
        return bound
    m, suffix = _split(v, "bytes")
    if suffix == " B" and abs(v) >= 1:
        return f"{_fixed(v, 0)} B"  # whole bytes
    return _sig(m) + suffix


def count(v: float | None) -> str:
    if not _finite(v):
        return MISSING
    return f"{v:,.0f}" if float(v).is_integer() else f"{v:,.1f}"


def percent(v: float | None, digits: int = 3) -> str:
    """A share or a margin (0.015 -> ``1.5 %``); ``digits``: significant digits (see :func:`supported_digits`)."""
    if not _finite(v):
        return MISSING
    if v == 0:
        return "0 %"
    if (bound := _floor_of(v, "ratio")) is not None:
        return bound
    return f"{_sig(_percent_of(v), digits)} %"


def supported_digits(n: int | None) -> int:
    """Significant digits a spread estimated from ``n`` values (pairs) supports: 1, 2 or 3.

    Why: an SD from n values has a relative standard error of about 1 / sqrt(2 (n - 1)): 41 %
    from 4 pairs, 9 % from 60, 1 % from 5,000. A digit is worth printing only where the
    error is below its place, so 4 pairs give ``0.9`` and ``7 %``, not ``0.904`` and ``7.66 %``;
    the same goes for everything computed from that SD (the effect a gate detects).
    """
    if not n or n < 2:
        return 1
    relative_error = 1 / math.sqrt(2 * (n - 1))
    return max(1, min(3, 1 + math.floor(-math.log10(relative_error))))


#: The ``ratio`` unit of the registry is a share of a whole.
ratio = percent


def value(v: float | None, unit: str) -> str:
    """Format ``v`` for its unit (``s``, ``bytes``, ``count``, ``ratio``)."""
    return {"s": seconds, "bytes": bytes_, "ratio": percent}.get(unit, count)(v)


def metric_value(name: str, v: float | None) -> str:
    """Format ``v`` with the unit the registry gives metric ``name``.

    A row that is not a metric (``ok_samples``: a case one side could not run) counts things.
    """
    return value(v, metric_unit(name))


def metric_unit(name: str) -> str:
    """The registry's unit of ``name``; ``count`` for a row that is not a metric."""
    known = name in metrics.METRICS or metrics.is_counter(name)
    return metrics.get(name).unit if known else "count"


def change(v: float | None) -> str:
    """A relative change, signed: ``+12.3 %``, ``-4.0 %``, ``+22,084 %``, ``±0 %``."""
    if not _finite(v):
        return MISSING
    pct = _percent_of(v)
    if abs(pct) < 0.05:
        return "±0 %"
    return f"{pct:+.1f} %" if abs(pct) < 100 else f"{pct:+,.0f} %"


def factor(v: float | None) -> str:
    """A ratio of two values of one metric: three decimals from 0.1 to 10 (``1.052×``,
    ``0.270×``, ``3.704×``: a 1 % threshold must be readable), else three significant
    digits (``12.5×``, ``120×``, ``1,235×``, ``0.0512×``)."""
    if not _finite(v):
        return "∞×" if isinstance(v, float) and math.isinf(v) and v > 0 else MISSING
    if 0.1 <= abs(v) < 10:
        return f"{v:.3f}×"
    if v == 0:
        return "0×"
    if (bound := _floor_of(v, "factor")) is not None:
        return bound
    return f"{_sig(v)}×"


def interval(low: float | None, high: float | None, each=factor) -> str:
    """``[low, high]`` with each bound formatted by ``each``; ``–`` when either is missing."""
    if low is None or high is None or low != low or high != high:
        return MISSING
    return f"[{each(low)}, {each(high)}]"


def p_value(p: float | None) -> str:
    """Two significant digits (``0.0023``, ``0.9``); below 0.0001, ``< 0.0001``."""
    if not _finite(p):
        return MISSING
    if 0 < p < _FLOOR["p"]:
        return "< 0.0001"
    return _sig(p, 2)


def exponent(k: float | None, low: float | None = None, high: float | None = None) -> str:
    """A fitted exponent with its interval: ``k = 1.23 [1.10, 1.35]``."""
    if not _finite(k):
        return MISSING
    text = f"k = {_fixed(k, 2, trim=False)}"
    if _finite(low) and _finite(high):
        text += f" [{_fixed(low, 2, trim=False)}, {_fixed(high, 2, trim=False)}]"
    return text


def number(v: float | None, sig: int = 3) -> str:
    """A unitless number that may span decades (a loss, a relative error): ``4.11``, ``2.9 × 10⁻⁷``.

    From 0.0001 up: fixed point with ``sig`` significant digits (the integer part whole,
    grouped); below, a power of ten in words, never an ``e-07``.
    """
    if not _finite(v):
        return MISSING
    if v == 0 or abs(v) >= 1e-4:
        return _sig(v, sig)
    mantissa, exp = f"{v:.{sig - 1}e}".split("e")
    return f"{_fixed(float(mantissa), sig - 1)} × 10{str(int(exp)).translate(_SUPERSCRIPT)}"


def plural(n: int | float, word: str, many: str | None = None) -> str:
    """``1 sample``, ``2 samples``, ``1,000 pairs``; ``many``: an irregular plural (``study`` -> ``studies``)."""
    return f"{count(n)} {word if n == 1 else many or word + 's'}"


def column(values, unit: str) -> list[str]:
    """One table column: every value in its own unit, each to three significant digits with its zeros kept.

    Why: ``1.4 s`` above ``1.47 s`` reads as two precisions; the single-value functions drop
    trailing zeros (``1.4 s``, ``5 %``: right for a sentence), a column keeps them, so every
    cell shows the same precision: ``1.40 s``, ``1.47 s``, ``26.0 s``, ``4.24 ms``. ``unit``:
    ``s``, ``bytes``, ``ratio``, ``count`` or ``factor``; counts stay exact (one decimal for all
    when any is a fraction), whole bytes stay whole; missing values are ``–``.
    """
    values = list(values)
    finite = [v for v in values if _finite(v)]
    if unit not in ("s", "bytes", "ratio", "factor"):
        decimals = 0 if all(float(v).is_integer() for v in finite) else 1
        return [f"{v:,.{decimals}f}" if _finite(v) else MISSING for v in values]
    out = []
    for v in values:
        if not _finite(v) or v == 0 or _floor_of(v, unit) is not None or unit == "factor" and 0.1 <= abs(v) < 10:
            out.append(factor(v) if unit == "factor" else value(v, unit))
            continue
        m, suffix = _split(v, unit)
        whole = unit == "bytes" and suffix == " B" and abs(v) >= 1
        out.append(f"{_fixed(m, 0 if whole else _decimals(m, 3), trim=False)}{suffix}")
    return out


#: A duration's parts: a number and its unit (none: seconds).
DURATION_RE = re.compile(r"(\d+(?:\.\d+)?)\s*([smh]?)")


@dataclass(frozen=True)
class Duration:
    """A duration a person typed (``--budget 10m``, ``budget = "2m"``): its seconds, and the text for display.

    Why a type: a budget stayed a string through argparse and the config and was parsed again
    wherever it was used (eight places), and the config checked it by cutting words out of
    the parser's message. Now it is parsed once, where it enters (an argparse ``type=``,
    ``cli/options.duration``; the config reader, ``project/config.py``), and what follows
    reads :attr:`seconds`; ``str()`` gives back what was typed (``ttfg config`` shows ``10m``,
    a bisect's repro command repeats it).
    """

    seconds: float
    text: str

    def __str__(self) -> str:
        return self.text

    @classmethod
    def parse(cls, text: str, what: str = "budget") -> "Duration":
        """``"90"``, ``"90s"``, ``"10m"``, ``"1h"``, ``"1m30s"``: the one reader of a duration people type.
        ``what`` names the value in the message (``--budget``, ``--older-than``; empty: the value alone, for a
        caller that names it itself).

        Raises
        ------
        UsageError
            On anything else, a duration that is not positive, or one too long to be finite.
        """
        raw = text.strip().lower()
        pos, total = 0, 0.0
        for match in DURATION_RE.finditer(raw):
            if match.start() != pos:
                break
            total += float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[match.group(2)]
            pos = match.end()
        subject = f"{what} {text!r}" if what else repr(text)
        if not raw or pos != len(raw) or total <= 0:
            raise UsageError(f"{subject} is not a positive duration such as 600, 90s, 10m, 1h or 1m30s")
        if not math.isfinite(total):
            raise UsageError(f"{subject} is not a finite duration")
        return cls(total, text)


AXIS_UNITS = {"s": "seconds", "bytes": "bytes (binary: KiB, MiB, GiB)", "count": "count", "ratio": "share"}

__all__ = ["AXIS_UNITS", "Duration", "MISSING", "bytes_", "change", "column", "count", "exponent", "factor", "interval",
           "metric_unit", "metric_value", "number", "p_value", "percent", "plural", "ratio", "seconds", "supported_digits",
           "value"]
