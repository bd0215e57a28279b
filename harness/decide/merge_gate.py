"""Shards' gate outcomes into one verdict: one gate.json, one summary, one exit code.

Why it can be merged at all: the gate decides each case on its own (its own
sequential test on pairs measured back to back on one runner), so a case's verdict
does not depend on which other cases shared its runner.

The merged exit code is the worst of every shard's own exit code and of the merged
verdicts (a regression or a violated expectation: 1; a base that could not run, or no
case at all: 2), where 2 is worse than 1: a part of the matrix that could not be
decided can hide a regression. So a shard shown as failed never produces a pass, and
a shard that exited 1 fails the merge even when none of its case rows says
"regressed". This differs from one unsharded gate in one way: a regression in one
shard and a broken case in another give 2 here (one gate gives 1); both fail CI.

What it must never do is pass on missing evidence: a shard whose output is absent or
unfinished is reported by name and the merged exit code is 2, whatever the other
shards found. Each ``gate.json`` is checked like a results file
(``results.gate_file``: version, types, an exit code of 0, 1 or 2), must hold a verdict
or a skip for every case of its shard, and its ``base.json``/``head.json`` must be
the ones it gated (role and commit). Inputs that contradict each other (another
partition, the same shard twice, a case twice, other revisions or settings, other
machines) are refused (:class:`~ttfg.results.merge.MergeError`, exit 2) before
anything is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from ..results.format import differing
from ..results.gate_document import GateDocument, MergedShards, ShardRow
from ..results.gate_outcome import BASE_BROKEN, COUNT_BROKEN, CaseOutcome, GateOutcome, SettingsData
from ..results.machines import check_machines
from ..results.merge import MergeError, merge_results, shard_problems
from ..results.model import Fingerprint, Results, ShardSection

__all__ = ["GateShard", "MergedGate", "load_shard", "merge_gates", "merged_acceptances", "merged_exit_code", "side_mismatch"]

#: What a gate's output folder holds.
GATE_FILE, SIDES = "gate.json", ("base", "head")


@dataclass
class GateShard:
    """One input: a gate's output folder (or its gate.json), read as far as it got."""

    where: str
    shard: ShardSection | None = None
    doc: GateDocument | None = None        # gate.json, None when the gate did not finish
    sides: dict[str, Results] = field(default_factory=dict)
    fingerprint: Fingerprint | None = None
    #: Why this shard did not finish, when ``doc`` is None.
    unfinished: str | None = None


def load_shard(path: str | Path) -> GateShard:
    """Read a gate output folder (``gate.json``, ``base.json``, ``head.json``) or a ``gate.json``.

    A folder whose ``gate.json`` is missing but whose results files exist is a shard
    that did not finish (interrupted, or killed by the CI timeout): it is returned with
    ``unfinished`` set, its shard taken from the results files.

    Raises
    ------
    MergeError
        When the input is no gate output at all, or a file in it cannot be read, or a
        results file beside ``gate.json`` is not one it gated.
    ResultsError
        A ``gate.json`` that is not a valid gate outcome (file and field named).
    """
    from ..results import gate_file
    from ..results.format import ResultsError
    from ..results.io import load

    path = Path(path)
    folder = path if path.is_dir() else path.parent
    doc_path = path if path.is_file() else folder / GATE_FILE
    out = GateShard(str(folder if path.is_dir() else path))
    for role in SIDES:
        side = folder / f"{role}.json"
        if side.is_file():
            try:
                out.sides[role] = load(side)
            except ResultsError as exc:
                raise MergeError(str(exc)) from None
    if doc_path.is_file():
        doc = gate_file.load(doc_path)
        out.shard, out.fingerprint = doc.outcome.shard, doc.outcome.fingerprint
        for role, res in out.sides.items():
            problem = side_mismatch(doc, role, res)
            if problem:
                raise MergeError(f"{res.path}: {problem}, so it is not the {role}.json of {doc_path}")
        out.doc = doc
        out.where = str(doc_path)
        return out
    if not out.sides:
        raise MergeError(f"{path}: neither {GATE_FILE} nor base.json/head.json: not a gate's output folder")
    any_side = next(iter(out.sides.values()))
    out.shard, out.fingerprint = any_side.shard, any_side.fingerprint
    out.unfinished = (f"the gate did not finish: no {GATE_FILE} in {folder}"
                      + ("" if any_side.complete else f", and {any_side.path} is marked incomplete"))
    return out


def side_mismatch(doc: GateDocument, role: str, res: Results) -> str | None:
    """Why ``res`` is not the ``role`` results file that the gate of ``doc`` wrote, or None."""
    if res.gate is None:
        return "it is no gate's results file (no gate section)"
    commit = _revision_key(doc, role)
    if res.gate.role != role or res.gate.commit != commit:
        return (f"it holds the {res.gate.role} side of commit {res.gate.commit[:12]}, while the gate's {role} was "
                f"{str(commit)[:12]}")
    shard = doc.outcome.shard
    if (res.shard.to_json() if res.shard else None) != (shard.to_json() if shard else None):
        return "its shard differs from the gate's"
    return None


