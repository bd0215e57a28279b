"""A bisect counts each commit once: count samples kept per run and reused by every comparison involving the commit.

Why: a bisect step compares the tested commit with the bracket's good end and then,
usually, with its bad end, so the ends take part in every step and each commit in up to
three comparisons. On a jax.jit history every comparison settled in the instructions tier
with one callgrind process a side, about a minute each, and most of that minute was
counting commits already counted. An instruction count is deterministic evidence of a
commit's code (that is why the count tier settles in one process a side), so a count of
commit C for case K taken in one comparison is valid evidence in the next comparison that
involves C, under the same conditions.

What is reused: only samples of the count tier's kinds (``decide.tiers.count_kinds``) whose
every count-tier metric is repeatable for the case's framework (``Metric.unsteady``: jax's
allocation counts vary between identical processes, so jax's allocation samples are taken
anew each time), cold ones, that succeeded, and taken by an earlier comparison (a comparison
never hands itself its own sample). Timing samples are never reused: wall time stays
paired and interleaved within each comparison. A structural counter is read from the
timing pair, so it is measured anew as well.

The key: the commit, the case id, the kind, the cache mode, the sample's index within its
side, and the digest of the conditions (:func:`conditions`), the one key of every stored fact
(``results/fact_key.py``): the case's full description, the side's environment digest (its
packages and the files of its editable and local installs), the interpreter, the probe's
settings and inherited variables, the measuring ttfg's version and source digest, valgrind's
options, probe variables and version, and the machine's CPU model, count and flags. A sample of
other conditions is not found, never reused silently: when the store holds one for the same
commit and index, the note says what differs (an editable autograd edited in place between an
interrupted bisect and its resume: "the files of the editable or local install autograd") and
the count is taken anew. A side whose environment holds an install too large to digest reuses
and keeps nothing, and says so.

The wrapper is a gate ``Sampler`` (``decide.gate_loop``): the gate's loop is not forked, it
is handed :class:`ComparisonSampler` in place of ``run_sample``. What a comparison took and
reused is returned by :meth:`ComparisonSampler.record` for ``bisect.json``.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from .. import metrics
from ..decide import tiers
from ..errors import UsageError
from ..measure import fact_keys
from ..results.bisect_counts_file import COUNTS, CountsDocument, StoredCount, load_counts, save_counts
from ..results.fact_key import FactKey
from ..results.format import ResultsError

if TYPE_CHECKING:
    from ..decide.gate_loop import Sampler
    from ..measure.cases import Case
    from ..measure.runner import RunSettings
    from ..measure.sides import Side
    from ..results.model import Sample


@functools.lru_cache(maxsize=None)
def reusable(backend: str, kind: str) -> bool:
    """Whether a ``kind`` sample of a ``backend`` case is the same evidence in every process of the same code: a
    count-tier kind none of whose count-tier metrics the backend's framework leaves unsteady."""
    if kind not in tiers.count_kinds():
        return False
    from .. import engines

    found = engines.runs_on(backend)
    if not found:  # a plugin that cannot load: nothing known about its counts, so none is trusted twice
        return False
    return not any(metrics.get(m).unsteady_for(found) for m in tiers.tier_metrics(tiers.INSTRUCTIONS)
                   if metrics.get(m).sample == kind)


def steady_record(sample: "Sample") -> bool:
    """Whether what ``sample``'s process was measured to run (``Sample.runtimes``) leaves its counts repeatable: no
    count metric of its kind the registry calls unsteady on those runtimes, and no allocation count of a multithreaded
    runtime. True without a record (the declared modules decided, :func:`reusable`)."""
    record = sample.runtimes
    if record is None:
        return True
    names = [m for m in tiers.tier_metrics(tiers.INSTRUCTIONS) if metrics.get(m).sample == sample.kind]
    return not (any(metrics.get(m).unsteady_for(record.names) for m in names)
                or (sample.kind == "allocations" and record.multithreaded))


def conditions(side: "Side", case: "Case", run: "RunSettings") -> FactKey:
    """Everything besides the commit, the kind and the index that makes a count sample of ``side`` what it is: the
    one key of every stored fact (``measure/fact_keys.py``), for a count."""
    return fact_keys.key(case, side.env, run, counted=True,
                         measured=side.measured_project)


def origin_label(folder: Path, out_dir: Path) -> str:
    """How the reports name a comparison: ``the ends``, ``step 2 (vs good)``, ``the culprit's comparison``."""
    try:
        parts = folder.relative_to(out_dir).parts
    except ValueError:
        parts = folder.parts
    if parts[-1] == "ends":
        return "the ends"
    if parts[-1] == "culprit":
        return "the culprit's comparison"
    step, against = (parts[-2] if len(parts) > 1 else ""), parts[-1].removesuffix("-counts").replace("-", " ")
    number = step.split("-")[0]
    return f"step {int(number)} ({against})" if number.isdigit() else str(Path(*parts))


