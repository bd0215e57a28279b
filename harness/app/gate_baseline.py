"""The gate's stored baseline: the base's count samples found in the count store, verified, and kept for the next gate.

Why: counts are deterministic for the same code, environment, machine and measuring ttfg, yet every gate counted its
base again; two pull requests off one base counted the same commit twice. The count store
(``results/count_store.py``) keeps every count a gate takes of its base; the next gate of that base finds it under
the exact key (the base's git tree, the case, the kind, the cache mode, the index, and the conditions of
``bisect_counts.conditions``: environment digest, interpreter, probe and valgrind settings, ttfg source, CPU) and
uses it only once the head's fresh count agrees with it (``decide/stored_baseline.py`` says why that check is
enough). The head's fresh counts are kept too, under the head's tree: a head is measured from its commit, and once
merged (a merge commit or a squash of an unmoved base has the same tree) it is the next pull request's base. Never a
fallback: an entry of another commit, environment or machine is not looked for, and one that fails
its checks is set aside and said.

The same store keeps each side's first timing process's structural counters (kind ``structural``, no time): when
the head runs the base's program (the source tier's proof), the base's stored first process stands in for the
base's, once the head's own first process gave its structural counters, every one equal (``decide/stored_first.py``).

What each case's ``baseline`` record says (``gate.json``, ``summary.md``, the terminal): ``stored`` (from which run,
how it was verified, the kinds counted now anyway), ``counted`` (why: none stored, refused, under other conditions,
the head disagreed), ``off`` (``--no-count-store``), or ``none`` (no count was taken: an earlier tier settled it).
"""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Callable

from ..provision.worktrees import GitError, git
from ..results.count_store import STRUCTURAL, CountStore, Entry, EntryKey
from .bisect_counts import conditions, reusable, steady_record

if TYPE_CHECKING:
    from ..measure.cases import Case
    from ..measure.runner import RunSettings
    from ..measure.sides import Side
    from ..results.model import Sample

#: A case's ``baseline`` status.
STORED, COUNTED, OFF, NONE = "stored", "counted", "off", "none"


def sources(side: "Side") -> str:
    """What a side's counts are filed under: ``tree:<id>``, the git tree of its commit (two commits of one tree are
    the same files), else ``commit:<hash>`` (a folder that is no checkout of it)."""
    try:
        found = git(side.tree, "rev-parse", "--verify", "-q", f"{side.revision.commit}^{{tree}}", check=False)
    except GitError:
        found = None
    tree = found.stdout.strip() if found is not None and found.returncode == 0 else ""
    return f"tree:{tree}" if tree else f"commit:{side.revision.commit}"


