"""Reading and writing results files: bytes on disk <-> :class:`~ttfg.results.model.Results`.

Reading: UTF-8, strict JSON (NaN and Infinity are not JSON and are refused), an older
version migrated (``migrate``), then every field checked (``validate``). Writing: the
same checks first, so a file ttfg writes is always one it can read back, then strict
JSON through the one atomic writer (``ttfg.files``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..files import atomic_write_text
from .format import ResultsError
from .jsonfile import parse, refused_at
from .migrate import upgrade
from .model import Results
from .validate import results_from_json

__all__ = ["dumps", "from_json", "load", "loads", "save"]


def from_json(data, path: str | os.PathLike = "<results>") -> Results:
    """A parsed document (any supported version) as :class:`Results`."""
    return results_from_json(upgrade(data, path), path)


def loads(text: str, path: str | os.PathLike = "<results>") -> Results:
    """Parse, migrate, validate. NaN and Infinity are refused, except in a version-1 file (which allowed them);
    so are numbers beyond a float and nesting no results file has (``jsonfile``)."""
    seen: list[str] = []
    data = parse(text, path, ResultsError, constants=seen)
    if seen and not (isinstance(data, dict) and data.get("version") == 1):
        where = refused_at(text)
        raise ResultsError(f"{path}: {where + ': ' if where else ''}not strict JSON: {seen[0]} is not a JSON number "
                           "(a value that could not be measured is written as null)")
    return from_json(data, path)


def load(path: str | os.PathLike) -> Results:
    """Read, migrate and validate a results file."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ResultsError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ResultsError(f"{path}: not UTF-8 text (byte {exc.start}: {raw[exc.start:exc.start + 1]!r})") from None
    return loads(text, path)


def dumps(results: Results, path: str | os.PathLike = "<results>") -> str:
    """The file's text: checked as a reader would check it, strict JSON."""
    data = results.to_json()
    results_from_json(data, path)
    try:
        return json.dumps(data, indent=1, allow_nan=False) + "\n"
    except ValueError as exc:  # a non-finite number in environment or settings
        raise ResultsError(f"{path}: cannot be written as strict JSON: {exc}") from None


def save(results: Results, path: str | os.PathLike | None = None) -> Path:
    """Write atomically; ``results.path`` becomes ``path``."""
    if path is None:
        raise ValueError("save: no path given and the results have none")
    path = Path(path)
    atomic_write_text(path, dumps(results, path))
    results.path = path
    return path
