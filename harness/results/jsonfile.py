"""Strict, bounded JSON: the one parser for every JSON file ttfg reads from disk.

Why: a file that is valid JSON can still be hostile, and Python's ``json`` module
turns each of these into an internal error that names no file, or into a wrong
number that travels on:

* ``NaN``, ``Infinity`` and ``-Infinity`` are not JSON, but ``json.loads`` accepts them;
* ``1e400`` is read as ``inf``; ``10**400`` is read as an integer that no float holds
  (``OverflowError`` wherever it meets arithmetic);
* nesting a few thousand levels deep raises ``RecursionError`` (a deeply nested
  ``calibration.json`` stopped every ``ttfg run``);
* a file of hundreds of megabytes is read whole (a 100 MB note in ``calibration.json``
  was copied into every results file).

:func:`parse` and :func:`read` refuse each one with ``"<file>: <what is wrong>"``, naming the field
of a refused number too (``cases[0].verdict.ratio``), raised as the caller's error class (a ``TtfgError``:
exit 2 at the command line). Every JSON file ttfg reads goes through them: results files, ``gate.json``,
``bisect.json``, ``counts.json``, ``releases.json``, the confirmations and the stored calibration.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from ..errors import TtfgError

__all__ = ["MAX_INT", "parse", "read", "refused_at", "sniff_format"]

#: The largest integer magnitude read: beyond any count or size ttfg records (instructions of a window:
#: about 2e10; bytes: below 2**63). An integer beyond it is refused, not rounded.
MAX_INT = 2 ** 63


class _Refused(ValueError):
    """Raised inside the parser's hooks; turned into the caller's error naming the file."""


def _constant(name: str):
    raise _Refused(f"{name} is not a JSON number (a value that could not be measured is written as null)")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"the number {text[:40]} is too large for a float")
    return value


def _int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > 19 or abs(int(text)) > MAX_INT:
        raise _Refused(f"an integer of {digits} digits ({text[:20]}...) is beyond what ttfg reads (at most 2**63)")
    return int(text)


def parse(text: str, path: str | os.PathLike, error: type[TtfgError] = TtfgError, constants: list | None = None):
    """``text`` parsed as strict JSON, or ``error("<path>: ...")``.

    ``constants``: a list that collects the NaN and Infinity found, which are then read
    as floats (version-1 results files wrote them; the caller decides); by default refused.
    """

    def collect(name: str) -> float:
        constants.append(name)
        return float(name)

    try:
        return json.loads(text, parse_constant=_constant if constants is None else collect, parse_float=_float,
                          parse_int=_int)
    except json.JSONDecodeError as exc:
        raise error(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except _Refused as exc:
        where = refused_at(text)
        raise error(f"{path}: {where + ': ' if where else ''}not strict JSON: {exc}") from None
    except RecursionError:
        raise error(f"{path}: nested too deeply to be a file ttfg writes") from None


class _Flagged:
    """Stands in for a refused number in :func:`refused_at`'s second, lenient reading."""


def refused_at(text: str) -> str | None:
    """The field (``cases[0].verdict.ratio``) of the first number :func:`parse` refused, so that the refusal names
    it as every other checked field is named; None where the lenient reading fails too."""
    flag = _Flagged()

    def number(convert, check):
        return lambda token: value if check(value := convert(token)) else flag

    try:
        doc = json.loads(text, parse_constant=lambda name: flag, parse_float=number(float, math.isfinite),
                         parse_int=number(int, lambda v: abs(v) <= MAX_INT))
    except (ValueError, RecursionError):
        return None
    found = []

    def walk(node, where: str) -> bool:
        if node is flag:
            found.append(where)
            return True
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        return any(walk(v, f"{where}.{k}" if isinstance(k, str) else f"{where}[{k}]") for k, v in items)

    try:
        walk(doc, "")
    except RecursionError:
        return None
    return found[0].lstrip(".") or "top level" if found else None


def read(path: str | os.PathLike, error: type[TtfgError] = TtfgError, max_bytes: int | None = None,
         constants: list | None = None):
    """The JSON document in ``path`` (UTF-8, strict, at most ``max_bytes``), or ``error`` naming the file.

    ``constants``: as for :func:`parse` (asv writes NaN for a value it has not got).
    """
    path = Path(path)
    try:
        with path.open("rb") as fh:
            raw = fh.read() if max_bytes is None else fh.read(max_bytes + 1)
    except OSError as exc:
        raise error(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if max_bytes is not None and len(raw) > max_bytes:
        raise error(f"{path}: larger than {max_bytes:,} bytes, far more than such a file holds")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text (byte {exc.start}: {raw[exc.start:exc.start + 1]!r})") from None
    return parse(text, path, error, constants)


def sniff_format(path: str | os.PathLike) -> str | None:
    """The ``"format"`` a ttfg JSON file names in its first 4 KiB (``ttfg-gate``, ``ttfg-results``...),
    without reading the rest; None when it names none or cannot be read. A guess for choosing a
    reader, never a check: the reader then validates the whole file."""
    import re

    try:
        with Path(path).open("rb") as fh:
            head = fh.read(4096).decode("utf-8", "replace")
    except OSError:
        return None
    match = re.search(r'"format"\s*:\s*"([^"]+)"', head)
    return match.group(1) if match else None
