"""The one formatter is total: over the whole float range, every function prints a number
a person can read, in the unit that keeps it below 1000, with grouped thousands, and
never an exponent (``1e+03 µs`` and ``1.23e+03×`` were printed before).

Properties are checked with hypothesis over every float (NaN and the infinities included);
the printed number is read back and must agree with the value to the digits shown, so a
formatter cannot pass by printing something tidy and wrong.
"""

from __future__ import annotations

import math
import re
import decimal
from decimal import Decimal

import pytest
from hypothesis import given, settings, strategies as st

from ttfg import fmt

decimal.getcontext().prec = 800  # exact arithmetic on every float's digits (the largest has 309)
ANY = st.floats(allow_nan=True, allow_infinity=True)
FINITE = st.floats(allow_nan=False, allow_infinity=False)
EXPONENT = re.compile(r"\d[eE][+-]?\d")
NUMBER = re.compile(r"^([<>] )?([+-])?([\d,]+(?:\.\d+)?)")

SECONDS = {"ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}
BYTES = {u: 2.0 ** (10 * i) for i, u in enumerate(("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"))}
FORMATTERS = [fmt.seconds, fmt.bytes_, fmt.count, fmt.percent, fmt.change, fmt.factor, fmt.p_value, fmt.number,
              fmt.exponent, lambda v: fmt.interval(v, v), lambda v: fmt.plural(v, "sample")]


def grouped(text: str) -> bool:
    """Every integer part of four or more digits has its thousands separated."""
    integer_parts = re.findall(r"(?<![\d.,])\d[\d,]*", text)
    return all(re.fullmatch(r"\d{1,3}(,\d{3})*", p.rstrip(",")) for p in integer_parts)


def parse(text: str) -> tuple[Decimal, str]:
    """``"-1,234.5 ms"`` -> ``(Decimal("-1234.5"), "ms")`` (exact: a percent may pass the float range)."""
    m = NUMBER.match(text)
    assert m, text
    value = Decimal(m.group(3).replace(",", "")) * (-1 if m.group(2) == "-" else 1)
    return value, text[m.end():].strip()


def close(shown, true, digits: int = 3) -> bool:
    """``shown`` is ``true`` rounded to ``digits`` significant digits (or more)."""
    shown, true = Decimal(shown), Decimal(true)
    return abs(shown - true) <= abs(true) * Decimal(0.5 * 10 ** (1 - digits) + 1e-12)


@settings(max_examples=400, deadline=None)
@given(ANY)
def test_no_formatter_prints_an_exponent_or_ungrouped_thousands(v):
    for f in FORMATTERS:
        text = f(v)
        assert isinstance(text, str) and text, (f, v)
        assert not EXPONENT.search(text), (f, v, text)
        assert grouped(text), (f, v, text)
        if not (isinstance(v, float) and math.isfinite(v)):
            assert not re.search(r"\d", text.replace("10", "")), (f, v, text)  # –, ∞×, [–, –]: no number


@pytest.mark.parametrize("f, ladder, floor, whole", [(fmt.seconds, SECONDS, 1e-12, None), (fmt.bytes_, BYTES, 1e-3, "B")],
                         ids=["seconds", "bytes"])
@settings(max_examples=400, deadline=None)
@given(v=FINITE)
def test_units_climb_before_the_number_reaches_1000(f, ladder, floor, whole, v):
    """Seconds (ns ... h) and bytes (B ... YiB) pick the unit that keeps the number below 1000,
    to where the ladder ends (then the digits grow, grouped); the text reads back to the value."""
    text = f(v)
    if text.startswith(("<", ">")):
        assert 0 < abs(v) < floor, (v, text)
        return
    shown, unit = parse(text)
    assert unit in ladder, text
    top = max(ladder.values())
    if abs(v) < 1000 * top:
        assert abs(shown) < 1000, (v, text)
    if unit == whole and abs(v) >= 1:
        assert abs(shown - Decimal(v)) <= Decimal("0.5000001"), (v, text)  # whole bytes
    elif v != 0:
        assert close(shown * Decimal(ladder[unit]), v), (v, text)
    if f is fmt.seconds and unit not in ("s", "ns") and v != 0:
        assert abs(shown) >= 1, (v, text)  # never 0.5 ms where 500 µs reads


@settings(max_examples=300, deadline=None)
@given(FINITE)
def test_factors_percents_changes_and_counts_read_back_to_their_value(v):
    text = fmt.factor(v)
    if not text.startswith(("<", ">")) and v != 0:
        shown, rest = parse(text)
        assert rest == "×" and (close(shown, v) if abs(v) < 0.1 or abs(v) >= 10
                                else abs(shown - Decimal(v)) <= Decimal("0.0005000001"))
    text = fmt.percent(v)
    if not text.startswith(("<", ">")) and v != 0:
        shown, rest = parse(text)
        assert rest == "%" and close(shown, Decimal(v) * 100), (v, text)
    text = fmt.change(v)
    if text != "±0 %":
        shown, rest = parse(text)
        step = Decimal("0.0500001") if abs(v) < 1 else Decimal("0.5000001")  # one decimal below 100 %, whole above
        assert rest == "%" and abs(shown - Decimal(v) * 100) <= step + abs(Decimal(v)) * Decimal("1e-13"), (v, text)
    shown, _ = parse(fmt.count(v))
    assert abs(shown - Decimal(v)) <= Decimal("0.0500001") + abs(Decimal(v)) * Decimal("1e-15"), (v, fmt.count(v))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(FINITE, st.none()), min_size=1, max_size=8),
       st.sampled_from(["s", "bytes", "ratio", "count", "factor"]))