@dataclass
class MergedGate:
    """The merged outcome: its gate.json document, the merged results files (when every shard finished), notes."""

    doc: GateDocument
    sides: dict[str, Results]
    notes: list[str]

    @property
    def exit_code(self) -> int:
        return self.doc.exit_code


def _revision_key(doc: GateDocument, role: str) -> str:
    return getattr(doc.outcome, role).commit


#: Settings of a warm gate kept per case (``GateSettings.measured_cold``, ``warm_evidence``): each shard holds its own
#: cases', so they differ between shards by design; the merged gate holds every shard's.
PER_CASE_SETTINGS = ("measured_cold", "warm_evidence")


def _settings(doc: GateDocument) -> dict:
    settings = {k: v for k, v in doc.outcome.settings.data.items() if k not in PER_CASE_SETTINGS}
    run = dict(settings.pop("run", None) or {})
    run.pop("python", None)
    return {**settings, "run": run}


def _per_case_settings(settings: dict, docs: list[GateDocument]) -> dict:
    """``settings`` with every shard's per-case settings (:data:`PER_CASE_SETTINGS`) merged; empty ones left out."""
    out = {k: v for k, v in settings.items() if k not in PER_CASE_SETTINGS}
    for key in PER_CASE_SETTINGS:
        merged = {case: words for doc in docs for case, words in (doc.outcome.settings.data.get(key) or {}).items()}
        if merged:
            out[key] = merged
    return out


def merge_gates(shards: list[GateShard], force: bool = False) -> MergedGate:
    """One gate outcome from every shard's (see the module docstring).

    Raises
    ------
    MergeError
        Naming the inputs: not sharded, different partitions, a shard twice, a case in two
        shards, different base or head commits, different gate settings.
    MachineMismatch
        Shards measured on different machines, unless ``force``.
    """
    if not shards:
        raise MergeError("nothing to merge: no gate outputs given")
    problems, count, missing = shard_problems([(s.where, s.shard) for s in shards])
    if problems:
        raise MergeError("; ".join(problems))
    shards = sorted(shards, key=lambda s: s.shard.index)
    finished = [s for s in shards if s.doc is not None]
    if finished:
        first = finished[0]
        for s in finished[1:]:
            for role in SIDES:
                if _revision_key(s.doc, role) != _revision_key(first.doc, role):
                    raise MergeError(f"{first.where} gated {role} {_revision_key(first.doc, role)} but {s.where} "
                                     f"gated {role} {_revision_key(s.doc, role)}: shards of different revisions")
            diffs = differing(_settings(first.doc), _settings(s.doc))
            if diffs:
                raise MergeError(f"{first.where} and {s.where} gated with different settings: " + ", ".join(diffs))
    notes = check_machines([(s.where, s.fingerprint) for s in shards], "timings", force, action="merge")
    owner: dict[str, str] = {}
    cases: list[CaseOutcome] = []
    skipped, expectation_rows, table = [], [], []
    for s in shards:
        where = {"shard": s.shard.label, "file": s.where, "cases": len(s.shard.cases)}
        if s.doc is None:
            table.append(ShardRow(**where, status="failed", detail=s.unfinished, exit_code=None))
            continue
        _check_every_case(s)
        outcome = s.doc.outcome
        for c in outcome.cases:
            if c.case in owner:
                raise MergeError(f"case {c.case} is in both {owner[c.case]} and {s.where}")
            if c.case not in s.shard.cases:
                raise MergeError(f"{s.where} (shard {s.shard.label}) gated {c.case}, which is not one of its "
                                 "shard's cases")
            owner[c.case] = s.where
            cases.append(replace(c, shard=s.shard.label))
        skipped += [sk for sk in outcome.skipped if sk.id not in {x.id for x in skipped}]
        rows = (s.doc.expectations or {}).get("rows") or []
        expectation_rows += rows
        code = s.doc.exit_code
        broken = [c.case for c in outcome.cases if c.stop == BASE_BROKEN]
        stops = sorted({c.stop for c in outcome.cases if c.stop in BROKEN_STOPS})
        detail = f"exit {code}" + (f": base cannot run {', '.join(broken)}" if broken else
                                   f": {', '.join(stops)}" if stops and code == 2 else "")
        table.append(ShardRow(**where, status="ok" if code in (0, 1) else "failed", detail=detail, exit_code=code,
                              finished=True, elapsed_s=outcome.elapsed_s,
                              expectation_failures=[r for r in rows if _failing(r)], noise=s.doc.noise))
    for index in missing:
        table.append(ShardRow(f"{index}/{count}", None, None, "missing",
                              f"no output of shard {index}/{count} among the inputs (its job failed or its artifact "
                              "was not downloaded)", None))
    table.sort(key=lambda e: int(e.shard.split("/")[0]))
    place = {cid: i for i, cid in enumerate(shards[0].shard.all_cases)}
    cases.sort(key=lambda c: place.get(c.case, len(place)))  # the selection's order
    incomplete = [e for e in table if e.exit_code is None]  # missing, or did not finish
    code = merged_exit_code(table, cases)
    merged_sides: dict[str, Results] = {}
    if not incomplete and all(set(s.sides) == set(SIDES) for s in shards):
        for role in SIDES:
            merged_sides[role], _ = merge_results([s.sides[role] for s in shards], force)
            if merged_sides[role].gate is not None and finished:
                merged_sides[role].gate.settings = _per_case_settings(merged_sides[role].gate.settings,
                                                                      [s.doc for s in finished])
    elif not incomplete:
        notes.append("base.json/head.json were not merged: a shard's folder lacks them (only gate.json was given)")
    outcome = None
    if finished:
        first = finished[0].doc.outcome
        settings = SettingsData(_per_case_settings(first.settings.data, [s.doc for s in finished]))
        outcome = GateOutcome(first.base, first.head, settings, cases, skipped,
                              max((e.elapsed_s or 0.0 for e in table), default=0.0), {},
                              fingerprint=None if any(n.startswith("--force") for n in notes) else first.fingerprint,
                              acceptances=merged_acceptances([s.doc for s in finished]),
                              source=_merged_source([s.doc for s in finished]))
    expectations = ({"rows": expectation_rows, "failures": sum(1 for r in expectation_rows if _failing(r))}
                    if expectation_rows else None)
    doc = GateDocument(outcome, code, expectations, merged=MergedShards(count, shards[0].shard.partition, table, notes))
    return MergedGate(doc, merged_sides, notes)