class CountStore:
    """A bisect's count samples, in memory and in ``counts.json`` beside ``bisect.json`` (saved after each new one)."""

    def __init__(self, path: Path, document: CountsDocument):
        self.path, self.document = path, document
        self.by_key = {s.key: s for s in document.samples}
        self.lock = threading.Lock()
        self.explained: set[tuple] = set()

    @classmethod
    def fresh(cls, out_dir: Path, key: dict) -> "CountStore":
        """An empty store for a bisect starting afresh (a ``counts.json`` left there is replaced at the first count)."""
        return cls(out_dir / COUNTS, CountsDocument(key, {}, []))

    @classmethod
    def resume(cls, out_dir: Path, key: dict) -> "CountStore":
        """The store a resumed bisect left (empty when it kept none).

        Raises
        ------
        ResultsError
            A file that cannot be read, or a field that is wrong, naming both (the file is left as it is).
        UsageError
            A file of another bisect (other revisions, cases or settings).
        """
        path = out_dir / COUNTS
        if not path.exists():
            return cls.fresh(out_dir, key)
        try:
            document = load_counts(path)
        except ResultsError as exc:
            raise ResultsError(f"{exc}; it was left as it is: move it away (its counts are taken again), or choose "
                               "another --out-dir") from None
        if document.bisect != key:
            raise UsageError(f"{path} holds the counts of another bisect (other revisions, cases or settings than "
                             f"{path.parent / 'bisect.json'}); it was left as it is: move it away (its counts are "
                             "taken again), or choose another --out-dir")
        return cls(path, document)

    def find(self, key: tuple) -> StoredCount | None:
        with self.lock:
            return self.by_key.get(key)

    def why_not(self, key: tuple, wanted: FactKey) -> str | None:
        """Why a stored count of the same commit, case, kind and index is not this key's (once per pair of
        conditions; None when there is none, or it was said): ``its files of the editable or local install autograd
        differ``."""
        with self.lock:
            for stored in self.document.samples:
                if stored.key[:5] != key[:5] or stored.conditions == wanted.digest:
                    continue
                seen = (stored.conditions, wanted.digest)
                if seen in self.explained:
                    return None
                self.explained.add(seen)
                then = self.document.keys.get(stored.conditions)
                differs = then.differences(wanted) if then is not None else ["the conditions (an older file)"]
                return ", ".join(differs)
        return None

    def add(self, stored: StoredCount, what: FactKey) -> None:
        """Keep ``stored`` (the first sample of a key stays) and save the file."""
        with self.lock:
            if stored.key in self.by_key:
                return
            self.by_key[stored.key] = stored
            self.document.samples.append(stored)
            self.document.conditions.setdefault(stored.conditions, what.to_json())
            self.document.keys.setdefault(stored.conditions, what)
            save_counts(self.path, self.document)

    def sampler(self, inner: "Sampler", sides: "dict[str, Side]", origin: str,
                note: Callable[[str], None] | None = None) -> "ComparisonSampler":
        """The sampler one comparison hands the gate: ``inner`` for what is not stored, the store for the rest."""
        return ComparisonSampler(self, inner, sides, origin, note)


class ComparisonSampler:
    """One comparison's gate sampler: a reusable count found in the store is returned instead of a new process."""

    def __init__(self, store: CountStore, inner: "Sampler", sides: "dict[str, Side]", origin: str,
                 note: Callable[[str], None] | None):
        self.store, self.inner, self.origin, self.note = store, inner, origin, note or (lambda text: None)
        self.sides = {str(side.source): side for side in sides.values()}
        if len(self.sides) != len(sides):  # two sides importing from one folder: which commit a sample is, unknown
            self.sides = {}
        self.taken = {role: 0 for role in sides}
        self.reused = {role: 0 for role in sides}
        self.origins: dict[str, list[str]] = {role: [] for role in sides}
        self.own: set[tuple] = set()
        self.refused: set[str] = set()
        self.lock = threading.Lock()

    def __call__(self, case: "Case", kind: str, cache: str, index: int, run: "RunSettings",
                 *cache_dir: Path) -> "Sample":
        side = self.sides.get(str(run.target.source))
        if side is None or kind not in tiers.count_kinds():
            return self.inner(case, kind, cache, index, run, *cache_dir)
        key = what = None
        unreusable = fact_keys.unreusable(side.env) if side.env is not None else None
        if unreusable and kind not in self.refused:
            self.refused.add(kind)
            self.note(f"{kind} counts of the {side.role} side are neither reused nor kept: {unreusable}")
        if cache == "cold" and reusable(case.backend, kind) and not unreusable:
            what = conditions(side, case, run)
            key = (side.revision.commit, case.id, kind, cache, index, what.digest)
            stored = self.store.find(key)
            if stored is not None and not steady_record(stored.sample):  # measured on a runtime whose counts vary
                stored = None
            if stored is None and (why := self.store.why_not(key, what)):
                self.note(f"stored counts of {side.revision.commit[:10]} ({case.id}) were taken under other "
                          f"conditions ({why}): counted anew")
            if stored is not None and key not in self.own:
                with self.lock:
                    self.reused[side.role] += 1
                    if stored.origin not in self.origins[side.role]:
                        self.origins[side.role].append(stored.origin)
                self.note(f"{kind} count of {side.revision.commit[:10]} ({case.id}, #{index}) reused from "
                          f"{stored.origin}")
                return replace(stored.sample)
        sample = self.inner(case, kind, cache, index, run, *cache_dir)
        with self.lock:
            self.taken[side.role] += 1
            if key is not None and sample.ok:
                self.own.add(key)
        if key is not None and sample.ok and steady_record(sample):
            self.store.add(StoredCount(*key, self.origin, sample), what)
        return sample

    def record(self) -> dict | None:
        """``bisect.json``'s account of this comparison's count processes (every count-tier sample, reusable or
        not): per side, how many were taken, how many reused, and from which comparisons; None when it took none."""
        if not any(self.taken.values()) and not any(self.reused.values()):
            return None
        return {role: {"taken": self.taken[role], "reused": self.reused[role], "from": list(self.origins[role])}
                for role in self.taken}


__all__ = ["ComparisonSampler", "CountStore", "conditions", "origin_label", "reusable"]