def test_a_column_has_one_precision(values, unit):
    """Every cell of a column shows three significant digits, its zeros kept (``1.40 s`` above ``1.47 s``)."""
    cells = fmt.column(values, unit)
    assert len(cells) == len(values)
    for v, cell in zip(values, cells):
        assert not EXPONENT.search(cell) and grouped(cell), (v, cell)
        if v is None:
            assert cell == fmt.MISSING
            continue
        if cell.startswith(("<", ">")) or v == 0:
            continue
        shown, suffix = parse(cell)
        digits = cell.split(" ")[0].rstrip("×").lstrip("+-").replace(",", "").replace(".", "").lstrip("0")
        if unit == "count":
            assert abs(shown - Decimal(v)) <= Decimal("0.0500001") + abs(Decimal(v)) * Decimal("1e-15"), (v, cell)
            continue
        if unit == "bytes" and suffix == "B" and abs(v) >= 1:
            continue  # whole bytes
        if unit == "factor" and 0.1 <= abs(v) < 10:
            assert cell == fmt.factor(v)  # factors near 1 keep their three decimals
            continue
        assert len(digits) >= 3, (v, cell)  # three significant digits, zeros kept (more: a whole integer part)
        if "." in cell.split(" ")[0]:
            assert len(digits) == 3, (v, cell)
        scale = {"s": SECONDS, "bytes": BYTES}.get(unit, {}).get(suffix, 1)
        true = Decimal(v) * 100 if unit == "ratio" else Decimal(v) / Decimal(scale)
        assert close(shown, true), (values, v, cell)


def test_the_cases_the_issue_found():
    assert fmt.seconds(0.0009995) in ("1 ms", "999 µs")  # was "1e+03 µs"
    assert fmt.seconds(0.00099951) == "1 ms" and fmt.seconds(0.0009994) == "999 µs"
    assert fmt.seconds(-0.0009996) == "-1 ms"
    assert fmt.factor(1234.5) == "1,234×"  # was "1.23e+03×"
    assert fmt.change(220.84) == "+22,084 %"  # was "+22084 %"
    assert fmt.column([1.4, 1.47], "s") == ["1.40 s", "1.47 s"]  # was "1.4 s" above "1.47 s"
    assert fmt.plural(1, "sample") == "1 sample" and fmt.plural(3, "sample") == "3 samples"
    assert fmt.plural(2, "study", "studies") == "2 studies"
    assert fmt.number(2.9e-7, 2) == "2.9 × 10⁻⁷" and fmt.number(4.114581, 6) == "4.11458"
    assert fmt.p_value(5.5e-6) == "< 0.0001" and fmt.p_value(0.0023) == "0.0023"
    assert fmt.seconds(1000) == "16.7 min" and fmt.seconds(153.2) == "153 s"
    assert fmt.bytes_(1000 * 1024) == "0.977 MiB"


@pytest.mark.parametrize("values, unit, cells", [
    ([153, 1.47], "s", ["153 s", "1.47 s"]),
    ([0.0051, 0.0694, 1.78, 19.11, 26.0], "s", ["5.10 ms", "69.4 ms", "1.78 s", "19.1 s", "26.0 s"]),
    ([0.153, 0.3, None], "ratio", ["15.3 %", "30.0 %", fmt.MISSING]),
    ([4027, 4027.5], "count", ["4,027.0", "4,027.5"]),
    ([512, 2e6], "bytes", ["512 B", "1.91 MiB"]),
    ([1.234, 12.5, 0.05], "factor", ["1.234×", "12.5×", "0.0500×"]),
])
def test_column_examples(values, unit, cells):
    assert fmt.column(values, unit) == cells