def _merged_source(docs: list[GateDocument]) -> dict | None:
    """What the shards' source tier read (``decide/source_proof.py``): one base and head, so one record; None when
    no shard asked, or when they disagree (then no shard's record stands for the merge)."""
    records = [d.outcome.source for d in docs if d.outcome.source is not None]
    return records[0] if records and all(r == records[0] for r in records) else None


def merged_acceptances(docs: list[GateDocument]) -> list[dict]:
    """Every shard's ``Ttfg-Accept`` trailers as one list: each trailer once, accepting the cases it accepted in any shard.

    Every shard reads the same trailers (the head's commits); each knows only the cases it gated, so a
    trailer unused in one shard may be used in another, and is unused only when no shard used it.
    """
    merged: dict[tuple, dict] = {}
    for doc in docs:
        for a in doc.outcome.acceptances:
            key = (a.get("commit"), a.get("case"), a.get("metric"), a.get("reason"), a.get("author"))
            entry = merged.setdefault(key, {**a, "used_by": [], "also_matched": [], "refused": {}})
            entry["used_by"] += [c for c in a.get("used_by") or [] if c not in entry["used_by"]]
            entry["also_matched"] += [c for c in a.get("also_matched") or [] if c not in entry["also_matched"]]
            entry["refused"].update(a.get("refused") or {})
    for entry in merged.values():  # written only when there is one, as a shard writes them
        for k in ("also_matched", "refused"):
            if not entry[k]:
                del entry[k]
    return list(merged.values())


#: Why a shard's cases stopped, when that makes the shard's own exit code 2 (``results.gate_file``).
BROKEN_STOPS = (BASE_BROKEN, COUNT_BROKEN)


def merged_exit_code(shards: list[ShardRow], cases: list[CaseOutcome]) -> int:
    """The worst of every shard's exit code (a missing or unfinished one counts as 2) and of the merged verdicts.

    Worst means 2 over 1 over 0 (see the module docstring). A regression a ``Ttfg-Accept`` trailer accepted
    fails the merged gate no more than it failed its shard.
    """
    from .unmeasured import side_of

    codes = [2 if e.exit_code is None else e.exit_code for e in shards]
    unmeasured = {c.case: side_of(c) for c in cases}  # a side with no good sample: never passed, whatever a shard said
    if any(c.verdict.verdict == "regressed" and not c.accepted for c in cases) or any(e.expectation_failures
                                                                                     for e in shards) \
            or "head" in unmeasured.values():
        codes.append(1)
    if not cases or any(c.stop == BASE_BROKEN for c in cases) or "base" in unmeasured.values():
        codes.append(2)
    return max(codes, default=2)


def _check_every_case(s: GateShard) -> None:
    """A finished shard's gate.json must hold a verdict or a skip for every case of its shard."""
    have = {c.case for c in s.doc.outcome.cases} | {sk.id for sk in s.doc.outcome.skipped}
    lost = [cid for cid in s.shard.cases if cid not in have]
    if lost:
        raise MergeError(f"{s.where} (shard {s.shard.label}) has no verdict and no skip for {len(lost)} case(s) of "
                         f"its shard: {', '.join(lost)}; a gate that finished decides every case it was given")


def _failing(row: dict) -> bool:
    from .expect import FAILING

    return row.get("status") in FAILING
