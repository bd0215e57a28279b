"""``counts.json``: a bisect's count samples, kept beside ``bisect.json`` so that a rerun reuses them.

Why a file of its own: ``app/bisect_counts.py`` takes a commit's instruction count once
and hands it to every later comparison that involves the commit; a resumed bisect must
find those samples again, or it would count every commit of its bracket anew. The file is
read back strictly, like ``bisect.json`` (``bisect_file.py``): a truncated or hand-edited
one is refused naming the file and the field (:class:`~ttfg.results.format.ResultsError`,
exit 2), never half-trusted, because a sample read wrongly would decide a step.

An entry is one sample and the key it may be reused under: the commit, the case id, the
sample kind, the cache mode, the sample's index within its side, and ``conditions``, the
digest of everything else that makes two samples of one commit not exchangeable, a
:class:`~ttfg.results.fact_key.FactKey` (the case's full description, the environment's
digest with its editable and local installs' files, the probe's settings, the measuring
ttfg's source, valgrind's options and version, the machine). ``conditions`` also maps each
digest to its key, so a reader (and a resumed bisect's note) can say why two entries differ.
``from`` says which comparison took the sample.

Version history: 1 (the first); 2 (``conditions`` holds fact keys, checked on read; a version-1
file is still read, its samples kept but never matched: their conditions were digested another way).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..files import atomic_write_text
from . import jsonfile
from .fact_key import FactKey, FactKeyError
from .format import ResultsError, strict_json
from .model import Sample
from .validate import _Reader

#: The file's name in a bisect's output folder.
COUNTS = "counts.json"
FORMAT, VERSION = "ttfg-bisect-counts", 2
#: Counts of a few dozen commits with their top functions: megabytes at most; anything near this is no such file.
MAX_BYTES = 256 * 1024 * 1024


@dataclass
class StoredCount:
    """One count sample and the key under which a later comparison may take it instead of counting again."""

    commit: str
    case: str
    kind: str
    cache: str
    index: int
    #: The digest of the conditions it was taken under (see the module's docstring).
    conditions: str
    #: The comparison that took it, as the reports name it ("step 2 (vs good)").
    origin: str
    sample: Sample

    @property
    def key(self) -> tuple[str, str, str, str, int, str]:
        return self.commit, self.case, self.kind, self.cache, self.index, self.conditions

    def to_json(self) -> dict:
        return {"commit": self.commit, "case": self.case, "kind": self.kind, "cache": self.cache, "index": self.index,
                "conditions": self.conditions, "from": self.origin, "sample": self.sample.to_json()}


@dataclass
class CountsDocument:
    """What ``counts.json`` holds: the bisect it belongs to (``bisect.json``'s ``key``), the conditions, the samples."""

    bisect: dict
    conditions: dict[str, dict]
    samples: list[StoredCount]
    #: ``conditions`` read as keys (empty for a version-1 file).
    keys: dict[str, FactKey] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"format": FORMAT, "version": VERSION, "bisect": self.bisect, "conditions": self.conditions,
                "samples": [s.to_json() for s in self.samples]}


def counts_from_json(doc: Any, path: str | Path) -> CountsDocument:
    """``doc`` (a parsed ``counts.json``) checked field by field.

    Raises
    ------
    ResultsError
        Naming the file and the field.
    """
    r = _Reader(path)
    doc = r.obj(doc, "the document")
    if doc.get("format") != FORMAT:
        raise r.fail("format", f"not a bisect's counts (expected {FORMAT!r}, got {doc.get('format')!r})")
    if doc.get("version") not in (1, VERSION):
        raise r.fail("version", f"version {doc.get('version')!r}; this ttfg reads versions 1 and {VERSION}")
    bisect = r.obj(r.key(doc, "bisect", ""), "bisect")
    conditions = r.obj(r.key(doc, "conditions", ""), "conditions")
    keys = {}
    for digest, what in conditions.items():
        r.obj(what, f"conditions.{digest}")
        if doc["version"] == VERSION:
            try:
                keys[digest] = FactKey.from_json(what, f"conditions.{digest}")
            except FactKeyError as exc:
                raise ResultsError(f"{path}: {exc}") from None
            if keys[digest].digest != digest:
                raise r.fail(f"conditions.{digest}", f"its key digests to {keys[digest].digest!r}: edited by hand")
    samples = []
    for i, raw in enumerate(r.seq(r.key(doc, "samples", ""), "samples")):
        at = f"samples[{i}]"
        raw = r.obj(raw, at)
        commit, case, kind, cache, origin = (r.text(r.key(raw, k, f"{at}."), f"{at}.{k}")
                                             for k in ("commit", "case", "kind", "cache", "from"))
        index = r.value(r.key(raw, "index", f"{at}."), f"{at}.index", "count", optional=False)
        digest = r.text(r.key(raw, "conditions", f"{at}."), f"{at}.conditions")
        if digest not in conditions:
            raise r.fail(f"{at}.conditions", f"{digest!r} is not one of the file's conditions")
        sample = r.sample(r.key(raw, "sample", f"{at}."), f"{at}.sample")
        if sample.kind != kind or not sample.ok:
            raise r.fail(f"{at}.sample", f"expected a good {kind} sample")
        samples.append(StoredCount(commit, case, kind, cache, index, digest, origin, sample))
    return CountsDocument(bisect, conditions, samples, keys)


def load_counts(path: str | Path) -> CountsDocument:
    """A ``counts.json`` written by ``ttfg bisect``, checked (:func:`counts_from_json`).

    Raises
    ------
    ResultsError
        When it cannot be read, is not strict JSON (``jsonfile``: NaN and Infinity are refused), or a field is
        wrong, naming the file and the field.
    """
    path = Path(path)
    return counts_from_json(jsonfile.read(path, ResultsError, MAX_BYTES), path)


def save_counts(path: str | Path, document: CountsDocument) -> None:
    """Replace ``path`` atomically with ``document`` (strict JSON)."""
    atomic_write_text(path, json.dumps(strict_json(document.to_json()), indent=1, allow_nan=False) + "\n")


__all__ = ["COUNTS", "CountsDocument", "FORMAT", "StoredCount", "VERSION", "counts_from_json", "load_counts",
           "save_counts"]
