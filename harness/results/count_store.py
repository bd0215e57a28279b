"""The count store: count samples kept between runs, one file each, checked by SHA-256 on every read.

Why: an instruction count is deterministic evidence of the code it counted under the
conditions it was taken in, yet every gate counted its base again (on jax.jit resnet15 a
callgrind process is ~50-80 s of CPU a side). A bisect already reused its counts within
one run (``app/bisect_counts.py``, under the one key of stored facts, ``fact_key.py``);
this store keeps them across runs, and across machines only where the key says the
machine is the same.

The key (:class:`EntryKey`): the measured sources (``tree:<id>``, the git tree of the
checked-out commit: two commits with the same tree are the same files, so a squash-merged
head and its pull request share counts; ``commit:<hash>`` where no tree can be read), the
case id, the sample kind, the cache mode, the sample's index within its side, and the
digest of its conditions (a :class:`~ttfg.results.fact_key.FactKey`: the case's full
description, the environment's digest with its editable and local installs' files, the
interpreter, the probe's settings, the measuring ttfg's source, valgrind's options and
version, the CPU model, count and flags).

One entry is one file ``entries/<address>.json``, ``address`` = a digest of the sources,
case, kind, cache and index, then the conditions' digest (so the entries of one sample
under other conditions are found by name, and the note can say what differs). The file
holds the entry and the SHA-256 of its canonical JSON. On read, everything is checked:
the digest, the key against the key asked for, the conditions against their digest, the
sample field by field. An entry that fails any check is named, moved aside to
``corrupt/`` and never trusted; the caller counts afresh. Writes are atomic (a temporary
file renamed over the target). Timing is never stored: the wall-time fields of a count
sample are emptied before it is written.

Beside the counts, kind ``structural``: what a side's first timing process showed that is no
time, its structural counters and the runtimes it loaded (:func:`structural`), so that a pull
request whose head runs its base's program (the source tier) runs its own side alone
(``decide/stored_first.py``). Its sample is a timing sample with every timed field empty.

Bounded: ``TTFG_COUNT_STORE_MAX_MB`` (default 128) caps the folder; after a write the
entries least recently written or used go first. ``ttfg env prune --counts`` empties it,
or removes what is older than ``--older-than``.

Where: ``$TTFG_COUNT_STORE_DIR``, else ``counts/`` in the cache folder (``$TTFG_CACHE_DIR``,
else the platform's).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from .. import metrics
from ..errors import UsageError
from ..files import atomic_write_text
from . import jsonfile
from .fact_key import FactKey, FactKeyError
from .format import ResultsError, strict_json
from .model import Sample
from .validate import _Reader

FORMAT, VERSION = "ttfg-count-entry", 1
ENV_DIR, ENV_MAX_MB = "TTFG_COUNT_STORE_DIR", "TTFG_COUNT_STORE_MAX_MB"
DEFAULT_MAX_MB = 128
#: A count sample with its top functions is tens of kilobytes; anything near this is no entry.
MAX_ENTRY_BYTES = 8 * 1024 * 1024
#: The entries' kinds: the count kinds, and ``structural`` (a first timing process's counters, nothing timed).
STRUCTURAL = "structural"
KINDS = ("instructions", "allocations", STRUCTURAL)
#: The kind of sample each entry kind holds.
SAMPLE_KINDS = {"instructions": "instructions", "allocations": "allocations", STRUCTURAL: "timing"}
#: What a ``structural`` entry keeps of its timing sample (besides the fields every sample has).
STRUCTURAL_FIELDS = ("counters", "runtimes")
#: A count sample's fields that are time (of a process slowed by valgrind or memray: the registry's timings of
#: the kinds kept, and the process's wall time) or its stderr: never stored.
TIME_FIELDS = ("process_wall_s", "stderr_tail",
               *metrics.names(lambda m: m.unit == "s" and m.sample in KINDS and m.stored))


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _sha(value: Any) -> str:
    return hashlib.sha256(_canonical(value).encode()).hexdigest()


@dataclass(frozen=True)
class EntryKey:
    """What one entry is filed under (see the module's docstring)."""

    sources: str
    case: str
    kind: str
    cache: str
    index: int
    conditions: str

    @property
    def prefix(self) -> str:
        """The part of the address every entry of this sample shares, whatever its conditions."""
        return _sha([self.sources, self.case, self.kind, self.cache, self.index])[:24]

    @property
    def address(self) -> str:
        return f"{self.prefix}-{self.conditions}"

    def to_json(self) -> dict:
        return {"sources": self.sources, "case": self.case, "kind": self.kind, "cache": self.cache,
                "index": self.index, "conditions": self.conditions}


@dataclass
class Entry:
    """One stored count: its key, its conditions in full, the sample, and where it came from."""

    key: EntryKey
    conditions: FactKey
    sample: Sample
    #: Which run counted it: ``{"run": "gate", "commit": ..., "at": ISO time}`` (free text values).
    origin: dict[str, str]

    def to_json(self) -> dict:
        return {"key": self.key.to_json(), "conditions": self.conditions.to_json(), "origin": dict(self.origin),
                "sample": _sample_json(self.sample, self.key.kind)}

    def from_words(self) -> str:
        """``the gate of 1a2b3c4d5e at 2026-12-06T16:40Z``: where a reused count came from."""
        o = self.origin
        what = o.get("run") or "a run"
        commit = f" of {o['commit'][:10]}" if o.get("commit") else ""
        at = f" at {o['at']}" if o.get("at") else ""
        return f"the {what}{commit}{at}"


@dataclass
class Lookup:
    """What a lookup found: a verified entry, or why none (``refused``: a bad entry, named and moved aside;
    ``other``: entries of this sample exist under other conditions, and what differs)."""

    entry: Entry | None = None
    refused: str | None = None
    other: str | None = None


def stripped(sample: Sample) -> Sample:
    """``sample`` without its wall-time fields (:data:`TIME_FIELDS`): what the store keeps."""
    return replace(sample, **{name: None for name in TIME_FIELDS}, pair=None, pair_position=None)


def structural(sample: Sample) -> Sample:
    """What the store keeps of a good timing sample: its structural counters and the runtimes its process loaded,
    no time, no error text (a timing sample in memory only: with no times it is no sample of a results file)."""
    return Sample("timing", ok=True, index=sample.index, cache=sample.cache, started_at=sample.started_at,
                  counters=dict(sample.counters or {}), runtimes=sample.runtimes)


def _sample_json(sample: Sample, kind: str) -> dict:
    if kind != STRUCTURAL:
        return sample.to_json()
    out = {k: getattr(sample, k) for k in ("kind", "ok", "index", "cache", "started_at", "counters")}
    out["runtimes"] = sample.runtimes.to_json() if sample.runtimes is not None else None
    return out


def _structural_from_json(reader: _Reader, raw: Any, where: str) -> Sample:
    """A ``structural`` entry's sample: the common fields and :data:`STRUCTURAL_FIELDS`, nothing else."""
    raw = reader.obj(raw, where)
    allowed = ("kind", "ok", "index", "cache", "started_at", *STRUCTURAL_FIELDS)
    extra = sorted(set(raw) - set(allowed))
    if extra:
        raise reader.fail(f"{where}.{extra[0]}", "not kept by a structural entry (its counters and runtimes only)")
    if raw.get("kind") != "timing" or raw.get("ok") is not True:
        raise reader.fail(f"{where}.kind", "expected a good timing sample")
    index = raw.get("index")
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise reader.fail(f"{where}.index", "expected a count")
    counters = reader.counters(raw.get("counters"), f"{where}.counters")
    if not counters:
        raise reader.fail(f"{where}.counters", "a structural entry without counters shows nothing")
    return Sample("timing", ok=True, index=index, cache=reader.text(raw.get("cache"), f"{where}.cache"),
                  started_at=reader.text(raw.get("started_at"), f"{where}.started_at"), counters=counters,
                  runtimes=reader.runtimes(raw.get("runtimes"), f"{where}.runtimes"))


def folder(cache_root: Path) -> Path:
    """``$TTFG_COUNT_STORE_DIR``, else ``counts`` in the cache folder ``cache_root`` (``provision.cache.root()``; not
    made here)."""
    override = os.environ.get(ENV_DIR)
    if override:
        return Path(override)
    return Path(cache_root) / "counts"


def max_bytes() -> int:
    """The size cap from ``$TTFG_COUNT_STORE_MAX_MB`` (default 128 MB).

    Raises
    ------
    UsageError
        When it is not a positive number, naming the variable.
    """
    raw = os.environ.get(ENV_MAX_MB)
    if raw is None or raw.strip() == "":
        return DEFAULT_MAX_MB * 1024 * 1024
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise UsageError(f"{ENV_MAX_MB}={raw!r}: expected a positive number of megabytes (default {DEFAULT_MAX_MB})")
    return int(value * 1024 * 1024)


class CorruptEntry(Exception):
    """An entry that failed a check; the message says which."""


def entry_from_json(doc: Any, path: Path, wanted: EntryKey | None = None) -> Entry:
    """``doc`` (a parsed entry file) checked whole: its SHA-256, its key (``wanted``, when given), its conditions'
    digest, its sample.

    Raises
    ------
    CorruptEntry
        Naming what failed.
    """
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise CorruptEntry(f"not a count entry (expected format {FORMAT!r})")
    if doc.get("version") != VERSION:
        raise CorruptEntry(f"version {doc.get('version')!r}; this ttfg reads version {VERSION}")
    body, digest = doc.get("entry"), doc.get("sha256")
    if not isinstance(body, dict) or not isinstance(digest, str):
        raise CorruptEntry("'entry' must be an object and 'sha256' a string")
    if _sha(body) != digest:
        raise CorruptEntry("its SHA-256 does not match its content (edited by hand or damaged)")
    raw_key = body.get("key")
    if not isinstance(raw_key, dict):
        raise CorruptEntry("'entry.key' must be an object")
    fields = {"sources": str, "case": str, "kind": str, "cache": str, "index": int, "conditions": str}
    for name, kind in fields.items():
        value = raw_key.get(name)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise CorruptEntry(f"'entry.key.{name}' must be {'an integer' if kind is int else 'a string'}, "
                               f"got {type(value).__name__}")
    key = EntryKey(**{name: raw_key[name] for name in fields})
    if wanted is not None and key != wanted:
        differ = [n for n in fields if getattr(key, n) != getattr(wanted, n)]
        raise CorruptEntry(f"it is filed under another key ({', '.join(differ)} differ)")
    if path.stem != key.address:
        raise CorruptEntry("its name is not its key's address (copied or renamed)")
    try:
        conditions = FactKey.from_json(body.get("conditions"), "entry.conditions")
    except FactKeyError as exc:
        raise CorruptEntry(str(exc)) from None
    if conditions.digest != key.conditions:
        raise CorruptEntry("its conditions do not digest to its key's")
    origin = body.get("origin")
    if not isinstance(origin, dict) or not all(isinstance(v, str) for v in origin.values()):
        raise CorruptEntry("'entry.origin' must be an object of strings")
    if key.kind not in KINDS:
        raise CorruptEntry(f"kind {key.kind!r} is none the store keeps ({', '.join(KINDS)})")
    try:
        reader = _Reader(path)
        sample = (_structural_from_json(reader, body.get("sample"), "entry.sample") if key.kind == STRUCTURAL
                  else reader.sample(body.get("sample"), "entry.sample"))
    except ResultsError as exc:
        raise CorruptEntry(str(exc).removeprefix(f"{path}: ")) from None
    if sample.kind != SAMPLE_KINDS[key.kind] or not sample.ok:
        raise CorruptEntry(f"expected a good {SAMPLE_KINDS[key.kind]} sample")
    if any(getattr(sample, name) is not None for name in TIME_FIELDS):
        raise CorruptEntry("it holds wall time, which the store never keeps")
    return Entry(key, conditions, sample, dict(origin))


class CountStore:
    """The folder of entries (see the module's docstring). Safe for threads and processes to share: every write is
    a rename, every read checks what it read."""

    def __init__(self, root: Path, limit: int | None = None):
        self.root = Path(root)
        self.limit = limit if limit is not None else max_bytes()

    @classmethod
    def default(cls, cache_root: Path) -> "CountStore":
        """The store in :func:`folder`, capped by :func:`max_bytes` (raises ``UsageError`` for a bad cap)."""
        return cls(folder(cache_root), max_bytes())

    @property
    def entries(self) -> Path:
        return self.root / "entries"

    @property
    def corrupt(self) -> Path:
        return self.root / "corrupt"

    def path(self, key: EntryKey) -> Path:
        return self.entries / f"{key.address}.json"

    def _aside(self, path: Path, why: str) -> str:
        """Move ``path`` to ``corrupt/`` (a timestamped name) and say so; a file that cannot be moved is left and
        said."""
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%f")
        target = self.corrupt / f"{path.stem}.{stamp}.json"
        try:
            self.corrupt.mkdir(parents=True, exist_ok=True)
            os.replace(path, target)
        except OSError as exc:
            return f"stored count {path} refused: {why}; it could not be moved aside ({exc.strerror or exc})"
        return f"stored count {path.name} refused: {why}; moved aside to {target}"

    def _read(self, path: Path, wanted: EntryKey | None) -> Entry:
        """The entry in ``path``, checked (:func:`entry_from_json`); raises :class:`CorruptEntry`."""
        try:
            if path.stat().st_size > MAX_ENTRY_BYTES:
                raise CorruptEntry(f"larger than {MAX_ENTRY_BYTES:,} bytes")
            doc = jsonfile.read(path, ResultsError, MAX_ENTRY_BYTES)
        except ResultsError as exc:
            raise CorruptEntry(str(exc).removeprefix(f"{path}: ")) from None
        except OSError as exc:
            raise CorruptEntry(f"cannot be read ({exc.strerror or exc})") from None
        return entry_from_json(doc, path, wanted)

    def get(self, key: EntryKey, wanted: FactKey | None = None) -> Lookup:
        """The entry filed under ``key``, verified; or why not (``wanted``: the conditions asked for, to say what
        differs from the entries of this sample filed under other conditions)."""
        path = self.path(key)
        if not path.is_file():
            return Lookup(other=self._other(key, wanted))
        try:
            entry = self._read(path, key)
        except CorruptEntry as exc:
            return Lookup(refused=self._aside(path, str(exc)))
        try:
            os.utime(path)  # used: the last to be evicted
        except OSError:
            pass
        return Lookup(entry)

    def _other(self, key: EntryKey, wanted: FactKey | None) -> str | None:
        """What differs between ``wanted`` and the conditions of this sample's entries under other conditions."""
        if wanted is None or not self.entries.is_dir():
            return None
        for path in sorted(self.entries.glob(f"{key.prefix}-*.json")):
            try:
                entry = self._read(path, None)
            except CorruptEntry:
                continue  # said when it is asked for by its own key
            differs = entry.conditions.differences(wanted)
            if differs:
                return ", ".join(differs)
        return None

    def put(self, entry: Entry) -> Path:
        """Write ``entry`` (its sample stripped of wall time) atomically, then keep the folder under its cap.

        Raises
        ------
        UsageError
            A sample the store does not keep (a timing, a failed one), or conditions that are not the key's.
        OSError
            When the folder cannot be written.
        """
        if entry.key.kind not in KINDS or entry.sample.kind != SAMPLE_KINDS[entry.key.kind] or not entry.sample.ok:
            raise UsageError(f"the count store keeps good count samples and first processes' structural counters "
                             f"({', '.join(KINDS)}), not a {'good' if entry.sample.ok else 'failed'} "
                             f"{entry.sample.kind} sample as {entry.key.kind!r}")
        if entry.conditions.digest != entry.key.conditions:
            raise UsageError("an entry's conditions must digest to its key's")
        kept = structural(entry.sample) if entry.key.kind == STRUCTURAL else stripped(entry.sample)
        entry = replace(entry, sample=kept)
        if entry.key.kind == STRUCTURAL and not entry.sample.counters:
            raise UsageError("a first process without structural counters shows nothing to keep")
        body = strict_json(entry.to_json())
        doc = {"format": FORMAT, "version": VERSION, "sha256": _sha(body), "entry": body}
        self.entries.mkdir(parents=True, exist_ok=True)
        path = atomic_write_text(self.path(entry.key), json.dumps(doc, indent=1, allow_nan=False) + "\n")
        self.evict()
        return path

    def files(self) -> Iterator[Path]:
        for sub in (self.entries, self.corrupt):
            if sub.is_dir():
                yield from (p for p in sub.iterdir() if p.is_file())

    def size(self) -> int:
        """The bytes the store's files take."""
        total = 0
        for path in self.files():
            try:
                total += path.stat().st_size
            except OSError:
                pass
        return total

    def evict(self) -> list[Path]:
        """Remove the oldest files (last written or used) until the store is within its cap; those removed."""
        found = []
        for path in self.files():
            try:
                st = path.stat()
            except OSError:
                continue
            found.append((path.parent == self.entries, st.st_mtime, st.st_size, path))
        total = sum(size for _, _, size, _ in found)
        gone = []
        for _, _, size, path in sorted(found):  # the set-aside ones first, then the oldest entries
            if total <= self.limit:
                break
            try:
                path.unlink()
            except OSError:
                continue
            total -= size
            gone.append(path)
        return gone

    def prune(self, older_s: float | None = None) -> list[Path]:
        """Remove every file (``older_s`` None), or those last written or used longer ago than ``older_s``."""
        now = time.time()
        gone = []
        for path in list(self.files()):
            try:
                if older_s is not None and now - path.stat().st_mtime <= older_s:
                    continue
                path.unlink()
            except OSError:
                continue
            gone.append(path)
        return gone


__all__ = ["CorruptEntry", "CountStore", "DEFAULT_MAX_MB", "ENV_DIR", "ENV_MAX_MB", "Entry", "EntryKey", "KINDS",
           "Lookup", "SAMPLE_KINDS", "STRUCTURAL", "entry_from_json", "folder", "max_bytes", "stripped", "structural"]