class GateBaseline:
    """One gate's stored baseline (``decide.stored_baseline.Baseline``): looks up and keeps the base's counts."""

    def __init__(self, store: CountStore, base: "Side", run: "RunSettings", head_commit: str,
                 append: Callable[[str, "Sample"], None] | None = None, note: Callable[[str], None] | None = None,
                 head: "Side | None" = None, run_name: str = "gate"):
        self.store, self.base, self.run = store, base, base.run_settings(run, opening=False)
        #: Each side kept: its run settings and sources (the head's counts are kept too: a head is measured from
        #: its commit, and once merged its tree is the next pull request's base).
        self.sides = {"base": (base, self.run)}
        if head is not None:
            self.sides["head"] = (head, head.run_settings(run, opening=False))
        self.append = append or (lambda case_id, sample: None)
        self.note = note or (lambda text: None)
        self.origin = {"run": run_name, "commit": head_commit,
                       "at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
        self.sources = sources(base)
        self.side_sources = {role: sources(side) for role, (side, _) in self.sides.items()}
        self.records: dict[str, dict] = {}
        self.found_from: dict[str, str] = {}
        self.aside: dict[str, list[str]] = {}
        self.kept: dict[str, int] = {}
        #: Stored samples used, over every case, and the runs they came from (a bisect's account of its counts).
        self.used_samples = 0
        self.used_from: list[str] = []
        self.lock = threading.Lock()
        from ..measure import fact_keys

        self.unreusable = fact_keys.unreusable(base.env) if base.env is not None else None
        self.head_unreusable = fact_keys.unreusable(head.env) if head is not None and head.env is not None else None

    def _key(self, case: "Case", kind: str, index: int, role: str = "base"):
        side, run = self.sides[role]
        what = conditions(side, case, run)
        return EntryKey(self.side_sources[role], case.id, kind, "cold", index, what.digest), what

    def lookup(self, case: "Case", kinds: list[str], repeat: int) -> "dict[str, list[Sample]]":
        found: dict[str, list] = {}
        missing, aside, origin = [], [], ""
        if self.unreusable:
            self.counted(case, f"the base's environment is neither reused nor kept: {self.unreusable}")
            return {}
        for kind in kinds:
            if not reusable(case.backend, kind):
                aside.append(f"{kind}: not repeatable for {case.backend}, never stored")
                continue
            samples = []
            for i in range(repeat):
                key, what = self._key(case, kind, i)
                got = self.store.get(key, what)
                if got.entry is None:
                    if got.refused:
                        self.note(got.refused)
                    missing.append(f"{kind}: " + (got.refused or (f"stored under other conditions ({got.other})"
                                                                    if got.other else "none stored")))
                    break
                if not steady_record(got.entry.sample):
                    missing.append(f"{kind}: the stored process ran a runtime whose counts vary")
                    break
                samples.append(replace(got.entry.sample, index=i))
                origin = origin or got.entry.from_words()
            else:
                found[kind] = samples
        with self.lock:
            self.aside[case.id] = missing + aside
            self.found_from[case.id] = origin
        if not found:
            self.counted(case, "; ".join(missing + aside) or "no count kind to store")
        return found

    def first(self, case: "Case") -> "Sample | None":
        """The base's stored first process (its structural counters), or None (none stored, or refused: said in a
        note); the base then runs as without a store."""
        if self.unreusable:
            return None
        key, what = self._key(case, STRUCTURAL, 0)
        got = self.store.get(key, what)
        if got.entry is None:
            if got.refused:
                self.note(got.refused)
            return None
        with self.lock:
            self.found_from[case.id] = got.entry.from_words()
        return got.entry.sample

    def first_used(self, case: "Case", agreed: str) -> None:
        """The base's stored first process stood in for the base's (the head's agreed, ``agreed`` says how)."""
        self._used(case, [STRUCTURAL], 1, agreed, f"the base's first process ({STRUCTURAL} counters)")

    def keep_first(self, case: "Case", role: str, sample: "Sample") -> None:
        """Keep a side's first cold timing process's structural counters for the next gate (nothing timed; one
        without counters shows nothing and is not kept); a store that cannot be written is said, never an error."""
        if sample.cache == "cold" and sample.counters:
            self._put(case, STRUCTURAL, 0, sample, role, "the first process")

    def used(self, case: "Case", stored: "dict[str, list[Sample]]", agreed: str) -> None:
        for samples in stored.values():
            for sample in samples:
                self.append(case.id, replace(sample))
        kinds = sorted(stored)
        self._used(case, kinds, sum(len(samples) for samples in stored.values()), agreed,
                   f"base counts ({', '.join(kinds)})")

    def _used(self, case: "Case", kinds: list[str], samples: int, agreed: str, what: str) -> None:
        """The stored ``samples`` of ``kinds`` decided for the base: the case's record, the run's account, a note."""
        record = {"status": STORED, "from": self.found_from.get(case.id) or "the count store", "kinds": kinds,
                  "verified": agreed}
        if self.aside.get(case.id) and kinds != [STRUCTURAL]:
            record["counted_now"] = list(self.aside[case.id])
        with self.lock:
            self.records[case.id] = record
            self.used_samples += samples
            if record["from"] not in self.used_from:
                self.used_from.append(record["from"])
        self.note(f"{case.id}: {what} stored by {record['from']}, used: {agreed}")

    def counted(self, case: "Case", why: str) -> None:
        with self.lock:
            self.records[case.id] = {"status": COUNTED, "why": why}

    def keep(self, case: "Case", kind: str, index: int, sample: "Sample", role: str = "base") -> None:
        """Keep a fresh count of a side for the next gate (a good, steady count of a kind this backend repeats); a
        store that cannot be written is said, never an error."""
        if reusable(case.backend, kind) and steady_record(sample) and self._put(case, kind, index, sample, role,
                                                                                "base counts") and role == "base":
            with self.lock:
                self.kept[case.id] = self.kept.get(case.id, 0) + 1

    def _put(self, case: "Case", kind: str, index: int, sample: "Sample", role: str, what: str) -> bool:
        """``sample`` of ``role`` filed under its key, when that side is kept and the sample is good; whether it was.
        A store that cannot be written is said (``what`` not kept), never an error."""
        unreusable = self.unreusable if role == "base" else self.head_unreusable
        if role not in self.sides or unreusable or not sample.ok:
            return False
        key, facts = self._key(case, kind, index, role)
        try:
            self.store.put(Entry(key, facts, sample, dict(self.origin)))
        except OSError as exc:
            self.note(f"the count store {self.store.root} cannot be written ({exc.strerror or exc}): {what} not kept")
            return False
        return True

    def record(self, case_id: str) -> dict:
        """``gate.json``'s ``baseline`` of one case (see the module's docstring)."""
        with self.lock:
            record = dict(self.records.get(case_id) or {"status": NONE, "why": "no base count was taken"})
            if self.kept.get(case_id):
                record["kept"] = self.kept[case_id]
        return record


def open_store(settings) -> "tuple[CountStore | None, str | None]":
    """``(store, None)`` when a run of these gate settings reads and fills the count store, else ``(None, why not)``:
    the gate's rule, and that of bisect's comparisons, so they share one store under one key (``regressions
    --confirm`` and the release sweep's pairs gate on the time tier alone: no count of theirs to keep).

    Raises
    ------
    UsageError
        A ``TTFG_COUNT_STORE_MAX_MB`` that is no positive number.
    """
    from ..decide.tiers import INSTRUCTIONS

    if settings.cache != "cold":
        return None, "a warm gate's counts are neither stored nor reused"
    if INSTRUCTIONS not in settings.tiers:
        return None, "the instructions tier is not selected"
    from ..provision import cache

    return CountStore.default(cache.root()), None


def for_comparison(store: "CountStore | None", base: "Side", head: "Side", run: "RunSettings",
                   note: Callable[[str], None] | None = None, run_name: str = "gate") -> "GateBaseline | None":
    """The stored baseline of one comparison that is not ``ttfg gate`` (a bisect's comparison): the
    same lookup, verification and keeping as the gate's, its entries said to come from ``run_name``; None without a
    store."""
    if store is None:
        return None
    return GateBaseline(store, base, run, head.revision.commit, note=note, head=head, run_name=run_name)


def off(why: str = "--no-count-store") -> dict:
    """The record of a case whose gate did not use the store."""
    return {"status": OFF, "why": why}


__all__ = ["COUNTED", "GateBaseline", "NONE", "OFF", "STORED", "for_comparison", "off", "open_store",
           "sources"]
