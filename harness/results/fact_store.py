"""A file of stored facts, each under the :class:`~ttfg.results.fact_key.FactKey` it is true for.

Why one reader for every such file: the noise calibration (``calibration.json``) and the count
margins (``count_margins.json``) are kept between runs in the cache folder and decide verdicts
later, so a wrong entry there is a wrong verdict: a margin of 10.0 written by hand turned
instructions ×1.741 into "unchanged (+74.1 %, margin ±1,000 %)". Each entry is therefore read
alone and checked -- its key, then every field of its fact through the kind's own reader -- and
an entry that fails is *set aside*: named (the file, the entry, the field, the value) and never
applied, while the other entries stay usable. A file that cannot be read at all (not JSON, too
large, of an older version whose entries carry no key) holds nothing usable and says why.

Writing merges: the file is read, the writer's entries replace those under equal keys, and the
file is replaced atomically, under an exclusive lock (``.NAME.lock`` beside it) so that two
projects calibrating on one machine at once keep each other's entries.

The format: ``{"format": F, "version": 2, "entries": [{"key": {...}, "fact": {...}}, ...]}``.
Version 1 (before facts were keyed) is not migrated: its facts name no environment, interpreter,
ttfg or machine, so which key they are true for is unknown.
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Generic, Iterable, Iterator, TypeVar

from ..errors import TtfgError
from . import jsonfile
from .fact_key import FactKey, FactKeyError

T = TypeVar("T")
VERSION = 2
#: A store holds a few entries per case and machine: kilobytes; far beyond this is no file ttfg wrote.
MAX_BYTES = 8 * 1024 * 1024


class _Unreadable(TtfgError):
    pass


@dataclass
class FactFile(Generic[T]):
    """What a store holds that may be applied, and what was set aside (each line names the file and the field)."""

    path: Path
    entries: dict[str, tuple[FactKey, T]] = field(default_factory=dict)
    set_aside: list[str] = field(default_factory=list)
    #: Why nothing in the file is usable (unreadable, another format, an unkeyed older version); None: it is.
    problem: str | None = None

    def keys(self) -> list[FactKey]:
        return [key for key, _ in self.entries.values()]

    def get(self, key: FactKey) -> T | None:
        found = self.entries.get(key.digest)
        return found[1] if found is not None else None


def read(path: Path, format_: str, read_fact: Callable[[Any, str], T], max_bytes: int = MAX_BYTES) -> FactFile[T]:
    """The store at ``path`` (empty when there is none), every entry checked.

    ``read_fact(raw, where)`` returns the checked fact or raises ``ValueError`` naming the field (the entry is then
    set aside, with that message).
    """
    out: FactFile[T] = FactFile(path)
    if not path.exists():
        return out
    try:
        doc = jsonfile.read(path, _Unreadable, max_bytes)
    except _Unreadable as exc:
        out.problem = f"{exc}: nothing stored there is applied"
        return out
    if not isinstance(doc, dict) or doc.get("format") not in (format_, None) or (
            doc.get("format") is None and doc.get("version") == VERSION):
        out.problem = f"{path}: not a {format_} file: nothing stored there is applied"
        return out
    if doc.get("version") != VERSION:
        out.problem = (f"{path}: version {doc.get('version')!r}, stored before facts were keyed by what they describe "
                       f"(environment, interpreter, ttfg, machine): nothing stored there is applied")
        return out
    raw_entries = doc.get("entries")
    if not isinstance(raw_entries, list):
        out.problem = f"{path}: entries: expected a list: nothing stored there is applied"
        return out
    for i, raw in enumerate(raw_entries):
        where = f"entries[{i}]"
        try:
            if not isinstance(raw, dict):
                raise ValueError(f"{where}: expected an object")
            key = FactKey.from_json(raw.get("key"), f"{where}.key")
            out.entries[key.digest] = (key, read_fact(raw.get("fact"), f"{where}.fact"))
        except (FactKeyError, ValueError, TypeError) as exc:
            out.set_aside.append(f"{path}: {exc}: set aside")
    return out


def _document(format_: str, entries: Iterable[tuple[FactKey, dict]]) -> str:
    doc = {"format": format_, "version": VERSION,
           "entries": [{"key": key.to_json(), "fact": fact} for key, fact in entries]}
    return json.dumps(doc, indent=1, allow_nan=False, sort_keys=False) + "\n"


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.parent / f".{path.name}.lock", os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # blocks: a second writer waits, then merges into what the first wrote
        yield
    finally:
        os.close(fd)


def update(path: Path, format_: str, read_fact: Callable[[Any, str], T], to_json: Callable[[T], dict],
           change: Callable[[FactFile[T]], dict[str, tuple[FactKey, T]]], max_bytes: int = MAX_BYTES) -> FactFile[T]:
    """Read the store under its lock, let ``change`` return the entries to put (by key digest), write the merge.

    Entries set aside on reading are dropped from the file (they were named when read); an unusable file is
    replaced; when ``change`` puts nothing, the file is not written. Returns the store as written.
    """
    from ..files import atomic_write_text

    with _locked(path):
        store = read(path, format_, read_fact, max_bytes)
        put = change(store)
        if not put:  # nothing new: the file stays as it is, byte for byte
            return store
        store.entries.update(put)
        atomic_write_text(path, _document(format_, ((k, to_json(v)) for k, v in store.entries.values())))
    return store


__all__ = ["FactFile", "MAX_BYTES", "VERSION", "read", "update"]
